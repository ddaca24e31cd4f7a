import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import MeridianStore
import MeridianStorePostgres
import MeridianStoreTesting
import Testing

/// PostgreSQL answers the directory's common attribute filter — a passing score range within a city, sorted by
/// rating — from its index (`places_passing_score`), not by reading every place of the city.
@Suite("PostgreSQL place plans")
struct PostgresPlacePlanTests {
  @Test func aPassingScoreRangeInACityReadsItsIndex() async throws {
    try await PostgresTestDatabase.with { database in
      // A batch tool's deadlines, as `places import` has (`DatabaseTimeouts.batch`): a thousand places in one
      // transaction took more than the server's 30 s in a CI run with every other test at once.
      let store = try await PostgresStore.open(
        url: database.url, maximumConnections: 2,
        timeouts: PostgresStore.Timeouts(connectionWait: .seconds(30), statement: .seconds(600)))
      do {
        // 20,000 programmes in ten cities, scores 150…299, imported in batches as `places import` does.
        for batch in 0..<20 {
          let records = try (0..<1_000).map { index in
            let number = batch * 1_000 + index
            return PlaceRecord(
              place: try Place(
                id: PlaceID("p\(number)"), kind: .programme, name: LocalizedText(["en": "Programme \(number)"]),
                city: "City \(number % 10)"),
              attributes: ["passingScore": .number(Double(150 + (number * 7) % 150)), "seats": .number(30)])
          }
          try await store.upsertPlaces(records, now: 1)
        }
        try await store.refreshPlannerStatistics(after: .places)
        let query = PlaceQuery(
          city: "City 3", attributes: [PlaceAttributeFilter(name: "passingScore", minimum: 280, maximum: 285)],
          sort: .rating)
        let plan = try await store.placesPlan(query)
        print("[plan] passing score in a city:\n\(plan)")
        #expect(plan.contains("places_passing_score"), "\(plan)")
        // What the plan finds is what the query answers.
        let page = try await store.places(query)
        #expect(page.items.count == 10)
        #expect(
          page.items.allSatisfy {
            $0.record.place.city == "City 3" && (280...285).contains($0.record.attributes["passingScore"]?.number ?? 0)
          })
      } catch {
        await store.close()
        throw error
      }
      await store.close()
    }
  }

  /// The first page of the places nearest a point reads the spatial index in order of distance (`<->`), not every
  /// place in the circle.
  @Test func theNearestPageReadsTheSpatialIndexInOrder() async throws {
    try await PostgresTestDatabase.with { database in
      let store = try await PostgresStore.open(url: database.url, maximumConnections: 2)
      do {
        let centre = try Coordinate(latitude: 50, longitude: 30)
        // A grid of 40 × 50 places about 45 m apart.
        var records: [PlaceRecord] = []
        for index in 0..<2_000 {
          let latitude = centre.latitude + Double(index % 40 - 20) * 0.0004
          let longitude = centre.longitude + Double(index / 40 - 25) * 0.0006
          let place = try Place(
            id: PlaceID("p\(index)"), kind: .programme, name: LocalizedText(["en": "Place \(index)"]),
            location: Coordinate(latitude: latitude, longitude: longitude))
          records.append(PlaceRecord(place: place))
        }
        try await store.upsertPlaces(records, now: 1)
        try await store.refreshPlannerStatistics(after: .places)
        let query = PlaceQuery(area: .circle(center: centre, radius: 1_000), sort: .distance)
        let plan = try await store.placesPlan(query)
        print("[plan] nearest places:\n\(plan)")
        #expect(plan.contains("places_location") && plan.contains("Order By: (location <->"), "\(plan)")
        let page = try await store.places(query)
        #expect(page.items.count == 10)
        let distances = page.items.map { (($0.distance ?? 0) * 1000).rounded() }
        #expect(distances == distances.sorted())
      } catch {
        await store.close()
        throw error
      }
      await store.close()
    }
  }
}
