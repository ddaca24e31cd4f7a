import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import MeridianStore
import MeridianStoreTesting
import Testing

/// Venues are places of kind `venue`: one table, one search. An import writes places, a place of kind `venue`
/// answers as a venue, a venue keeps its kind, and a database of the older schema keeps every venue's id with its
/// promotions, grants, offers and redemptions — on every engine.
@Suite("Store contract: venues are places")
struct VenuePlaceContractTests {
  static let kyiv = try! Coordinate(latitude: 50.4501, longitude: 30.5234)

  static func venue(
    _ id: String, _ names: [String: String], at location: Coordinate = kyiv, type: String? = "cafe",
    rating: RatingAggregate = RatingAggregate()
  ) throws -> VenueRecord {
    try VenueRecord(
      place: try Place(
        id: PlaceID(id), kind: .venue, name: LocalizedText(names), location: location, city: "Kyiv",
        venueType: type, keywords: ["coffee"]),
      rating: rating)
  }

  @Test(arguments: StoreEngine.all)
  func importedVenuesAreFoundAsPlacesAndBySearch(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await store.upsertVenues([
        try Self.venue("cup", ["en": "Blue Cup", "uk": "Синя чашка"], rating: RatingAggregate(sum: 9, count: 2)),
        try Self.venue("far", ["en": "Far Bar"], at: try Coordinate(latitude: 50.55, longitude: 30.52), type: "bar"),
      ])
      let university = try Place(
        id: "kpi", kind: .university, name: LocalizedText(["en": "Polytechnic"]), location: Self.kyiv, city: "Kyiv")
      try await store.upsertPlaces([PlaceRecord(place: university)], now: 5)

      let venues = try await store.places(PlaceQuery(kinds: [.venue]))
      #expect(Set(venues.items.map(\.record.place.id)) == ["cup", "far"])
      let listed = try #require(venues.items.first { $0.record.place.id == "cup" })
      #expect(listed.record.place.venueType == "cafe" && listed.record.place.name.values["uk"] == "Синя чашка")
      for query in ["синя", "Blue", "чаш", "coffee"] {
        let found = try await store.places(PlaceQuery(text: query))
        #expect(found.items.map(\.record.place.id).contains("cup"), "\(query): \(found.items.map(\.record.place.id))")
      }
      let near = try await store.places(
        PlaceQuery(kinds: [.venue], area: .circle(center: Self.kyiv, radius: 1000), sort: .distance))
      #expect(near.items.map(\.record.place.id) == ["cup"])

      // The venue API answers as before: the imported rating, names by language, only venues.
      let cup = try #require(try await store.venue("cup", language: "uk"))
      #expect(cup.name == "Синя чашка" && cup.rating == RatingAggregate(sum: 9, count: 2) && cup.type == "cafe")
      #expect(try await store.venue("kpi", language: nil) == nil)
      let page = try await store.nearbyVenues(VenueQuery(center: Self.kyiv, radius: 20_000))
      #expect(page.items.map(\.id) == ["cup", "far"])
      #expect(try await store.venues(within: 1000, of: Self.kyiv, type: nil).map(\.id) == ["cup"])
    }
  }

  @Test(arguments: StoreEngine.all)
  func aPlaceOfKindVenueIsAVenueAndAVenueKeepsItsKind(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      let kiosk = try Place(
        id: "kiosk", kind: .venue, name: LocalizedText(["en": "Kiosk"]), location: Self.kyiv, venueType: "shop")
      try await store.upsertPlaces([PlaceRecord(place: kiosk)], now: 5)
      #expect(try await store.venue("kiosk", language: nil)?.type == "shop")
      try await store.insertPromotion(Promotion(id: "gum", venueID: "kiosk", name: "Gum", promoCode: "G"))

      var university = kiosk
      university.kind = .university
      await #expect(throws: PlaceStoreError.self) {
        try await store.upsertPlaces([PlaceRecord(place: university)], now: 6)
      }
      #expect(try await store.place("kiosk")?.listing.record.place.kind == .venue)

      let school = try Place(id: "school", kind: "school", name: LocalizedText(["en": "School 1"]))
      try await store.upsertPlaces([PlaceRecord(place: school)], now: 7)
      await #expect(throws: PlaceStoreError.self) {
        try await store.upsertVenues([try Self.venue("new", ["en": "New"]), try Self.venue("school", ["en": "X"])])
      }
      #expect(try await store.place("school")?.listing.record.place.kind == "school")
      #expect(try await store.place("new") == nil)

      // A venue import keeps a venue where an operator put it in the tree.
      try await store.upsertPlaces(
        [PlaceRecord(place: try Place(id: "mall", kind: "mall", name: LocalizedText(["en": "Mall"])))], now: 8)
      try await store.movePlace("kiosk", to: "mall", now: 9)
      try await store.upsertVenues([try Self.venue("kiosk", ["en": "Kiosk 2"], type: "shop")])
      #expect(try await store.place("kiosk")?.listing.record.place.parentID == "mall")
      #expect(try await store.venue("kiosk", language: nil)?.name == "Kiosk 2")
      #expect(try await store.promotions(venue: "kiosk").map(\.id) == ["gum"])

      // Deleting the place deletes the venue and its promotions.
      #expect(try await store.deletePlace("kiosk"))
      #expect(try await store.venue("kiosk", language: nil) == nil)
      #expect(try await store.promotion("gum") == nil)
    }
  }

  /// A database from before "venues are places" with a venue, a promotion, an advertiser's grant, an offer and a
  /// redemption, and a directory place: after the migration every reference still names the same venue.
  @Test(arguments: StoreEngine.all)
  func theMigrationKeepsVenueIdsAndEverythingThatPointsAtThem(_ engine: StoreEngine) async throws {
    try await engine.withDatabase(before: "2026-11-26 venues are places", seed: Self.olderRows) { store in
      let cup = try #require(try await store.venue("cup", language: "uk"))
      #expect(cup.name == "Синя чашка")
      #expect(cup.names.values == ["en": "Blue Cup", "ru": "Синяя чашка", "uk": "Синя чашка"])
      #expect(cup.rating == RatingAggregate(sum: 9, count: 2))
      #expect(cup.type == "cafe" && cup.address == "Khreshchatyk 1" && cup.city == "Kyiv")
      #expect(cup.location == Self.kyiv)
      #expect(try await store.nearbyVenues(VenueQuery(center: Self.kyiv, radius: 1000)).items.map(\.id) == ["cup"])

      #expect(try await store.promotions(venue: "cup").map(\.id) == ["coffee"])
      #expect(try await store.wasOffered("coffee", to: "guest"))
      #expect(try await store.redeem("coffee", by: "guest", at: 99) == .alreadyRedeemed(at: 20))
      #expect(try await store.isAdvertiser("owner", of: "cup"))
      #expect(try await store.advertiserGrants(user: "owner").map(\.venue) == ["cup"])

      let place = try #require(try await store.place("cup"))
      #expect(place.listing.record.place.kind == .venue && place.listing.record.place.keywords == ["coffee", "wifi"])
      for query in ["blue", "синяя", "синя", "wifi", "бл"] {
        let found = try await store.places(PlaceQuery(text: query))
        #expect(found.items.map(\.record.place.id) == (query == "бл" ? [] : ["cup"]), "\(query)")
      }
      let near = try await store.places(PlaceQuery(area: .circle(center: Self.kyiv, radius: 500), sort: .distance))
      #expect(near.items.map(\.record.place.id) == ["cup", "kpi"])
      // The venue is a place like any other: reviews count towards its venue rating too.
      _ = try await store.saveReview(
        try Review(id: "r1", placeID: "cup", authorID: "guest", grade: 5, text: "", createdAt: 30), now: 30)
      #expect(try await store.venue("cup", language: nil)?.rating == RatingAggregate(sum: 14, count: 3))
      #expect(try await store.place("cup")?.listing.rating.own == RatingAggregate(sum: 5, count: 1))
    }
  }

  /// The rows of the older schema, for each engine.
  static func olderRows(_ engine: StoreEngine) -> String {
    let cells = GeohashPrefixes(kyiv).all.map { "'\($0)'" }.joined(separator: ", ")
    let geokey = (try? GeohashCell(kyiv, bits: 62)).map { "\(Int64(bitPattern: $0.value)), " } ?? "0, "
    let sqlite = engine.name == "sqlite"
    // On SQLite the language migrations of the time gave `venues` its localized columns (venues are no longer
    // registered as localized, so a database made today lacks them).
    let localized = ["name", "description"].flatMap { field in
      ["en", "ru", "uk"].map { "ALTER TABLE venues ADD COLUMN \(field)_\($0) TEXT;\n" }
    }
    return (sqlite ? localized.joined() : "") + """
      INSERT INTO users(id, created_at) VALUES ('owner', 1), ('guest', 1);
      INSERT INTO venues(id, name, description, venue_type, address, city, keywords, latitude, longitude,
        geohash2, geohash3, geohash4, geohash5, geohash6, \(sqlite ? "geokey, " : "")rating_sum, rating_count,
        updated_at, name_en, name_ru, name_uk)
      VALUES ('cup', 'Blue Cup', NULL, 'cafe', 'Khreshchatyk 1', 'Kyiv', '["coffee","wifi"]', 50.4501, 30.5234,
        \(cells), \(sqlite ? geokey : "")9, 2, 5, 'Blue Cup', 'Синяя чашка', 'Синя чашка');
      INSERT INTO venue_promotions(id, venue_id, name, promo_code, audience)
        VALUES ('coffee', 'cup', 'Coffee', 'CUP10', 'general');
      INSERT INTO advertisers(user_id, venue_id, granted_at) VALUES ('owner', 'cup', 5);
      INSERT INTO promotion_offers(promotion_id, user_id, first_at, last_at, times) VALUES ('coffee', 'guest', 10, 10, 1);
      INSERT INTO promotion_redemptions(promotion_id, user_id, redeemed_at) VALUES ('coffee', 'guest', 20);
      INSERT INTO places(id, kind, title, latitude, longitude, created_at, updated_at)
        VALUES ('kpi', 'university', 'Polytechnic', 50.4511, 30.5234, 1, 1);
      INSERT INTO place_closure(place_id, ancestor_id, depth) VALUES ('kpi', 'kpi', 0);
      """
  }
}
