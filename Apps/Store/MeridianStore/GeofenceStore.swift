import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import MeridianSecrets

/// Geofences, the rules' state per (person, geofence) and the events they produced.
///
/// The lookup of the fences near a fix is an index, never a scan: on SQLite each fence's bounding box is covered by
/// GeoKit geohash cells stored in an indexed table, on PostgreSQL its box is a PostGIS geometry with a GiST index.
///
/// The state of one person (``GeofenceTracking``) is versioned: the server reads it, applies DomainKit's
/// ``GeofenceRules`` to a fix and commits the new state with the events only if nobody committed since
/// (``commitGeofenceTracking(_:)`` answers false, and the server reads again), so two nodes or a restart continue
/// where the other left and never store an event twice (events are unique by id, see
/// ``GeofenceEventItem/eventID(geofence:user:kind:timestamp:)``).
public protocol GeofenceStore: Sendable {
  // MARK: Geofences

  /// Stores a new geofence (validated by the caller).
  /// - Throws: ``GeofenceStoreError/duplicateID(_:)``.
  func createGeofence(_ geofence: GeofenceItem) async throws
  /// One geofence, nil when there is none.
  func geofence(_ id: GeofenceID) async throws -> GeofenceItem?
  /// The geofences of these owners, oldest first.
  func geofences(owners: [UserID]) async throws -> [GeofenceItem]
  /// The device-made geofence of `owner` with the device's key `externalID`, if any.
  func geofence(owner: UserID, externalID: String) async throws -> GeofenceItem?
  /// Replaces a geofence's fields (not its id, owner or creation time); false when there is none.
  func updateGeofence(_ geofence: GeofenceItem) async throws -> Bool
  /// Deletes a geofence with its states and events; false when there was none.
  func deleteGeofence(_ id: GeofenceID) async throws -> Bool
  /// The geofences of `owners` whose bounding box contains `point` (an index lookup), by id.
  func geofences(near point: Coordinate, owners: [UserID]) async throws -> [GeofenceItem]
  /// The geofences of `owners` whose bounding box contains at least one of `points` (one index lookup for a batch
  /// of fixes), by id.
  func geofences(near points: [Coordinate], owners: [UserID]) async throws -> [GeofenceItem]
  /// The geofences among `ids` that exist, by id.
  func geofences(ids: [GeofenceID]) async throws -> [GeofenceItem]

  // MARK: State and events

  /// `user`'s state: the newest fix evaluated and the state per geofence (none for a fence they are outside of).
  func geofenceTracking(of user: UserID) async throws -> GeofenceTracking
  /// Stores a new state, its events and their webhook deliveries (``GeofenceTrackingUpdate/webhookEvents``, queued
  /// like ``WebhookStore/enqueueWebhookEvent(_:)``) and removes the geofence queue entries it evaluated
  /// (``GeofenceTrackingUpdate/evaluatedEntries``) in one transaction if the state's version is still
  /// `update.version`; false (nothing stored or removed) when another commit came first. Events already stored (same
  /// id) are skipped.
  func commitGeofenceTracking(_ update: GeofenceTrackingUpdate) async throws -> Bool
  /// A page of events, newest first. An event the fence's owner could not see when it happened
  /// (``GeofenceTrackingUpdate/unseenByOwner``) is never listed to that owner as an event on their fence.
  func geofenceEvents(_ query: GeofenceEventQuery) async throws -> GeofenceEventPage
}

/// Why the geofence store refused a change.
public enum GeofenceStoreError: Error, Sendable, Hashable, CustomStringConvertible {
  /// A geofence with this id exists.
  case duplicateID(GeofenceID)

  /// What went wrong.
  public var description: String {
    switch self {
    case .duplicateID(let id): "a geofence with id \(id) exists"
    }
  }
}

/// A person's rule state across geofences.
public struct GeofenceTracking: Sendable, Hashable {
  /// Increases with every commit; 0 before the first.
  public var version: Int64
  /// The newest fix evaluated, UTC ms.
  public var lastFixAt: Int64?
  /// Where that fix was (nil before the first, or for a tracker stored before positions were kept).
  public var lastPosition: GeofencePosition?
  /// The state per geofence, for the fences the person isn't known to be outside of.
  public var states: [GeofenceID: GeofenceState]

  /// A tracking state.
  public init(
    version: Int64 = 0, lastFixAt: Int64? = nil, lastPosition: GeofencePosition? = nil,
    states: [GeofenceID: GeofenceState] = [:]
  ) {
    self.version = version
    self.lastFixAt = lastFixAt
    self.lastPosition = lastPosition
    self.states = states
  }
}

extension GeofenceTracking {
  /// The tracking `update` (read at this tracking's version) leaves stored once committed: the next version, its
  /// newest fix and position, its states set, then those it removes removed (as the store does them). The store
  /// also drops the states of fences deleted meanwhile, which this keeps (the next evaluation removes them, as it
  /// does any state of a fence that is gone).
  public func applying(_ update: GeofenceTrackingUpdate) -> GeofenceTracking {
    var next = GeofenceTracking(
      version: update.version + 1, lastFixAt: update.lastFixAt, lastPosition: update.lastPosition, states: states)
    next.states.merge(update.states) { _, new in new }
    for id in update.removed { next.states.removeValue(forKey: id) }
    return next
  }
}

