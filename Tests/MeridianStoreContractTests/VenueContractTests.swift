import DomainKit
import DomainKitTesting
import Foundation
import GeoKit
import MeridianAPI
import MeridianStore
import MeridianStoreTesting
import Testing

@Suite("Store contract: venues and promotions")
struct VenueContractTests {
  @Test(arguments: StoreEngine.all)
  func radiusQueriesMatchABruteForceHaversineScan(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      var random = SplitMix64(seed: 7)
      // Kyiv, about 11 × 11 km, and a strip across the antimeridian.
      let kyiv = try randomVenues(
        count: 3000, prefix: "kyiv", latitudes: 50.40...50.50, longitudes: 30.44...30.60, random: &random)
      let pacific =
        try randomVenues(
          count: 200, prefix: "east", latitudes: -16.02...(-15.98), longitudes: 179.97...179.9999, random: &random)
        + randomVenues(
          count: 200, prefix: "west", latitudes: -16.02...(-15.98), longitudes: -180...(-179.97), random: &random)
      let all = kyiv + pacific
      try await store.upsertVenues(all)

      var centres: [(Coordinate, Double, String?)] = []
      for index in 0..<40 {
        let centre = try Coordinate(
          latitude: Double.random(in: 50.39...50.51, using: &random),
          longitude: Double.random(in: 30.43...30.61, using: &random))
        let type: String? = index % 4 == 0 ? "cafe" : nil
        centres.append((centre, Double.random(in: 30...3000, using: &random), type))
      }
      for _ in 0..<10 {
        // Centres on both sides of the antimeridian, given east of 180 and wrapped as a caller must (the coordinate
        // rule refuses 180.006 rather than wrapping it).
        let centre = try Coordinate(
          latitude: Double.random(in: -16.01...(-15.99), using: &random),
          longitude: Coordinate.normalizedLongitude(
            Double.random(in: -180...(-179.99), using: &random) + (Bool.random(using: &random) ? 360 : 0)))
        centres.append((centre, Double.random(in: 100...2500, using: &random), nil))
      }
      centres.append((try Coordinate(latitude: 50.45, longitude: 30.52), 1000, nil))
      centres.append((try Coordinate(latitude: 0, longitude: 0), 1000, nil))  // nothing there

      // Each match carries its venue's imported rating (both engines keep a copy of it beside the position).
      let ratings = Dictionary(uniqueKeysWithValues: all.map { ($0.place.id, $0.rating) })
      var nonEmpty = 0
      for (centre, radius, type) in centres {
        let expected = Dictionary(
          uniqueKeysWithValues: all.compactMap { record -> (PlaceID, Double)? in
            let distance = centre.haversineDistance(to: record.location)
            guard distance <= radius, type == nil || record.place.venueType == type else { return nil }
            return (record.place.id, distance)
          })
        let found = try await store.venues(within: radius, of: centre, type: type)
        #expect(found.count == expected.count, "\(centre) r=\(radius)")
        #expect(Set(found.map(\.id)) == Set(expected.keys), "\(centre) r=\(radius)")
        for match in found {
          #expect(abs(match.distance - (expected[match.id] ?? .infinity)) < 1e-6)
          #expect(match.rating == ratings[match.id], "\(match.id)")
        }
        if !expected.isEmpty { nonEmpty += 1 }
      }
      #expect(nonEmpty >= 40)
    }
  }

  /// Venues are listed by the places query: every order, with and without a type, keyset-paged, the pages of the
  /// Swift reference (``PlaceRankingOracle``) with the venue's rating (imported plus reviews); a cursor of another
  /// order is refused.
  @Test(arguments: StoreEngine.all, PlaceDirectory.SortOrder.allCases)
  func pagesFollowThePlacesOrder(_ engine: StoreEngine, _ order: PlaceDirectory.SortOrder) async throws {
    try await engine.with { store in
      var random = SplitMix64(seed: 11)
      let all = try randomVenues(
        count: 2000, prefix: "v", latitudes: 50.43...50.47, longitudes: 30.49...30.55, random: &random)
      try await store.upsertVenues(all)
      // A place of another kind inside the circle is not a venue.
      try await store.upsertPlaces(
        [
          PlaceRecord(
            place: try Place(
              id: "school", kind: .university, name: LocalizedText(["en": "School"]),
              location: Coordinate(latitude: 50.45, longitude: 30.52), venueType: "cafe"))
        ], now: 1)
      // Ties follow the insertion sequence, which a bulk import lays out in its own order (PostgreSQL's in
      // geohash order): the places list in insertion order says it.
      var inserted: [PlaceID] = []
      var listing = PlaceQuery(kinds: [.venue], sort: .inserted, limit: 100)
      repeat {
        let page = try await store.places(listing)
        inserted += page.items.map(\.record.place.id)
        listing.cursor = page.nextCursor
      } while listing.cursor != nil && inserted.count <= all.count
      let records = Dictionary(uniqueKeysWithValues: all.map { ($0.place.id, $0) })
      #expect(inserted.count == all.count && Set(inserted) == Set(records.keys))
      let oracle = PlaceRankingOracle(
        entries: inserted.enumerated().compactMap { index, id in
          records[id].map { .init(sequence: Int64(index), record: $0.placeRecord, rating: $0.rating) }
        })
      let centre = try Coordinate(latitude: 50.45, longitude: 30.52)
      for type in [nil, "cafe"] {
        let query = VenueQuery(center: centre, radius: 1500, type: type, sort: order, pageSize: 100)
        let expected = try oracle.answer(PlaceQuery(venues: query))
        var seen: [Venue] = []
        var cursor: String?
        repeat {
          var next = query
          next.cursor = cursor
          let page = try await store.nearbyVenues(next)
          #expect(page.hasMore == (page.nextCursor != nil))
          seen += page.items
          cursor = page.nextCursor
        } while cursor != nil && seen.count <= all.count
        #expect(seen.map { "\($0.id)@\($0.distance.map { String($0) } ?? "-")" } == expected)
        #expect(seen.count > (type == nil ? 300 : 100), "\(seen.count)")
        let ratings = Dictionary(uniqueKeysWithValues: all.map { ($0.place.id, $0.rating) })
        #expect(seen.allSatisfy { $0.rating == ratings[$0.id] && $0.name.hasPrefix("Venue ") })
      }
      let first = try await store.nearbyVenues(VenueQuery(center: centre, radius: 1500, sort: order, pageSize: 5))
      let other: PlaceDirectory.SortOrder = order == .distance ? .rating : .distance
      await #expect(throws: PlaceStoreError.invalidCursor) {
        try await store.nearbyVenues(VenueQuery(center: centre, radius: 1500, sort: other, cursor: first.nextCursor))
      }
    }
  }

  @Test(arguments: StoreEngine.all)
  func localizedNamesUpdatesAndPromotions(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      let location = try Coordinate(latitude: 50.45, longitude: 30.52)
      var place = try Place(
        id: "lviv-croissants", kind: .venue,
        name: LocalizedText(["en": "Lviv Croissants", "uk": "Львівські круасани", "ru": "Львовские круассаны"]),
        description: LocalizedText(["en": "Bakery", "uk": "Пекарня"]), location: location, venueType: "cafe",
        timeZone: "Europe/Kyiv")
      try await store.upsertVenues([try VenueRecord(place: place, rating: RatingAggregate(sum: 9, count: 2))])

      let english = try #require(try await store.venue("lviv-croissants", language: nil))
      #expect(english.name == "Lviv Croissants")
      #expect(english.description == "Bakery")
      #expect(
        english.names
          == LocalizedText(["en": "Lviv Croissants", "uk": "Львівські круасани", "ru": "Львовские круассаны"]))
      #expect(english.rating == RatingAggregate(sum: 9, count: 2))
      #expect(english.timeZone == "Europe/Kyiv")
      #expect(english.location == location)
      let ukrainian = try #require(try await store.venue("lviv-croissants", language: "uk-UA"))
      #expect(ukrainian.name == "Львівські круасани")
      #expect(ukrainian.description == "Пекарня")
      let russian = try #require(try await store.venue("lviv-croissants", language: "ru"))
      #expect(russian.name == "Львовские круассаны")
      #expect(russian.description == "Bakery")  // no Russian description: English
      #expect(try await store.venue("lviv-croissants", language: "de")?.name == "Lviv Croissants")
      #expect(try await store.venue("nowhere", language: nil) == nil)

      // An update by id replaces the values and keeps the promotions.
      let promotion = Promotion(
        id: "coffee", venueID: "lviv-croissants", name: "Coffee", promoCode: "CAFE10",
        oldPrice: Money(amount: 6000, currency: "UAH"), newPrice: Money(amount: 4500, currency: "UAH"),
        audience: .special, validFrom: 1, validUntil: 2, window: try TimeOfDayWindow(start: 420, end: 660))
      try await store.insertPromotion(promotion)
      place.name.set("Croissants of Lviv", for: "en")
      try await store.upsertVenues([try VenueRecord(place: place, rating: RatingAggregate(sum: 14, count: 3))])
      let updated = try #require(try await store.venue("lviv-croissants", language: "en"))
      #expect(updated.name == "Croissants of Lviv")
      #expect(updated.rating == RatingAggregate(sum: 14, count: 3))
      // The radius query reads the new imported rating too (SQLite keeps a copy in its radius index).
      let near = try await store.venues(within: 100, of: try #require(place.location), type: nil)
      #expect(near.first { $0.id == "lviv-croissants" }?.rating == RatingAggregate(sum: 14, count: 3))
      #expect(try await store.promotions(venue: "lviv-croissants") == [promotion])

      await #expect(throws: VenueRecordError.unknownVenue("nowhere")) {
        try await store.insertPromotion(
          Promotion(id: "x", venueID: "nowhere", name: "x", promoCode: "x"))
      }
      #expect(throws: VenueRecordError.missingLocation("no-location")) {
        try VenueRecord(place: try Place(id: "no-location", kind: .venue, name: LocalizedText(["en": "?"])))
      }
    }
  }

  /// Venues a hair inside and outside the circle, at every bearing, at latitudes from the equator to 80° and across
  /// the antimeridian: the engine's spatial index may not decide the edge (PostGIS measures on another sphere or the
  /// spheroid, a geohash covering is coarse); the haversine distance the protocol documents does.
  @Test(arguments: StoreEngine.all)
  func radiusQueriesDecideTheEdgeByTheHaversineDistance(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      let centres = try [(0.0, 10.0), (45.0, 7.5), (-33.9, 18.4), (60.2, 24.9), (80.0, -40.0), (-16.0, 179.9995)].map {
        try Coordinate(latitude: $0.0, longitude: $0.1)
      }
      let radii = [100.0, 1000.0, 5000.0]
      // Relative offsets from the radius: the spheroid differs from the sphere by up to 0.56 %.
      let offsets = [-0.004, -1e-6, -1e-9, 1e-9, 1e-6, 0.004]
      var records: [VenueRecord] = []
      for (c, centre) in centres.enumerated() {
        for (r, radius) in radii.enumerated() {
          for bearing in stride(from: 0.0, to: 360, by: 22.5) {
            for (o, offset) in offsets.enumerated() {
              let point = try Self.point(from: centre, bearing: bearing, haversine: radius * (1 + offset))
              let place = try Place(
                id: PlaceID("edge-\(c)-\(r)-\(Int(bearing * 10))-\(o)"), kind: .venue,
                name: LocalizedText(["en": "Edge"]), location: point, venueType: o % 2 == 0 ? "cafe" : "shop")
              records.append(try VenueRecord(place: place))
            }
          }
        }
      }
      try await store.upsertVenues(records)
      var decided = 0
      for centre in centres {
        for radius in radii {
          for type in [nil, "cafe"] as [String?] {
            let expected = Dictionary(
              uniqueKeysWithValues: records.compactMap { record -> (PlaceID, Double)? in
                let distance = centre.haversineDistance(to: record.location)
                guard distance <= radius, type == nil || record.place.venueType == type else { return nil }
                return (record.place.id, distance)
              })
            let found = try await store.venues(within: radius, of: centre, type: type)
            #expect(Set(found.map(\.id)) == Set(expected.keys), "\(centre) r=\(radius) type=\(type ?? "any")")
            #expect(found.count == expected.count)
            #expect(found.allSatisfy { abs($0.distance - (expected[$0.id] ?? .infinity)) < 1e-6 })
            decided += expected.count
          }
        }
      }
      // Each circle holds its own 16 bearings × 3 inner offsets, and the smaller circles' venues.
      #expect(decided > 6 * 16 * 3 * 3)
    }
  }

  /// The point at `haversine` metres (on GeoKit's sphere) from `centre` along `bearing`: a geodesic destination
  /// scaled until its haversine distance is `haversine` to well under a micrometre.
  static func point(from centre: Coordinate, bearing: Double, haversine: Double) throws -> Coordinate {
    var distance = haversine
    func destination() throws -> Coordinate {
      let point = try centre.destination(bearing: bearing, distance: distance)
      return try Coordinate(latitude: point.latitude, longitude: point.longitude)
    }
    var point = try destination()
    for _ in 0..<4 {
      distance *= haversine / centre.haversineDistance(to: point)
      point = try destination()
    }
    return point
  }

  /// Many requests redeeming one offer at once: exactly one redeems it, every other one is told when.
  @Test(arguments: StoreEngine.all)
  func aPromotionIsRedeemedExactlyOnceUnderConcurrency(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      for id: UserID in ["anna", "bob", "carol"] {
        _ = try await store.createAccount(id: id, credential: .email("\(id)@example.com"), passwordHash: nil, now: 0)
      }
      let place = try Place(
        id: "cafe", kind: .venue, name: LocalizedText(["en": "Cafe"]),
        location: try Coordinate(latitude: 50.45, longitude: 30.52))
      try await store.upsertVenues([try VenueRecord(place: place)])
      try await store.insertPromotion(Promotion(id: "coffee", venueID: "cafe", name: "Coffee", promoCode: "C"))
      try await store.insertPromotion(Promotion(id: "cake", venueID: "cafe", name: "Cake", promoCode: "K"))
      try await store.recordOffers(["coffee", "cake"], to: "anna", at: 10)
      try await store.recordOffers(["coffee"], to: "anna", at: 20)
      try await store.recordOffers(["coffee", "coffee"], to: "bob", at: 30)
      #expect(try await store.wasOffered("coffee", to: "anna"))
      #expect(try await !store.wasOffered("coffee", to: "carol"))

      let outcomes = try await withThrowingTaskGroup(of: (UserID, Int64, RedemptionOutcome).self) { group in
        for attempt in 0..<24 {
          let user: UserID = ["anna", "bob", "carol"][attempt % 3]
          let time = 1000 + Int64(attempt)
          group.addTask { (user, time, try await store.redeem("coffee", by: user, at: time)) }
        }
        return try await group.reduce(into: [(UserID, Int64, RedemptionOutcome)]()) { $0.append($1) }
      }
      for user: UserID in ["anna", "bob"] {
        let mine = outcomes.filter { $0.0 == user }
        let winners = mine.filter { $0.2 == .redeemed }
        #expect(mine.count == 8 && winners.count == 1, "\(user): \(mine.map(\.2))")
        // Every other request is told the winner's time.
        let others = mine.filter { $0.2 != .redeemed }.map(\.2)
        #expect(others == Array(repeating: .alreadyRedeemed(at: winners.first?.1 ?? -1), count: 7))
      }
      #expect(outcomes.filter { $0.0 == "carol" }.allSatisfy { $0.2 == .notOffered })
      #expect(
        try await store.promotionActivity(venue: "cafe") == [
          PromotionActivity(promotionID: "cake", offeredUsers: 1, offers: 1, redeemed: 0),
          PromotionActivity(promotionID: "coffee", offeredUsers: 2, offers: 4, redeemed: 2),
        ])
      #expect(try await store.redeem("cake", by: "anna", at: 5000) == .redeemed)
      #expect(try await store.redeem("cake", by: "anna", at: 6000) == .alreadyRedeemed(at: 5000))
      #expect(try await store.redeem("nothing", by: "anna", at: 6000) == .notOffered)
    }
  }
}
