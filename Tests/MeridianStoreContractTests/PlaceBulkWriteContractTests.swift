import DomainKit
import Foundation
import MeridianAPI
import MeridianStore
import MeridianStoreTesting
import Testing

/// A large import is the same as writing its places one at a time, in order, on every engine: parents stored or
/// given earlier (also thousands of rows before, past the 5,000-row statements PostgreSQL writes in), a place given twice stored once
/// with its last values at its first position (moved if its parent changed), and every text stored as given.
@Suite("Store contract: bulk place writes")
struct PlaceBulkWriteContractTests {
  func record(
    _ id: String, parent: String? = nil, kind: PlaceKind = .faculty, _ titles: [String: String],
    short: [String: String] = [:], description: [String: String] = [:], keywords: [String] = [],
    attributes: [String: PlaceAttribute] = [:]
  ) throws -> PlaceRecord {
    PlaceRecord(
      place: try Place(
        id: PlaceID(id), parentID: parent.map { PlaceID($0) }, kind: kind, name: LocalizedText(titles),
        description: LocalizedText(description), city: "Tomsk", keywords: keywords),
      shortTitle: LocalizedText(short), attributes: attributes)
  }

  func children(_ store: any MeridianStore, of parent: PlaceID) async throws -> [PlaceID] {
    try await store.places(PlaceQuery(scope: .children(of: parent), sort: .inserted, limit: 100)).items
      .map(\.record.place.id)
  }

  @Test(arguments: StoreEngine.all)
  func aLargeImportBuildsTheTreeAcrossItsWholeLength(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      // n0 the root; n(i) under n(i / 3): each level's parents a third of the way back, so parents lie thousands
      // of rows before their children as well as just before.
      let count = 10_500
      try await store.upsertPlaces(
        try (0..<count).map { index in
          try record("n\(index)", parent: index == 0 ? nil : "n\(index / 3)", ["en": "Place \(index)"])
        }, now: 10)
      for index in [1, 2, 1_666, 4_999, 5_000, 5_001, 9_999, 10_000, 10_499] {
        var chain: [PlaceID] = []
        var ancestor = index / 3
        while true {
          chain.insert(PlaceID("n\(ancestor)"), at: 0)
          if ancestor == 0 { break }
          ancestor /= 3
        }
        let details = try #require(try await store.place(PlaceID("n\(index)")), "n\(index)")
        #expect(details.ancestors.map(\.id) == chain, "ancestors of n\(index)")
      }
      #expect(try await children(store, of: "n1666") == ["n4998", "n4999", "n5000"])
      #expect(try await children(store, of: "n3499") == ["n10497", "n10498", "n10499"])
      // The subtree counts reach the root from the last row.
      _ = try #require(
        try await store.createAccount(
          id: "ann", credential: .email("ann@example.com"), passwordHash: nil, now: 1))
      _ = try await store.saveReview(
        try Review(id: "r1", placeID: "n10499", authorID: "ann", grade: 4, createdAt: 100), now: 100)
      for id in ["n0", "n1", "n4", "n14", "n43", "n129", "n388", "n1166", "n3499", "n10499"] {
        #expect(
          try #require(try await store.place(PlaceID(id))).listing.rating.subtree
            == RatingAggregate(sum: 4, count: 1), "subtree of \(id)")
      }
    }
  }

  @Test(arguments: StoreEngine.all)
  func aPlaceGivenTwiceInOneImportIsStoredOnceWithItsLastValues(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await store.upsertPlaces(
        [
          try record("r", kind: .university, ["en": "Root"]),
          try record("a", parent: "r", ["en": "First copy"], attributes: ["seats": .number(10)]),
          try record("b", parent: "r", ["en": "Between"]),
          try record("m", parent: "r", ["en": "Moved"]),
          try record("a", parent: "r", kind: .programme, ["en": "Second copy"], attributes: ["seats": .number(20)]),
          try record("m", parent: "a", ["en": "Moved"]),
          try record("c", parent: "m", ["en": "Child of the moved"]),
        ], now: 10)
      #expect(try await children(store, of: "r") == ["a", "b"])
      #expect(try await children(store, of: "a") == ["m"])
      let a = try #require(try await store.place("a")).listing
      #expect(a.record.place.name.values["en"] == "Second copy")
      #expect(a.record.place.kind == .programme)
      #expect(a.record.attributes["seats"] == .number(20))
      #expect(a.children == 1)
      #expect(try #require(try await store.place("c")).ancestors.map(\.id) == ["r", "a", "m"])
      #expect(try await store.places(PlaceQuery(limit: 100)).items.map(\.record.place.id) == ["r", "a", "b", "m", "c"])
      // A parent given only later in the same import is unknown, as it would be one place at a time.
      await #expect(throws: PlaceStoreError.unknownParent("x", parent: "y")) {
        try await store.upsertPlaces(
          [try record("x", parent: "y", ["en": "Early"]), try record("y", parent: "r", ["en": "Late"])], now: 20)
      }
      #expect(try await store.place("y") == nil)
    }
  }

  @Test(arguments: StoreEngine.all)
  func textsAreStoredAsGivenInEveryLanguage(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      _ = try await store.addDataLanguage("ru")
      let titles = [
        "O'Brien's \"Quoted\" Hall", #"Back\slash {a,b} (c) $1 %s"#, "NULL", "Ёлка — ёж ", "🇺🇦 Kyiv 日本語",
        String(repeating: "я", count: PlaceRecord.maximumTitleLength),
      ]
      let records = try titles.enumerated().map { index, title in
        try record(
          "t\(index)", ["en": title, "ru": "Русский " + title.prefix(100)],
          short: ["en": "S'\(index)", "ru": "К\"\(index)"],
          description: ["en": "Line one\nline 'two'\t{}", "ru": "Описание, \"\(index)\""],
          keywords: ["a'b", "{c}", "ёжик"], attributes: ["form": .text("Full-time 'day'"), "seats": .number(1.5)])
      }
      try await store.upsertPlaces(records, now: 10)
      for record in records {
        let stored = try #require(try await store.place(record.place.id)).listing.record
        #expect(stored.place.name == record.place.name)
        #expect(stored.shortTitle == record.shortTitle)
        #expect(stored.place.description == record.place.description)
        #expect(stored.place.keywords == record.place.keywords)
        #expect(stored.attributes == record.attributes)
      }
      // Search reads the same words: a folded title word, a keyword, a Russian title.
      for (query, expected) in [
        ("елка", ["t3"]), ("ежик", ["t0", "t1", "t2", "t3", "t4", "t5"]), ("русский brien", ["t0"]),
      ] {
        let found = try await store.places(PlaceQuery(text: query, limit: 100)).items.map(\.record.place.id.rawValue)
        #expect(found.sorted() == expected, "\(query)")
      }
    }
  }
}
