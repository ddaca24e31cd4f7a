import DomainKit
import Foundation
import MeridianAPI
import MeridianStore
import MeridianStoreTesting
import Testing

/// Retention, data languages and the string catalog: what `meridian-admin` asks of every engine.
@Suite("Store contract: operations")
struct OperationsContractTests {
  @Test(arguments: StoreEngine.all)
  func retentionDeletesExactlyTheOldFixesInBatches(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      for id: UserID in ["anna", "bob"] {
        _ = try await store.createAccount(id: id, credential: .email("\(id)@example.com"), passwordHash: nil, now: 0)
        _ = try await store.claimDevice(DeviceID(id.rawValue + "-phone"), owner: id, now: 0)
      }
      let old = try makeFixes(count: 7, start: 1_600_000_000_000)
      let recent = try makeFixes(count: 5, start: 1_700_000_000_000)
      _ = try await store.insertFixes(
        [
          FixInsertBatch(userID: "anna", deviceID: "anna-phone", fixes: old + recent),
          FixInsertBatch(userID: "bob", deviceID: "bob-phone", fixes: Array(old.prefix(3))),
        ], now: 1)
      let preview = try await store.retentionPreview(olderThan: 1_650_000_000_000)
      #expect(
        preview
          == RetentionReport(
            dryRun: true, cutoff: 1_650_000_000_000, deleted: 10, batches: 0, users: 2, oldest: old[0].timestamp,
            newest: old[6].timestamp))
      let applied = try await store.applyRetention(olderThan: 1_650_000_000_000, batchSize: 4) { _ in }
      // PostgreSQL drops the month of the old fixes (September 2020) in one transaction; SQLite deletes ⌈10 / 4⌉ batches.
      let batches = engine.name.hasPrefix("postgres") ? 1 : 3
      #expect(applied.deleted == 10 && applied.batches == batches && applied.users == 2 && !applied.dryRun)
      #expect(try await store.retentionPreview(olderThan: 1_650_000_000_000).deleted == 0)
      #expect(try await store.history(owner: "anna", filter: HistoryFilter(), limit: 100, before: nil).count == 5)
    }
  }

  @Test(arguments: StoreEngine.all)
  func dataLanguagesAreAddedKeepingEveryTranslation(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      let before = try await store.dataLanguages()
      #expect(before.first == "en" && before.contains("uk") && before.contains("ru"))
      let place = try Place(
        id: "kyiv-cafe", kind: .venue, name: LocalizedText(["en": "Cafe", "uk": "Кав'ярня"]),
        location: try .init(latitude: 50.45, longitude: 30.52), venueType: "cafe")
      try await store.upsertVenues([try VenueRecord(place: place)])
      #expect(try await store.existingVenueCount(ids: ["kyiv-cafe", "nowhere"]) == 1)
      #expect(try await store.addDataLanguage("de"))
      #expect(try await !store.addDataLanguage("de"))
      #expect(try await store.dataLanguages().contains("de"))
      #expect(try await store.venue("kyiv-cafe", language: "uk")?.name == "Кав'ярня")
      let missing = try await store.missingTranslations()
      // A venue is a place: its names are the titles of `places`.
      #expect(
        missing.contains {
          $0.language == "de" && $0.table == "places" && $0.field == "title" && $0.examples == ["kyiv-cafe"]
        })
      #expect(!missing.contains { $0.language == "uk" && $0.field == "title" })
      let german = try #require(try await store.dataLanguageCompleteness().first { $0.language == "de" })
      #expect(german.translated < german.total)
    }
  }

  @Test(arguments: StoreEngine.all)
  func aStringCatalogIsReplacedWhole(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      #expect(try await store.storedStringCatalog() == nil)
      let first = Data(#"{"sourceLanguage":"en","strings":{},"version":"1.0"}"#.utf8)
      try await store.replaceStringCatalog(
        [StringCatalogRow(key: "hello", language: "en", value: "Hello", valueJSON: #"{"stringUnit":{}}"#)],
        document: first, sourceLanguage: "en", fileName: "a.xcstrings", now: 5)
      let second = Data(#"{"sourceLanguage":"uk","strings":{},"version":"1.0"}"#.utf8)
      try await store.replaceStringCatalog([], document: second, sourceLanguage: "uk", fileName: "b.xcstrings", now: 6)
      #expect(
        try await store.storedStringCatalog()
          == StoredStringCatalogDocument(document: second, fileName: "b.xcstrings", importedAt: 6))
    }
  }
}
