import DomainKit
import Foundation
import GRDB
import MeridianAPI
import MeridianStore

extension SQLiteStore {
  static let proximityRuleColumns = "id, owner_id, other_id, radius, created_at"

  static func proximityRule(_ row: Row) -> ProximityRuleItem {
    ProximityRuleItem(
      id: ProximityRuleID(row[0] as String), ownerId: UserID(row[1] as String), userId: UserID(row[2] as String),
      radius: row[3], createdAt: row[4])
  }

  public func createProximityRule(_ rule: ProximityRuleItem) async throws {
    try await database.write { db in
      do {
        try db.execute(
          sql: "INSERT INTO proximity_rules(\(Self.proximityRuleColumns)) VALUES (?, ?, ?, ?, ?)",
          arguments: [rule.id.rawValue, rule.ownerId.rawValue, rule.userId.rawValue, rule.radius, rule.createdAt])
      } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_PRIMARYKEY {
        throw ProximityStoreError.duplicateID(rule.id)
      }
    }
  }

  public func proximityRule(_ id: ProximityRuleID) async throws -> ProximityRuleItem? {
    try await database.read { db in
      try Row.fetchOne(
        db, sql: "SELECT \(Self.proximityRuleColumns) FROM proximity_rules WHERE id = ?", arguments: [id.rawValue]
      ).map(Self.proximityRule)
    }
  }

  public func proximityRules(owner: UserID) async throws -> [ProximityRuleItem] {
    try await database.read { db in
      try Row.fetchAll(
        db,
        sql: "SELECT \(Self.proximityRuleColumns) FROM proximity_rules WHERE owner_id = ? ORDER BY created_at, id",
        arguments: [owner.rawValue]
      ).map(Self.proximityRule)
    }
  }

  public func proximityRules(involving person: UserID) async throws -> [ProximityRuleItem] {
    try await database.read { db in
      try Row.fetchAll(
        db,
        sql: """
          SELECT \(Self.proximityRuleColumns) FROM proximity_rules WHERE owner_id = ?
          UNION SELECT \(Self.proximityRuleColumns) FROM proximity_rules WHERE other_id = ?
          ORDER BY created_at, id
          """,
        arguments: [person.rawValue, person.rawValue]
      ).map(Self.proximityRule)
    }
  }

  public func deleteProximityRule(_ id: ProximityRuleID) async throws -> Bool {
    try await database.write { db in
      try db.execute(sql: "DELETE FROM proximity_rules WHERE id = ?", arguments: [id.rawValue])
      return db.changesCount > 0
    }
  }

  public func proximityPairStates(_ rules: [ProximityRuleID]) async throws -> [ProximityRuleID: ProximityPairState] {
    guard !rules.isEmpty else { return [:] }
    return try await database.read { db in
      var states: [ProximityRuleID: ProximityPairState] = [:]
      for row in try Row.fetchAll(
        db,
        sql: """
          SELECT rule_id, version, state, owner_fix_at, other_fix_at FROM proximity_states
          WHERE rule_id IN (\(databaseQuestionMarks(count: rules.count)))
          """,
        arguments: StatementArguments(rules.map(\.rawValue)))
      {
        states[ProximityRuleID(row[0] as String)] = ProximityPairState(
          version: row[1], state: try GeofenceState.decoded(row[2]), ownerFixAt: row[3], otherFixAt: row[4])
      }
      return states
    }
  }

  public func proximityEvents(_ query: GeofenceEventQuery) async throws -> GeofenceEventPage {
    guard let owner = query.involving else { return GeofenceEventPage(events: [], next: nil) }
    var conditions = ["owner_id = ?"]
    var arguments: StatementArguments = [owner.rawValue]
    if let rule = query.geofence {
      conditions.append("rule_id = ?")
      arguments += [rule.rawValue]
    }
    if let user = query.user {
      conditions.append("user_id = ?")
      arguments += [user.rawValue]
    }
    if let kind = query.kind {
      conditions.append("kind = ?")
      arguments += [ProximityEventKind(kind).rawValue]
    }
    Self.eventPageConditions(query, &conditions, &arguments)
    let limit = max(1, query.limit)
    let bound = arguments
    let condition = conditions.joined(separator: " AND ")
    let rows = try await database.read { db in
      try Row.fetchAll(
        db,
        sql: """
          SELECT id, rule_id, owner_id, user_id, kind, occurred_at, radius, latitude, longitude, accuracy, seq
          FROM proximity_events WHERE \(condition)
          ORDER BY occurred_at DESC, seq DESC LIMIT \(limit + 1)
          """,
        arguments: bound
      ).map { row -> (event: GeofenceEventItem, seq: Int64) in
        let event = GeofenceEventItem.proximity(
          id: row[0], rule: ProximityRuleID(row[1] as String), owner: UserID(row[2] as String),
          other: UserID(row[3] as String), kind: ProximityEventKind(rawValue: row[4]) ?? .near, timestamp: row[5],
          radius: row[6], latitude: row[7], longitude: row[8], accuracy: row[9])
        return (event, row[10])
      }
    }
    let page = rows.prefix(limit)
    let next = rows.count > limit ? page.last.map { HistoryCursor(timestamp: $0.event.timestamp, row: $0.seq) } : nil
    return GeofenceEventPage(events: page.map(\.event), next: next, positions: page.map(\.seq))
  }
}

extension SQLiteTransaction {
  /// No lock is needed: SQLite runs one write transaction at a time.
  func lockProximityPair(_ rule: ProximityRuleID) throws -> Int64? {
    guard try Bool.fetchOne(db, sql: "SELECT 1 FROM proximity_rules WHERE id = ?", arguments: [rule.rawValue]) != nil
    else { return nil }
    return try Int64.fetchOne(
      db, sql: "SELECT version FROM proximity_states WHERE rule_id = ?", arguments: [rule.rawValue]) ?? 0
  }

  func saveProximityPair(_ rule: ProximityRuleID, version: Int64, state: String, ownerFixAt: Int64?, otherFixAt: Int64?)
    throws
  {
    try db.execute(
      sql: """
        INSERT INTO proximity_states(rule_id, version, state, owner_fix_at, other_fix_at) VALUES (?, ?, ?, ?, ?)
        ON CONFLICT(rule_id) DO UPDATE SET version = excluded.version, state = excluded.state,
          owner_fix_at = excluded.owner_fix_at, other_fix_at = excluded.other_fix_at
        """,
      arguments: [rule.rawValue, version, state, ownerFixAt, otherFixAt])
  }

  func insertProximityEvent(_ event: GeofenceEventItem) throws {
    guard let detail = event.proximity else { return }
    try db.execute(
      sql: """
        INSERT OR IGNORE INTO proximity_events(id, rule_id, owner_id, user_id, kind, occurred_at, radius, latitude,
          longitude, accuracy)
        SELECT ?, id, owner_id, ?, ?, ?, ?, ?, ?, ? FROM proximity_rules WHERE id = ?
        """,
      arguments: [
        event.id, event.userId.rawValue, detail.kind.rawValue, event.timestamp, detail.radius, event.lat, event.lon,
        event.accuracy, detail.ruleId.rawValue,
      ])
  }
}
