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
}
