import DomainKit
import DomainKitTesting
import Foundation
import GeoKit
import MeridianAPI
import MeridianStore
import MeridianStoreTesting
import Testing

/// Lists without attribute conditions are ranked and paged in SQL; with them, in Swift by `PlacePaging` (the
/// reference). Every order, with keywords, a circle, a box or nothing, pages the same places in the same order with
/// the same distances either way — on every engine.
@Suite("Store contract: places ranked in SQL")
struct PlaceRankingContractTests {
  static let centre = try! Coordinate(latitude: 56.48, longitude: 84.95)

  /// 120 places around `centre` (a few without a location), titles sharing words so that every relevance tier
  /// occurs, ratings with ties.
  func seed(_ store: any MeridianStore) async throws {
    var random = SplitMix64(seed: 23)
    let words = ["physics", "phys", "physical chemistry", "astrophysics", "history of physics", "law"]
    var records: [PlaceRecord] = []
    for index in 0..<120 {
      let location =
        index % 17 == 0
        ? nil
        : try Coordinate(
          latitude: Self.centre.latitude + Double.random(in: -0.02...0.02, using: &random),
          longitude: Self.centre.longitude + Double.random(in: -0.03...0.03, using: &random))
      let title = "\(words[index % words.count])\(index % 4 == 0 ? "" : " \(index)")"
      records.append(
        PlaceRecord(
          place: try Place(
            id: PlaceID("p\(index)"), kind: index % 3 == 0 ? .university : .programme,
            name: LocalizedText(["en": title]), location: location, city: "Tomsk"),
          attributes: ["score": .number(Double(index))]))
    }
    try await store.upsertPlaces(records, now: 1)
    for index in 0..<30 {
      _ = try await store.createAccount(
        id: UserID("r\(index)"), credential: .email("r\(index)@example.com"), passwordHash: nil, now: 1)
      for place in stride(from: index % 7, to: 120, by: 7 + index % 5) {
        _ = try await store.saveReview(
          try Review(
            id: ReviewID("r\(index)-\(place)"), placeID: PlaceID("p\(place)"), authorID: UserID("r\(index)"),
            grade: 1 + (index + place) % 5, text: "", createdAt: 2),
          now: 2)
      }
    }
  }

  /// Every page of `query`, as (id, distance) pairs.
  func pages(_ store: any MeridianStore, _ query: PlaceQuery) async throws -> [[String]] {
    var query = query
    var pages: [[String]] = []
    repeat {
      let page = try await store.places(query)
      pages.append(page.items.map { "\($0.record.place.id)@\($0.distance.map { String($0) } ?? "-")" })
      query.cursor = page.nextCursor
    } while query.cursor != nil && pages.count < 50
    return pages
  }

  @Test(arguments: StoreEngine.all)
  func sqlRankingEqualsTheReference(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await seed(store)
      let everyone = PlaceQuery.AttributeFilter(name: "score", minimum: 0)
      let areas: [PlaceQuery.Area?] = [
        nil, .circle(center: Self.centre, radius: 1_500),
        .box(south: 56.47, west: 84.93, north: 56.49, east: 84.96),
      ]
      for sort in PlaceQuery.Sort.allCases {
        for text in [nil, "phys", "physics", "history ph"] {
          for area in areas {
            if sort == .relevance && text == nil { continue }
            let center: Coordinate? = sort == .distance ? Self.centre : nil
            let query = PlaceQuery(text: text, area: area, center: center, sort: sort, limit: 7)
            var reference = query
            reference.attributes = [everyone]
            let sql = try await pages(store, query)
            let swift = try await pages(store, reference)
            #expect(sql == swift, "\(sort) \(text ?? "-") \(String(describing: area))")
            #expect(!sql.joined().isEmpty, "\(sort) \(text ?? "-") \(String(describing: area))")
          }
        }
      }
      // A cursor of another order is refused, as before.
      let first = try await store.places(PlaceQuery(sort: .rating, limit: 5))
      await #expect(throws: PlaceStoreError.invalidCursor) {
        try await store.places(PlaceQuery(sort: .reviews, cursor: first.nextCursor, limit: 5))
      }
    }
  }
}
