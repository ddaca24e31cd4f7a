import DomainKit
import Foundation
import Logging
import MeridianAPI
import MeridianStore
import RealtimeKit

/// Evaluates proximity rules ("tell me when A and B are within R metres") on the fixes the ``GeofenceMonitor``
/// takes from the durable geofence queue, before their entries leave it: a restart, a slow monitor or a burst loses
/// no evaluation (the entries wait in the store), and a pair's state commits over the version read
/// (``ProximityStore/commitProximityPair(_:)``) with each side's newest evaluated fix, so evaluating the same fixes
/// again (another node, a restart before the entries left) stores nothing twice.
///
/// Per person and read: the rules naming the person come from a cache (a person in no rule costs no query); the
/// partners within reach of a fix come from this node's ``ProximityIndex`` (a grid of last positions); only those,
/// and the pairs that are near (whose state must see every fix, for the hysteresis and dwell of DomainKit's
/// ``ProximityRules``), are evaluated. A pair is evaluated only while both people share their location with each
/// other, and an event is recorded only when its owner may see the other person's position then (outside their
/// privacy zones).
///
/// Each stored event goes to the rule's owner only: live on their `geofence:<owner>` channel, to their webhooks and
/// alert channels (`proximity.near`, `.apart`, `.dwell`, queued in the pair's transaction) and in their
/// `GET /v1/geofences/events`.
final class ProximityMonitor: Sendable {
  let store: any MeridianStore
  let live: LiveUpdates
  let rules: ProximityRules
  let now: @Sendable () -> Int64
  let logger: Logger
  /// Wakes the webhook delivery after a commit that queued deliveries.
  let webhookWake: GeofenceWebhookWake
  /// This node's last positions of the people in rules.
  let index: ProximityIndex
  /// The rules naming a person (read again after 5 s, or at once after a change made here).
  private let involving = LookupCache<UserID, [ProximityRuleItem]>(lifetime: 5_000, capacity: 10_000)
  private let locks = KeyedLock()

  /// A monitor with the fences' rules.
  init(
    store: any MeridianStore, live: LiveUpdates, rules: GeofenceRules, wake: @escaping GeofenceWebhookWake = {},
    now: @escaping @Sendable () -> Int64, logger: Logger = Logger(label: "meridian.proximity")
  ) {
    self.store = store
    self.webhookWake = wake
    self.live = live
    self.rules = ProximityRules(fences: rules)
    self.now = now
    self.logger = logger
    index = ProximityIndex(lifetime: 5_000)
  }

  /// Forgets the cached rules of `people` (after a rule naming them was made or deleted on this node).
  func rulesChanged(_ people: [UserID]) {
    for person in people { involving.remove(person) }
  }

  /// Evaluates `user`'s `fixes` (sorted by time, none imported) against the rules naming them, commits each pair's
  /// new state with its events, and delivers the events.
  /// - Throws: the store's errors (the fixes' queue entries then stay, to be evaluated again).
  func evaluate(_ user: UserID, _ fixes: [LocationFix]) async throws {
    guard let newest = fixes.last else { return }
    let time = now()
    let rules =
      try await involving.value(for: user, now: time) { try await store.proximityRules(involving: user) } ?? []
    guard !rules.isEmpty else { return }
    // The partners' positions, from the store when this node doesn't hold a current one.
    for partner in Set(rules.compactMap { $0.partner(of: user) }) where index.position(of: partner, now: time) == nil {
      if let fix = try await store.lastFix(owner: partner, notAfter: time) { index.update(partner, to: fix, now: time) }
    }
    let states = try await store.proximityPairStates(rules.map(\.id))
    var events: [GeofenceEventItem] = []
    for rule in index.rulesToEvaluate(
      rules, of: user, at: fixes.map(\.coordinate), states: states.mapValues(\.state))
    {
      events += try await evaluate(rule, user, fixes, stored: states[rule.id], at: time)
    }
    index.update(user, to: newest, now: time)
    if !events.isEmpty { webhookWake() }
    await deliver(events)
  }

  /// Evaluates `rule` on `user`'s `fixes` and commits the result, reading again when another commit came first;
  /// returns the events stored.
  private func evaluate(
    _ rule: ProximityRuleItem, _ user: UserID, _ fixes: [LocationFix], stored: ProximityPairState?, at time: Int64
  ) async throws -> [GeofenceEventItem] {
    guard let partner = rule.partner(of: user), let partnerFix = index.position(of: partner, now: time) else {
      return []
    }
    guard let owner = try await live.privacySettings(of: rule.ownerId),
      let other = try await live.privacySettings(of: rule.userId),
      Sharing.canSee(rule.ownerId, .location, of: other, at: time),
      Sharing.canSee(rule.userId, .location, of: owner, at: time)
    else { return [] }
    return try await locks.withLock(rule.id.rawValue) { () async throws -> [GeofenceEventItem] in
      var read = stored
      for _ in 0..<8 {
        let before = read ?? ProximityPairState(state: ProximityIndex.apart)
        var pair = before
        var events: [GeofenceEventItem] = []
        for fix in fixes where fix.timestamp > (pair.lastFixAt(of: user, in: rule) ?? .min) {
          let (next, transitions) = self.rules.evaluate(
            fix, partner: partnerFix, radius: rule.radius, state: pair.state)
          pair.state = next
          pair = pair.evaluated(user, in: rule, upTo: fix.timestamp)
          let position = user == rule.userId ? fix : partnerFix
          guard
            Sharing.maySeeEvent(
              rule.ownerId, latitude: position.latitude, longitude: position.longitude, of: other, at: time)
          else { continue }
          events += transitions.map { .proximity(rule, kind: $0.kind, timestamp: $0.timestamp, position: position) }
        }
        if pair == before, read != nil { return [] }
        let update = ProximityPairUpdate(
          rule: rule.id, version: before.version, state: pair, events: events,
          webhookEvents: events.compactMap { Self.webhookEvent($0, queuedAt: time) })
        if try await self.store.commitProximityPair(update) { return events }
        read = try await self.store.proximityPairStates([rule.id])[rule.id]
        if read == nil, try await self.store.proximityRule(rule.id) == nil { return [] }
      }
      throw ProximityContention(rule: rule.id)
    }
  }

  /// The webhook event of a proximity event for its owner's webhooks and alert channels: `proximity.near`, `.apart`
  /// or `.dwell` with the event as `data`, the event's id as the idempotency key.
  static func webhookEvent(_ event: GeofenceEventItem, queuedAt: Int64) -> WebhookEvent? {
    guard let kind = event.proximity?.kind, let payload = try? JSONEncoder().encode(event) else { return nil }
    return WebhookEvent(
      kind: "proximity.\(kind.rawValue)", userID: event.ownerId, payload: payload,
      idempotencyKey: "proximity:\(event.id)", occurredAt: event.timestamp, queuedAt: queuedAt)
  }

  /// Publishes each event on its owner's `geofence:<owner>` channel, on every node.
  func deliver(_ events: [GeofenceEventItem]) async {
    await live.publishEverywhere(events) { event in
      guard let payload = try? GeofenceMonitor.livePayload(event),
        let channel = GeofenceMonitor.channel(event.ownerId)
      else { return nil }
      return (payload, [channel])
    }
  }
}

/// A pair's state kept changing under the monitor: the fixes' queue entries stay for the next read.
struct ProximityContention: Error, CustomStringConvertible {
  let rule: ProximityRuleID
  var description: String { "the state of proximity rule \(rule) kept changing" }
}
