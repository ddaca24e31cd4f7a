import DomainKit
import Foundation
import GeoKit
import MeridianStore
import MeridianStorePostgres
import MeridianStoreTesting
import Testing

/// PostgreSQL's spatial queries read their GiST index at real sizes, also right after a bulk load (issue 35 §2):
/// before the store refreshed the planner's statistics after an import, a radius query over freshly imported venues
/// was filtered row by row through the `places_kind` index.
@Suite("PostgreSQL spatial plans")
struct PostgresSpatialPlanTests {
  @Test func aRadiusQueryReadsTheGiSTIndexRightAfterABulkLoadOfVenues() async throws {
    try await PostgresTestDatabase.with { database in
      let store = try await PostgresStore.open(url: database.url, maximumConnections: 2, timeouts: .tests)
      do {
        // 20,000 venues over Ukraine, imported in batches as `venues import` does.
        var state: UInt64 = 42
        func next() -> Double {
          state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
          return Double(state >> 11) / Double(1 << 53)
        }
        for batch in 0..<20 {
          let records = try (0..<1_000).map { index in
            try VenueRecord(
              place: Place(
                id: PlaceID("v\(batch)-\(index)"), kind: .venue, name: LocalizedText(["en": "Venue \(index)"]),
                location: Coordinate(uncheckedLatitude: 45 + next() * 7, longitude: 23 + next() * 17)))
          }
          try await store.upsertVenues(records)
        }
        try await store.refreshPlannerStatistics(after: .places)
        let kyiv = Coordinate(uncheckedLatitude: 50.45, longitude: 30.52)
        let plans = try await store.spatialPlans(near: kyiv, radius: 1_000)
        for plan in plans { print("[plan] \(plan.query): \(plan.usesSpatialIndex)\n\(plan.plan)") }
        let venues = try #require(plans.first { $0.query.hasPrefix("venues") })
        #expect(venues.usesSpatialIndex, "\(venues.plan)")
        #expect(venues.plan.contains("places_location"), "\(venues.plan)")
        let nearby = try #require(plans.first { $0.query.hasPrefix("places") })
        #expect(nearby.usesSpatialIndex, "\(nearby.plan)")
        // What the plan finds is what the query answers.
        let found = try await store.venues(within: 50_000, of: kyiv)
        #expect(found.allSatisfy { $0.distance <= 50_000 })
      } catch {
        await store.close()
        throw error
      }
      await store.close()
    }
  }

  /// Right after 40,000 points were imported into a new database, the people seen near a point and a person's fixes
  /// there (a promotion's eligible audience) are found through the GiST index on `fixes.location` of each month.
  /// Before the importers' writer refreshed the planner's statistics of the months it filled, a person's fixes near
  /// a point were read in full through the time index (months without statistics looked empty).
  @Test func theFixesNearAPointAreFoundThroughTheGiSTIndexRightAfterAHistoryImport() async throws {
    try await PostgresTestDatabase.withStoreForLoads { _, store in
      // Two people's walks over Kyiv, a fix every 3 minutes from late January to early March 2024.
      var walks: [UserID: [LocationFix]] = [:]
      for (person, phase) in [("anna", 0.0), ("boris", 1.0)] {
        let (user, device) = (UserID(person), DeviceID("\(person)-phone"))
        _ = try await store.createAccount(
          id: user, credential: .email("\(person)@example.com"), passwordHash: nil, now: 1)
        #expect(try await store.claimDevice(device, owner: user, now: 1))
        var writer = HistoryBatchWriter(store: store, user: user, now: 1) { _ in device }
        let fixes = try (0..<20_000).map { index in
          let heading = Double(index) * 0.002 + phase
          return try LocationFix(
            deviceID: device, timestamp: 1_706_000_000_000 + Int64(index) * 180_000,
            latitude: 50.45 + 0.08 * sin(heading * 0.37), longitude: 30.52 + 0.12 * sin(heading * 0.23),
            horizontalAccuracy: 5, kind: .imported)
        }
        try await writer.add(fixes)
        try await writer.flush()
        #expect(writer.stored == fixes.count)
        walks[user] = fixes
      }
      let point = try #require(walks["anna"]?[12_345]).coordinate
      let plans = try await store.spatialPlans(near: point, radius: 300, owner: "anna")
      for plan in plans where plan.plan.contains("fixes") {
        print("[plan] \(plan.query):\n\(plan.plan)")
        #expect(plan.usesSpatialIndex, "\(plan.query): \(plan.plan)")
      }
      #expect(plans.filter { $0.plan.contains("fixes_y2024m02_location") }.count == 2)
      // What the plans find is what the queries answer.
      let seen = Set(walks.filter { $0.value.contains { $0.coordinate.haversineDistance(to: point) <= 300 } }.keys)
      #expect(Set(try await store.usersSeen(near: point, radius: 300, from: 0, to: .max)) == seen)
      let runs = try await store.fixRuns(owner: "anna", near: point, radius: 300, from: 0, to: .max)
      let near = try #require(walks["anna"]).filter { $0.coordinate.haversineDistance(to: point) <= 300 }
      #expect(runs.joined().map(\.timestamp) == near.map(\.timestamp))
    }
  }
}