/// Where a person's newest evaluated fix was, and how accurate it was.
public struct GeofencePosition: Sendable, Hashable {
  /// Degrees.
  public var latitude: Double
  /// Degrees.
  public var longitude: Double
  /// Metres (nil: not reported).
  public var accuracy: Double?

  /// A position.
  public init(latitude: Double, longitude: Double, accuracy: Double?) {
    self.latitude = latitude
    self.longitude = longitude
    self.accuracy = accuracy
  }

  /// A stored row's position: nil unless both latitude and longitude are there.
  public init?(latitude: Double?, longitude: Double?, accuracy: Double?) {
    guard let latitude, let longitude else { return nil }
    self.init(latitude: latitude, longitude: longitude, accuracy: accuracy)
  }
}

/// A new state to commit.
public struct GeofenceTrackingUpdate: Sendable, Hashable {
  /// The person.
  public var userID: UserID
  /// The version read; the commit fails when the stored one differs.
  public var version: Int64
  /// The newest fix evaluated.
  public var lastFixAt: Int64?
  /// Where it was.
  public var lastPosition: GeofencePosition?
  /// States to store.
  public var states: [GeofenceID: GeofenceState]
  /// States to drop (the person is plainly outside).
  public var removed: [GeofenceID]
  /// Events to store.
  public var events: [GeofenceEventItem]
  /// Webhook events to queue in the same transaction (so that no stored event misses its webhooks).
  public var webhookEvents: [WebhookEvent]
  /// The ids of those `events` whose fence's owner was not in their audience: the person's location was not theirs
  /// to see when it happened. Recorded with the event, so sharing that starts later doesn't reveal it.
  public var unseenByOwner: Set<String>
  /// The ``GeofenceQueue`` entries this update evaluates: removed from the queue in its transaction, so that an
  /// evaluation is stored exactly when its entries leave the queue.
  public var evaluatedEntries: [UInt64]

  /// An update.
  public init(
    userID: UserID, version: Int64, lastFixAt: Int64?, lastPosition: GeofencePosition? = nil,
    states: [GeofenceID: GeofenceState] = [:], removed: [GeofenceID] = [], events: [GeofenceEventItem] = [],
    webhookEvents: [WebhookEvent] = [], unseenByOwner: Set<String> = [], evaluatedEntries: [UInt64] = []
  ) {
    self.userID = userID
    self.version = version
    self.lastFixAt = lastFixAt
    self.lastPosition = lastPosition
    self.states = states
    self.removed = removed
    self.events = events
    self.webhookEvents = webhookEvents
    self.unseenByOwner = unseenByOwner
    self.evaluatedEntries = evaluatedEntries
  }

  /// Whether the fence's owner may see `event` (one of ``events``) in their listings.
  public func ownerSees(_ event: GeofenceEventItem) -> Bool {
    event.ownerId == event.userId || !unseenByOwner.contains(event.id)
  }
}

/// Which events to list.
public struct GeofenceEventQuery: Sendable, Hashable {
  /// Events of this person, or on this owner's geofences (at least one of the two).
  public var involving: UserID?
  /// Only this geofence's.
  public var geofence: GeofenceID?
  /// Only this person's.
  public var user: UserID?
  /// Only this kind.
  public var kind: GeofenceEventKind?
  /// From this time on, UTC ms.
  public var from: Int64?
  /// Until this time, UTC ms.
  public var to: Int64?
  /// After this position (the previous page's last).
  public var cursor: HistoryCursor?
  /// Page size.
  public var limit: Int

  /// A query.
  public init(
    involving: UserID?, geofence: GeofenceID? = nil, user: UserID? = nil, kind: GeofenceEventKind? = nil,
    from: Int64? = nil, to: Int64? = nil, cursor: HistoryCursor? = nil, limit: Int = 50
  ) {
    self.involving = involving
    self.geofence = geofence
    self.user = user
    self.kind = kind
    self.from = from
    self.to = to
    self.cursor = cursor
    self.limit = limit
  }
}

/// A page of events.
public struct GeofenceEventPage: Sendable, Hashable {
  /// The events, newest first.
  public var events: [GeofenceEventItem]
  /// Where the next page starts, nil at the end.
  public var next: HistoryCursor?
  /// Each event's sequence in its list (the cursor's `row` after it), when the engine gives them.
  public var positions: [Int64]
  /// A page.
  public init(events: [GeofenceEventItem], next: HistoryCursor?, positions: [Int64] = []) {
    self.events = events
    self.next = next
    self.positions = positions
  }
}

extension GeofenceEventItem {
  /// The id of the event of `user` and `geofence` of `kind` at `timestamp`: the same on every node.
  public static func eventID(geofence: GeofenceID, user: UserID, kind: GeofenceEventKind, timestamp: Int64) -> String {
    String(
      SecretHash.sha256("\(geofence.rawValue)\u{1F}\(user.rawValue)\u{1F}\(kind.rawValue)\u{1F}\(timestamp)").prefix(32)
    )
  }
}

