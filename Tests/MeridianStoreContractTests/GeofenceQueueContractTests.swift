import DomainKit
import Foundation
import MeridianAPI
import MeridianStore
import MeridianStoreTesting
import Testing

/// The geofence queue: each upload that stored fixes is queued by the transaction that stored them, in commit order,
/// and leaves the queue only when removed or in the tracking commit that evaluated it — on every engine.
@Suite("Store contract: geofence queue")
struct GeofenceQueueContractTests {
  static func account(_ store: any MeridianStore, _ id: UserID, device: DeviceID) async throws {
    _ = try await store.createAccount(id: id, credential: .email("\(id)@example.com"), passwordHash: nil, now: 0)
    #expect(try await store.claimDevice(device, owner: id, now: 0))
  }

  static func imported(_ fixes: [LocationFix]) -> [LocationFix] {
    fixes.map { fix in
      var fix = fix
      fix.kind = .imported
      return fix
    }
  }

  @Test(arguments: StoreEngine.all)
  func eachUploadThatStoredFixesIsQueuedOnceInCommitOrder(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await Self.account(store, "anna", device: "phone")
      try await Self.account(store, "bob", device: "watch")
      let anna = try makeFixes(count: 3)
      let bob = try makeFixes(count: 2, start: 1_700_000_100_000, latitude: 51)
      let later = try makeFixes(count: 2, start: 1_700_000_200_000)
      _ = try await store.insertFixes(
        [
          FixInsertBatch(userID: "anna", deviceID: "phone", fixes: anna),
          FixInsertBatch(userID: "bob", deviceID: "watch", fixes: bob),
        ], now: 100)
      _ = try await store.insertFixes(
        [
          // Only duplicates: nothing stored, nothing queued.
          FixInsertBatch(userID: "anna", deviceID: "phone", fixes: anna),
          // One duplicate and two new fixes: the two are queued.
          FixInsertBatch(userID: "anna", deviceID: "phone", fixes: [anna[2]] + later),
          // Imported history is never evaluated: not queued.
          FixInsertBatch(
            userID: "bob", deviceID: "watch", fixes: Self.imported(try makeFixes(count: 2, start: 1_600_000_000_000))),
        ], now: 200)

      let queue = try await store.geofenceQueue(limit: 10, fixes: 1_000)
      #expect(queue.map(\.userID) == ["anna", "bob", "anna"])
      #expect(queue.map(\.queuedAt) == [100, 100, 200])
      #expect(zip(queue, queue.dropFirst()).allSatisfy { $0.sequence < $1.sequence })
      #expect(queue.map { $0.fixes.map(\.timestamp) } == [anna, bob, later].map { $0.map(\.timestamp) })
      #expect(queue[0].fixes.map(\.coordinate) == anna.map(\.coordinate))
      #expect(queue[1].fixes.allSatisfy { $0.deviceID == "watch" })
      #expect(try await store.geofenceQueue(limit: 2, fixes: 1_000) == Array(queue.prefix(2)))
      #expect(try await store.geofenceQueueBacklog() == GeofenceQueueBacklog(entries: 3, oldestQueuedAt: 100))

      // Removing is idempotent and leaves the rest in order.
      try await store.removeGeofenceQueueEntries(queue.prefix(2).map(\.sequence))
      try await store.removeGeofenceQueueEntries([queue[0].sequence])
      #expect(try await store.geofenceQueue(limit: 10, fixes: 1_000) == [queue[2]])
      #expect(try await store.geofenceQueueBacklog() == GeofenceQueueBacklog(entries: 1, oldestQueuedAt: 200))

      // Fixes deleted since leave their entry without them; a later upload queues after it.
      _ = try await store.deleteHistory(owner: "anna", filter: HistoryFilter())
      _ = try await store.insertFixes([FixInsertBatch(userID: "bob", deviceID: "watch", fixes: later)], now: 300)
      let left = try await store.geofenceQueue(limit: 10, fixes: 1_000)
      #expect(left.map(\.fixes.count) == [0, 2] && left.map(\.userID) == ["anna", "bob"])
      #expect(left.first?.sequence == queue[2].sequence && (left.last?.sequence ?? 0) > queue[2].sequence)
      try await store.removeGeofenceQueueEntries(left.map(\.sequence))
      #expect(try await store.geofenceQueueBacklog() == GeofenceQueueBacklog(entries: 0, oldestQueuedAt: nil))
    }
  }

  /// A read holds about the fixes it is given, whatever the uploads' sizes: entries stop once those before them
  /// stored that many (duplicates, not stored, don't count), the first is always read, and the entries' limit holds.
  @Test(arguments: StoreEngine.all)
  func aReadStopsAtItsFixesWhateverTheUploadsSizes(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await Self.account(store, "anna", device: "phone")
      let fixes = try makeFixes(count: 105)
      // Four uploads storing 40, 30 (of 40 sent: 10 duplicates), 30 and 5 fixes.
      for upload in [fixes[0..<40], fixes[30..<70], fixes[70..<100], fixes[100..<105]] {
        _ = try await store.insertFixes(
          [FixInsertBatch(userID: "anna", deviceID: "phone", fixes: Array(upload))], now: 100)
      }
      let all = try await store.geofenceQueue(limit: 10, fixes: 1_000)
      #expect(all.map(\.fixes.count) == [40, 30, 30, 5])
      for (bound, entries) in [(1, 1), (40, 1), (41, 2), (70, 2), (71, 3), (100, 3), (101, 4)] {
        #expect(
          try await store.geofenceQueue(limit: 10, fixes: bound) == Array(all.prefix(entries)), "\(bound) fixes")
      }
      #expect(try await store.geofenceQueue(limit: 2, fixes: 1_000) == Array(all.prefix(2)))
    }
  }

  @Test(arguments: StoreEngine.all)
  func aTrackingCommitRemovesTheEntriesItEvaluatedOnlyWhenItCommits(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await Self.account(store, "anna", device: "phone")
      let fixes = try makeFixes(count: 2)
      _ = try await store.insertFixes([FixInsertBatch(userID: "anna", deviceID: "phone", fixes: [fixes[0]])], now: 1)
      _ = try await store.insertFixes([FixInsertBatch(userID: "anna", deviceID: "phone", fixes: [fixes[1]])], now: 2)
      let queue = try await store.geofenceQueue(limit: 10, fixes: 1_000).map(\.sequence)
      try #require(queue.count == 2)

      #expect(
        try await store.commitGeofenceTracking(
          GeofenceTrackingUpdate(
            userID: "anna", version: 0, lastFixAt: fixes[0].timestamp, evaluatedEntries: [queue[0]])))
      #expect(try await store.geofenceQueue(limit: 10, fixes: 1_000).map(\.sequence) == [queue[1]])
      // Over a stale version nothing is stored, and the entry stays.
      #expect(
        try await !store.commitGeofenceTracking(
          GeofenceTrackingUpdate(
            userID: "anna", version: 0, lastFixAt: fixes[1].timestamp, evaluatedEntries: [queue[1]])))
      #expect(try await store.geofenceQueue(limit: 10, fixes: 1_000).map(\.sequence) == [queue[1]])
      #expect(try await store.geofenceTracking(of: "anna").lastFixAt == fixes[0].timestamp)
      #expect(
        try await store.commitGeofenceTracking(
          GeofenceTrackingUpdate(
            userID: "anna", version: 1, lastFixAt: fixes[1].timestamp, evaluatedEntries: [queue[1]])))
      #expect(try await store.geofenceQueue(limit: 10, fixes: 1_000).isEmpty)

      // Deleting the account deletes its queue.
      _ = try await store.insertFixes(
        [FixInsertBatch(userID: "anna", deviceID: "phone", fixes: try makeFixes(count: 1, start: 1_800_000_000_000))],
        now: 3)
      #expect(try await store.geofenceQueueBacklog().entries == 1)
      _ = try await store.deleteUser("anna", dryRun: false, batchSize: 100)
      #expect(try await store.geofenceQueueBacklog() == GeofenceQueueBacklog(entries: 0, oldestQueuedAt: nil))
    }
  }
}
