import DomainKit
import Foundation
import GeoKit
import Logging
import MeridianAPI
import MeridianStore
import PostgresNIO

extension PostgresStore: GeofenceStore {
  static let geofenceColumns = """
    id, owner_id, name, shape, sharing, group_id, source, external_id, created_at, updated_at, alert_rule
    """

  static func geofence(_ row: PostgresRow) throws -> GeofenceItem {
    let (id, owner, name, shape, sharing, group, source, external, createdAt, updatedAt, alerts) = try row.decode(
      (String, String, String, String, String, String?, String, String?, Int64, Int64, String?).self)
    return GeofenceItem(
      id: GeofenceID(id), ownerId: UserID(owner), name: name, shape: try GeofenceShape.decoded(shape),
      sharing: GeofenceSharing(rawValue: sharing) ?? .nobody, groupId: group.map { GroupID($0) },
      source: GeofenceSource(rawValue: source) ?? .server, externalId: external,
      alerts: try GeofenceAlertRule.decoded(alerts), createdAt: createdAt, updatedAt: updatedAt)
  }

  static func geofenceEvent(_ row: PostgresRow) throws -> (GeofenceEventItem, Int64) {
    let r = row.makeRandomAccess()
    let event = GeofenceEventItem(
      id: try r[0].decode(String.self), geofenceId: GeofenceID(try r[1].decode(String.self)),
      geofenceName: try r[2].decode(String.self), ownerId: UserID(try r[3].decode(String.self)),
      userId: UserID(try r[4].decode(String.self)),
      kind: GeofenceEventKind(rawValue: try r[5].decode(String.self)) ?? .enter,
      timestamp: try r[6].decode(Int64.self),
      reportedBy: GeofenceSource(rawValue: try r[7].decode(String.self)) ?? .server,
      lat: try r[8].decode(Double?.self), lon: try r[9].decode(Double?.self),
      accuracy: try r[10].decode(Double?.self), alerted: try r[12].decode(Bool.self))
    return (event, try r[11].decode(Int64.self))
  }

  /// The bounding box of `shape` as well-known text: one box, or two across the antimeridian.
  static func areaText(_ shape: GeofenceShape) -> String {
    let parts = shape.geofence.boundingBox.antimeridianSplit.map { box in
      let (s, w, n, e) = (box.south, box.west, box.north, box.east)
      return "((\(w) \(s), \(e) \(s), \(e) \(n), \(w) \(n), \(w) \(s)))"
    }
    return "MULTIPOLYGON(\(parts.joined(separator: ", ")))"
  }

  public func createGeofence(_ geofence: GeofenceItem) async throws {
    let shape = try geofence.shape.encoded()
    let alerts = try geofence.alerts?.encoded()
    let area = Self.areaText(geofence.shape)
    do {
      try await execute(
        """
        INSERT INTO geofences(id, owner_id, name, shape, sharing, group_id, source, external_id, area, created_at,
          updated_at, alert_rule)
        VALUES (\(geofence.id.rawValue), \(geofence.ownerId.rawValue), \(geofence.name), \(shape),
          \(geofence.sharing.rawValue), \(geofence.groupId?.rawValue), \(geofence.source.rawValue),
          \(geofence.externalId), ST_GeomFromText(\(area), 4326), \(geofence.createdAt), \(geofence.updatedAt),
          \(alerts))
        """)
    } catch  where Self.sqlState(error) == "23505" {
      throw GeofenceStoreError.duplicateID(geofence.id)
    }
  }

  public func geofence(_ id: GeofenceID) async throws -> GeofenceItem? {
    try await rows(
      "SELECT \(unescaped: Self.geofenceColumns) FROM geofences WHERE id = \(id.rawValue)"
    ).first.map(Self.geofence)
  }

  public func geofences(owners: [UserID]) async throws -> [GeofenceItem] {
    guard !owners.isEmpty else { return [] }
    return try await rows(
      """
      SELECT \(unescaped: Self.geofenceColumns) FROM geofences WHERE owner_id = ANY(\(owners.map(\.rawValue))::text[])
      ORDER BY created_at, id
      """
    ).map(Self.geofence)
  }

  public func geofence(owner: UserID, externalID: String) async throws -> GeofenceItem? {
    try await rows(
      """
      SELECT \(unescaped: Self.geofenceColumns) FROM geofences
      WHERE owner_id = \(owner.rawValue) AND external_id = \(externalID)
      """
    ).first.map(Self.geofence)
  }

  public func updateGeofence(_ geofence: GeofenceItem) async throws -> Bool {
    let shape = try geofence.shape.encoded()
    let alerts = try geofence.alerts?.encoded()
    let area = Self.areaText(geofence.shape)
    return
      !(try await rows(
        """
        UPDATE geofences SET name = \(geofence.name), shape = \(shape), sharing = \(geofence.sharing.rawValue),
          group_id = \(geofence.groupId?.rawValue), source = \(geofence.source.rawValue),
          external_id = \(geofence.externalId), area = ST_GeomFromText(\(area), 4326), updated_at = \(geofence.updatedAt),
          alert_rule = \(alerts)
        WHERE id = \(geofence.id.rawValue) RETURNING 1
        """
      ).isEmpty)
  }