extension GeofenceState {
  /// The stored form of a state: a JSON object of its fields (absent ones left out), as `JSONEncoder` writes it,
  /// written directly (the geofence monitor stores a person's states on every commit).
  public func encoded() throws -> String {
    var text = "{\"presence\":\"\(presence.rawValue)\""
    if let since { text += ",\"since\":\(since)" }
    if let lastFixAt { text += ",\"lastFixAt\":\(lastFixAt)" }
    text += ",\"outsideStreak\":\(outsideStreak),\"dwellReported\":\(dwellReported)}"
    return text
  }

  /// A state from its stored form (both engines keep the text as written), in any key order and spacing: read with
  /// DomainKit's ``JSONTokenizer`` when it holds just the state's fields, else through `JSONDecoder`, which says
  /// what is wrong. The geofence monitor reads every state of a person on every commit; a `JSONDecoder` each
  /// took a seventh of the server's time under the geofence benchmark's load.
  public static func decoded(_ text: String) throws -> GeofenceState {
    if let state = StoredGeofenceState.read(text) { return state }
    return try JSONDecoder().decode(GeofenceState.self, from: Data(text.utf8))
  }
}

/// Reads a stored ``GeofenceState`` without `JSONDecoder`: nil for anything but a flat object of its known fields.
private enum StoredGeofenceState {
  /// Stops the tokenizer at the first thing the fast reading does not take.
  struct Unexpected: Error {}

  static func read(_ text: String) -> GeofenceState? {
    var tokenizer = JSONTokenizer()
    var state = GeofenceState()
    var (key, depth) = ("", 0)
    var (hasPresence, hasStreak, hasDwell) = (false, false, false)
    do {
      let take: JSONTokenizer.Emit = { event, _ in
        switch event {
        case .beginObject where depth == 0: depth = 1
        case .endObject: depth = 0
        case .key(let name): key = name
        case .string(let value) where key == "presence":
          guard let presence = GeofencePresence(rawValue: value) else { throw Unexpected() }
          (state.presence, hasPresence) = (presence, true)
        case .number(let digits) where key == "since":
          guard let value = Int64(digits) else { throw Unexpected() }
          state.since = value
        case .number(let digits) where key == "lastFixAt":
          guard let value = Int64(digits) else { throw Unexpected() }
          state.lastFixAt = value
        case .number(let digits) where key == "outsideStreak":
          guard let value = Int(digits) else { throw Unexpected() }
          (state.outsideStreak, hasStreak) = (value, true)
        case .bool(let value) where key == "dwellReported": (state.dwellReported, hasDwell) = (value, true)
        case .null where key == "since": state.since = nil
        case .null where key == "lastFixAt": state.lastFixAt = nil
        default: throw Unexpected()
        }
      }
      try tokenizer.feed(text.utf8, take)
      try tokenizer.finish(take)
    } catch {
      return nil
    }
    return hasPresence && hasStreak && hasDwell ? state : nil
  }
}

extension GeofenceAlertRule {
  /// The stored form of a rule (JSON).
  public func encoded() throws -> String { String(decoding: try JSONEncoder().encode(self), as: UTF8.self) }
  /// A rule from its stored form; nil for none.
  public static func decoded(_ text: String?) throws -> GeofenceAlertRule? {
    try text.map { try JSONDecoder().decode(GeofenceAlertRule.self, from: Data($0.utf8)) }
  }
}

extension GeofenceShape {
  /// The stored form of a shape (JSON).
  public func encoded() throws -> String { String(decoding: try JSONEncoder().encode(self), as: UTF8.self) }
  /// A shape from its stored form.
  public static func decoded(_ text: String) throws -> GeofenceShape {
    try JSONDecoder().decode(GeofenceShape.self, from: Data(text.utf8))
  }

  /// The geohash cells that cover the shape's bounding box, each as one integer key (`1 << bits | value`, 60 bits
  /// at most), and the keys a point's cells have at every precision: a fence's box contains a point only if one of
  /// its keys is among the point's.
  public var coveringKeys: [Int64] {
    let box = geofence.boundingBox
    guard let covering = try? GeohashCovering(box: box, maxCells: 8, maxBits: 60) else { return [] }
    return covering.cells.map(\.geofenceKey)
  }
}

extension GeohashCell {
  /// The cell as one integer key, `1 << bits | value`: cells of every precision in one column or dictionary.
  public var geofenceKey: Int64 { Int64(bitPattern: (1 << UInt64(bits)) | value) }
}

extension Coordinate {
  /// This point's cell keys at every precision 1…60 (see ``GeofenceShape/coveringKeys``).
  public var geofenceLookupKeys: [Int64] {
    guard let key = try? GeohashCell(self, bits: 64).value else { return [] }
    return (1...60).map { bits in Int64(bitPattern: (1 << UInt64(bits)) | key >> UInt64(64 - bits)) }
  }
}
