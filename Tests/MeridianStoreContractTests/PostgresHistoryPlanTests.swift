import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import MeridianStore
import MeridianStorePostgres
import MeridianStoreTesting
import Testing

/// PostgreSQL reads the fixes of a small view (the history map's tracks) through the `(user_id, geohash6)` index,
/// range by range, not by scanning the owner's whole history (the statement joined to the list of ranges scanned it,
/// here and in the benchmark's 1,000,000 fixes).
@Suite("PostgreSQL history plans")
struct PostgresHistoryPlanTests {
  @Test func aZoom16ViewsFixesAreReadThroughTheGeohashIndex() async throws {
    try await PostgresTestDatabase.withStoreForLoads { database, store in
      _ = try #require(
        try await store.createAccount(
          id: "walker", credential: .email("walker@example.com"), passwordHash: nil, now: 1))
      #expect(try await store.claimDevice("phone", owner: "walker", now: 1))
      // 100,000 fixes 10 s apart, a walk of about 10 m a step back and forth over a 0.6° × 0.9° area.
      var walk: [LocationFix] = []
      for index in 0..<100_000 {
        let heading = Double(index) * 0.001
        let latitude = 50.2 + 0.3 * sin(heading * 0.37)
        let longitude = 30.1 + 0.45 * sin(heading * 0.23)
        walk.append(
          try LocationFix(
            deviceID: "phone", timestamp: 1_500_000_000_000 + Int64(index) * 10_000, latitude: latitude,
            longitude: longitude, horizontalAccuracy: 5))
      }
      for batch in stride(from: 0, to: walk.count, by: 10_000) {
        _ = try await store.insertFixes(
          [FixInsertBatch(userID: "walker", deviceID: "phone", fixes: Array(walk[batch..<batch + 10_000]))],
          now: 1)
      }
      try await database.execute("ANALYZE fixes")

      // A 1024 × 768 screen at zoom 16 on the walk, as the benchmark's: about 1.5 × 1.2 km, nine geohash ranges.
      let middle = walk[65_432]
      let box = BoundingBox(
        south: middle.latitude - 0.0053, west: middle.longitude - 0.011, north: middle.latitude + 0.0053,
        east: middle.longitude + 0.011)
      let plan = try await store.fixPositionsPlan(owner: "walker", filter: HistoryFilter(), box: box)
      print("[plan] a zoom 16 view's fixes:\n\(plan)")
      #expect(plan.contains("user_id_geohash6") && !plan.contains("Seq Scan"), "\(plan)")
      // What the plan finds is what the map reads: the walk's fixes in the box, by time.
      let read = try await store.fixPositions(owner: "walker", filter: HistoryFilter(), box: box, limit: 20_001)
      let inside = walk.filter {
        (box.south...box.north).contains($0.latitude) && (box.west...box.east).contains($0.longitude)
      }
      #expect(!inside.isEmpty)
      #expect(read.map(\.timestamp) == inside.map(\.timestamp))
    }
  }
}

extension PostgresTestDatabase {
  /// Runs `body` on a fresh database with a store on it whose statements and commits may take minutes (for tests
  /// that load it with tens of thousands of fixes, in a debug build beside other tests, before looking at a plan),
  /// closing the store however `body` ends.
  static func withStoreForLoads(_ body: (PostgresTestDatabase, PostgresStore) async throws -> Void) async throws {
    try await with { database in
      let store = try await PostgresStore.open(
        url: database.url, maximumConnections: 2,
        timeouts: PostgresStore.Timeouts(connectionWait: .seconds(30), statement: .seconds(600)),
        commitTimeout: .seconds(600))
      do {
        try await body(database, store)
      } catch {
        await store.close()
        throw error
      }
      await store.close()
    }
  }
}
