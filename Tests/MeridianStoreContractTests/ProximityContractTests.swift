import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import MeridianStore
import MeridianStoreTesting
import Testing

/// Proximity rules, each pair's versioned state and the events, listed with geofence events — on every engine.
@Suite("Store contract: proximity rules")
struct ProximityContractTests {
  func makeUsers(_ store: any MeridianStore, _ names: [String]) async throws {
    for name in names {
      _ = try #require(
        try await store.createAccount(
          id: UserID(name), credential: .email("\(name)@example.com"), passwordHash: nil, now: 1))
    }
  }

  func rule(_ id: String, _ owner: String, _ other: String, radius: Double = 200, at time: Int64 = 10)
    -> ProximityRuleItem
  {
    ProximityRuleItem(
      id: ProximityRuleID(id), ownerId: UserID(owner), userId: UserID(other), radius: radius, createdAt: time)
  }

  func event(_ rule: ProximityRuleItem, _ kind: ProximityEventKind, at time: Int64) throws -> GeofenceEventItem {
    .proximity(
      rule, kind: kind, timestamp: time,
      position: try LocationFix(timestamp: time, latitude: 55.75, longitude: 37.61, horizontalAccuracy: 8))
  }

  @Test(arguments: StoreEngine.all)
  func rulesAreStoredListedByEitherPersonAndDeletedWithTheirStateAndEvents(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await makeUsers(store, ["ann", "bob", "cat"])
      let annBob = rule("r1", "ann", "bob", at: 10)
      let bobAnn = rule("r2", "bob", "ann", radius: 1_000, at: 20)
      let catBob = rule("r3", "cat", "bob", at: 30)
      for item in [annBob, bobAnn, catBob] { try await store.createProximityRule(item) }
      await #expect(throws: ProximityStoreError.duplicateID(ProximityRuleID("r1"))) {
        try await store.createProximityRule(rule("r1", "cat", "ann"))
      }
      #expect(try await store.proximityRule(ProximityRuleID("r2")) == bobAnn)
      #expect(try await store.proximityRule(ProximityRuleID("none")) == nil)
      #expect(try await store.proximityRules(owner: UserID("ann")) == [annBob])
      #expect(try await store.proximityRules(involving: UserID("bob")) == [annBob, bobAnn, catBob])
      #expect(try await store.proximityRules(involving: UserID("ann")) == [annBob, bobAnn])
      #expect(try await store.proximityRules(involving: UserID("dan")).isEmpty)

      #expect(
        try await store.commitProximityPair(
          ProximityPairUpdate(
            rule: annBob.id, version: 0,
            state: ProximityPairState(
              state: GeofenceState(presence: .inside, since: 100, lastFixAt: 100), ownerFixAt: 100),
            events: [try event(annBob, .near, at: 100)])))
      #expect(try await store.deleteProximityRule(annBob.id))
      #expect(try await !store.deleteProximityRule(annBob.id))
      #expect(try await store.proximityPairStates([annBob.id]).isEmpty)
      #expect(try await store.proximityEvents(GeofenceEventQuery(involving: UserID("ann"))).events.isEmpty)
      // A commit for a rule that is gone stores nothing.
      #expect(
        try await !store.commitProximityPair(
          ProximityPairUpdate(rule: annBob.id, version: 0, state: ProximityPairState(ownerFixAt: 200))))
      #expect(try await store.proximityRules(involving: UserID("ann")) == [bobAnn])
    }
  }

  @Test(arguments: StoreEngine.all)
  func pairCommitsOnlyOverTheVersionReadAndNeverStoresAnEventTwice(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await makeUsers(store, ["ann", "bob"])
      let annBob = rule("r1", "ann", "bob")
      try await store.createProximityRule(annBob)
      _ = try await store.createWebhook(
        Webhook(
          id: "w1", ownerID: "ann", url: "https://hooks.example.com/w1", events: [], enabled: true, createdAt: 1,
          updatedAt: 1),
        secret: "secret-w1")
      func webhookEvent(_ key: String) -> WebhookEvent {
        WebhookEvent(
          kind: "proximity.near", userID: UserID("ann"), payload: Data("{}".utf8), idempotencyKey: key,
          occurredAt: 100, queuedAt: 100)
      }
      func queued() async throws -> [String] {
        try await store.webhookDeliveries(webhook: "w1", state: nil, limit: 10).map(\.idempotencyKey)
      }
      let near = ProximityPairState(
        state: GeofenceState(presence: .inside, since: 100, lastFixAt: 100), ownerFixAt: 100, otherFixAt: 90)
      let first = ProximityPairUpdate(
        rule: annBob.id, version: 0, state: near, events: [try event(annBob, .near, at: 100)],
        webhookEvents: [webhookEvent("p1")])
      #expect(try await store.commitProximityPair(first))
      #expect(try await queued() == ["p1"])
      // Another node that read version 0 loses and stores nothing.
      var stale = first
      stale.events = [try event(annBob, .apart, at: 95)]
      stale.webhookEvents = [webhookEvent("p2")]
      #expect(try await !store.commitProximityPair(stale))
      #expect(try await queued() == ["p1"])
      var stored = try await store.proximityPairStates([annBob.id, ProximityRuleID("none")])
      #expect(stored.count == 1)
      #expect(stored[annBob.id] == ProximityPairState(version: 1, state: near.state, ownerFixAt: 100, otherFixAt: 90))
      #expect(stored[annBob.id]?.lastFixAt(of: UserID("bob"), in: annBob) == 90)
      // The same event again is stored once.
      let apart = ProximityPairState(
        state: GeofenceState(presence: .outside, lastFixAt: 300), ownerFixAt: 100, otherFixAt: 300)
      #expect(
        try await store.commitProximityPair(
          ProximityPairUpdate(
            rule: annBob.id, version: 1, state: apart,
            events: [try event(annBob, .near, at: 100), try event(annBob, .apart, at: 300)])))
      stored = try await store.proximityPairStates([annBob.id])
      #expect(stored[annBob.id]?.version == 2 && stored[annBob.id]?.otherFixAt == 300)
      let events = try await store.proximityEvents(GeofenceEventQuery(involving: UserID("ann")))
      #expect(events.events == [try event(annBob, .apart, at: 300), try event(annBob, .near, at: 100)])
      #expect(events.events.map(\.kind) == [.exit, .enter])
      // Only the owner lists them; the filters read the rule, the other person and the kind.
      #expect(try await store.proximityEvents(GeofenceEventQuery(involving: UserID("bob"))).events.isEmpty)
      #expect(
        try await store.proximityEvents(GeofenceEventQuery(involving: UserID("ann"), kind: .enter)).events.map(\.id)
          == [try event(annBob, .near, at: 100).id])
      #expect(
        try await store.proximityEvents(
          GeofenceEventQuery(involving: UserID("ann"), geofence: GeofenceID("other"))
        ).events.isEmpty)
      #expect(
        try await store.proximityEvents(GeofenceEventQuery(involving: UserID("ann"), user: UserID("bob"), from: 200))
          .events.count == 1)
    }
  }

  @Test(arguments: StoreEngine.all)
  func geofenceAndProximityEventsPageTogetherNewestFirst(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await makeUsers(store, ["ann", "bob"])
      let annBob = rule("r1", "ann", "bob")
      try await store.createProximityRule(annBob)
      let fence = GeofenceItem(
        id: GeofenceID("g1"), ownerId: UserID("ann"), name: "home",
        shape: .circle(center: Coordinate(uncheckedLatitude: 55.75, longitude: 37.61), radius: 100), createdAt: 1,
        updatedAt: 1)
      try await store.createGeofence(fence)
      // Fence events of ann at 100, 200 (twice: two fences' worth by kind), 400; proximity events at 200, 300, 500.
      var fenceEvents: [GeofenceEventItem] = []
      for (time, kind) in [(100, GeofenceEventKind.enter), (200, .dwell), (200, .exit), (400, .enter)] {
        fenceEvents.append(
          GeofenceEventItem(
            id: GeofenceEventItem.eventID(geofence: fence.id, user: UserID("ann"), kind: kind, timestamp: Int64(time)),
            geofenceId: fence.id, geofenceName: "home", ownerId: UserID("ann"), userId: UserID("ann"), kind: kind,
            timestamp: Int64(time), reportedBy: .server))
      }
      #expect(
        try await store.commitGeofenceTracking(
          GeofenceTrackingUpdate(userID: UserID("ann"), version: 0, lastFixAt: 400, events: fenceEvents)))
      var pairEvents: [GeofenceEventItem] = []
      for (time, kind) in [(200, ProximityEventKind.near), (300, .apart), (500, .near)] {
        pairEvents.append(try event(annBob, kind, at: Int64(time)))
      }
      #expect(
        try await store.commitProximityPair(
          ProximityPairUpdate(
            rule: annBob.id, version: 0, state: ProximityPairState(ownerFixAt: 500), events: pairEvents)))
      let all = try await store.geofenceAndProximityEvents(GeofenceEventQuery(involving: UserID("ann"), limit: 50))
      #expect(all.next == nil)
      #expect(all.events.map(\.timestamp) == [500, 400, 300, 200, 200, 200, 100])
      #expect(all.events.filter { $0.proximity != nil }.count == 3)
      // Pages of every size hold every event once, in the same order.
      for size in 1...4 {
        var seen: [String] = []
        var cursor: HistoryCursor?
        repeat {
          let page = try await store.geofenceAndProximityEvents(
            GeofenceEventQuery(involving: UserID("ann"), cursor: cursor, limit: size))
          #expect(page.events.count <= size)
          seen += page.events.map(\.id)
          cursor = page.next
        } while cursor != nil
        #expect(seen == all.events.map(\.id), "pages of \(size)")
      }
      // A cursor no page gives, at either end, answers a page rather than failing.
      for row in [Int64.min, Int64.max, -1] {
        _ = try await store.geofenceAndProximityEvents(
          GeofenceEventQuery(involving: UserID("ann"), cursor: HistoryCursor(timestamp: .max, row: row)))
      }
      // Bob, whose location the rule is about, lists none of ann's proximity events.
      #expect(try await store.geofenceAndProximityEvents(GeofenceEventQuery(involving: UserID("bob"))).events.isEmpty)
    }
  }
}
