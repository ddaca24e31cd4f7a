import DomainKit
import Foundation
import GeoKit
import Logging
import MeridianAPI
import MeridianStore
import RealtimeKit
import ServiceLifecycle

/// Receives every geofence event once it is stored (the server's own and those a device reported), for delivery
/// beyond the live sockets — the webhook outbox plugs in here (``GeofenceMonitor/init(store:hub:rules:sink:now:logger:)``).
public typealias GeofenceEventSink = @Sendable (_ events: [GeofenceEventItem]) async -> Void

/// Evaluates the fixes of every commit of this node against the geofences that concern their owner — the person's
/// own and those others share with them — with DomainKit's ``GeofenceRules``, after the commit and off the request
/// path. The state lives in the store (``GeofenceStore/commitGeofenceTracking(_:)`` over the version read), so
/// another node or a restart continues where this one left; fixes of one person are evaluated one batch at a time.
///
/// Each stored event goes to the ``sink`` and, live, to the `geofence:<id>` channel of the person, and of everyone
/// allowed to see both the person's location and the geofence (its owner among them when they may see the person).
/// Imported fixes are not evaluated.
final class GeofenceMonitor: Sendable {
  /// The namespace of the per-viewer event channel `geofence:<viewer id>`.
  static let namespace = "geofence"

  let store: any MeridianStore
  let hub: RealtimeHub
  let rules: GeofenceRules
  let sink: GeofenceEventSink
  let now: @Sendable () -> Int64
  let logger: Logger
  private let locks = KeyedLock()
  private let queue: AsyncStream<CommittedFixes>
  private let queueContinuation: AsyncStream<CommittedFixes>.Continuation
  /// The owners whose fences may concern a person, nil when none of them has a fence (then nothing is evaluated).
  private let concerned = LookupCache<UserID, [UserID]>(lifetime: 5_000, capacity: 10_000)

  /// A monitor publishing on `hub` and handing events to `sink`.
  init(
    store: any MeridianStore, hub: RealtimeHub, rules: GeofenceRules = GeofenceRules(),
    sink: @escaping GeofenceEventSink = { _ in }, now: @escaping @Sendable () -> Int64,
    logger: Logger = Logger(label: "meridian.geofences")
  ) {
    self.store = store
    self.hub = hub
    self.rules = rules
    self.sink = sink
    self.now = now
    self.logger = logger
    (queue, queueContinuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(10_000))
  }

  /// The channel of `viewer`'s geofence events.
  static func channel(_ viewer: UserID) -> ChannelName? { ChannelName(namespace: namespace, id: viewer.rawValue) }

  /// Queues a commit for evaluation (never waits).
  func submit(_ commit: CommittedFixes) { queueContinuation.yield(commit) }

  /// Ends the queue: ``run()`` returns once it has evaluated what was queued.
  func finish() { queueContinuation.finish() }

  /// Evaluates the queued commits until ``finish()``.
  func run() async {
    for await commit in queue {
      for (batch, receipt) in zip(commit.batches, commit.receipts) where receipt.accepted > 0 {
        await evaluate(batch.userID, batch.fixes.filter { $0.kind != .imported })
      }
    }
  }

  /// Forgets which people are concerned by which owners' fences (after a fence is created or shared).
  func fencesChanged() { concerned.removeAll { _ in true } }

  // MARK: Evaluation

  /// Evaluates `fixes` of `user`, stores the new state and events, and delivers the events.
  func evaluate(_ user: UserID, _ fixes: [LocationFix]) async {
    guard !fixes.isEmpty else { return }
    do {
      let time = now()
      guard let owners = try await concernedOwners(user, at: time) else { return }
      let events = try await locks.withLock(user.rawValue) { () async throws -> [GeofenceEventItem] in
        for _ in 0..<8 {
          let tracking = try await self.store.geofenceTracking(of: user)
          guard let (update, events) = try await self.step(user, fixes, tracking, owners: owners, at: time) else {
            return []
          }
          if try await self.store.commitGeofenceTracking(update) { return events }
        }
        self.logger.warning("geofence state kept changing; fixes left unevaluated", metadata: ["user": "\(user)"])
        return []
      }
      await deliver(events, at: time)
    } catch {
      logger.warning("could not evaluate geofences", metadata: ["user": "\(user)", "error": "\(error)"])
    }
  }

  /// The person and the owners who may share with them, when any of them has a fence.
  private func concernedOwners(_ user: UserID, at time: Int64) async throws -> [UserID]? {
    try await concerned.value(for: user, now: time) {
      let owners = [user] + (try await store.sharingCandidates(viewer: user)).filter { $0 != user }
      return try await store.geofences(owners: owners).isEmpty ? nil : owners
    }
  }

