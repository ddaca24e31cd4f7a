import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import MeridianStore
import MeridianStoreTesting
import Testing

/// Geofences, the versioned rule state per person and the events — on every engine.
@Suite("Store contract: geofences")
struct GeofenceContractTests {
  static let home = Coordinate(uncheckedLatitude: 55.7558, longitude: 37.6173)

  func makeUsers(_ store: any MeridianStore, _ names: [String]) async throws {
    for name in names {
      _ = try #require(
        try await store.createAccount(
          id: UserID(name), credential: .email("\(name)@example.com"), passwordHash: nil, now: 1))
    }
  }

  func circle(_ id: String, owner: String, at center: Coordinate = home, radius: Double = 100, now: Int64 = 10)
    -> GeofenceItem
  {
    GeofenceItem(
      id: GeofenceID(id), ownerId: UserID(owner), name: "fence \(id)", shape: .circle(center: center, radius: radius),
      createdAt: now, updatedAt: now)
  }

  func event(_ fence: String, _ user: String, _ kind: GeofenceEventKind, at time: Int64) -> GeofenceEventItem {
    GeofenceEventItem(
      id: GeofenceEventItem.eventID(geofence: GeofenceID(fence), user: UserID(user), kind: kind, timestamp: time),
      geofenceId: GeofenceID(fence), geofenceName: "fence \(fence)", ownerId: UserID("ann"), userId: UserID(user),
      kind: kind, timestamp: time, reportedBy: .server, lat: 55.7, lon: 37.6, accuracy: 10)
  }

  @Test(arguments: StoreEngine.all)
  func geofencesAreStoredUpdatedAndDeleted(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await makeUsers(store, ["ann", "bob"])
      var home = circle("g1", owner: "ann")
      home.sharing = .group
      home.groupId = GroupID("family")
      try await store.createGeofence(home)
      let polygon = GeofenceItem(
        id: GeofenceID("g2"), ownerId: UserID("ann"), name: "park",
        shape: .polygon([
          Coordinate(uncheckedLatitude: 55.70, longitude: 37.50),
          Coordinate(uncheckedLatitude: 55.70, longitude: 37.52),
          Coordinate(uncheckedLatitude: 55.72, longitude: 37.52),
        ]), sharing: .everyone, source: .device, externalId: "1700000000", createdAt: 20, updatedAt: 20)
      try await store.createGeofence(polygon)
      try await store.createGeofence(circle("g3", owner: "bob"))
      await #expect(throws: GeofenceStoreError.duplicateID(GeofenceID("g1"))) {
        try await store.createGeofence(circle("g1", owner: "bob"))
      }
      #expect(try await store.geofence(GeofenceID("g1")) == home)
      #expect(try await store.geofence(GeofenceID("g2")) == polygon)
      #expect(try await store.geofence(owner: UserID("ann"), externalID: "1700000000") == polygon)
      #expect(try await store.geofence(owner: UserID("bob"), externalID: "1700000000") == nil)
      #expect(try await store.geofences(owners: [UserID("ann")]).map(\.id.rawValue) == ["g1", "g2"])
      #expect(try await store.geofences(owners: [UserID("ann"), UserID("bob")]).count == 3)

      // Moving a fence moves its index entries.
      let far = try Self.home.destination(bearing: 0, distance: 10_000)
      var moved = home
      moved.shape = .circle(center: far, radius: 200)
      moved.name = "cottage"
      moved.updatedAt = 30
      #expect(try await store.updateGeofence(moved))
      #expect(try await store.geofence(GeofenceID("g1")) == moved)
      #expect(try await store.geofences(near: Self.home, owners: [UserID("ann")]).isEmpty)
      #expect(try await store.geofences(near: far, owners: [UserID("ann")]).map(\.id) == [GeofenceID("g1")])
      var missing = moved
      missing.id = GeofenceID("nope")
      #expect(try await !store.updateGeofence(missing))

      // Deleting a fence deletes its states and events.
      #expect(
        try await store.commitGeofenceTracking(
          GeofenceTrackingUpdate(
            userID: UserID("bob"), version: 0, lastFixAt: 100,
            states: [GeofenceID("g1"): GeofenceState(presence: .inside, since: 100, lastFixAt: 100)],
            events: [event("g1", "bob", .enter, at: 100)])))
      #expect(try await store.deleteGeofence(GeofenceID("g1")))
      #expect(try await !store.deleteGeofence(GeofenceID("g1")))
      #expect(try await store.geofence(GeofenceID("g1")) == nil)
      #expect(try await store.geofenceTracking(of: UserID("bob")).states.isEmpty)
      #expect(try await store.geofenceEvents(GeofenceEventQuery(involving: UserID("bob"))).events.isEmpty)
    }
  }

  @Test(arguments: StoreEngine.all)
  func nearbyLookupFindsExactlyTheFencesWhoseBoxHoldsThePoint(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await makeUsers(store, ["ann", "bob"])
      var rng = SystemRandomNumberGenerator()
      var fences: [GeofenceItem] = []
      for index in 0..<120 {
        let center = try Self.home.destination(
          bearing: Double.random(in: 0..<360, using: &rng), distance: Double.random(in: 0...20_000, using: &rng))
        let fence = circle(
          "c\(index)", owner: index % 3 == 0 ? "bob" : "ann", at: center,
          radius: Double.random(in: 25...3_000, using: &rng))
        try await store.createGeofence(fence)
        fences.append(fence)
      }
      // A polygon across the antimeridian.
      let across = GeofenceItem(
        id: GeofenceID("fiji"), ownerId: UserID("ann"), name: "across",
        shape: .polygon([
          Coordinate(uncheckedLatitude: -17, longitude: 179.5), Coordinate(uncheckedLatitude: -17, longitude: -179.5),
          Coordinate(uncheckedLatitude: -16, longitude: -179.5), Coordinate(uncheckedLatitude: -16, longitude: 179.5),
        ]), createdAt: 1, updatedAt: 1)
      try await store.createGeofence(across)
      for _ in 0..<40 {
        let point = try Self.home.destination(
          bearing: Double.random(in: 0..<360, using: &rng), distance: Double.random(in: 0...22_000, using: &rng))
        let expected = fences.filter { $0.ownerId == UserID("ann") && $0.shape.geofence.boundingBox.contains(point) }
        let found = try await store.geofences(near: point, owners: [UserID("ann")])
        #expect(Set(found.map(\.id)) == Set(expected.map(\.id)))
      }
      // A batch's points in one lookup: the union of what each point finds, each fence once.
      var batch: [Coordinate] = []
      for _ in 0..<30 {
        batch.append(
          try Self.home.destination(
            bearing: Double.random(in: 0..<360, using: &rng), distance: Double.random(in: 0...22_000, using: &rng)))
      }
      batch.append(Coordinate(uncheckedLatitude: -16.5, longitude: 179.9))
      let union = fences.filter { fence in
        fence.ownerId == UserID("ann") && batch.contains { fence.shape.geofence.boundingBox.contains($0) }
      }
      let inBatch = try await store.geofences(near: batch, owners: [UserID("ann")])
      #expect(inBatch.map(\.id) == (union.map(\.id) + [GeofenceID("fiji")]).sorted())
      #expect(try await store.geofences(near: [], owners: [UserID("ann")]).isEmpty)
      // By id: those that exist.
      let some = [fences[0].id, GeofenceID("fiji"), GeofenceID("none")]
      #expect(try await store.geofences(ids: some).map(\.id) == [fences[0].id, GeofenceID("fiji")].sorted())
      #expect(try await store.geofences(ids: []).isEmpty)
      for longitude in [179.9, -179.9] {
        let point = Coordinate(uncheckedLatitude: -16.5, longitude: longitude)
        #expect(try await store.geofences(near: point, owners: [UserID("ann")]).map(\.id) == [GeofenceID("fiji")])
        #expect(try await store.geofences(near: point, owners: [UserID("bob")]).isEmpty)
      }
      #expect(try await store.geofences(near: Self.home, owners: []).isEmpty)
    }
  }

  @Test(arguments: StoreEngine.all)
  func trackingCommitsOnlyOverTheVersionReadAndNeverStoresAnEventTwice(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await makeUsers(store, ["ann", "bob"])
      try await store.createGeofence(circle("g1", owner: "ann"))
      try await store.createGeofence(circle("g2", owner: "ann"))
      #expect(try await store.geofenceTracking(of: UserID("bob")) == GeofenceTracking())
      _ = try await store.createWebhook(
        Webhook(
          id: "w1", ownerID: "ann", url: "https://hooks.example.com/w1", events: [], enabled: true, createdAt: 1,
          updatedAt: 1),
        secret: "secret-w1")
      func webhookEvent(_ key: String) -> WebhookEvent {
        WebhookEvent(
          kind: "geofence.enter", userID: UserID("ann"), payload: Data("{}".utf8), idempotencyKey: key, occurredAt: 100,
          queuedAt: 100)
      }
      func queued() async throws -> [String] {
        try await store.webhookDeliveries(webhook: "w1", state: nil, limit: 10).map(\.idempotencyKey)
      }
      let inside = GeofenceState(presence: .inside, since: 100, lastFixAt: 100)
      let position = GeofencePosition(latitude: 50.45, longitude: 30.52, accuracy: 12.5)
      let first = GeofenceTrackingUpdate(
        userID: UserID("bob"), version: 0, lastFixAt: 100, lastPosition: position,
        states: [GeofenceID("g1"): inside, GeofenceID("g2"): GeofenceState(presence: .unknown, lastFixAt: 100)],
        events: [event("g1", "bob", .enter, at: 100)], webhookEvents: [webhookEvent("e1")])
      #expect(try await store.commitGeofenceTracking(first))
      // What the monitor keeps in memory after a commit is what the store holds.
      #expect(try await store.geofenceTracking(of: UserID("bob")) == GeofenceTracking().applying(first))
      // The webhook delivery was queued with the event, in its transaction.
      #expect(try await queued() == ["e1"])
      // Another node that read version 0 loses, and stores nothing: no event, no delivery.
      var stale = first
      stale.lastFixAt = 90
      stale.events = [event("g2", "bob", .enter, at: 90)]
      stale.webhookEvents = [webhookEvent("e2")]
      #expect(try await !store.commitGeofenceTracking(stale))
      #expect(try await queued() == ["e1"])
      var tracking = try await store.geofenceTracking(of: UserID("bob"))
      #expect(tracking.version == 1 && tracking.lastFixAt == 100 && tracking.lastPosition == position)
      #expect(tracking.states[GeofenceID("g1")] == inside)
      #expect(tracking.states.count == 2)
      // The same event again (a retry after a lost answer) is stored once; removed states go.
      let second = GeofenceTrackingUpdate(
        userID: UserID("bob"), version: 1, lastFixAt: 200, removed: [GeofenceID("g2")],
        events: [event("g1", "bob", .enter, at: 100), event("g1", "bob", .dwell, at: 200)],
        webhookEvents: [webhookEvent("e1")])
      #expect(try await store.commitGeofenceTracking(second))
      #expect(try await queued() == ["e1"])
      #expect(try await store.geofenceTracking(of: UserID("bob")) == tracking.applying(second))
      tracking = try await store.geofenceTracking(of: UserID("bob"))
      #expect(tracking.version == 2 && tracking.lastFixAt == 200 && Array(tracking.states.keys) == [GeofenceID("g1")])
      #expect(tracking.lastPosition == nil)  // an update without a position keeps none
      let events = try await store.geofenceEvents(GeofenceEventQuery(involving: UserID("bob"))).events
      #expect(events.map(\.kind) == [.dwell, .enter])
      #expect(events[1] == event("g1", "bob", .enter, at: 100))
      // A state or event for a fence deleted meanwhile is dropped, not an error; a stored state is replaced.
      let leaving = GeofenceState(presence: .inside, since: 100, lastFixAt: 300, outsideStreak: 1)
      #expect(
        try await store.commitGeofenceTracking(
          GeofenceTrackingUpdate(
            userID: UserID("bob"), version: 2, lastFixAt: 300,
            states: [GeofenceID("gone"): inside, GeofenceID("g1"): leaving],
            events: [event("gone", "bob", .enter, at: 300)])))
      #expect(try await store.geofenceTracking(of: UserID("bob")).states == [GeofenceID("g1"): leaving])
    }
  }

  @Test(arguments: StoreEngine.all)
  func eventsArePagedNewestFirstAndFiltered(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await makeUsers(store, ["ann", "bob", "cat"])
      try await store.createGeofence(circle("g1", owner: "ann"))
      try await store.createGeofence(circle("g2", owner: "ann"))
      try await store.createGeofence(circle("g3", owner: "cat"))
      var all: [GeofenceEventItem] = []
      var version: Int64 = 0
      let kinds: [GeofenceEventKind] = [.enter, .dwell, .exit]
      for index in 0..<30 {
        // Pairs share a time, so the sequence breaks ties.
        let time = Int64(1_000 + index / 2 * 10)
        let fence = index % 2 == 0 ? "g1" : "g2"
        var item = event(fence, "bob", kinds[index % 3], at: time)
        item.id = "e\(index)"
        all.append(item)
        #expect(
          try await store.commitGeofenceTracking(
            GeofenceTrackingUpdate(userID: UserID("bob"), version: version, lastFixAt: time, events: [item])))
        version += 1
      }
      var foreign = event("g3", "cat", .enter, at: 5_000)
      foreign.ownerId = UserID("cat")
      _ = try await store.commitGeofenceTracking(
        GeofenceTrackingUpdate(userID: UserID("cat"), version: 0, lastFixAt: 5_000, events: [foreign]))

      var pages: [GeofenceEventItem] = []
      var cursor: HistoryCursor?
      repeat {
        let page = try await store.geofenceEvents(
          GeofenceEventQuery(involving: UserID("ann"), cursor: cursor, limit: 7))
        #expect(page.events.count <= 7)
        pages += page.events
        cursor = page.next
      } while cursor != nil
      #expect(pages.map(\.id) == all.reversed().map(\.id))
      #expect(
        try await store.geofenceEvents(GeofenceEventQuery(involving: UserID("bob"), limit: 100)).events.count == 30)
      #expect(
        try await store.geofenceEvents(GeofenceEventQuery(involving: UserID("cat"), limit: 100)).events == [foreign])
      let g2 = try await store.geofenceEvents(
        GeofenceEventQuery(involving: UserID("ann"), geofence: GeofenceID("g2"), limit: 100))
      #expect(g2.events.map(\.id) == all.filter { $0.geofenceId == GeofenceID("g2") }.reversed().map(\.id))
      let exits = try await store.geofenceEvents(GeofenceEventQuery(involving: nil, kind: .exit, limit: 100))
      #expect(exits.events.map(\.id) == all.filter { $0.kind == .exit }.reversed().map(\.id))
      let window = try await store.geofenceEvents(
        GeofenceEventQuery(involving: UserID("ann"), user: UserID("bob"), from: 1_020, to: 1_040, limit: 100))
      #expect(window.events.map(\.id) == all.filter { (1_020...1_040).contains($0.timestamp) }.reversed().map(\.id))
      #expect(
        try await store.geofenceEvents(GeofenceEventQuery(involving: UserID("ann"), user: UserID("cat"))).events.isEmpty
      )
    }
  }

  /// An event recorded while the fence's owner could not see the person is never listed to the owner, even once
  /// the person shares with them; the person still sees their own.
  @Test(arguments: StoreEngine.all)
  func anEventUnseenByTheOwnerAtItsTimeStaysUnlistedToTheOwner(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await makeUsers(store, ["ann", "bob"])
      try await store.createGeofence(circle("g1", owner: "ann"))
      let hidden = event("g1", "bob", .enter, at: 100)
      let seen = event("g1", "bob", .exit, at: 200)
      #expect(
        try await store.commitGeofenceTracking(
          GeofenceTrackingUpdate(
            userID: UserID("bob"), version: 0, lastFixAt: 100, events: [hidden], unseenByOwner: [hidden.id])))
      #expect(
        try await store.commitGeofenceTracking(
          GeofenceTrackingUpdate(userID: UserID("bob"), version: 1, lastFixAt: 200, events: [seen])))
      let owners = try await store.geofenceEvents(GeofenceEventQuery(involving: UserID("ann"), limit: 10))
      #expect(owners.events == [seen])
      let persons = try await store.geofenceEvents(GeofenceEventQuery(involving: UserID("bob"), limit: 10))
      #expect(persons.events == [seen, hidden])
      // The owner's own events on their own fence are always theirs.
      var own = event("g1", "ann", .enter, at: 300)
      own.ownerId = UserID("ann")
      #expect(
        try await store.commitGeofenceTracking(
          GeofenceTrackingUpdate(
            userID: UserID("ann"), version: 0, lastFixAt: 300, events: [own], unseenByOwner: [own.id])))
      #expect(
        try await store.geofenceEvents(GeofenceEventQuery(involving: UserID("ann"), limit: 10)).events == [own, seen])
    }
  }

  @Test(arguments: StoreEngine.all)
  func deletingAnAccountDeletesItsGeofencesStatesAndEvents(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await makeUsers(store, ["ann", "bob"])
      try await store.createGeofence(circle("g1", owner: "ann"))
      try await store.createGeofence(circle("g2", owner: "bob"))
      _ = try await store.commitGeofenceTracking(
        GeofenceTrackingUpdate(
          userID: UserID("bob"), version: 0, lastFixAt: 100,
          states: [GeofenceID("g1"): GeofenceState(presence: .inside, since: 100, lastFixAt: 100)],
          events: [event("g1", "bob", .enter, at: 100)]))
      _ = try await store.deleteUser(UserID("bob"), dryRun: false, batchSize: 100)
      #expect(try await store.geofence(GeofenceID("g2")) == nil)
      #expect(try await store.geofence(GeofenceID("g1")) != nil)
      #expect(try await store.geofenceEvents(GeofenceEventQuery(involving: UserID("ann"))).events.isEmpty)
      #expect(try await store.geofenceTracking(of: UserID("bob")) == GeofenceTracking())
    }
  }

  /// A fence's alert rule is stored, read by every lookup, changed and removed; an event's `alerted` is kept.
  @Test(arguments: StoreEngine.all)
  func alertRulesAndWhetherAnEventAlertedAreStored(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await makeUsers(store, ["ann", "bob"])
      let rule = GeofenceAlertRule(
        kinds: [.enter], days: [.mon, .fri], hours: DailyHours(from: "22:00", until: "06:00"),
        timeZone: "Europe/Berlin", people: [UserID("bob")])
      var fence = circle("g1", owner: "ann")
      fence.alerts = rule
      try await store.createGeofence(fence)
      try await store.createGeofence(circle("g2", owner: "ann"))
      #expect(try await store.geofence(GeofenceID("g1"))?.alerts == rule)
      #expect(try await store.geofence(GeofenceID("g2"))?.alerts == nil)
      #expect(try await store.geofences(owners: [UserID("ann")]).map(\.alerts) == [rule, nil])
      #expect(try await store.geofences(near: [Self.home], owners: [UserID("ann")]).map(\.alerts) == [rule, nil])
      #expect(try await store.geofences(ids: [GeofenceID("g1")]).first?.alerts == rule)

      var changed = fence
      changed.alerts = GeofenceAlertRule(kinds: [.exit, .dwell])
      #expect(try await store.updateGeofence(changed))
      #expect(try await store.geofence(GeofenceID("g1"))?.alerts == changed.alerts)
      changed.alerts = nil
      #expect(try await store.updateGeofence(changed))
      #expect(try await store.geofence(GeofenceID("g1"))?.alerts == nil)

      var held = event("g1", "bob", .enter, at: 100)
      held.alerted = false
      let sent = event("g1", "bob", .exit, at: 200)
      #expect(
        try await store.commitGeofenceTracking(
          GeofenceTrackingUpdate(userID: UserID("bob"), version: 0, lastFixAt: 200, events: [held, sent])))
      let listed = try await store.geofenceEvents(GeofenceEventQuery(involving: UserID("ann"))).events
      #expect(listed.map(\.id) == [sent.id, held.id])
      #expect(listed.map(\.alerted) == [true, false])
    }
  }
}
