import DomainKit
import Foundation
import GeoKit
import Logging
import MeridianAPI
import MeridianServer
import MeridianStore
import MeridianStoreEngines
import MeridianStoreTesting
import NetworkingKit
import Testing

/// Proximity rules over HTTP: two people who share their location with each other, one walking towards the other and
/// away, give the rule's owner one `near` and one `apart` — live, by webhook and in the event list — and a restart in
/// the middle of a burst loses none; a person who doesn't share can't be named — on both engines.
@Suite("People near people")
struct ProximityTests {
  /// Anna and Bob share their locations with each other (each in the other's Family).
  static func shareWithEachOther(_ anna: (AuthSession, NetworkClient), _ bob: (AuthSession, NetworkClient))
    async throws
  {
    _ = try await bob.1.send(
      API.addMember, parameters: GroupMemberRef(groupID: GroupID("\(bob.0.userId).family"), userID: anna.0.userId))
    _ = try await anna.1.send(
      API.addMember, parameters: GroupMemberRef(groupID: GroupID("\(anna.0.userId).family"), userID: bob.0.userId))
  }

  /// The events DomainKit's rules decide for the other person's `fixes` against the owner's fix `partner`, by id,
  /// oldest first, starting apart: what the server must store, once each.
  static func expectedEvents(_ fixes: [LocationFix], partner: LocationFix, rule: ProximityRuleItem) -> [String] {
    let rules = ProximityRules(fences: GeofenceSettings().rules)
    var state = ProximityIndex.apart
    var ids: [String] = []
    for fix in fixes {
      let (next, transitions) = rules.evaluate(fix, partner: partner, radius: rule.radius, state: state)
      state = next
      ids += transitions.map {
        GeofenceEventItem.proximityEventID(rule: rule.id, kind: $0.kind, timestamp: $0.timestamp)
      }
    }
    return ids
  }

  /// Every stored proximity event of `owner`'s rules, by id, oldest first.
  static func storedEvents(_ store: any MeridianStore, _ owner: UserID) async throws -> [String] {
    try await store.proximityEvents(GeofenceEventQuery(involving: owner, limit: 100_000)).events.reversed().map(\.id)
  }

  @Test(.timeLimit(.minutes(4)), arguments: ["sqlite", "postgres"])
  func walkingTowardsEachOtherAndApartGivesTheOwnerNearAndApartLiveListedAndByWebhook(_ engine: String) async throws {
    let receiver = try await WebhookReceiver.start(behaviours: ["ok"])
    try await GeofenceQueueTests.withServer(engine, WebhookTests.fastDelivery) { server, _, _ in
      let anna = try await server.signUp("anna")
      let bob = try await server.signUp("bob")
      try await Self.shareWithEachOther(anna, bob)
      let rule = try await anna.client.send(
        API.createProximityRule, body: NewProximityRule(userId: bob.session.userId, radius: 200))
      #expect(rule.ownerId == anna.session.userId && rule.userId == bob.session.userId && rule.radius == 200)
      #expect(try await anna.client.send(API.proximityRules).items == [rule])
      #expect(try await bob.client.send(API.proximityRules).items.isEmpty)
      let webhook = try await anna.client.send(API.createWebhook, body: NewWebhook(url: receiver.url))
      receiver.secret.withLock { $0 = webhook.secret }
      let annaLive = await LiveWatcher(server: server, token: anna.session.token)
      #expect(try await annaLive.subscribe(GeofenceTests.channel(anna.session.userId)))

      // Anna stands at home; Bob walks in from 2 km, stays a little, and walks away again.
      let start = GeofenceTests.now() - 60_000
      let annaFix = try GeofenceTests.fix(start, 0)
      _ = try await anna.client.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: [annaFix]))
      // Anna's fix is evaluated before Bob moves (else her evaluation, against Bob's newest stored fix, may decide
      // `near` first, at that fix's time).
      let store = server.app.environment.store
      try await GeofenceQueueTests.waitFor("Anna's fix evaluated") {
        try await store.geofenceQueueBacklog().entries == 0
      }
      let walk = try [2_000.0, 1_000, 500, 190, 150, 100, 60, 120, 180, 230, 1_000, 2_000].enumerated().map {
        index, metres in try GeofenceTests.fix(start + 1_000 + Int64(index) * 1_000, metres)
      }
      _ = try await bob.client.send(API.postFixes, body: FixBatch(deviceId: "bob-phone", fixes: Array(walk.prefix(6))))
      _ = try await bob.client.send(
        API.postFixes, body: FixBatch(deviceId: "bob-phone", fixes: Array(walk.dropFirst(6))))
      // Duplicates decide nothing.
      _ = try await bob.client.send(API.postFixes, body: FixBatch(deviceId: "bob-phone", fixes: walk))
      let expected = Self.expectedEvents(walk, partner: annaFix, rule: rule)
      #expect(expected.count == 2)

