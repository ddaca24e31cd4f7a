import DomainKit
import Foundation
import GeoKit
import HTTPTypes
import MeridianAPI
import MeridianServer
import MeridianStore
import NetworkingKit
import Testing

/// The places directory through the HTTP API, on every engine: finding a programme by keyword, on the map and by
/// passing score, reading and writing reviews (every level's rating follows), favourites and news.
@Suite("Places directory over HTTP", .inProcess)
struct PlaceTests {
  static func record(
    _ id: String, parent: String? = nil, kind: PlaceKind, _ titles: [String: String], city: String = "Tomsk",
    at location: Coordinate? = nil, attributes: [String: PlaceAttribute] = [:]
  ) throws -> PlaceRecord {
    PlaceRecord(
      place: try Place(
        id: PlaceID(id), parentID: parent.map { PlaceID($0) }, kind: kind, name: LocalizedText(titles),
        location: location, city: city),
      attributes: attributes)
  }

  /// Tomsk State University with two faculties and three programmes, and a second university.
  static func seed(_ store: any MeridianStore) async throws {
    try await store.upsertPlaces(
      [
        try record(
          "tsu", kind: .university, ["en": "Tomsk State University", "ru": "Томский государственный университет"],
          at: Coordinate(uncheckedLatitude: 56.4693, longitude: 84.9477)),
        try record(
          "tsu-ff", parent: "tsu", kind: .faculty, ["en": "Faculty of Physics", "ru": "Физический факультет"]),
        try record("tsu-gf", parent: "tsu", kind: .faculty, ["en": "Faculty of Geology and Geography"]),
        try record(
          "tsu-ff-phys", parent: "tsu-ff", kind: .programme, ["en": "Physics", "ru": "Физика"],
          attributes: ["passingScore": .number(230), "form": .text("full-time")]),
        try record(
          "tsu-gf-geo", parent: "tsu-gf", kind: .programme, ["en": "Geography", "ru": "География"],
          attributes: ["passingScore": .number(205), "form": .text("full-time")]),
        try record(
          "tsu-gf-geol", parent: "tsu-gf", kind: .programme, ["en": "Geology", "ru": "Геология"],
          attributes: ["passingScore": .number(251), "form": .text("full-time")]),
        try record(
          "tpu", kind: .university,
          ["en": "Tomsk Polytechnic University", "ru": "Томский политехнический университет"],
          at: Coordinate(uncheckedLatitude: 56.4655, longitude: 84.9502)),
      ], now: 1)
  }