  public func deleteGeofence(_ id: GeofenceID) async throws -> Bool {
    !(try await rows("DELETE FROM geofences WHERE id = \(id.rawValue) RETURNING 1").isEmpty)
  }

  public func geofences(near point: Coordinate, owners: [UserID]) async throws -> [GeofenceItem] {
    try await geofences(near: [point], owners: owners)
  }

  /// The query of ``geofences(near:owners:)``: the fences whose area meets the points' envelope (GiST on `area`).
  static func geofenceCandidatesQuery(near points: [Coordinate], owners: [UserID]) -> PostgresQuery {
    """
    SELECT \(unescaped: Self.geofenceColumns) FROM geofences
    WHERE area && ST_MakeEnvelope(\(points.map(\.longitude).min() ?? 0), \(points.map(\.latitude).min() ?? 0),
        \(points.map(\.longitude).max() ?? 0), \(points.map(\.latitude).max() ?? 0), 4326)
      AND owner_id = ANY(\(owners.map(\.rawValue))::text[])
    ORDER BY id
    """
  }

  public func geofences(near points: [Coordinate], owners: [UserID]) async throws -> [GeofenceItem] {
    guard !owners.isEmpty, !points.isEmpty else { return [] }
    // One GiST lookup with the points' envelope, then each fence's box against each point.
    let candidates = try await rows(Self.geofenceCandidatesQuery(near: points, owners: owners)).map(Self.geofence)
    return candidates.filter { fence in
      let box = fence.shape.geofence.boundingBox
      return points.contains { box.contains($0) }
    }
  }

  public func geofences(ids: [GeofenceID]) async throws -> [GeofenceItem] {
    guard !ids.isEmpty else { return [] }
    return try await rows(
      """
      SELECT \(unescaped: Self.geofenceColumns) FROM geofences WHERE id = ANY(\(ids.map(\.rawValue))::text[])
      ORDER BY id
      """
    ).map(Self.geofence)
  }

  public func geofenceTracking(of user: UserID) async throws -> GeofenceTracking {
    var tracking = GeofenceTracking()
    if let row = try await rows(
      """
      SELECT version, last_fix_at, last_latitude, last_longitude, last_accuracy FROM geofence_trackers
      WHERE user_id = \(user.rawValue)
      """
    ).first {
      let (version, lastFixAt, latitude, longitude, accuracy) = try row.decode(
        (Int64, Int64?, Double?, Double?, Double?).self)
      (tracking.version, tracking.lastFixAt) = (version, lastFixAt)
      tracking.lastPosition = GeofencePosition(latitude: latitude, longitude: longitude, accuracy: accuracy)
    }
    for row in try await rows("SELECT geofence_id, state FROM geofence_states WHERE user_id = \(user.rawValue)") {
      let (id, state) = try row.decode((String, String).self)
      tracking.states[GeofenceID(id)] = try GeofenceState.decoded(state)
    }
    return tracking
  }

  /// The conditions of a page of events that geofence and proximity events share: `from` and `to` on `occurred_at`,
  /// and the cursor on (`occurred_at`, `seq`), each value bound by `bind`.
  static func eventPageConditions(_ query: GeofenceEventQuery, bind: (Int64) throws -> String) throws -> [String] {
    var conditions: [String] = []
    if let from = query.from { conditions.append("occurred_at >= \(try bind(from))") }
    if let to = query.to { conditions.append("occurred_at <= \(try bind(to))") }
    if let cursor = query.cursor {
      let time = try bind(cursor.timestamp)
      let seq = try bind(cursor.row)
      conditions.append("(occurred_at, seq) < (\(time), \(seq))")
    }
    return conditions
  }

  public func geofenceEvents(_ query: GeofenceEventQuery) async throws -> GeofenceEventPage {
    var conditions: [String] = []
    var bindings = PostgresBindings()
    func bind(_ value: some PostgresEncodable) throws -> String {
      try bindings.append(value)
      return "$\(bindings.count)"
    }
    if let involving = query.involving {
      let user = try bind(involving.rawValue)
      conditions.append("(user_id = \(user) OR (owner_id = \(user) AND owner_sees))")
    }
    if let geofence = query.geofence { conditions.append("geofence_id = \(try bind(geofence.rawValue))") }
    if let user = query.user { conditions.append("user_id = \(try bind(user.rawValue))") }
    if let kind = query.kind { conditions.append("kind = \(try bind(kind.rawValue))") }
    conditions += try Self.eventPageConditions(query, bind: bind)
    let limit = max(1, query.limit)
    let sql = """
      SELECT id, geofence_id, geofence_name, owner_id, user_id, kind, occurred_at, reported_by, latitude, longitude,
        accuracy, seq, alerted
      FROM geofence_events WHERE \(conditions.isEmpty ? "true" : conditions.joined(separator: " AND "))
      ORDER BY occurred_at DESC, seq DESC LIMIT \(limit + 1)
      """
    let rows = try await rows(PostgresQuery(unsafeSQL: sql, binds: bindings)).map(Self.geofenceEvent)
    let page = rows.prefix(limit)
    let next = rows.count > limit ? page.last.map { HistoryCursor(timestamp: $0.0.timestamp, row: $0.1) } : nil
    return GeofenceEventPage(events: page.map(\.0), next: next, positions: page.map(\.1))
  }
}