      try await annaLive.wait("near and apart") { _ in try await GeofenceTests.events(annaLive).count >= 2 }
      let live = try await GeofenceTests.events(annaLive)
      #expect(live.map(\.id) == expected)
      #expect(live.compactMap(\.proximity?.kind) == [.near, .apart])
      #expect(live.allSatisfy { $0.proximity?.ruleId == rule.id && $0.userId == bob.session.userId })
      #expect(live.first?.timestamp == walk[4].timestamp)  // 150 m: the first wholly within 200 m, with 10 + 10 m
      #expect(live.last?.timestamp == walk[10].timestamp)  // 1 km: beyond the distance and its margin

      // Listed to Anna with her other events, newest first; not to Bob, whose location they are about.
      let listed = try await anna.client.send(API.geofenceEvents, parameters: GeofenceEventParameters())
      #expect(listed.items.map(\.id) == expected.reversed())
      #expect(listed.items.map(\.kind) == [.exit, .enter])
      #expect(try await bob.client.send(API.geofenceEvents, parameters: GeofenceEventParameters()).items.isEmpty)

      // Anna's webhook hears both, signed, once each.
      await receiver.waitForProcessed(2, timeout: .seconds(30))
      let record = receiver.record.withLock { $0 }
      #expect(Set(record.processed.keys) == Set(expected.map { "proximity:\($0)" }), "\(record.processed)")
      #expect(record.processed.values.allSatisfy { $0 == 1 } && record.bad.isEmpty, "\(record.bad)")

