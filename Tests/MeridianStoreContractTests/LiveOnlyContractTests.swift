import DomainKit
import Foundation
import MeridianAPI
import MeridianStore
import MeridianStoreTesting
import Testing

/// Live only (issue 39 §4): an account that keeps only its last position stores no history, on every engine — the
/// transaction that stores fixes and the one that takes them off the geofence queue keep the rule.
@Suite("Store contract: live only")
struct LiveOnlyContractTests {
  /// Receipt time of the fixes: a minute after `makeFixes`' first timestamp, so they are not dated ahead of it.
  static let received: Int64 = 1_700_000_060_000

  static func store(
    _ store: any MeridianStore, _ user: UserID, _ device: DeviceID, _ fixes: [LocationFix], now: Int64 = received
  ) async throws {
    _ = try await store.insertFixes([FixInsertBatch(userID: user, deviceID: device, fixes: fixes)], now: now)
  }

  static func timestamps(_ store: any MeridianStore, _ user: UserID) async throws -> [Int64] {
    try await store.history(owner: user, filter: HistoryFilter(), limit: 100, before: nil).map(\.fix.timestamp)
  }

  /// Evaluates the whole geofence queue (as the monitor does when it finds nothing to store).
  static func drainQueue(_ store: any MeridianStore) async throws {
    try await store.removeGeofenceQueueEntries(try await store.geofenceQueue(limit: 100, fixes: 1_000).map(\.sequence))
  }

  @Test(arguments: StoreEngine.all)
  func aLiveOnlyAccountKeepsOnlyItsLastPositionOnceTheGeofencesHaveSeenItsFixes(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await GeofenceQueueContractTests.account(store, "anna", device: "phone")
      try await GeofenceQueueContractTests.account(store, "bob", device: "watch")
      #expect(try await !store.isLiveOnly("anna"))
      #expect(try await store.setLiveOnly("anna", true, deletingHistory: false, now: 1) == 0)
      #expect(try await store.isLiveOnly("anna"))
      #expect(try await !store.isLiveOnly("bob"))
      #expect(try await store.setLiveOnly("nobody", true, deletingHistory: false, now: 1) == nil)

      let fixes = try makeFixes(count: 5)
      try await Self.store(store, "anna", "phone", Array(fixes[0..<3]))
      try await Self.store(store, "bob", "watch", Array(fixes[0..<3]))
      // Waiting for the geofences, the fixes stay; their evaluation takes the older ones away.
      let queue = try await store.geofenceQueue(limit: 10, fixes: 1_000)
      #expect(queue.first?.fixes.map(\.timestamp) == fixes[0..<3].map(\.timestamp))
      #expect(try await Self.timestamps(store, "anna").count == 3)
      try await Self.drainQueue(store)
      #expect(try await Self.timestamps(store, "anna") == [fixes[2].timestamp])
      #expect(try await store.lastFix(owner: "anna", notAfter: Self.received)?.timestamp == fixes[2].timestamp)
      #expect(try await Self.timestamps(store, "bob").count == 3, "another account keeps its history")

      // The next fix replaces the last position at once (the last one is not waiting any more).
      try await Self.store(store, "anna", "phone", [fixes[3]])
      #expect(try await Self.timestamps(store, "anna") == [fixes[3].timestamp])
      // An older fix arriving late is no last position: it goes once evaluated.
      try await Self.store(store, "anna", "phone", [fixes[1]])
      try await Self.drainQueue(store)
      #expect(try await Self.timestamps(store, "anna") == [fixes[3].timestamp])
      // A fix dated after its receipt (a clock ahead) stays beside the last position until it is due.
      var ahead = fixes[4]
      ahead.timestamp = Self.received + 30_000
      try await Self.store(store, "anna", "phone", [ahead])
      try await Self.drainQueue(store)
      #expect(try await Self.timestamps(store, "anna") == [ahead.timestamp, fixes[3].timestamp])
      #expect(try await store.lastFix(owner: "anna", notAfter: Self.received)?.timestamp == fixes[3].timestamp)

      // The tracking commit that evaluated an entry keeps the rule too.
      let later = try makeFixes(count: 2, start: 1_700_000_040_000)
      try await Self.store(store, "anna", "phone", later)
      let entries = try await store.geofenceQueue(limit: 10, fixes: 1_000).map(\.sequence)
      #expect(
        try await store.commitGeofenceTracking(
          GeofenceTrackingUpdate(
            userID: "anna", version: 0, lastFixAt: later[1].timestamp, evaluatedEntries: entries)))
      #expect(try await Self.timestamps(store, "anna") == [ahead.timestamp, later[1].timestamp])

      // Turned off, the history builds up again.
      #expect(try await store.setLiveOnly("anna", false, deletingHistory: false, now: 2) == 0)
      #expect(try await !store.isLiveOnly("anna"))
      try await Self.store(store, "anna", "phone", try makeFixes(count: 3, start: 1_700_000_050_000))
      try await Self.drainQueue(store)
      #expect(try await Self.timestamps(store, "anna").count == 5)
    }
  }

  @Test(arguments: StoreEngine.all)
  func turningLiveOnlyOnDeletesTheHistoryOnlyWhenAsked(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await GeofenceQueueContractTests.account(store, "anna", device: "phone")
      try await GeofenceQueueContractTests.account(store, "bob", device: "watch")
      let old = try makeFixes(count: 4)
      try await Self.store(store, "anna", "phone", old)
      try await Self.store(store, "bob", "watch", old)
      try await Self.drainQueue(store)

      // Without deleting: the history stored so far stays, and what comes later is not kept.
      #expect(try await store.setLiveOnly("anna", true, deletingHistory: false, now: Self.received + 1) == 0)
      let new = try makeFixes(count: 3, start: 1_700_000_010_000)
      try await Self.store(store, "anna", "phone", new, now: Self.received + 2)
      try await Self.drainQueue(store)
      #expect(try await Self.timestamps(store, "anna") == [new[2].timestamp] + old.reversed().map(\.timestamp))

      // Switching on again (it is on) with deletion leaves the last position only, and says how many went.
      #expect(try await store.setLiveOnly("anna", true, deletingHistory: true, now: Self.received + 1) == 4)
      #expect(try await Self.timestamps(store, "anna") == [new[2].timestamp])
      #expect(try await store.lastFix(owner: "anna", notAfter: Self.received)?.timestamp == new[2].timestamp)
      #expect(try await Self.timestamps(store, "bob").count == 4)

      // Switching on with deletion keeps the fixes the geofences still wait for.
      try await Self.store(store, "bob", "watch", new, now: Self.received + 2)
      #expect(try await store.setLiveOnly("bob", true, deletingHistory: true, now: Self.received + 3) == 4)
      #expect(try await Self.timestamps(store, "bob") == new.reversed().map(\.timestamp))
      try await Self.drainQueue(store)
      #expect(try await Self.timestamps(store, "bob") == [new[2].timestamp])
    }
  }
}
