import DomainKit
import Foundation
import MeridianAPI
import MeridianStore
import MeridianStoreTesting
import Synchronization
import Testing

/// Retention over several months of fixes, with the cutoff in the middle of a month.
@Suite("Store contract: retention across months")
struct RetentionContractTests {
  /// 2025-09-01T00:00:00Z, the first moment of September.
  static let september1: Int64 = 1_756_684_800_000
  /// 2025-09-10T00:00:00Z.
  static let september10: Int64 = 1_757_462_400_000
  /// 2025-10-31T23:59:56Z: four fixes one second apart end on the last second of October.
  static let october31: Int64 = 1_761_955_196_000
  /// 2025-11-02T00:00:00Z.
  static let november2: Int64 = 1_762_041_600_000
  /// 2025-11-15T12:00:00Z, the cutoff.
  static let cutoff: Int64 = 1_763_208_000_000

  /// Fixes in September (from its first millisecond), October (to its last second) and November on both sides of a
  /// mid-month cutoff (up to one second before it, and from it on): the old months go whole, November is trimmed,
  /// and the report is the dry run's. Write transactions differ by engine: SQLite deletes in batches of `batchSize`
  /// rows; PostgreSQL drops each month wholly before the cutoff in one and trims the straddling month in batches.
  @Test(arguments: StoreEngine.all)
  func oldMonthsGoWholeAndTheStraddlingMonthIsTrimmed(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      for id: UserID in ["anna", "bob"] {
        _ = try await store.createAccount(id: id, credential: .email("\(id)@example.com"), passwordHash: nil, now: 0)
        _ = try await store.claimDevice(DeviceID(id.rawValue + "-phone"), owner: id, now: 0)
      }
      let anna =
        try makeFixes(count: 5, start: Self.september10) + makeFixes(count: 4, start: Self.october31)
        + makeFixes(count: 3, start: Self.cutoff - 3000) + makeFixes(count: 2, start: Self.cutoff)
      let bob = try makeFixes(count: 3, start: Self.september1) + makeFixes(count: 2, start: Self.november2)
      let receipts = try await store.insertFixes(
        [
          FixInsertBatch(userID: "anna", deviceID: "anna-phone", fixes: anna),
          FixInsertBatch(userID: "bob", deviceID: "bob-phone", fixes: bob),
        ], now: Self.cutoff + 10_000)
      #expect(receipts.map(\.accepted) == [14, 5])

      let preview = try await store.retentionPreview(olderThan: Self.cutoff)
      #expect(
        preview
          == RetentionReport(
            dryRun: true, cutoff: Self.cutoff, deleted: 17, batches: 0, users: 2, oldest: Self.september1,
            newest: Self.cutoff - 1000))

      let reported = Mutex<[Int]>([])
      let applied = try await store.applyRetention(olderThan: Self.cutoff, batchSize: 2) { total in
        reported.withLock { $0.append(total) }
      }
      var expected = preview
      expected.dryRun = false
      // SQLite: ⌈17 / 2⌉ batches. PostgreSQL: September and October dropped, November's 5 old fixes in ⌈5 / 2⌉.
      expected.batches = engine.name.hasPrefix("postgres") ? 2 + 3 : 9
      #expect(applied == expected)
      let totals = reported.withLock { $0 }
      #expect(totals.count == applied.batches && totals.last == 17 && totals == totals.sorted())

      #expect(try await store.retentionPreview(olderThan: Self.cutoff).deleted == 0)
      #expect(try await store.retentionPreview(olderThan: .max).deleted == 2)
      let kept = try await store.history(owner: "anna", filter: HistoryFilter(), limit: 100, before: nil)
      #expect(Set(kept.map(\.fix.timestamp)) == [Self.cutoff, Self.cutoff + 1000])
      #expect(try await store.history(owner: "bob", filter: HistoryFilter(), limit: 100, before: nil).isEmpty)
      // The cell counts per hour and per day (HistoryCells) lose what retention removed: a dropped month's as a
      // trimmed one's.
      func counted(_ owner: UserID, precision: Int) async throws -> [Int] {
        try await store.cellsOfAllTime(owner: owner, precision: precision).map(\.count)
      }
      #expect(try await counted("anna", precision: 2) == [2])
      #expect(try await counted("bob", precision: 6).isEmpty)

      let again = try await store.applyRetention(olderThan: Self.cutoff, batchSize: 2) { _ in }
      #expect(again.deleted == 0 && again.batches == 0 && again.users == 0 && again.oldest == nil)

      // A month that retention removed takes fixes again (an import of old history).
      let late = try makeFixes(count: 1, start: Self.september10 + 5000)
      let stored = try await store.insertFixes(
        [FixInsertBatch(userID: "bob", deviceID: "bob-phone", fixes: late)], now: Self.cutoff + 20_000)
      #expect(stored.map(\.accepted) == [1])
      #expect(try await counted("bob", precision: 4) == [1])
      #expect(try await store.retentionPreview(olderThan: Self.cutoff).deleted == 1)
      #expect(try await store.history(owner: "bob", filter: HistoryFilter(), limit: 100, before: nil).count == 1)
    }
  }
}