      // Deleting the rule deletes its events; another person's rule is not found.
      await expectAPIError(.notFound, status: 404) {
        try await bob.client.send(API.deleteProximityRule, parameters: ProximityRuleRef(id: rule.id))
      }
      _ = try await anna.client.send(API.deleteProximityRule, parameters: ProximityRuleRef(id: rule.id))
      #expect(try await anna.client.send(API.proximityRules).items.isEmpty)
      #expect(try await anna.client.send(API.geofenceEvents, parameters: GeofenceEventParameters()).items.isEmpty)
      await annaLive.stop()
    }
    await receiver.stop()
  }

  @Test(.timeLimit(.minutes(2)))
  func aRuleNamesSomeoneWhoSharesBothWaysWithinTheDistancesAllowed() async throws {
    try await TestServer.with { server in
      let anna = try await server.signUp("anna")
      let bob = try await server.signUp("bob")
      let carol = try await server.signUp("carol")
      func create(_ user: UserID, _ radius: Double = 200) async throws -> ProximityRuleItem {
        try await anna.client.send(API.createProximityRule, body: NewProximityRule(userId: user, radius: radius))
      }
      // Carol shares nothing with Anna; Bob only one way, then both.
      await expectAPIError(.invalidProximityRule, status: 400) { try await create(carol.session.userId) }
      _ = try await bob.client.send(
        API.addMember,
        parameters: GroupMemberRef(groupID: GroupID("\(bob.session.userId).family"), userID: anna.session.userId))
      await expectAPIError(.invalidProximityRule, status: 400) { try await create(bob.session.userId) }
      _ = try await anna.client.send(
        API.addMember,
        parameters: GroupMemberRef(groupID: GroupID("\(anna.session.userId).family"), userID: bob.session.userId))
      await expectAPIError(.invalidProximityRule, status: 400) { try await create(UserID("nobody-at-all")) }
      await expectAPIError(.invalidProximityRule, status: 400) { try await create(anna.session.userId) }
      await expectAPIError(.invalidProximityRule, status: 400) { try await create(bob.session.userId, 10) }
      await expectAPIError(.invalidProximityRule, status: 400) { try await create(bob.session.userId, 60_000) }
      await expectAPIError(.invalidRequest, status: 400) { try await create(UserID("tab\tin an id")) }
      await expectAPIError(.invalidRequest, status: 400) { try await create(UserID("")) }
      #expect(try await anna.client.send(API.proximityRules).items.isEmpty)
      let rule = try await create(bob.session.userId)
      #expect(try await anna.client.send(API.proximityRules).items == [rule])
      await expectAPIError(.notFound, status: 404) {
        try await anna.client.send(API.deleteProximityRule, parameters: ProximityRuleRef(id: ProximityRuleID("none")))
      }
    }
  }

  @Test(.timeLimit(.minutes(10)), arguments: ["sqlite", "postgres"])
  func aRestartInTheMiddleOfABurstStoresEveryProximityEventOnce(_ engine: String) async throws {
    try await GeofenceQueueTests.withServer(engine, { $0.geofences.queueBatch = 1 }) { server, location, restart in
      let anna = try await server.signUp("anna")
      let bob = try await server.signUp("bob")
      try await Self.shareWithEachOther(anna, bob)
      let rule = try await anna.client.send(
        API.createProximityRule, body: NewProximityRule(userId: bob.session.userId, radius: 100))
      // Anna at home; Bob in runs of three fixes 10 m from her and three 1 km away, 600 uploads committed at once,
      // read one at a time.
      let start = GeofenceTests.now() - 400_000
      let annaFix = try GeofenceTests.fix(start - 1_000, 0, accuracy: 5)
      _ = try await anna.client.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: [annaFix]))
      let track = try GeofenceQueueTests.track(count: 600, from: start)
      let store = server.app.environment.store
      try await GeofenceQueueTests.waitFor("Anna's fix evaluated") {
        try await store.geofenceQueueBacklog().entries == 0
      }
      _ = try await bob.client.send(API.postFixes, body: FixBatch(deviceId: "bob-phone", fixes: [track[0]]))
      _ = try await store.insertFixes(
        track.dropFirst().map { FixInsertBatch(userID: bob.session.userId, deviceID: "bob-phone", fixes: [$0]) },
        now: GeofenceTests.now())
      let expected = Self.expectedEvents(track, partner: annaFix, rule: rule)
      #expect(expected.count == 200)  // 200 runs, each a change, the first a `near` from apart
      try await GeofenceQueueTests.waitFor("the first events") {
        try await Self.storedEvents(store, anna.session.userId).count >= 2
      }
      try await server.stop(keepingFiles: true)
      // Stopped in the middle: part of the burst still waits in the queue, none of it lost.
      let probe = try await location.open(maximumConnections: 1, logger: Logger(label: "probe"))
      let left = try await probe.store.geofenceQueueBacklog().entries
      let storedBefore = try await Self.storedEvents(probe.store, anna.session.userId)
      await probe.close()
      #expect(left > 0 && left < 600, "\(left) uploads left")
      #expect(storedBefore == Array(expected.prefix(storedBefore.count)))

      let again = try await restart(server)
      let storeAgain = again.app.environment.store
      try await GeofenceQueueTests.waitForAnEmptyQueue("the rest of the burst", storeAgain)
      #expect(try await Self.storedEvents(storeAgain, anna.session.userId) == expected)
      // The burst ends with three fixes 1 km away: the first of them makes the pair apart; a pair apart and out of
      // reach is not written again.
      let pair = try await storeAgain.proximityPairStates([rule.id])[rule.id]
      #expect(pair?.state.presence == .outside && pair?.otherFixAt == track.dropLast(2).last?.timestamp)
    }
  }
}
