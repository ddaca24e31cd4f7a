import DomainKit
import Foundation
import GRDB
import MeridianStore
import MeridianStoreSQLite
import PersistenceKit
import Testing

/// The SQLite migration to folded search text folds the places stored before it, and keeps the index in step.
@Suite struct PlaceSearchUpgradeTests {
  @Test func placesStoredBeforeTheUpgradeAreFoundByFoldedWords() async throws {
    let file = TemporaryDatabaseFile()
    defer { file.remove() }
    let database = try SQLiteDatabase.open(at: file.path)
    defer { try? database.close() }
    var before = Migrator()
    let upgrade = "2026-11-26 places search on folded text"
    before.append(contentsOf: SQLiteSchema.migrator.migrations.prefix { $0.identifier != upgrade })
    _ = try database.migrate(before)
    try await database.write { db in
      try db.execute(
        sql: """
          INSERT INTO places(id, kind, title, title_ru, short_title_ru, description_uk, keywords, title_key,
            created_at, updated_at)
          VALUES ('yolki', 'school', 'Ёлкинская школа', 'Ёлкинская школа', 'ЁШ', 'Школа біля Київа', '["01.02.03"]',
            'елкинская школа', 1, 1)
          """)
    }

    let store = try SQLiteStore(migrating: database)
    func search(_ text: String) async throws -> [String] {
      try await store.places(PlaceQuery(text: text)).items.map(\.record.place.id.rawValue)
    }
    #expect(try await search("елкинская") == ["yolki"])
    #expect(try await search("ЁЛКИН") == ["yolki"])
    #expect(try await search("еш") == ["yolki"])  // the short title, typed ahead
    #expect(try await search("киів") == ["yolki"])  // the description, "ї" as "і"
    #expect(try await search("01.02.03") == ["yolki"])  // a keyword
    // The triggers keep the new index: an edit replaces the words, a deletion removes them.
    try await store.upsertPlaces(
      [
        PlaceRecord(
          place: try Place(id: "yolki", kind: "school", name: LocalizedText(["ru": "Пихтовая школа"])))
      ], now: 2)
    #expect(try await search("елкин").isEmpty)
    #expect(try await search("пихтов") == ["yolki"])
    #expect(try await store.deletePlace("yolki"))
    #expect(try await search("пихтов").isEmpty)
  }
}