  /// The new state and events after `fixes`, nil when nothing changed.
  private func step(
    _ user: UserID, _ fixes: [LocationFix], _ tracking: GeofenceTracking, owners: [UserID], at time: Int64
  ) async throws -> (GeofenceTrackingUpdate, [GeofenceEventItem])? {
    var states = tracking.states
    var lastFixAt = tracking.lastFixAt
    var fences: [GeofenceID: GeofenceItem] = [:]
    var settings: [UserID: PrivacySettings?] = [:]
    func visible(_ fence: GeofenceItem) async throws -> Bool {
      if fence.ownerId == user { return true }
      if settings[fence.ownerId] == nil {
        settings[fence.ownerId] = try await store.privacySettings(owner: fence.ownerId)
      }
      return Self.maySee(user, fence, ownerSettings: settings[fence.ownerId] ?? nil, at: time)
    }
    for id in states.keys {
      if let fence = try await store.geofence(id), try await visible(fence) { fences[id] = fence }
    }
    var events: [GeofenceEventItem] = []
    for fix in fixes.sorted(by: { $0.timestamp < $1.timestamp }) {
      if let last = lastFixAt, fix.timestamp <= last { continue }
      var candidates = fences.filter { states[$0.key] != nil }
      for fence in try await store.geofences(near: fix.coordinate, owners: owners) where try await visible(fence) {
        candidates[fence.id] = fence
        fences[fence.id] = fence
      }
      for fence in candidates.values.sorted(by: { $0.id < $1.id }) {
        let state = states[fence.id] ?? Self.impliedState(of: fence, lastFixAt: lastFixAt)
        let (next, transitions) = rules.evaluate(fix, in: fence.shape.geofence, state: state)
        states[fence.id] = next
        events += transitions.map { Self.event($0, fence: fence, user: user, fix: fix, by: .server) }
      }
      lastFixAt = fix.timestamp
    }
    guard lastFixAt != tracking.lastFixAt || !events.isEmpty else { return nil }
    var update = GeofenceTrackingUpdate(
      userID: user, version: tracking.version, lastFixAt: lastFixAt, events: events)
    for (id, state) in states {
      if fences[id] == nil || Self.isPlainlyOutside(state) {
        if tracking.states[id] != nil { update.removed.append(id) }
      } else if tracking.states[id] != state {
        update.states[id] = state
      }
    }
    return (update, events)
  }

  /// A fence with no stored state: the person was outside of it at their last fix, when it existed then; else
  /// not known.
  static func impliedState(of fence: GeofenceItem, lastFixAt: Int64?) -> GeofenceState {
    guard let last = lastFixAt, fence.createdAt <= last else { return GeofenceState() }
    return GeofenceState(presence: .outside, lastFixAt: last)
  }

  /// Whether `state` says no more than the absence of a state row does.
  static func isPlainlyOutside(_ state: GeofenceState) -> Bool {
    state.presence == .outside && state.outsideStreak == 0
  }

  static func event(
    _ transition: GeofenceTransition, fence: GeofenceItem, user: UserID, fix: LocationFix?, by source: GeofenceSource
  ) -> GeofenceEventItem {
    GeofenceEventItem(
      id: GeofenceEventItem.eventID(
        geofence: fence.id, user: user, kind: transition.kind, timestamp: transition.timestamp),
      geofenceId: fence.id, geofenceName: fence.name, ownerId: fence.ownerId, userId: user, kind: transition.kind,
      timestamp: transition.timestamp, reportedBy: source, lat: fix?.latitude, lon: fix?.longitude,
      accuracy: fix?.horizontalAccuracy)
  }

  /// Whether `viewer` may see `fence`: its owner always; with sharing `group`, the members of that group of the
  /// owner; with `everyone`, whoever may see the owner's location; never a blacklisted viewer.
  static func maySee(_ viewer: UserID, _ fence: GeofenceItem, ownerSettings: PrivacySettings?, at now: Int64) -> Bool {
    if viewer == fence.ownerId { return true }
    guard let settings = ownerSettings, !settings.isBlacklisted(viewer) else { return false }
    switch fence.sharing {
    case .nobody: return false
    case .group:
      return settings.groups.contains { $0.id == fence.groupId && $0.kind != .blacklist && $0.members.contains(viewer) }
    case .everyone: return Sharing.canSee(viewer, .location, of: settings, at: now)
    }
  }

  // MARK: Device reports (OwnTracks)