  @Test(arguments: PollTests.engines)
  func findReviewFavouriteAndReadNews(_ engine: String) async throws {
    try await PollTests.withServer(engine) { server in
      let store = server.app.environment.store
      try await Self.seed(store)
      let anonymous = try server.client()
      let anna = try await server.signUp("anna")
      let boris = try await server.signUp("boris")

      // By keyword, without signing in, in Russian and by prefix; the exact title first.
      let found = try await anonymous.send(API.places, parameters: PlacesParameters(q: "физ"))
      #expect(found.items.map(\.place.id.rawValue) == ["tsu-ff", "tsu-ff-phys"])
      let exact = try await anonymous.send(API.places, parameters: PlacesParameters(q: "PHYSICS"))
      #expect(exact.items.map(\.place.id.rawValue) == ["tsu-ff-phys", "tsu-ff"])
      let programmes = try await anonymous.send(
        API.places,
        parameters: PlacesParameters(
          kinds: ["programme"], city: "tomsk",
          attributes: [.init(name: "passingScore", maximum: 240), .init(name: "form", equals: "full-time")]))
      #expect(programmes.items.map(\.place.id.rawValue) == ["tsu-ff-phys", "tsu-gf-geo"])
      // On the map: nearest first, with distances.
      let centre = Coordinate(uncheckedLatitude: 56.4650, longitude: 84.9500)
      let near = try await anonymous.send(
        API.places, parameters: PlacesParameters(center: centre, radius: 2_000, sort: "distance"))
      #expect(near.items.map(\.place.id.rawValue) == ["tpu", "tsu"])
      #expect((near.items.first?.distance ?? 1_000) < 100)

      // Reviews at two levels; every ancestor's rating follows an edit and a deletion.
      let physics = PlaceRef(id: "tsu-ff-phys")
      let first = try await anna.client.send(
        API.saveReview, parameters: physics, body: NewReview(grade: 5, text: "Great"))
      _ = try await boris.client.send(API.saveReview, parameters: physics, body: NewReview(grade: 3))
      _ = try await boris.client.send(API.saveReview, parameters: PlaceRef(id: "tsu"), body: NewReview(grade: 4))
      var tsu = try await anonymous.send(API.place, parameters: PlaceRef(id: "tsu"))
      #expect(tsu.item.rating == RatingAggregate(sum: 12, count: 3))
      #expect(tsu.item.ownRating == RatingAggregate(sum: 4, count: 1))
      #expect(tsu.item.children == 2)
      let edited = try await anna.client.send(API.saveReview, parameters: physics, body: NewReview(grade: 1))
      #expect(edited.id == first.id && edited.grade == 1)
      _ = try await boris.client.send(API.deleteReview, parameters: physics)
      tsu = try await anonymous.send(API.place, parameters: PlaceRef(id: "tsu"))
      #expect(tsu.item.rating == RatingAggregate(sum: 5, count: 2))
      let faculty = try await anonymous.send(API.place, parameters: PlaceRef(id: "tsu-ff"))
      #expect(faculty.item.rating == RatingAggregate(sum: 1, count: 1))
      #expect(try await anonymous.send(API.place, parameters: physics).ancestors.map(\.id) == ["tsu", "tsu-ff"])
      let reviews = try await anonymous.send(API.placeReviews, parameters: PlacePageParameters(id: "tsu-ff-phys"))
      #expect(reviews.items.map(\.grade) == [1])
      await expectAPIError(.invalidReview, status: 422) {
        try await anna.client.send(API.saveReview, parameters: physics, body: NewReview(grade: 6))
      }
      await expectAPIError(.invalidReview, status: 422) {
        try await anna.client.send(API.saveReview, parameters: physics, body: NewReview(grade: 0))
      }
      await expectAPIError(.invalidReview, status: 422) {
        try await anna.client.send(
          API.saveReview, parameters: physics, body: NewReview(grade: 3, text: String(repeating: "x", count: 2_001)))
      }
      await expectAPIError(.notFound, status: 404) {
        try await anna.client.send(API.saveReview, parameters: PlaceRef(id: "nowhere"), body: NewReview(grade: 3))
      }
      await expectAPIError(.notFound, status: 404) {
        try await boris.client.send(API.deleteReview, parameters: physics)
      }
      let unsigned = try await server.phoneAppRequest(
        .put, "/v1/places/tsu-ff-phys/reviews/me", headers: [.contentType: "application/json"],
        body: Data(#"{"grade":3}"#.utf8))
      #expect(unsigned.head.status == .unauthorized)
      #expect(try await anonymous.send(API.place, parameters: PlaceRef(id: "tsu")).item.rating.count == 2)

      // Children, paged by cursor.
      var children: [String] = []
      var cursor: String?
      repeat {
        let page = try await anonymous.send(
          API.placeChildren,
          parameters: PlaceChildrenParameters(
            id: "tsu-gf", list: PlacesParameters(paging: PagingParameters(cursor: cursor, limit: 1))))
        children += page.items.map(\.place.id.rawValue)
        cursor = page.nextCursor
      } while cursor != nil
      #expect(children == ["tsu-gf-geo", "tsu-gf-geol"])

      // Favourites and the news of their subtrees.
      _ = try await anna.client.send(API.addFavourite, parameters: FavouriteRef(placeID: "tsu-gf"))
      _ = try await anna.client.send(API.addFavourite, parameters: FavouriteRef(placeID: "tsu-gf"))
      let favourites = try await anna.client.send(API.favourites, parameters: PagingParameters())
      #expect(favourites.items.map(\.place.id.rawValue) == ["tsu-gf"])
      #expect(favourites.items.first?.favourites == 1)
      for (id, place, time) in [("n1", "tsu-gf-geo", 10), ("n2", "tpu", 20), ("n3", "tsu-gf", 30)]
        as [(String, String, Int64)]
      {
        try await store.saveNews(
          NewsItem(
            id: NewsID(id), placeID: PlaceID(place), title: LocalizedText(["en": id]), body: LocalizedText(["en": "…"]),
            publishedAt: time))
      }
      let mine = try await anna.client.send(API.news, parameters: NewsParameters(favourites: true))
      #expect(mine.items.map(\.id.rawValue) == ["n3", "n1"])
      let all = try await anna.client.send(API.news, parameters: NewsParameters())
      #expect(all.items.map(\.id.rawValue) == ["n3", "n2", "n1"])
      _ = try await anna.client.send(API.removeFavourite, parameters: FavouriteRef(placeID: "tsu-gf"))
      await expectAPIError(.notFound, status: 404) {
        try await anna.client.send(API.removeFavourite, parameters: FavouriteRef(placeID: "tsu-gf"))
      }
      await expectAPIError(.notFound, status: 404) {
        try await anna.client.send(API.addFavourite, parameters: FavouriteRef(placeID: "nowhere"))
      }

      // Bad queries are 400s that name the parameter.
      for query in ["sort=distance", "bbox=1,2,3", "lat=56", "radius=5", "sort=best", "max.passingScore=lots"] {
        let response = try await server.phoneAppRequest(.get, "/v1/places?\(query)")
        #expect(response.head.status == .badRequest, "\(query)")
        #expect(String(decoding: response.body, as: UTF8.self).contains("invalid_request"), "\(query)")
      }
      await expectAPIError(.notFound, status: 404) {
        try await anonymous.send(API.place, parameters: PlaceRef(id: "nowhere"))
      }
    }
  }
}
