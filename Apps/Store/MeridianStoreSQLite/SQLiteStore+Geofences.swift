import DomainKit
import Foundation
import GRDB
import GeoKit
import MeridianAPI
import MeridianStore

extension SQLiteStore {
  static let geofenceColumns = """
    g.id, g.owner_id, g.name, g.shape, g.sharing, g.group_id, g.source, g.external_id, g.created_at, g.updated_at,
    g.alert_rule
    """
  static let geofenceEventColumns = """
    id, geofence_id, geofence_name, owner_id, user_id, kind, occurred_at, reported_by, latitude, longitude, accuracy,
    seq, alerted
    """

  static func geofence(_ row: Row) throws -> GeofenceItem {
    GeofenceItem(
      id: GeofenceID(row[0] as String), ownerId: UserID(row[1] as String), name: row[2],
      shape: try GeofenceShape.decoded(row[3]), sharing: GeofenceSharing(rawValue: row[4]) ?? .nobody,
      groupId: (row[5] as String?).map { GroupID($0) }, source: GeofenceSource(rawValue: row[6]) ?? .server,
      externalId: row[7], alerts: try GeofenceAlertRule.decoded(row[10]), createdAt: row[8], updatedAt: row[9])
  }

  static func geofenceEvent(_ row: Row) -> GeofenceEventItem {
    GeofenceEventItem(
      id: row[0], geofenceId: GeofenceID(row[1] as String), geofenceName: row[2], ownerId: UserID(row[3] as String),
      userId: UserID(row[4] as String), kind: GeofenceEventKind(rawValue: row[5]) ?? .enter, timestamp: row[6],
      reportedBy: GeofenceSource(rawValue: row[7]) ?? .server, lat: row[8], lon: row[9], accuracy: row[10],
      alerted: row[12])
  }

  static func writeCells(_ geofence: GeofenceItem, _ db: Database) throws {
    try db.execute(sql: "DELETE FROM geofence_cells WHERE geofence_id = ?", arguments: [geofence.id.rawValue])
    for cell in geofence.shape.coveringKeys {
      try db.execute(
        sql: "INSERT OR IGNORE INTO geofence_cells(cell, owner_id, geofence_id) VALUES (?, ?, ?)",
        arguments: [cell, geofence.ownerId.rawValue, geofence.id.rawValue])
    }
  }

