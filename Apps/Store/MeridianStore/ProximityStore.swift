import DomainKit
import Foundation
import MeridianAPI
import MeridianSecrets

/// Proximity rules ("tell me when A and B are within R metres"), each pair's versioned rule state and the events.
///
/// The state of a pair (``ProximityPairState``) is versioned like a person's geofence tracking: the server reads it,
/// applies DomainKit's ``ProximityRules`` to a fix of either person and commits the new state with its events only if
/// nobody committed since (``commitProximityPair(_:)`` answers false and the server reads again). Each side's newest
/// evaluated fix is kept, so a fix evaluated again (another node, a restart before its queue entry left) changes
/// nothing, and events are unique by id.
public protocol ProximityStore: Sendable {
  /// Stores a new rule (validated by the caller).
  /// - Throws: ``ProximityStoreError/duplicateID(_:)``.
  func createProximityRule(_ rule: ProximityRuleItem) async throws
  /// One rule, nil when there is none.
  func proximityRule(_ id: ProximityRuleID) async throws -> ProximityRuleItem?
  /// The rules `owner` made, oldest first.
  func proximityRules(owner: UserID) async throws -> [ProximityRuleItem]
  /// The rules naming `person` as their owner or their other person, oldest first.
  func proximityRules(involving person: UserID) async throws -> [ProximityRuleItem]
  /// Deletes a rule with its state and events; false when there was none.
  func deleteProximityRule(_ id: ProximityRuleID) async throws -> Bool
  /// The stored state of each of `rules` that has one.
  func proximityPairStates(_ rules: [ProximityRuleID]) async throws -> [ProximityRuleID: ProximityPairState]
  /// A page of the events of the rules `query.involving` owns, newest first, by the same filters as
  /// ``GeofenceStore/geofenceEvents(_:)`` (`geofence` is a rule's id, `user` the rule's other person, `kind` the
  /// geofence kind the proximity kind reads as). Pages by (time, sequence) like geofence events.
  func proximityEvents(_ query: GeofenceEventQuery) async throws -> GeofenceEventPage
}

/// Why the proximity store refused a change.
public enum ProximityStoreError: Error, Sendable, Hashable, CustomStringConvertible {
  /// A rule with this id exists.
  case duplicateID(ProximityRuleID)

  /// What went wrong.
  public var description: String {
    switch self {
    case .duplicateID(let id): "a proximity rule with id \(id) exists"
    }
  }
}

/// A pair's rule state.
public struct ProximityPairState: Sendable, Hashable {
  /// Increases with every commit; 0 before the first.
  public var version: Int64
  /// The pair's state (near is "inside").
  public var state: GeofenceState
  /// The owner's newest evaluated fix, UTC ms.
  public var ownerFixAt: Int64?
  /// The other person's newest evaluated fix, UTC ms.
  public var otherFixAt: Int64?

  /// A state.
  public init(
    version: Int64 = 0, state: GeofenceState = GeofenceState(), ownerFixAt: Int64? = nil, otherFixAt: Int64? = nil
  ) {
    self.version = version
    self.state = state
    self.ownerFixAt = ownerFixAt
    self.otherFixAt = otherFixAt
  }

  /// The newest evaluated fix of `person`'s side of `rule`.
  public func lastFixAt(of person: UserID, in rule: ProximityRuleItem) -> Int64? {
    person == rule.ownerId ? ownerFixAt : otherFixAt
  }

  /// This state with `person`'s side of `rule` evaluated up to `timestamp`.
  public func evaluated(_ person: UserID, in rule: ProximityRuleItem, upTo timestamp: Int64) -> ProximityPairState {
    var next = self
    if person == rule.ownerId { next.ownerFixAt = timestamp } else { next.otherFixAt = timestamp }
    return next
  }
}

/// A pair's new state to commit.
public struct ProximityPairUpdate: Sendable, Hashable {
  /// The rule.
  public var rule: ProximityRuleID
  /// The version read; the commit fails when the stored one differs.
  public var version: Int64
  /// The new state.
  public var state: ProximityPairState
  /// Events to store (``GeofenceEventItem/proximity(_:kind:timestamp:position:)``).
  public var events: [GeofenceEventItem]
  /// Webhook events to queue in the same transaction.
  public var webhookEvents: [WebhookEvent]

  /// An update.
  public init(
    rule: ProximityRuleID, version: Int64, state: ProximityPairState, events: [GeofenceEventItem] = [],
    webhookEvents: [WebhookEvent] = []
  ) {
    self.rule = rule
    self.version = version
    self.state = state
    self.events = events
    self.webhookEvents = webhookEvents
  }
}

/// Proximity rules' primitives in one transaction (``StoreTransaction``).
public protocol ProximityTransaction: Sendable {
  /// The pair's version (0 before its first commit; nil when the rule is gone), its row held until the transaction
  /// ends.
  func lockProximityPair(_ rule: ProximityRuleID) async throws -> Int64?
  /// Stores the pair's state (encoded) with `version` (after ``lockProximityPair(_:)``).
  func saveProximityPair(_ rule: ProximityRuleID, version: Int64, state: String, ownerFixAt: Int64?, otherFixAt: Int64?)
    async throws
  /// Stores `event` (a proximity rule's) unless an event with its id is stored or its rule is gone.
  func insertProximityEvent(_ event: GeofenceEventItem) async throws
}

