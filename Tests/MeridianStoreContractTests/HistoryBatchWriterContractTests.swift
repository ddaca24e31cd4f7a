import DomainKit
import Foundation
import MeridianAPI
import MeridianStore
import MeridianStoreTesting
import MeridianTestSupport
import Testing

/// The importers' ``HistoryBatchWriter`` on every engine, with several batches being stored at once: a fix handed in
/// two batches stored side by side is stored once and counted once (as stored, then as a duplicate), in the history
/// and in its cells' counts per hour and per day; batches the geofences evaluate are stored in file order.
@Suite("Store contract: history files stored in batches")
struct HistoryBatchWriterContractTests {
  @Test(arguments: StoreEngine.all)
  func fixesRepeatedInBatchesStoredAtOnceAreStoredOnce(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      _ = try await store.createAccount(id: "anna", credential: .email("anna@example.com"), passwordHash: nil, now: 0)
      _ = try await store.claimDevice("phone", owner: "anna", now: 0)
      let fixes = try makeFixes(count: 600)
      var writer = HistoryBatchWriter(
        store: store, user: "anna", now: 1_800_000_000_000, batchSize: 50, batchesInFlight: 3
      ) { _ in "phone" }
      // Runs of 50 starting every 25 fixes: each fix but the first and last 25 is in two batches, one after the
      // other, stored at the same time.
      var handed = 0
      for start in stride(from: 0, to: fixes.count - 25, by: 25) {
        let run = Array(fixes[start..<min(start + 50, fixes.count)])
        try await writer.add(run)
        handed += run.count
      }
      try await writer.flush()
      #expect(writer.stored == fixes.count)
      #expect(writer.duplicates == handed - fixes.count)
      let history = try await store.history(owner: "anna", filter: HistoryFilter(), limit: 10_000, before: nil)
      #expect(history.map(\.fix.timestamp).sorted() == fixes.map(\.timestamp))
      let cells = try await store.cellsOfAllTime(owner: "anna", precision: 2)
      #expect(cells.map(\.count).reduce(0, +) == fixes.count)
    }
  }

  /// On PostgreSQL, where batches commit side by side, those the geofences evaluate (fixes not of kind `imported`, as
  /// a CSV's rows may be) commit one after another: the monitor passes over a person's fixes older than the last it
  /// evaluated, so a later batch committed first would leave the earlier one's never evaluated. The live log's lock,
  /// held by another node, stops the first batch's commit at its last statement; no second commit may start.
  @Test func batchesTheGeofencesEvaluateCommitInFileOrder() async throws {
    try await StoreEngine.postgres.withTwoNodes { nodeA, nodeB in
      _ = try await nodeA.createAccount(id: "anna", credential: .email("anna@example.com"), passwordHash: nil, now: 0)
      _ = try await nodeA.claimDevice("phone", owner: "anna", now: 0)
      let fixes = try makeFixes(count: 150)
      let hold = try await LiveLogLockHold(on: nodeB)
      let writing = Task {
        var writer = HistoryBatchWriter(store: nodeA, user: "anna", now: 1, batchSize: 50, batchesInFlight: 3) { _ in
          "phone"
        }
        try await writer.add(fixes)
        try await writer.flush()
        return writer.stored
      }
      #expect(try await hold.waitForWaiters(1) >= 1)
      try? await waitUntil("a second commit waiting for the lock", timeout: .seconds(3)) {
        try await hold.waiting() >= 2
      }
      #expect(try await hold.waiting() == 1)
      try await hold.release()
      #expect(try await writing.value == fixes.count)
      let queued = try await nodeA.geofenceQueue(limit: 100, fixes: 10_000)
      #expect(queued.flatMap { $0.fixes.map(\.timestamp) } == fixes.map(\.timestamp))
    }
  }
}
