import DomainKit
import Foundation
import MeridianAPI
import MeridianStore
import PostgresNIO

extension PostgresStore: ProximityStore {
  static func proximityRule(_ row: PostgresRow) throws -> ProximityRuleItem {
    let (id, owner, other, radius, createdAt) = try row.decode((String, String, String, Double, Int64).self)
    return ProximityRuleItem(
      id: ProximityRuleID(id), ownerId: UserID(owner), userId: UserID(other), radius: radius, createdAt: createdAt)
  }

  public func createProximityRule(_ rule: ProximityRuleItem) async throws {
    do {
      try await execute(
        """
        INSERT INTO proximity_rules(id, owner_id, other_id, radius, created_at)
        VALUES (\(rule.id.rawValue), \(rule.ownerId.rawValue), \(rule.userId.rawValue), \(rule.radius),
          \(rule.createdAt))
        """)
    } catch  where Self.sqlState(error) == "23505" {
      throw ProximityStoreError.duplicateID(rule.id)
    }
  }

  public func proximityRule(_ id: ProximityRuleID) async throws -> ProximityRuleItem? {
    try await rows(
      "SELECT id, owner_id, other_id, radius, created_at FROM proximity_rules WHERE id = \(id.rawValue)"
    ).first.map(Self.proximityRule)
  }

  public func proximityRules(owner: UserID) async throws -> [ProximityRuleItem] {
    try await rows(
      """
      SELECT id, owner_id, other_id, radius, created_at FROM proximity_rules WHERE owner_id = \(owner.rawValue)
      ORDER BY created_at, id
      """
    ).map(Self.proximityRule)
  }

  public func proximityRules(involving person: UserID) async throws -> [ProximityRuleItem] {
    try await rows(
      """
      SELECT id, owner_id, other_id, radius, created_at FROM proximity_rules WHERE owner_id = \(person.rawValue)
      UNION SELECT id, owner_id, other_id, radius, created_at FROM proximity_rules WHERE other_id = \(person.rawValue)
      ORDER BY created_at, id
      """
    ).map(Self.proximityRule)
  }

  public func deleteProximityRule(_ id: ProximityRuleID) async throws -> Bool {
    !(try await rows("DELETE FROM proximity_rules WHERE id = \(id.rawValue) RETURNING 1").isEmpty)
  }

  public func proximityPairStates(_ rules: [ProximityRuleID]) async throws -> [ProximityRuleID: ProximityPairState] {
    guard !rules.isEmpty else { return [:] }
    var states: [ProximityRuleID: ProximityPairState] = [:]
    for row in try await rows(
      """
      SELECT rule_id, version, state, owner_fix_at, other_fix_at FROM proximity_states
      WHERE rule_id = ANY(\(rules.map(\.rawValue))::text[])
      """)
    {
      let (rule, version, state, ownerFixAt, otherFixAt) = try row.decode(
        (String, Int64, String, Int64?, Int64?).self)
      states[ProximityRuleID(rule)] = ProximityPairState(
        version: version, state: try GeofenceState.decoded(state), ownerFixAt: ownerFixAt, otherFixAt: otherFixAt)
    }
    return states
  }

  public func proximityEvents(_ query: GeofenceEventQuery) async throws -> GeofenceEventPage {
    guard let owner = query.involving else { return GeofenceEventPage(events: [], next: nil) }
    var conditions: [String] = []
    var bindings = PostgresBindings()
    func bind(_ value: some PostgresEncodable) throws -> String {
      try bindings.append(value)
      return "$\(bindings.count)"
    }
    conditions.append("owner_id = \(try bind(owner.rawValue))")
    if let rule = query.geofence { conditions.append("rule_id = \(try bind(rule.rawValue))") }
    if let user = query.user { conditions.append("user_id = \(try bind(user.rawValue))") }
    if let kind = query.kind { conditions.append("kind = \(try bind(ProximityEventKind(kind).rawValue))") }
    conditions += try Self.eventPageConditions(query, bind: bind)
    let limit = max(1, query.limit)
    let sql = """
      SELECT id, rule_id, owner_id, user_id, kind, occurred_at, radius, latitude, longitude, accuracy, seq
      FROM proximity_events WHERE \(conditions.joined(separator: " AND "))
      ORDER BY occurred_at DESC, seq DESC LIMIT \(limit + 1)
      """
    let rows = try await rows(PostgresQuery(unsafeSQL: sql, binds: bindings)).map { row in
      let (id, rule, owner, user, kindText, time, radius, lat, lon, accuracy, seq) = try row.decode(
        (String, String, String, String, String, Int64, Double, Double?, Double?, Double?, Int64).self)
      let event = GeofenceEventItem.proximity(
        id: id, rule: ProximityRuleID(rule), owner: UserID(owner), other: UserID(user),
        kind: ProximityEventKind(rawValue: kindText) ?? .near, timestamp: time, radius: radius, latitude: lat,
        longitude: lon, accuracy: accuracy)
      return (event, seq)
    }
    let page = rows.prefix(limit)
    let next = rows.count > limit ? page.last.map { HistoryCursor(timestamp: $0.0.timestamp, row: $0.1) } : nil
    return GeofenceEventPage(events: page.map(\.0), next: next, positions: page.map(\.1))
  }
}

extension PostgresTransaction {
  /// Takes the pair's row (created at version 0 when missing); nil when the rule is gone.
  func lockProximityPair(_ rule: ProximityRuleID) async throws -> Int64? {
    try await rows(
      """
      INSERT INTO proximity_states(rule_id, version, state)
      SELECT id, 0, '{}' FROM proximity_rules WHERE id = \(rule.rawValue)
      ON CONFLICT (rule_id) DO UPDATE SET version = proximity_states.version
      RETURNING version
      """
    ).first?.decode(Int64.self)
  }

  func saveProximityPair(_ rule: ProximityRuleID, version: Int64, state: String, ownerFixAt: Int64?, otherFixAt: Int64?)
    async throws
  {
    _ = try await rows(
      """
      UPDATE proximity_states SET version = \(version), state = \(state), owner_fix_at = \(ownerFixAt),
        other_fix_at = \(otherFixAt)
      WHERE rule_id = \(rule.rawValue)
      """)
  }

  func insertProximityEvent(_ event: GeofenceEventItem) async throws {
    guard let detail = event.proximity else { return }
    _ = try await rows(
      """
      INSERT INTO proximity_events(id, rule_id, owner_id, user_id, kind, occurred_at, radius, latitude, longitude,
        accuracy)
      SELECT \(event.id), id, owner_id, \(event.userId.rawValue), \(detail.kind.rawValue), \(event.timestamp),
        \(detail.radius), \(event.lat), \(event.lon), \(event.accuracy)
      FROM proximity_rules WHERE id = \(detail.ruleId.rawValue)
      ON CONFLICT (id) DO NOTHING
      """)
  }
}