extension StoreTransaction {
  /// Stores `update` if the pair's version is still `update.version`: the state, its events and their webhook
  /// deliveries in this transaction; false (nothing stored) when another commit came first or the rule is gone.
  public func commitProximityPair(_ update: ProximityPairUpdate) async throws -> Bool {
    let state = try update.state.state.encoded()
    guard let version = try await lockProximityPair(update.rule), version == update.version else { return false }
    try await saveProximityPair(
      update.rule, version: version + 1, state: state, ownerFixAt: update.state.ownerFixAt,
      otherFixAt: update.state.otherFixAt)
    for event in update.events { try await insertProximityEvent(event) }
    for event in update.webhookEvents { try await enqueueWebhookEvent(event) }
    return true
  }
}

extension ProximityStore where Self: StoreTransactions {
  /// Stores `update` in a transaction of its own (``StoreTransaction/commitProximityPair(_:)``).
  public func commitProximityPair(_ update: ProximityPairUpdate) async throws -> Bool {
    try await write { tx in try await tx.commitProximityPair(update) }
  }
}

extension GeofenceEventItem {
  /// The event of proximity rule `rule` of `kind` at `timestamp`, with the other person's position `position`.
  public static func proximity(
    _ rule: ProximityRuleItem, kind: ProximityEventKind, timestamp: Int64, position: LocationFix?
  ) -> GeofenceEventItem {
    proximity(
      id: proximityEventID(rule: rule.id, kind: kind, timestamp: timestamp), rule: rule.id, owner: rule.ownerId,
      other: rule.userId, kind: kind, timestamp: timestamp, radius: rule.radius, latitude: position?.latitude,
      longitude: position?.longitude, accuracy: position?.horizontalAccuracy)
  }

  /// A proximity event as stored (the wire shape of ``ProximityEventDetail``: the rule's id as `geofenceId`, no
  /// name, `kind` read as the geofence kind).
  public static func proximity(
    id: String, rule: ProximityRuleID, owner: UserID, other: UserID, kind: ProximityEventKind, timestamp: Int64,
    radius: Double, latitude: Double?, longitude: Double?, accuracy: Double?
  ) -> GeofenceEventItem {
    GeofenceEventItem(
      id: id, geofenceId: GeofenceID(rule.rawValue), geofenceName: "", ownerId: owner, userId: other,
      kind: kind.geofenceKind, timestamp: timestamp, reportedBy: .server, lat: latitude, lon: longitude,
      accuracy: accuracy, proximity: ProximityEventDetail(ruleId: rule, kind: kind, radius: radius))
  }

  /// The id of rule `rule`'s event of `kind` at `timestamp`: the same on every node and after a restart.
  public static func proximityEventID(rule: ProximityRuleID, kind: ProximityEventKind, timestamp: Int64) -> String {
    String(SecretHash.sha256("proximity\u{1F}\(rule.rawValue)\u{1F}\(kind.rawValue)\u{1F}\(timestamp)").prefix(32))
  }
}

extension MeridianStore {
  /// A page of `query`'s geofence events and the events of the proximity rules `query.involving` owns, merged
  /// newest first. The page's cursor names its last event's place in either list: a geofence event's sequence as it
  /// is, a proximity event's negated (at one time, geofence events come first, then proximity events, each list in
  /// its own order).
  public func geofenceAndProximityEvents(_ query: GeofenceEventQuery) async throws -> GeofenceEventPage {
    var fenceQuery = query
    var proximityQuery = query
    if let cursor = query.cursor {
      if cursor.row >= 0 {
        proximityQuery.cursor = HistoryCursor(timestamp: cursor.timestamp, row: .max)
      } else {
        fenceQuery.cursor = HistoryCursor(timestamp: cursor.timestamp, row: .min)
        // Negated back; a cursor no page gives (the smallest row, whose negation overflows) reads as the largest.
        proximityQuery.cursor = HistoryCursor(
          timestamp: cursor.timestamp, row: cursor.row == .min ? .max : -cursor.row)
      }
    }
    let fences = try await geofenceEvents(fenceQuery)
    let pairs =
      query.involving == nil ? GeofenceEventPage(events: [], next: nil) : try await proximityEvents(proximityQuery)
    let limit = max(1, query.limit)
    var merged: [(event: GeofenceEventItem, row: Int64?)] = []
    var (f, p) = (0, 0)
    while merged.count < limit, f < fences.events.count || p < pairs.events.count {
      let takeFence =
        p >= pairs.events.count
        || (f < fences.events.count && fences.events[f].timestamp >= pairs.events[p].timestamp)
      if takeFence {
        merged.append((fences.events[f], fences.positions[safe: f]))
        f += 1
      } else {
        merged.append((pairs.events[p], pairs.positions[safe: p].map { -$0 }))
        p += 1
      }
    }
    let more = f < fences.events.count || p < pairs.events.count || fences.next != nil || pairs.next != nil
    let next =
      more
      ? merged.last.flatMap { last in last.row.map { HistoryCursor(timestamp: last.event.timestamp, row: $0) } } : nil
    return GeofenceEventPage(events: merged.map(\.event), next: next)
  }
}

extension Array {
  fileprivate subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}
