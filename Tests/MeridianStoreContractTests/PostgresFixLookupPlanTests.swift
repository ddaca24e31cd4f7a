import DomainKit
import Foundation
import MeridianAPI
import MeridianStore
import MeridianStorePostgres
import MeridianStoreTesting
import Testing

/// The reads that follow every commit of fixes on PostgreSQL (the geofence queue's next entries, the live log's
/// entries after a cursor) look each entry's fixes up by their key. Joined on `timestamp = ANY(timestamps)`, a month
/// whose statistics were taken when it was small was read whole for a few queued fixes (a sequential scan under a
/// hash join, or its whole key index under a merge join), after every commit. (In the benchmark's database; the
/// statistics made here gave the old statement a good plan too: this test keeps the plan from losing the index.)
@Suite("PostgreSQL fix lookup plans")
struct PostgresFixLookupPlanTests {
  @Test func queuedAndLiveFixesAreLookedUpByKeyWhenStatisticsAreStale() async throws {
    try await PostgresTestDatabase.withStoreForLoads { database, store in
      _ = try await store.createAccount(
        id: "anna", credential: .email("anna@example.com"), passwordHash: nil, now: 0)
      // 32 phones (as the benchmark's uploads): 2,000 uploads of a fix each, analysed while the queue holds them
      // all and the month is small, then evaluated (the queue empties, its statistics stay); then 20,000 fixes in
      // 20 uploads.
      let phones = (0..<32).map { DeviceID("phone-\($0)") }
      for phone in phones { _ = try await store.claimDevice(phone, owner: "anna", now: 0) }
      let start: Int64 = 1_757_462_400_000
      func upload(_ range: Range<Int>) throws -> FixInsertBatch {
        let phone = phones[range.lowerBound % phones.count]
        return FixInsertBatch(
          userID: "anna", deviceID: phone,
          fixes: try range.map { index in
            try LocationFix(
              deviceID: phone, timestamp: start + Int64(index) * 10_000,
              latitude: 50.45 + Double(index % 100) * 0.0001, longitude: 30.52)
          })
      }
      _ = try await store.insertFixes(try (0..<2_000).map { try upload($0..<$0 + 1) }, now: start)
      try await database.execute("ANALYZE")
      try await store.removeGeofenceQueueEntries(
        try await store.geofenceQueue(limit: 2_000, fixes: 100_000).map(\.sequence))
      for first in stride(from: 2_000, to: 22_000, by: 1_000) {
        _ = try await store.insertFixes([try upload(first..<first + 1_000)], now: start)
      }

      let plans = try await store.fixLookupPlans(liveAfter: 2_000)
      #expect(plans.count == 2)
      for (query, plan) in plans {
        print("[plan] \(query):\n\(plan)")
        #expect(plan.contains("Index Scan using fixes_y2025m09_"), "\(query):\n\(plan)")
        #expect(
          !plan.contains("Seq Scan on fixes") && !plan.contains("Merge") && !plan.contains("Hash"),
          "\(query):\n\(plan)")
      }
      // What the reads find: the queued upload's fixes, every one.
      let queued = try await store.geofenceQueue(limit: 1_000, fixes: 100_000)
      #expect(queued.map(\.fixes.count) == Array(repeating: 1_000, count: 20))
    }
  }

  /// A month no statistics were taken of yet, filled by one phone (an import, a backfill): each entry's fixes are
  /// looked up through the key's timestamp, not through the person and phone alone with the timestamp as a filter,
  /// which read the phone's whole month for every fix of every entry (minutes a read, in the benchmark's seed), nor
  /// through a range of the key with the timestamps as a filter (each fix compared with all of the entry's).
  @Test func fixesInAMonthNeverAnalysedAreLookedUpThroughTheirTimestamps() async throws {
    try await PostgresTestDatabase.withStoreForLoads { database, store in
      _ = try await store.createAccount(
        id: "bohdan", credential: .email("bohdan@example.com"), passwordHash: nil, now: 0)
      _ = try await store.claimDevice("phone", owner: "bohdan", now: 0)
      let october: Int64 = 1_759_276_800_000  // 2025-10-01 UTC
      func fixes(_ range: Range<Int>) throws -> [FixInsertBatch] {
        [
          FixInsertBatch(
            userID: "bohdan", deviceID: "phone",
            fixes: try range.map { index in
              try LocationFix(
                deviceID: "phone", timestamp: october + Int64(index) * 10_000,
                latitude: 50.45 + Double(index % 100) * 0.0001, longitude: 30.52)
            })
        ]
      }
      // The month's partition made by its first fix, kept from autovacuum's statistics, then filled.
      _ = try await store.insertFixes(try fixes(0..<1), now: october)
      try await database.execute("ALTER TABLE fixes_y2025m10 SET (autovacuum_enabled = false)")
      for first in stride(from: 1, to: 40_001, by: 10_000) {
        _ = try await store.insertFixes(try fixes(first..<first + 10_000), now: october)
      }

      let plans = try await store.fixLookupPlans(liveAfter: 1)
      for (query, plan) in plans {
        print("[plan] \(query):\n\(plan)")
        let lines = plan.split(separator: "\n")
        let monthScans = lines.indices.filter { lines[$0].contains("Scan using fixes_y2025m10_") }
        #expect(!monthScans.isEmpty, "\(query):\n\(plan)")
        for scan in monthScans {
          let details = lines[(scan + 1)...].prefix { !$0.contains("->") }
          #expect(
            details.contains { $0.contains("Index Cond") && $0.contains("\"timestamp\"") }, "\(query):\n\(plan)")
          // Nor a filter on the timestamp: bounded by the timestamps' range, `timestamp = ANY(timestamps)` was one,
          // comparing each fix of the range with every timestamp of the entry.
          #expect(
            !details.contains { $0.contains("Filter") && $0.contains("timestamp") }, "\(query):\n\(plan)")
        }
      }
      // What the reads find: every fix of the four entries after the first.
      guard case .entries(let entries) = try await store.liveEntries(after: 1, limit: 10, fixes: 100_000) else {
        Issue.record("the live log was truncated")
        return
      }
      #expect(entries.map(\.fixes.count) == Array(repeating: 10_000, count: 4))
      #expect(entries.flatMap(\.fixes).map(\.timestamp) == (1..<40_001).map { october + Int64($0) * 10_000 })
    }
  }
}