  public func createGeofence(_ geofence: GeofenceItem) async throws {
    let shape = try geofence.shape.encoded()
    let alerts = try geofence.alerts?.encoded()
    try await database.write { db in
      do {
        try db.execute(
          sql: """
            INSERT INTO geofences(id, owner_id, name, shape, sharing, group_id, source, external_id, created_at,
              updated_at, alert_rule)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
          arguments: [
            geofence.id.rawValue, geofence.ownerId.rawValue, geofence.name, shape, geofence.sharing.rawValue,
            geofence.groupId?.rawValue, geofence.source.rawValue, geofence.externalId, geofence.createdAt,
            geofence.updatedAt, alerts,
          ])
      } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_PRIMARYKEY {
        throw GeofenceStoreError.duplicateID(geofence.id)
      }
      try Self.writeCells(geofence, db)
    }
  }

  public func geofence(_ id: GeofenceID) async throws -> GeofenceItem? {
    try await database.read { db in
      try Row.fetchOne(
        db, sql: "SELECT \(Self.geofenceColumns) FROM geofences g WHERE g.id = ?", arguments: [id.rawValue]
      ).map(Self.geofence)
    }
  }

  public func geofences(owners: [UserID]) async throws -> [GeofenceItem] {
    guard !owners.isEmpty else { return [] }
    return try await database.read { db in
      try Row.fetchAll(
        db,
        sql: """
          SELECT \(Self.geofenceColumns) FROM geofences g
          WHERE g.owner_id IN (\(databaseQuestionMarks(count: owners.count))) ORDER BY g.created_at, g.id
          """,
        arguments: StatementArguments(owners.map(\.rawValue))
      ).map(Self.geofence)
    }
  }

  public func geofence(owner: UserID, externalID: String) async throws -> GeofenceItem? {
    try await database.read { db in
      try Row.fetchOne(
        db, sql: "SELECT \(Self.geofenceColumns) FROM geofences g WHERE g.owner_id = ? AND g.external_id = ?",
        arguments: [owner.rawValue, externalID]
      ).map(Self.geofence)
    }
  }

  public func updateGeofence(_ geofence: GeofenceItem) async throws -> Bool {
    let shape = try geofence.shape.encoded()
    let alerts = try geofence.alerts?.encoded()
    return try await database.write { db in
      try db.execute(
        sql: """
          UPDATE geofences SET name = ?, shape = ?, sharing = ?, group_id = ?, source = ?, external_id = ?,
            updated_at = ?, alert_rule = ?
          WHERE id = ?
          """,
        arguments: [
          geofence.name, shape, geofence.sharing.rawValue, geofence.groupId?.rawValue, geofence.source.rawValue,
          geofence.externalId, geofence.updatedAt, alerts, geofence.id.rawValue,
        ])
      guard db.changesCount > 0 else { return false }
      try Self.writeCells(geofence, db)
      return true
    }
  }

  public func deleteGeofence(_ id: GeofenceID) async throws -> Bool {
    try await database.write { db in
      try db.execute(sql: "DELETE FROM geofences WHERE id = ?", arguments: [id.rawValue])
      return db.changesCount > 0
    }
  }

  public func geofences(near point: Coordinate, owners: [UserID]) async throws -> [GeofenceItem] {
    try await geofences(near: [point], owners: owners)
  }

  public func geofences(near points: [Coordinate], owners: [UserID]) async throws -> [GeofenceItem] {
    guard !owners.isEmpty, !points.isEmpty else { return [] }
    // Fixes of one batch share most of their coarser cells: each key is looked up once.
    let keys = Array(Set(points.flatMap(\.geofenceLookupKeys)))
    let chunk = 30_000 - owners.count
    let candidates = try await database.read { db in
      var found: [String: GeofenceItem] = [:]
      for slice in keys.chunks(of: max(1, chunk)) {
        let part = Array(slice)
        for row in try Row.fetchAll(
          db,
          sql: """
            SELECT \(Self.geofenceColumns) FROM geofences g
            WHERE g.id IN (
              SELECT geofence_id FROM geofence_cells
              WHERE cell IN (\(databaseQuestionMarks(count: part.count)))
                AND owner_id IN (\(databaseQuestionMarks(count: owners.count))))
            """,
          arguments: StatementArguments(part) + StatementArguments(owners.map(\.rawValue)))
        {
          let fence = try Self.geofence(row)
          found[fence.id.rawValue] = fence
        }
      }
      return found.values.sorted { $0.id < $1.id }
    }
    return candidates.filter { fence in
      let box = fence.shape.geofence.boundingBox
      return points.contains { box.contains($0) }
    }
  }

  public func geofences(ids: [GeofenceID]) async throws -> [GeofenceItem] {
    guard !ids.isEmpty else { return [] }
    return try await database.read { db in
      try Row.fetchAll(
        db,
        sql: """
          SELECT \(Self.geofenceColumns) FROM geofences g
          WHERE g.id IN (\(databaseQuestionMarks(count: ids.count))) ORDER BY g.id
          """,
        arguments: StatementArguments(ids.map(\.rawValue))
      ).map(Self.geofence)
    }
  }

  public func geofenceTracking(of user: UserID) async throws -> GeofenceTracking {
    try await database.read { db in
      var tracking = GeofenceTracking()
      if let row = try Row.fetchOne(
        db,
        sql: """
          SELECT version, last_fix_at, last_latitude, last_longitude, last_accuracy FROM geofence_trackers
          WHERE user_id = ?
          """, arguments: [user.rawValue])
      {
        tracking.version = row[0]
        tracking.lastFixAt = row[1]
        tracking.lastPosition = GeofencePosition(latitude: row[2], longitude: row[3], accuracy: row[4])
      }
      for row in try Row.fetchAll(
        db, sql: "SELECT geofence_id, state FROM geofence_states WHERE user_id = ?", arguments: [user.rawValue])
      {
        tracking.states[GeofenceID(row[0] as String)] = try GeofenceState.decoded(row[1])
      }
      return tracking
    }
  }

  /// The conditions of a page of events that geofence and proximity events share: `from` and `to` on `occurred_at`,
  /// and the cursor on (`occurred_at`, `seq`).
  static func eventPageConditions(
    _ query: GeofenceEventQuery, _ conditions: inout [String], _ arguments: inout StatementArguments
  ) {
    if let from = query.from {
      conditions.append("occurred_at >= ?")
      arguments += [from]
    }
    if let to = query.to {
      conditions.append("occurred_at <= ?")
      arguments += [to]
    }
    if let cursor = query.cursor {
      conditions.append("(occurred_at < ? OR (occurred_at = ? AND seq < ?))")
      arguments += [cursor.timestamp, cursor.timestamp, cursor.row]
    }
  }

  public func geofenceEvents(_ query: GeofenceEventQuery) async throws -> GeofenceEventPage {
    var conditions: [String] = []
    var arguments = StatementArguments()
    if let involving = query.involving {
      conditions.append("(user_id = ? OR (owner_id = ? AND owner_sees <> 0))")
      arguments += [involving.rawValue, involving.rawValue]
    }
    if let geofence = query.geofence {
      conditions.append("geofence_id = ?")
      arguments += [geofence.rawValue]
    }
    if let user = query.user {
      conditions.append("user_id = ?")
      arguments += [user.rawValue]
    }
    if let kind = query.kind {
      conditions.append("kind = ?")
      arguments += [kind.rawValue]
    }
    Self.eventPageConditions(query, &conditions, &arguments)
    let condition = conditions.isEmpty ? "1 = 1" : conditions.joined(separator: " AND ")
    let limit = max(1, query.limit)
    let bound = arguments
    let rows = try await database.read { db in
      try Row.fetchAll(
        db,
        sql: """
          SELECT \(Self.geofenceEventColumns) FROM geofence_events WHERE \(condition)
          ORDER BY occurred_at DESC, seq DESC LIMIT \(limit + 1)
          """,
        arguments: bound
      ).map { row -> (event: GeofenceEventItem, seq: Int64) in (Self.geofenceEvent(row), row[11]) }
    }
    let page = rows.prefix(limit)
    let next = rows.count > limit ? page.last.map { HistoryCursor(timestamp: $0.event.timestamp, row: $0.seq) } : nil
    return GeofenceEventPage(events: page.map(\.event), next: next, positions: page.map(\.seq))
  }
}

extension SQLiteTransaction {
  /// No lock is needed: SQLite runs one write transaction at a time.
  func lockGeofenceTracker(of user: UserID) throws -> Int64 {
    try Int64.fetchOne(
      db.cachedStatement(sql: "SELECT version FROM geofence_trackers WHERE user_id = ?"), arguments: [user.rawValue])
      ?? 0
  }

  func setGeofenceTracker(of user: UserID, version: Int64, lastFixAt: Int64?, at position: GeofencePosition?) throws {
    try db.cachedStatement(
      sql: """
        INSERT INTO geofence_trackers(user_id, version, last_fix_at, last_latitude, last_longitude, last_accuracy)
        VALUES (?, ?, ?, ?, ?, ?)
        ON CONFLICT(user_id) DO UPDATE SET version = excluded.version, last_fix_at = excluded.last_fix_at,
          last_latitude = excluded.last_latitude, last_longitude = excluded.last_longitude,
          last_accuracy = excluded.last_accuracy
        """
    ).execute(
      arguments: [user.rawValue, version, lastFixAt, position?.latitude, position?.longitude, position?.accuracy])
  }

  func saveGeofenceStates(_ states: [(geofence: GeofenceID, state: String)], of user: UserID) throws {
    for (geofence, state) in states {
      try db.cachedStatement(
        sql: """
          INSERT INTO geofence_states(user_id, geofence_id, state)
          SELECT ?, id, ? FROM geofences WHERE id = ?
          ON CONFLICT(user_id, geofence_id) DO UPDATE SET state = excluded.state
          """
      ).execute(
        arguments: [user.rawValue, state, geofence.rawValue])
    }
  }

  func removeGeofenceStates(_ geofences: [GeofenceID], of user: UserID) throws {
    for geofence in geofences {
      try db.cachedStatement(
        sql: "DELETE FROM geofence_states WHERE user_id = ? AND geofence_id = ?"
      ).execute(
        arguments: [user.rawValue, geofence.rawValue])
    }
  }

  func insertGeofenceEvents(_ events: [(event: GeofenceEventItem, ownerSees: Bool)]) throws {
    for (event, ownerSees) in events { try insertGeofenceEvent(event, ownerSees: ownerSees) }
  }

  private func insertGeofenceEvent(_ event: GeofenceEventItem, ownerSees: Bool) throws {
    try db.cachedStatement(
      sql: """
        INSERT OR IGNORE INTO geofence_events(id, geofence_id, geofence_name, owner_id, user_id, kind, occurred_at,
          reported_by, latitude, longitude, accuracy, owner_sees, alerted)
        SELECT ?, id, ?, owner_id, ?, ?, ?, ?, ?, ?, ?, ?, ? FROM geofences WHERE id = ?
        """
    ).execute(
      arguments: [
        event.id, event.geofenceName, event.userId.rawValue, event.kind.rawValue, event.timestamp,
        event.reportedBy.rawValue, event.lat, event.lon, event.accuracy, ownerSees, event.alerted,
        event.geofenceId.rawValue,
      ])
  }

  /// Removes the entries, then keeps the live-only rule for their users: the fixes the entries held back go.
  func removeGeofenceQueueEntries(_ sequences: [UInt64]) throws {
    var users: Set<String> = []
    for chunk in sequences.chunks(of: 500) {
      let placeholders = chunk.map { _ in "?" }.joined(separator: ",")
      let arguments = StatementArguments(chunk.map { Int64(clamping: $0) })
      users.formUnion(
        try String.fetchAll(
          db, sql: "SELECT DISTINCT user_id FROM geofence_queue WHERE sequence IN (\(placeholders))",
          arguments: arguments))
      try db.execute(sql: "DELETE FROM geofence_queue WHERE sequence IN (\(placeholders))", arguments: arguments)
    }
    for user in users.sorted().map({ UserID($0) }) where try SQLiteStore.isLiveOnly(db, user) {
      _ = try SQLiteStore.keepLastPosition(db, of: user)
    }
  }
}