extension PostgresTransaction {
  /// Takes the person's row, created at version 0 when missing.
  func lockGeofenceTracker(of user: UserID) async throws -> Int64 {
    try await rows(
      """
      INSERT INTO geofence_trackers(user_id, version, last_fix_at) VALUES (\(user.rawValue), 0, NULL)
      ON CONFLICT (user_id) DO UPDATE SET version = geofence_trackers.version
      RETURNING version
      """
    ).first?.decode(Int64.self) ?? 0
  }

  func setGeofenceTracker(of user: UserID, version: Int64, lastFixAt: Int64?, at position: GeofencePosition?)
    async throws
  {
    _ = try await rows(
      """
      UPDATE geofence_trackers SET version = \(version), last_fix_at = \(lastFixAt),
        last_latitude = \(position?.latitude), last_longitude = \(position?.longitude),
        last_accuracy = \(position?.accuracy)
      WHERE user_id = \(user.rawValue)
      """)
  }

  /// One statement per 1,000 states (it was a round trip per state): their fences' ids and
  /// states as arrays, joined to the fences still there (a state of a fence deleted meanwhile is not kept). The ids
  /// are distinct (the keys of the update's states), as `ON CONFLICT DO UPDATE` needs within one statement.
  func saveGeofenceStates(_ states: [(geofence: GeofenceID, state: String)], of user: UserID) async throws {
    for chunk in states.chunks(of: 1_000) {
      _ = try await rows(
        """
        INSERT INTO geofence_states(user_id, geofence_id, state)
        SELECT \(user.rawValue), g.id, s.state
        FROM unnest(\(chunk.map(\.geofence.rawValue))::text[], \(chunk.map(\.state))::text[]) AS s(id, state)
        JOIN geofences g ON g.id = s.id
        ON CONFLICT (user_id, geofence_id) DO UPDATE SET state = excluded.state
        """)
    }
  }

  func removeGeofenceStates(_ geofences: [GeofenceID], of user: UserID) async throws {
    _ = try await rows(
      """
      DELETE FROM geofence_states
      WHERE user_id = \(user.rawValue) AND geofence_id = ANY(\(geofences.map(\.rawValue))::text[])
      """)
  }

  /// One statement per 1,000 events: their columns as arrays, joined to the fences still there, inserted in their
  /// order (the order of `seq`).
  func insertGeofenceEvents(_ events: [(event: GeofenceEventItem, ownerSees: Bool)]) async throws {
    for chunk in events.chunks(of: 1_000) {
      let items = chunk.map(\.event)
      _ = try await rows(
        """
        INSERT INTO geofence_events(id, geofence_id, geofence_name, owner_id, user_id, kind, occurred_at,
          reported_by, latitude, longitude, accuracy, owner_sees, alerted)
        SELECT e.id, g.id, e.name, g.owner_id, e.user_id, e.kind, e.occurred_at, e.reported_by, e.latitude,
          e.longitude, e.accuracy, e.owner_sees, e.alerted
        FROM unnest(
          \(items.map(\.id))::text[], \(items.map(\.geofenceId.rawValue))::text[], \(items.map(\.geofenceName))::text[],
          \(items.map(\.userId.rawValue))::text[], \(items.map(\.kind.rawValue))::text[],
          \(items.map(\.timestamp))::bigint[], \(items.map(\.reportedBy.rawValue))::text[],
          \(NullableArray(items.map(\.lat)))::double precision[], \(NullableArray(items.map(\.lon)))::double precision[],
          \(NullableArray(items.map(\.accuracy)))::double precision[], \(chunk.map(\.ownerSees))::boolean[],
          \(items.map(\.alerted))::boolean[]
        ) WITH ORDINALITY AS e(id, geofence_id, name, user_id, kind, occurred_at, reported_by, latitude, longitude,
          accuracy, owner_sees, alerted, n)
        JOIN geofences g ON g.id = e.geofence_id
        ORDER BY e.n
        ON CONFLICT (id) DO NOTHING
        """)
    }
  }

  /// Removes the entries, then keeps the live-only rule for their users: the fixes the entries held back go.
  func removeGeofenceQueueEntries(_ sequences: [UInt64]) async throws {
    let owners = try await PostgresStore.column(
      String.self,
      "SELECT DISTINCT user_id FROM geofence_queue WHERE sequence = ANY(\(sequences.map { Int64(clamping: $0) })::bigint[])",
      on: connection, logger: logger)
    let liveOnly = try await PostgresStore.lockLiveOnly(owners, on: connection, logger: logger)
    _ = try await rows(
      "DELETE FROM geofence_queue WHERE sequence = ANY(\(sequences.map { Int64(clamping: $0) })::bigint[])")
    _ = try await PostgresStore.keepLastPosition(of: liveOnly, on: connection, logger: logger)
  }
}
