import DomainKit
import DomainKitTesting
import Foundation
import GeoKit
import MeridianAPI
import MeridianStore
import MeridianStoreTesting
import Testing

/// Lists of places are filtered, ranked and paged in SQL on every engine — attribute conditions included — and give
/// the pages of the Swift reference (``PlaceRankingOracle``): every order, with keywords, a circle, a box or
/// nothing, with and without attribute conditions, the same places in the same order with the same distances.
@Suite("Store contract: places ranked in SQL")
struct PlaceRankingContractTests {
  static let centre = try! Coordinate(latitude: 56.48, longitude: 84.95)

  /// 120 places around `centre` (a few without a location), titles sharing words so that every relevance tier
  /// occurs, ratings with ties, and attributes of every type: a number (`score`, text for some), a text in
  /// several spellings (`form`), a flag (`budget`), a passing score (the indexed name) and a name that is no
  /// plain word (`min. score`).
  func seed(_ store: any MeridianStore) async throws -> PlaceRankingOracle {
    var random = SplitMix64(seed: 23)
    let words = ["physics", "phys", "physical chemistry", "astrophysics", "history of physics", "law"]
    let forms = ["Очная", "очная", "full-time", "Full-Time", "ЗАОЧНАЯ", "é-learning"]
    var records: [PlaceRecord] = []
    for index in 0..<120 {
      let location =
        index % 17 == 0
        ? nil
        : try Coordinate(
          latitude: Self.centre.latitude + Double.random(in: -0.02...0.02, using: &random),
          longitude: Self.centre.longitude + Double.random(in: -0.03...0.03, using: &random))
      let title = "\(words[index % words.count])\(index % 4 == 0 ? "" : " \(index)")"
      var attributes: [String: PlaceAttribute] = [
        "score": index % 11 == 5 ? .text("n/a") : .number(Double(index) + (index % 3 == 0 ? 0.5 : 0)),
        "form": .text(forms[index % forms.count]),
      ]
      if index % 2 == 0 { attributes["budget"] = .flag(index % 4 == 0) }
      if index % 5 != 0 { attributes["passingScore"] = .number(Double(150 + (index * 37) % 150)) }
      if index % 3 == 1 { attributes["min. score"] = .number(Double(index % 10)) }
      records.append(
        PlaceRecord(
          place: try Place(
            id: PlaceID("p\(index)"), parentID: index >= 100 ? PlaceID("p\(index % 10)") : nil,
            kind: index % 3 == 0 ? .university : .programme, name: LocalizedText(["en": title]), location: location,
            city: index % 2 == 0 ? "Tomsk" : "Томск Северный"),
          attributes: attributes))
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
    var entries: [PlaceRankingOracle.Entry] = []
    for (index, record) in records.enumerated() {
      let stored = try #require(try await store.place(record.place.id))
      entries.append(.init(sequence: Int64(index), record: record, rating: stored.listing.rating.subtree))
    }
    return PlaceRankingOracle(entries: entries)
  }

  /// Every page of `query`, as `id@distance`, and the sizes of its pages.
  func pages(_ store: any MeridianStore, _ query: PlaceQuery) async throws -> (items: [String], sizes: [Int]) {
    var query = query
    var items: [String] = []
    var sizes: [Int] = []
    repeat {
      let page = try await store.places(query)
      items += page.items.map { "\($0.record.place.id)@\($0.distance.map { String($0) } ?? "-")" }
      sizes.append(page.items.count)
      query.cursor = page.nextCursor
    } while query.cursor != nil && sizes.count < 50
    return (items, sizes)
  }

  /// Compares every page of `query` with the reference: the same items, full pages but the last, no empty page
  /// after a cursor.
  func expectReference(
    _ store: any MeridianStore, _ oracle: PlaceRankingOracle, _ query: PlaceQuery, _ label: String
  ) async throws -> Int {
    let expected = try oracle.answer(query)
    let found = try await pages(store, query)
    #expect(found.items == expected, "\(label)")
    #expect(found.sizes.dropLast().allSatisfy { $0 == query.limit }, "\(label) \(found.sizes)")
    #expect(found.sizes.count == 1 || found.sizes.last != 0, "\(label) \(found.sizes)")
    return expected.count
  }

  @Test(arguments: StoreEngine.all)
  func sqlRankingEqualsTheReference(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      let oracle = try await seed(store)
      let areas: [PlaceQuery.Area?] = [
        nil, .circle(center: Self.centre, radius: 1_500),
        .box(south: 56.47, west: 84.93, north: 56.49, east: 84.96),
      ]
      let filters: [[PlaceAttributeFilter]] = [
        [],
        [PlaceAttributeFilter(name: "score", minimum: 10.5, maximum: 90)],
        [PlaceAttributeFilter(name: "form", equals: "ОЧНАЯ"), PlaceAttributeFilter(name: "budget")],
        [PlaceAttributeFilter(name: "passingScore", minimum: 200)],
      ]
      for sort in PlaceQuery.Sort.allCases {
        for text in [nil, "phys", "physics", "history ph"] {
          for area in areas {
            for attributes in filters {
              if sort == .relevance && text == nil { continue }
              let center: Coordinate? = sort == .distance ? Self.centre : nil
              let query = PlaceQuery(
                text: text, area: area, center: center, attributes: attributes, sort: sort, limit: 7)
              let label = "\(sort) \(text ?? "-") \(String(describing: area)) \(attributes.map(\.name))"
              let count = try await expectReference(store, oracle, query, label)
              #expect(count > 0 || !attributes.isEmpty, "\(label)")
            }
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

  /// Relevance pages over 2,400 places, where PostgreSQL walks ranges of sequences in order before it reads a
  /// tier's rare candidates through its index: a word in every third title (the walks fill the pages), one in every
  /// 300th (a first walk finds some, a longer one more, the index the rest), one only after the first 1,500 places
  /// (the first walk finds none, the index the rest), exact titles (tier 0) and keywords (tier 2) among them, a
  /// short word and a phrase, against the reference. On PostgreSQL the first 2,000 places are written nine times
  /// before the last 400: each upsert uses up sequence numbers, so the last places come after a gap of 16,000 (past
  /// both walks), as after a directory's re-imports.
  @Test(arguments: StoreEngine.all)
  func relevancePagesOverManyPlacesEqualTheReference(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      var records: [PlaceRecord] = []
      for index in 0..<2_400 {
        var words = ["place \(index)"]
        if index % 3 == 0 { words.append("common") }
        if index % 300 == 7 { words.append("rare") }
        if index >= 1_500 && index % 50 == 0 { words.append("late") }
        // 45 words starting "lat", 11 of them "lat1": too many to read word by word, and few enough.
        if index >= 1_500 && index % 7 == 0 { words.append("lat\(index % 45)") }
        // After the gap, 200 titles that are "Zed" alone (tier 0), then "zed" in every other title: tier 1's
        // candidates start with the 200 it leaves to tier 0.
        if index >= 2_200 && index % 2 == 0 { words.append("zed") }
        records.append(
          PlaceRecord(
            place: try Place(
              id: PlaceID("m\(index)"), kind: index % 97 == 5 ? .university : .programme,
              name: LocalizedText([
                "en": index % 900 == 7 ? "Rare" : (2_000..<2_200).contains(index) ? "Zed" : words.joined(separator: " ")
              ]),
              keywords: index % 250 == 3 ? ["rarely", "lately", "commonplace"] : [])))
      }
      // SQLite's sequence (the rowid) has no gap to make.
      for _ in 0..<(engine.name == "postgres" ? 9 : 1) {
        try await store.upsertPlaces(Array(records[..<2_000]), now: 1)
      }
      try await store.upsertPlaces(Array(records[2_000...]), now: 1)
      // Titles changed and places deleted after the gap: their title words change with them.
      for index in [2_050, 2_051, 2_303] {
        let place = records[index].place
        records[index].place = try Place(
          id: place.id, kind: place.kind,
          name: LocalizedText(["en": index == 2_050 ? "place renamed" : "lately renamed lat1"]))
      }
      try await store.upsertPlaces([2_050, 2_051, 2_303].map { records[$0] }, now: 2)
      let deleted = [2_100, 2_107]
      for index in deleted { #expect(try await store.deletePlace(records[index].place.id)) }
      let oracle = PlaceRankingOracle(
        entries: records.enumerated().filter { !deleted.contains($0.offset) }.map {
          .init(sequence: Int64($0), record: $1, rating: RatingAggregate())
        })
      for (text, limit, kinds) in [
        ("common", 100, []), ("comm", 30, []), ("rare", 3, []), ("rar", 2, []), ("late", 4, []), ("lat", 5, []),
        ("lat1", 3, []), ("lately", 2, []), ("ra", 6, []), ("place 1", 100, []), ("place 23", 9, []),
        ("place", 3, [PlaceKind.university]), ("place ren", 2, []), ("zed", 7, []), ("ze", 30, []),
        ("nothing", 5, []),
      ] {
        let query = PlaceQuery(kinds: kinds, text: text, sort: .relevance, limit: limit)
        let count = try await expectReference(store, oracle, query, "\(text) by \(limit)")
        #expect(count > 0 || text == "nothing", "\(text)")
      }
    }
  }

  /// Pages by distance within a circle against the reference where PostgreSQL reads the first page from the nearest
  /// candidates alone (75 in the spatial index's order): more places than that in the circle (the farthest of them
  /// decides), 100 places at one point (a tie the candidates can't settle: the exact statement reads the page), a
  /// tie at the page's edge, few places (every candidate read), a kind few pass, a page longer than the candidates.
  @Test(arguments: StoreEngine.all)
  func nearestPagesEqualTheReference(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      var random = SplitMix64(seed: 31)
      let centre = Self.centre
      var records: [PlaceRecord] = []
      for index in 0..<400 {
        // 100 places at one point 300 m north (every 4th from 200), the rest within about 1.2 km, some beside it.
        let location: Coordinate =
          if index >= 200 && index % 2 == 0 {
            try Coordinate(latitude: centre.latitude + 0.0027, longitude: centre.longitude)
          } else if index % 13 == 0 {
            try Coordinate(latitude: centre.latitude + 0.0027, longitude: centre.longitude + 0.00001)
          } else {
            try Coordinate(
              latitude: centre.latitude + Double.random(in: -0.011...0.011, using: &random),
              longitude: centre.longitude + Double.random(in: -0.018...0.018, using: &random))
          }
        records.append(
          PlaceRecord(
            place: try Place(
              id: PlaceID("n\(index)"), kind: index % 29 == 0 ? .university : .programme,
              name: LocalizedText(["en": "Place \(index)"]), location: location)))
      }
      try await store.upsertPlaces(records, now: 1)
      let oracle = PlaceRankingOracle(
        entries: records.enumerated().map { .init(sequence: Int64($0), record: $1, rating: RatingAggregate()) })
      let tie = try Coordinate(latitude: centre.latitude + 0.0027, longitude: centre.longitude)
      let queries: [(PlaceQuery, String)] = [
        (PlaceQuery(area: .circle(center: centre, radius: 1_000), sort: .distance, limit: 10), "dense"),
        (PlaceQuery(area: .circle(center: centre, radius: 1_000), sort: .distance, limit: 40), "past the tie"),
        (PlaceQuery(area: .circle(center: tie, radius: 500), sort: .distance, limit: 10), "at the tie"),
        (PlaceQuery(area: .circle(center: tie, radius: 500), sort: .distance, limit: 107), "the tie's edge"),
        (PlaceQuery(area: .circle(center: centre, radius: 150), sort: .distance, limit: 3), "few"),
        (PlaceQuery(area: .circle(center: centre, radius: 1_000), sort: .distance, limit: 90), "a long page"),
        (
          PlaceQuery(kinds: [.university], area: .circle(center: centre, radius: 1_000), sort: .distance, limit: 4),
          "a kind"
        ),
      ]
      for (query, label) in queries {
        let count = try await expectReference(store, oracle, query, label)
        #expect(count > 0, "\(label)")
      }
    }
  }

  /// Every kind of attribute condition, alone and with a city, a kind or a scope, against the reference: ranges
  /// (open, closed, empty, infinite), text equality folded (case, diacritics), flags in any case, numbers written as
  /// text, a name that is no plain word, an attribute some places lack or hold as text.
  @Test(arguments: StoreEngine.all)
  func attributeConditionsRunInSQLAsTheReference(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      let oracle = try await seed(store)
      let conditions: [PlaceAttributeFilter] = [
        PlaceAttributeFilter(name: "score"),
        PlaceAttributeFilter(name: "score", minimum: 50),
        PlaceAttributeFilter(name: "score", maximum: 49.5),
        PlaceAttributeFilter(name: "score", minimum: 30, maximum: 30.5),
        PlaceAttributeFilter(name: "score", minimum: 80, maximum: 20),
        PlaceAttributeFilter(name: "score", minimum: .infinity),
        PlaceAttributeFilter(name: "score", minimum: -.infinity, maximum: .infinity),
        PlaceAttributeFilter(name: "score", equals: "n/a"),
        PlaceAttributeFilter(name: "score", equals: "N/A"),
        PlaceAttributeFilter(name: "score", equals: "42"),
        PlaceAttributeFilter(name: "score", equals: "42.0"),
        PlaceAttributeFilter(name: "score", equals: "13.5"),
        PlaceAttributeFilter(name: "score", minimum: 40, equals: "42"),
        PlaceAttributeFilter(name: "form", equals: "очная"),
        PlaceAttributeFilter(name: "form", equals: "FULL-TIME"),
        PlaceAttributeFilter(name: "form", equals: "e-learning"),
        PlaceAttributeFilter(name: "form", minimum: 0),
        PlaceAttributeFilter(name: "budget", equals: "TRUE"),
        PlaceAttributeFilter(name: "budget", equals: "false"),
        PlaceAttributeFilter(name: "budget", equals: "1"),
        PlaceAttributeFilter(name: "passingScore", minimum: 180, maximum: 240),
        PlaceAttributeFilter(name: "passingScore", equals: "261"),
        PlaceAttributeFilter(name: "min. score", minimum: 4),
        PlaceAttributeFilter(name: "min. score", equals: "7"),
        PlaceAttributeFilter(name: "it's \"quoted\""),
        PlaceAttributeFilter(name: "missing", maximum: 10),
      ]
      var found = 0
      for condition in conditions {
        for sort in [PlaceQuery.Sort.inserted, .rating] {
          let query = PlaceQuery(attributes: [condition], sort: sort, limit: 9)
          found += try await expectReference(store, oracle, query, "\(condition) \(sort)")
        }
        let narrowed = PlaceQuery(
          scope: .roots, kinds: [.programme], city: "томск северныи", attributes: [condition], sort: .reviews,
          limit: 4)
        found += try await expectReference(store, oracle, narrowed, "\(condition) in a city")
        let children = PlaceQuery(scope: .children(of: "p3"), attributes: [condition], limit: 4)
        found += try await expectReference(store, oracle, children, "\(condition) children")
      }
      #expect(found > 500)
      // Text with NUL (which no stored text holds) matches nothing, on every engine, without an error.
      let nul = PlaceQuery(
        city: "Tom\u{0}sk", attributes: [PlaceAttributeFilter(name: "form", equals: "оч\u{0}ная")], venueType: "\u{0}")
      #expect(try await store.places(nul).items.isEmpty)
      #expect(
        try await store.places(PlaceQuery(attributes: [PlaceAttributeFilter(name: "form", equals: "\u{0}")])).items
          .isEmpty)
      // Several conditions hold together.
      let both = PlaceQuery(
        city: "Tomsk",
        attributes: [
          PlaceAttributeFilter(name: "passingScore", minimum: 160, maximum: 290),
          PlaceAttributeFilter(name: "budget", equals: "true"),
        ], sort: .rating, limit: 3)
      #expect(try await expectReference(store, oracle, both, "two conditions and a city") > 3)
    }
  }

  /// Places stored before attribute filters ran in SQL get their folded texts from the migration, and are found by
  /// text equality (in another case) and by the indexed passing score within their city.
  @Test(arguments: StoreEngine.all)
  func placesStoredBeforeTheMigrationAreFoundByTheirAttributes(_ engine: StoreEngine) async throws {
    let row = """
      INSERT INTO places(id, kind, title, attributes, city, city_key, created_at, updated_at)
      VALUES ('old', 'programme', 'Old programme', '{"form":"Очная","passingScore":210,"budget":true}', 'Tomsk',
        'tomsk', 1, 1);
      INSERT INTO places(id, kind, title, created_at, updated_at) VALUES ('bare', 'programme', 'Bare', 1, 1);
      """
    try await engine.withDatabase(before: "2026-11-29 place attributes in SQL", seed: { _ in row }) {
      store async throws in
      func ids(_ filters: [PlaceAttributeFilter], city: String? = nil) async throws -> [String] {
        try await store.places(PlaceQuery(city: city, attributes: filters)).items.map(\.record.place.id.rawValue)
      }
      #expect(try await ids([PlaceAttributeFilter(name: "form", equals: "ОЧНАЯ")]) == ["old"])
      #expect(try await ids([PlaceAttributeFilter(name: "form", equals: "заочная")]).isEmpty)
      #expect(try await ids([PlaceAttributeFilter(name: "passingScore", minimum: 200)], city: "TOMSK") == ["old"])
      #expect(try await ids([PlaceAttributeFilter(name: "budget", equals: "true")]) == ["old"])
      #expect(try await ids([PlaceAttributeFilter(name: "passingScore", maximum: 200)]).isEmpty)
    }
  }
}