  /// Records an `enter` or `exit` the device reported for its fence `fence`, unless the state already says so (the
  /// server saw it first); the state follows, so the server's own evaluation does not report it again.
  func reported(
    _ kind: GeofenceEventKind, fence: GeofenceItem, user: UserID, at timestamp: Int64, location: LocationFix?
  ) async throws {
    let time = now()
    let events = try await locks.withLock(user.rawValue) { () async throws -> [GeofenceEventItem] in
      for _ in 0..<8 {
        let tracking = try await self.store.geofenceTracking(of: user)
        let state = tracking.states[fence.id] ?? Self.impliedState(of: fence, lastFixAt: tracking.lastFixAt)
        let (next, recorded) = self.rules.applyReported(kind, at: timestamp, to: state)
        guard recorded else { return [] }
        let event = Self.event(
          GeofenceTransition(kind: kind, timestamp: timestamp), fence: fence, user: user, fix: location, by: .device)
        var update = GeofenceTrackingUpdate(
          userID: user, version: tracking.version, lastFixAt: tracking.lastFixAt, events: [event])
        if Self.isPlainlyOutside(next) {
          if tracking.states[fence.id] != nil { update.removed = [fence.id] }
        } else {
          update.states = [fence.id: next]
        }
        if try await self.store.commitGeofenceTracking(update) { return [event] }
      }
      return []
    }
    await deliver(events, at: time)
  }

  // MARK: Delivery

  /// Publishes each of `events` on the channels of its audience, and hands the sink those the fence's owner is in
  /// the audience of (the owner's webhooks hear what the owner's socket may hear, never more).
  func deliver(_ events: [GeofenceEventItem], at time: Int64) async {
    guard !events.isEmpty else { return }
    var ownersMaySee: [GeofenceEventItem] = []
    for event in events {
      do {
        let audience = try await audience(of: event, at: time)
        if audience.contains(event.ownerId) { ownersMaySee.append(event) }
        guard let payload = try? JSONValue(encoding: GeofenceLiveEvent(event: event)) else { continue }
        _ = await hub.publish(payload, to: audience.compactMap(Self.channel))
      } catch {
        logger.warning("could not publish a geofence event", metadata: ["event": "\(event.id)", "error": "\(error)"])
      }
    }
    if !ownersMaySee.isEmpty { await sink(ownersMaySee) }
  }

  /// The person, and everyone allowed to see both the person's location and the fence, sorted.
  func audience(of event: GeofenceEventItem, at time: Int64) async throws -> [UserID] {
    guard let fence = try await store.geofence(event.geofenceId),
      let person = try await store.privacySettings(owner: event.userId)
    else { return [event.userId] }
    let owner = fence.ownerId == event.userId ? person : try await store.privacySettings(owner: fence.ownerId)
    var candidates = Set(person.groups.filter { $0.kind != .blacklist }.flatMap(\.members))
    candidates.formUnion(person.sharing.viewerGrants.keys)
    candidates.insert(fence.ownerId)
    var audience: Set<UserID> = [event.userId]
    for viewer in candidates
    where Sharing.canSee(viewer, .location, of: person, at: time)
      && Self.maySee(viewer, fence, ownerSettings: owner, at: time)
    {
      audience.insert(viewer)
    }
    return audience.sorted()
  }
}

/// The payload of a `geofence:<id>` event: `{"type": "geofence.event", "event": {…}}`.
struct GeofenceLiveEvent: Codable, Sendable, Hashable {
  /// `geofence.event`.
  var type = "geofence.event"
  /// The event.
  var event: GeofenceEventItem
}

/// The live fan-out with geofences: hands every commit of the writer to the live fan-out and to the geofence
/// monitor; ends once the writer's stream ended, the monitor evaluated what it was given and the group's graceful
/// shutdown reached this service. (It must not end before its turn: the service group stops services in reverse
/// order and fails with "finished unexpectedly" when one returns while another one's shutdown is awaited — here,
/// the writer's, whose last commit ends the stream an instant before the writer itself returns.)
struct GeofenceFanOut: Service {
  let live: LiveUpdates
  let geofences: GeofenceMonitor
  let commits: AsyncStream<CommittedFixes>

  func run() async {
    let (forward, continuation) = AsyncStream.makeStream(of: CommittedFixes.self)
    await withTaskGroup(of: Void.self) { group in
      group.addTask { await live.fanOut(forward) }
      group.addTask { await geofences.run() }
      for await commit in commits {
        continuation.yield(commit)
        geofences.submit(commit)
      }
      continuation.finish()
      geofences.finish()
    }
    try? await gracefulShutdown()
  }
}
