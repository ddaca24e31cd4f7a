import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import MeridianStore
import MeridianStoreTesting
import Testing

/// The places directory: a hierarchy whose ratings always equal a recomputation from the reviews (edits, deletions,
/// hides, moves and account deletions included), search in every language by prefix with exact titles first,
/// keyset pages that never repeat or skip, favourites and news — on every engine.
@Suite("Store contract: places directory")
struct PlaceContractTests {
  func makeUsers(_ store: any MeridianStore, _ names: [String]) async throws {
    for name in names {
      _ = try #require(
        try await store.createAccount(
          id: UserID(name), credential: .email("\(name)@example.com"), passwordHash: nil, now: 1))
    }
  }

  func record(
    _ id: String, parent: String? = nil, kind: PlaceKind, _ titles: [String: String], short: [String: String] = [:],
    description: [String: String] = [:], city: String? = nil, at location: Coordinate? = nil,
    attributes: [String: PlaceAttribute] = [:], keywords: [String] = []
  ) throws -> PlaceRecord {
    PlaceRecord(
      place: try Place(
        id: PlaceID(id), parentID: parent.map { PlaceID($0) }, kind: kind, name: LocalizedText(titles),
        description: LocalizedText(description), location: location, city: city, keywords: keywords),
      shortTitle: LocalizedText(short), attributes: attributes)
  }

  /// Two universities: u1 (faculties f1, f2; programmes p1 under f1, p2 and p3 under f2) and u2.
  func makeTree(_ store: any MeridianStore) async throws {
    try await store.upsertPlaces(
      [
        try record("u1", kind: .university, ["en": "First University"], city: "Tomsk"),
        try record("f1", parent: "u1", kind: .faculty, ["en": "Faculty of Physics"], city: "Tomsk"),
        try record("f2", parent: "u1", kind: .faculty, ["en": "Faculty of History"], city: "Tomsk"),
        try record("p1", parent: "f1", kind: .programme, ["en": "Optics"], city: "Tomsk"),
        try record("p2", parent: "f2", kind: .programme, ["en": "Archaeology"], city: "Tomsk"),
        try record("p3", parent: "f2", kind: .programme, ["en": "Museum studies"], city: "Tomsk"),
        try record("u2", kind: .university, ["en": "Second University"], city: "Tomsk"),
      ], now: 10)
  }

  static let treeIDs = ["u1", "f1", "f2", "p1", "p2", "p3", "u2"]

  /// Every place's stored own and subtree ratings equal DomainKit's recomputation from the visible reviews.
  func expectRatingsRecomputed(
    _ store: any MeridianStore, _ ids: [String] = treeIDs, sourceLocation: SourceLocation = #_sourceLocation
  ) async throws {
    var places: [Place] = []
    var stored: [PlaceID: PlaceRating] = [:]
    for id in ids {
      let details = try #require(try await store.place(PlaceID(id)), sourceLocation: sourceLocation)
      places.append(details.listing.record.place)
      stored[PlaceID(id)] = details.listing.rating
    }
    let reviews = try await store.allVisibleReviews()
    let subtree = PlaceDirectory.aggregateRatings(places: places, reviews: reviews)
    for place in places {
      let own = reviews.filter { $0.placeID == place.id }.reduce(RatingAggregate()) {
        $0 + RatingAggregate(sum: $1.grade, count: 1)
      }
      #expect(stored[place.id]?.subtree == subtree[place.id], "subtree of \(place.id)", sourceLocation: sourceLocation)
      #expect(stored[place.id]?.own == own, "own rating of \(place.id)", sourceLocation: sourceLocation)
    }
  }

  func review(_ id: String, _ place: String, _ author: String, _ grade: Int, text: String = "") throws -> Review {
    try Review(
      id: ReviewID(id), placeID: PlaceID(place), authorID: UserID(author), grade: grade, text: text,
      createdAt: 100)
  }

  @Test(arguments: StoreEngine.all)
  func ratingsEqualARecomputationThroughEditsDeletionsHidesMovesAndAccountDeletion(_ engine: StoreEngine)
    async throws
  {
    try await engine.with { store in
      try await makeUsers(store, ["ann", "bob", "cat", "dan"])
      try await makeTree(store)
      for (index, (place, author, grade)) in [
        ("p1", "ann", 5), ("p1", "bob", 3), ("p2", "ann", 4), ("p3", "cat", 1), ("f2", "dan", 2), ("u1", "bob", 4),
        ("u2", "cat", 5),
      ].enumerated() {
        let (_, created) = try await store.saveReview(try review("r\(index)", place, author, grade), now: 100)
        #expect(created)
      }
      try await expectRatingsRecomputed(store)
      let u1 = try #require(try await store.place("u1")).listing.rating
      #expect(u1.subtree == RatingAggregate(sum: 5 + 3 + 4 + 1 + 2 + 4, count: 6))
      #expect(u1.own == RatingAggregate(sum: 4, count: 1))

      // An edit keeps the first review's id and time and changes every ancestor's sums.
      let (edited, created) = try await store.saveReview(try review("other", "p1", "ann", 2), now: 200)
      #expect(!created)
      #expect(edited.id == "r0" && edited.createdAt == 100)
      #expect(try #require(try await store.place("u1")).listing.rating.subtree.sum == 16)
      try await expectRatingsRecomputed(store)

      #expect(try await store.deleteReview(place: "p3", author: "cat"))
      #expect(!(try await store.deleteReview(place: "p3", author: "cat")))
      try await expectRatingsRecomputed(store)

      #expect(try await store.setReviewHidden("r4", hidden: true))
      #expect(try #require(try await store.place("f2")).listing.rating.own == RatingAggregate())
      try await expectRatingsRecomputed(store)
      #expect(try await store.setReviewHidden("r4", hidden: true))  // again: nothing counted twice
      try await expectRatingsRecomputed(store)

      // A move carries the subtree's rating: f2 (p2's 4) leaves u1 for u2.
      try await store.movePlace("f2", to: "u2", now: 300)
      #expect(try #require(try await store.place("u2")).listing.rating.subtree == RatingAggregate(sum: 9, count: 2))
      #expect(try #require(try await store.place("p2")).ancestors.map(\.id) == ["u2", "f2"])
      try await expectRatingsRecomputed(store)
      #expect(try await store.setReviewHidden("r4", hidden: false))
      try await expectRatingsRecomputed(store)
      // Moving by upsert (a changed parent) is the same move; then to the top level.
      try await store.upsertPlaces(
        [try record("f2", parent: "u1", kind: .faculty, ["en": "Faculty of History"], city: "Tomsk")], now: 400)
      try await expectRatingsRecomputed(store)
      try await store.movePlace("f1", to: nil, now: 500)
      #expect(try #require(try await store.place("p1")).ancestors.map(\.id) == ["f1"])
      try await expectRatingsRecomputed(store)

      // An account's reviews go with it, and the sums with them.
      _ = try await store.deleteUser("ann", dryRun: false, batchSize: 1000)
      #expect(try await store.allVisibleReviews().allSatisfy { $0.authorID != "ann" })
      try await expectRatingsRecomputed(store)
      // Deleting a leaf takes its reviews out of its ancestors' sums.
      #expect(try await store.deletePlace("p1"))
      try await expectRatingsRecomputed(store, Self.treeIDs.filter { $0 != "p1" })
      #expect(try #require(try await store.place("f1")).listing.rating.subtree == RatingAggregate())
    }
  }

  @Test(arguments: StoreEngine.all)
  func badInputIsRefusedWithAClearErrorAndChangesNothing(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await makeUsers(store, ["ann"])
      try await makeTree(store)
      _ = try await store.saveReview(try review("r1", "p1", "ann", 4), now: 100)
      func snapshot() async throws -> [PlaceListing] {
        try await store.places(PlaceQuery(limit: 100)).items
      }
      let before = try await snapshot()
      #expect(before.count == 7)

      // An unknown parent anywhere in an import: nothing of it is stored.
      await #expect(throws: PlaceStoreError.unknownParent("x2", parent: "nowhere")) {
        try await store.upsertPlaces(
          [
            try record("x1", parent: "u1", kind: .faculty, ["en": "New"]),
            try record("x2", parent: "nowhere", kind: .programme, ["en": "Lost"]),
          ], now: 20)
      }
      // Cycles: under itself, under a descendant (by move or by upsert).
      await #expect(throws: PlaceStoreError.cycle("u1")) { try await store.movePlace("u1", to: "p1", now: 20) }
      await #expect(throws: PlaceStoreError.cycle("f1")) { try await store.movePlace("f1", to: "f1", now: 20) }
      await #expect(throws: PlaceStoreError.cycle("u1")) {
        try await store.upsertPlaces([try record("u1", parent: "f2", kind: .university, ["en": "Loop"])], now: 20)
      }
      await #expect(throws: PlaceStoreError.unknownParent("f1", parent: "nowhere")) {
        try await store.movePlace("f1", to: "nowhere", now: 20)
      }
      await #expect(throws: PlaceStoreError.placeNotFound("nowhere")) {
        try await store.movePlace("nowhere", to: "u1", now: 20)
      }
      await #expect(throws: PlaceStoreError.invalidPlace("t", "a title is required in at least one language")) {
        try await store.upsertPlaces([try record("t", kind: .faculty, ["en": "  "])], now: 20)
      }
      await #expect(throws: PlaceStoreError.hasChildren("f1")) { _ = try await store.deletePlace("f1") }
      #expect(!(try await store.deletePlace("nowhere")))

      // Grades 0 and 6, oversized text and control characters never make a review (DomainKit's rule, the same for
      // every engine); unknown places are refused by the store.
      #expect(throws: ReviewError.gradeOutOfRange(field: "grade", value: 0)) {
        _ = try Review(id: "g", placeID: "p1", authorID: "ann", grade: 0, createdAt: 1)
      }
      #expect(throws: ReviewError.gradeOutOfRange(field: "grade", value: 6)) {
        _ = try Review(id: "g", placeID: "p1", authorID: "ann", grade: 6, createdAt: 1)
      }
      #expect(throws: ReviewError.invalidText(field: "text", .tooLong(maximum: 2_000))) {
        _ = try review("r1", "p1", "ann", 1, text: String(repeating: "я", count: 2_001))
      }
      #expect(throws: ReviewError.invalidText(field: "text", .forbiddenCharacter("\u{0}", lines: .multiple))) {
        _ = try review("r1", "p1", "ann", 1, text: "a\u{0}b")
      }
      await #expect(throws: PlaceStoreError.placeNotFound("nowhere")) {
        _ = try await store.saveReview(try review("r9", "nowhere", "ann", 1), now: 200)
      }
      await #expect(throws: PlaceStoreError.placeNotFound("nowhere")) {
        _ = try await store.addFavourite("nowhere", user: "ann", now: 200)
      }
      #expect(try await snapshot() == before)
      #expect(try await store.allVisibleReviews().map(\.grade) == [4])
      // The longest text accepted is stored whole, tabs and line feeds too, on every engine.
      let long = "Я\t" + String(repeating: "я", count: 1_996) + "\n\u{1F1FA}\u{1F1E6}"
      let (saved, _) = try await store.saveReview(try review("r1", "p1", "ann", 1, text: long), now: 300)
      #expect(saved.text == long)
      #expect(try await store.reviews(of: "p1", cursor: nil, limit: 10).items.map(\.text) == [long])
    }
  }

  func makeUniversities(_ store: any MeridianStore) async throws {
    try await store.upsertPlaces(
      [
        try record(
          "msu", kind: .university,
          ["en": "Lomonosov Moscow State University", "ru": "Московский государственный университет имени Ломоносова"],
          short: ["en": "MSU", "ru": "МГУ"], description: ["en": "The oldest university of Moscow."],
          city: "Moscow", at: Coordinate(uncheckedLatitude: 55.7033, longitude: 37.5302)),
        try record(
          "mipt", kind: .university, ["en": "Moscow Institute of Physics and Technology", "ru": "Физтех"],
          short: ["ru": "МФТИ"], description: ["ru": "Выпускники МГУ основали Физтех."], city: "Dolgoprudny",
          at: Coordinate(uncheckedLatitude: 55.9297, longitude: 37.5199)),
        try record(
          "kpi", kind: .university, ["uk": "Київський політехнічний інститут", "en": "Kyiv Polytechnic Institute"],
          short: ["uk": "КПІ"], city: "Київ", at: Coordinate(uncheckedLatitude: 50.4488, longitude: 30.4572)),
        try record(
          "saclay", kind: .university, ["en": "Université Paris-Saclay"], city: "Orsay",
          at: Coordinate(uncheckedLatitude: 48.7117, longitude: 2.1706), keywords: ["grande école"]),
        try record("physics", parent: "msu", kind: .faculty, ["en": "Physics"], city: "Moscow"),
        try record("faculty-physics", parent: "mipt", kind: .faculty, ["en": "Faculty of General Physics"]),
        try record(
          "tsu", kind: .university, ["en": "Tomsk State University", "ru": "Томский государственный университет"],
          short: ["ru": "ТГУ"], city: "Tomsk"),
        try record(
          "tsu-law", parent: "tsu", kind: .programme, ["en": "Law"], city: "Tomsk",
          attributes: ["passingScore": .number(255), "form": .text("full-time")]),
        try record(
          "tsu-geo", parent: "tsu", kind: .programme, ["en": "Geography"], city: "Tomsk",
          attributes: ["passingScore": .number(198), "form": .text("full-time")]),
        try record(
          "tsu-geo-ext", parent: "tsu", kind: .programme, ["en": "Geography (extramural)"], city: "Tomsk",
          attributes: ["passingScore": .number(170), "form": .text("extramural")]),
        try record(
          "tsu-math", parent: "tsu", kind: .programme, ["en": "Mathematics"], city: "TOMSK",
          attributes: ["passingScore": .number(240), "form": .text("full-time")]),
      ], now: 10)
  }

  func search(
    _ store: any MeridianStore, _ text: String, kinds: [PlaceKind] = [], city: String? = nil,
    attributes: [PlaceQuery.AttributeFilter] = []
  ) async throws -> [String] {
    try await store.places(PlaceQuery(kinds: kinds, city: city, text: text, attributes: attributes, limit: 100))
      .items.map(\.record.place.id.rawValue)
  }

  @Test(arguments: StoreEngine.all)
  func searchFindsByEveryLanguageAndPrefixCaseAndDiacriticInsensitivelyExactTitlesFirst(_ engine: StoreEngine)
    async throws
  {
    try await engine.with { store in
      try await makeUniversities(store)
      // The short title "МГУ" exactly: MSU first; MIPT mentions МГУ in its description only.
      #expect(try await search(store, "мгу") == ["msu", "mipt"])
      #expect(try await search(store, "МГУ") == ["msu", "mipt"])
      #expect(try await search(store, "lomonosov") == ["msu"])
      #expect(try await search(store, "ломонос") == ["msu"])  // a prefix, Cyrillic
      #expect(try await search(store, "Lomo") == ["msu"])
      #expect(try await search(store, "київ") == ["kpi"])
      #expect(try await search(store, "КИЇВСЬКИЙ політех") == ["kpi"])
      #expect(try await search(store, "universite") == ["saclay"])  // no diacritics in the query
      #expect(try await search(store, "ecole") == ["saclay"])  // a keyword
      #expect(try await search(store, "nothing-like-this") == [])
      // Exact title, then a title word starting with the query, then the rest; insertion order within a tier.
      #expect(try await search(store, "physics") == ["physics", "mipt", "faculty-physics"])
      #expect(try await search(store, "moscow") == ["msu", "mipt"])
      #expect(try await search(store, "мос") == ["msu"])  // "Московский"; MIPT has no Russian word starting so
      #expect(try await search(store, "моск") == ["msu"])
      // Filters combine with search: kind, city (any case), attribute ranges and text.
      #expect(try await search(store, "university", kinds: [.university], city: "tomsk") == ["tsu"])
      let enter240 = [PlaceQuery.AttributeFilter(name: "passingScore", maximum: 240)]
      #expect(
        try await store.places(PlaceQuery(kinds: [.programme], city: "Tomsk", attributes: enter240)).items.map(
          \.record.place.id.rawValue) == ["tsu-geo", "tsu-geo-ext", "tsu-math"])
      #expect(
        try await search(
          store, "geography", city: "Tomsk",
          attributes: enter240 + [PlaceQuery.AttributeFilter(name: "form", equals: "Full-Time")]) == ["tsu-geo"])
      // Records come back whole, in every language.
      let msu = try #require(try await store.place("msu")).listing.record
      #expect(msu.shortTitle == LocalizedText(["en": "MSU", "ru": "МГУ"]))
      #expect(msu.place.name.values["ru"] == "Московский государственный университет имени Ломоносова")
      let law = try #require(try await store.place("tsu-law"))
      #expect(law.listing.record.attributes["passingScore"] == .number(255))
      #expect(law.ancestors.map(\.id) == ["tsu"])
      #expect(try #require(try await store.place("tsu")).listing.children == 4)
    }
  }

  /// An exact title leads the search after the place is renamed (its old title no longer does), in any of its
  /// languages or its short title, and a deleted place leaves no match behind.
  @Test(arguments: StoreEngine.all)
  func exactTitlesFollowRenamesAndDeletions(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      func place(_ id: String, _ names: [String: String], short: [String: String] = [:]) throws -> PlaceRecord {
        PlaceRecord(
          place: try Place(id: PlaceID(id), kind: .university, name: LocalizedText(names)),
          shortTitle: LocalizedText(short))
      }
      try await store.upsertPlaces(
        [
          try place("beta-two", ["en": "Beta Two"]), try place("renamed", ["en": "Alpha"]),
          try place("gamma", ["en": "Gamma Beta"]),
        ], now: 1)
      #expect(try await search(store, "alpha") == ["renamed"])
      #expect(try await search(store, "beta") == ["beta-two", "gamma"])
      try await store.upsertPlaces([try place("renamed", ["en": "Beta", "ru": "Альфа"], short: ["en": "AB"])], now: 2)
      #expect(try await search(store, "beta") == ["renamed", "beta-two", "gamma"])
      #expect(try await search(store, "альфа") == ["renamed"])
      #expect(try await search(store, "ab") == ["renamed"])
      #expect(try await search(store, "alpha") == [])
      #expect(try await store.deletePlace("renamed"))
      #expect(try await search(store, "beta") == ["beta-two", "gamma"])
      // Later pages of an order by relevance go on from the tier and place where the last one stopped.
      let keyword = PlaceRecord(
        place: try Place(id: "keyword", kind: .university, name: LocalizedText(["en": "Delta"]), keywords: ["betamax"]))
      try await store.upsertPlaces(
        try (0..<5).flatMap { index in
          [try place("exact-\(index)", ["en": "Beta"]), try place("word-\(index)", ["en": "Beta \(index)"])]
        } + [keyword], now: 3)
      var pages: [[String]] = []
      var cursor: String?
      repeat {
        let page = try await store.places(PlaceQuery(text: "beta", cursor: cursor, limit: 4))
        pages.append(page.items.map(\.record.place.id.rawValue))
        cursor = page.nextCursor
      } while cursor != nil
      #expect(
        pages == [
          ["exact-0", "exact-1", "exact-2", "exact-3"], ["exact-4", "beta-two", "gamma", "word-0"],
          ["word-1", "word-2", "word-3", "word-4"], ["keyword"],
        ])
    }
  }

  /// Every word of a query must match, the ninth and later too (they were ignored).
  @Test(arguments: StoreEngine.all)
  func everyWordOfAQueryCountsPastTheEighth(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await makeUniversities(store)
      let eight = "lomonosov moscow state university oldest university moscow state"
      #expect(try await search(store, eight) == ["msu"])
      #expect(try await search(store, eight + " university") == ["msu"])
      #expect(try await search(store, eight + " nothing") == [])
      #expect(try await search(store, eight + " mo") == ["msu"])  // a short ninth word: a title word
      #expect(try await search(store, eight + " ox") == [])
      let many = Array(repeating: "moscow", count: 60).joined(separator: " ")
      #expect(try await search(store, many + " zzz") == [])
      #expect(try await search(store, many + " physics") == ["mipt"])
    }
  }

  @Test(arguments: StoreEngine.all)
  func searchFoldsCaseAndDiacriticsInCyrillicAndLatinBothWays(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await store.upsertPlaces(
        [
          try record("tomsk", kind: .university, ["ru": "Томский университет"], short: ["ru": "ТУ"]),
          try record("library", kind: .venue, ["en": "Library"], description: ["ru": "Библиотека в Томске"]),
          try record("yolki", kind: "school", ["ru": "Ёлкинская школа"]),
          try record("fedorov", kind: "institute", ["ru": "Институт имени Федорова"]),
          try record("kyiv", kind: .university, ["uk": "Київський університет"]),
          try record("zp", kind: .university, ["uk": "Запорізький університет"], short: ["uk": "ЗНУ"]),
          try record("ecole", kind: "school", ["en": "Ecole Polytechnique"]),
          try record(
            "physics", kind: .programme, ["ru": "Физика"], attributes: ["code": .text("03.03.02")],
            keywords: ["03.03.02"]),
        ], now: 10)
      // Case, in Cyrillic; the title first, the description after.
      for query in ["Томский", "томский", "ТОМСКИЙ", "тОмСкИй"] {
        #expect(try await search(store, query) == ["tomsk"], "\(query)")
      }
      #expect(try await search(store, "томск") == ["tomsk", "library"])
      // "ё" and "е" either way.
      #expect(try await search(store, "елкинская") == ["yolki"])
      #expect(try await search(store, "ЁЛКИН") == ["yolki"])
      #expect(try await search(store, "фёдоров") == ["fedorov"])
      #expect(try await search(store, "ФЕДОРОВА") == ["fedorov"])
      // Ukrainian "ї" and "і" either way.
      #expect(try await search(store, "киівськ") == ["kyiv"])
      #expect(try await search(store, "КИЇВ") == ["kyiv"])
      #expect(try await search(store, "запоріз") == ["zp"])
      #expect(try await search(store, "запорїзький") == ["zp"])
      // Latin diacritics either way.
      #expect(try await search(store, "école") == ["ecole"])
      #expect(try await search(store, "POLYTÉCH") == ["ecole"])
      // One or two letters type ahead in titles and short titles only; numbers match codes everywhere.
      #expect(try await search(store, "то") == ["tomsk"])
      #expect(try await search(store, "зн") == ["zp"])
      #expect(try await search(store, "б") == [])
      #expect(try await search(store, "03.03.02") == ["physics"])
      #expect(try await search(store, "03.03") == ["physics"])
    }
  }

  @Test(arguments: StoreEngine.all)
  func nearbyAndBoxQueriesSortByDistance(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await makeUniversities(store)
      let kremlin = Coordinate(uncheckedLatitude: 55.7520, longitude: 37.6175)
      let near = try await store.places(
        PlaceQuery(area: .circle(center: kremlin, radius: 30_000), sort: .distance, limit: 10))
      #expect(near.items.map(\.record.place.id.rawValue) == ["msu", "mipt"])
      let distances = near.items.compactMap(\.distance)
      #expect(distances.count == 2)
      #expect(
        abs(distances[0] - kremlin.haversineDistance(to: Coordinate(uncheckedLatitude: 55.7033, longitude: 37.5302)))
          < 0.01)
      #expect(distances[0] < distances[1] && distances[1] < 30_000)
      let box = try await store.places(
        PlaceQuery(area: .box(south: 45, west: 0, north: 52, east: 31), center: kremlin, sort: .distance))
      #expect(box.items.map(\.record.place.id.rawValue) == ["kpi", "saclay"])
      await #expect(throws: PlaceStoreError.self) { _ = try await store.places(PlaceQuery(sort: .distance)) }
    }
  }

  @Test(arguments: StoreEngine.all)
  func pagesNeverRepeatOrSkipUnderConcurrentInserts(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await makeUsers(store, ["ann", "bob"])
      try await store.upsertPlaces(
        try (0..<35).map { try record("c\($0)", kind: .university, ["en": "College \($0)"], city: "Tomsk") },
        now: 10)
      for index in stride(from: 0, to: 35, by: 3) {
        _ = try await store.saveReview(try review("a\(index)", "c\(index)", "ann", 1 + index % 5), now: 20)
        if index % 2 == 0 {
          _ = try await store.saveReview(try review("b\(index)", "c\(index)", "bob", 5), now: 20)
        }
      }
      let existing = Set((0..<35).map { "c\($0)" })
      for sort in [PlaceQuery.Sort.inserted, .rating, .reviews, .relevance] {
        var seen: [String] = []
        var cursor: String?
        var inserted = 0
        repeat {
          let page = try await store.places(
            PlaceQuery(city: "tomsk", text: sort == .relevance ? "college" : nil, sort: sort, cursor: cursor, limit: 10)
          )
          seen += page.items.map(\.record.place.id.rawValue)
          cursor = page.nextCursor
          // Between pages, others insert places that sort anywhere.
          try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<3 {
              inserted += 1
              let id = "\(sort.rawValue)-new\(inserted)"
              group.addTask {
                try await store.upsertPlaces(
                  [try record(id, kind: .university, ["en": "College new"], city: "Tomsk")], now: 30)
                _ = try await store.saveReview(try review("n-\(id)", id, "bob", 5), now: 30)
              }
            }
            try await group.waitForAll()
          }
        } while cursor != nil
        #expect(Set(seen).count == seen.count, "\(sort): a place was repeated")
        #expect(existing.isSubset(of: Set(seen)), "\(sort): a place was skipped")
      }
      // Rating order: highest subtree average first, then more reviews.
      let top = try await store.places(PlaceQuery(city: "tomsk", sort: .rating, limit: 100)).items
      let averages = top.map { $0.rating.subtree.average ?? -1 }
      #expect(averages == averages.sorted(by: >))
      await #expect(throws: PlaceStoreError.invalidCursor) {
        _ = try await store.places(PlaceQuery(sort: .rating, cursor: "inserted:5"))
      }
    }
  }

  @Test(arguments: StoreEngine.all)
  func favouritesAndNewsFeeds(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await makeUsers(store, ["ann", "bob"])
      try await makeTree(store)
      #expect(try await store.addFavourite("f2", user: "ann", now: 1))
      #expect(!(try await store.addFavourite("f2", user: "ann", now: 2)))
      #expect(try await store.addFavourite("u2", user: "ann", now: 3))
      #expect(try await store.addFavourite("p1", user: "ann", now: 4))
      #expect(try await store.addFavourite("f2", user: "bob", now: 5))
      #expect(try #require(try await store.place("f2")).listing.favourites == 2)
      let first = try await store.favourites(of: "ann", cursor: nil, limit: 2)
      #expect(first.items.map(\.record.place.id.rawValue) == ["p1", "u2"])
      let second = try await store.favourites(of: "ann", cursor: first.nextCursor, limit: 2)
      #expect(second.items.map(\.record.place.id.rawValue) == ["f2"])
      #expect(second.nextCursor == nil)
      #expect(try await store.removeFavourite("p1", user: "ann"))
      #expect(!(try await store.removeFavourite("p1", user: "ann")))
      _ = try await store.deleteUser("bob", dryRun: false, batchSize: 1000)
      #expect(try #require(try await store.place("f2")).listing.favourites == 1)

      for (id, place, time) in [
        ("n1", "p2", 100), ("n2", "u1", 200), ("n3", nil, 300), ("n4", "p1", 400), ("n5", "u2", 500),
        ("n6", "p3", 600),
      ] as [(String, String?, Int64)] {
        try await store.saveNews(
          NewsItem(
            id: NewsID(id), placeID: place.map { PlaceID($0) }, title: LocalizedText(["en": "News \(id)"]),
            body: LocalizedText(["ru": "Новость"]), imageURL: id == "n6" ? "/v1/blobs/n6.jpg" : nil,
            publishedAt: time))
      }
      await #expect(throws: PlaceStoreError.placeNotFound("nowhere")) {
        try await store.saveNews(
          NewsItem(id: "n9", placeID: "nowhere", title: LocalizedText(), body: LocalizedText(), publishedAt: 1))
      }
      func feed(_ scope: NewsQuery.Scope, limit: Int = 2) async throws -> [String] {
        var ids: [String] = []
        var cursor: String?
        repeat {
          let page = try await store.news(NewsQuery(scope: scope, cursor: cursor, limit: limit))
          ids += page.items.map(\.id.rawValue)
          cursor = page.nextCursor
        } while cursor != nil
        return ids
      }
      #expect(try await feed(.all) == ["n6", "n5", "n4", "n3", "n2", "n1"])
      #expect(try await feed(.subtree(of: "f2")) == ["n6", "n3", "n1"])
      // ann keeps f2 and u2: their subtrees' news and the directory-wide item.
      #expect(try await feed(.favourites(of: "ann"), limit: 1) == ["n6", "n5", "n3", "n1"])
      let item = try #require(try await store.news(NewsQuery(limit: 1)).items.first)
      #expect(item.body == LocalizedText(["ru": "Новость"]) && item.imageURL == "/v1/blobs/n6.jpg")
      #expect(try await store.news(NewsQuery(limit: 2)).items.last?.imageURL == nil)
      #expect(try await store.deleteNews("n6"))
      #expect(!(try await store.deleteNews("n6")))
      #expect(try await feed(.subtree(of: "u1")) == ["n4", "n3", "n2", "n1"])
    }
  }
}
