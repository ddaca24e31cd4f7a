import DomainKit
import Foundation
import MeridianAPI
import MeridianStore
import MeridianStoreTesting
import Testing

/// The importers' ``HistoryBatchWriter`` on every engine, with several batches being stored at once: a fix handed in
/// two batches stored side by side is stored once and counted once (as stored, then as a duplicate), in the history
/// and in its per-hour cells.
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
      let cells = try await store.hourlyClusters(
        owner: "anna", precision: 2, hours: 0..<(Int64.max / HistoryCells.hour), ranges: [HistoryCells.range("")])
      #expect(cells.map(\.count).reduce(0, +) == fixes.count)
    }
  }
}
