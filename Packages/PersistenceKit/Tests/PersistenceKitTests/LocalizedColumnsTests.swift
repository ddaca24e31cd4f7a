import Foundation
import GRDB
import PersistenceKit
import Testing

@Suite struct LocalizedColumnsTests {
  static func registry() -> LocalizationRegistry {
    var registry = LocalizationRegistry()
    registry.register(table: "place", fields: ["name", "description"])
    return registry
  }

  static func migrator(languages: [String]) throws -> Migrator {
    let registry = registry()
    var migrator = Migrator()
    migrator.append(
      .sql("001 create place", "CREATE TABLE place(id INTEGER PRIMARY KEY, name TEXT NOT NULL, description TEXT)")
    )
    for language in languages { migrator.append(try registry.addLanguageMigration(language)) }
    return migrator
  }

  @Test func resolvedExpressionShape() throws {
    #expect(
      try LocalizationRegistry.resolvedExpression(field: "name", languages: ["uk", "ru", "en"])
        == #"COALESCE(NULLIF("name_uk", ''), NULLIF("name_ru", ''), NULLIF("name_en", ''), "name") AS "name""#
    )
    #expect(
      try LocalizationRegistry.resolvedExpression(field: "name", languages: ["pt-BR"], table: "p", as: "title")
        == #"COALESCE(NULLIF("p"."name_pt_br", ''), "p"."name") AS "title""#
    )
    #expect(try LocalizationRegistry.resolvedExpression(field: "name", languages: []) == #""name" AS "name""#)
    #expect(throws: LocalizationError.invalidLanguageCode("x'; DROP TABLE place; --")) {
      try LocalizationRegistry.resolvedExpression(field: "name", languages: ["x'; DROP TABLE place; --"])
    }
    #expect(
      LocalizationRegistry.fallbackChain(for: "uk-UA", fallbacks: ["ru", "en"]) == ["uk_ua", "uk", "ru", "en"]
    )
    #expect(
      LocalizationRegistry.fallbackChain(for: "uk-UA", fallbacks: ["ru", "en"], available: ["en", "uk"]) == [
        "uk", "en",
      ])
  }

  @Test func readsPickTheBestTranslationInSQL() throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let database = try SQLiteDatabase.open(at: directory.path("places.sqlite"))
    try database.migrate(try Self.migrator(languages: ["en", "ru", "uk"]))
    try database.write { db in
      try db.execute(
        sql: """
          INSERT INTO place(id, name, name_en, name_ru, name_uk) VALUES
            (1, 'Kyiv', 'Kyiv', 'Киев', 'Київ'),
            (2, 'Odesa', 'Odesa', 'Одесса', ''),
            (3, 'Lviv', 'Lviv', NULL, NULL),
            (4, 'Base only', NULL, NULL, NULL)
          """
      )
    }
    let expression = try LocalizationRegistry.resolvedExpression(field: "name", languages: ["uk", "ru", "en"])
    let names = try database.read { db in
      try String.fetchAll(db, sql: "SELECT \(expression) FROM place ORDER BY id")
    }
    #expect(names == ["Київ", "Одесса", "Lviv", "Base only"])
    // The column keeps its name, so records decode it as `name`.
    let row = try database.read { db in try Row.fetchOne(db, sql: "SELECT id, \(expression) FROM place WHERE id = 2") }
    #expect(row?["name"] as String? == "Одесса")
    // Locale-aware variant restricted to the languages the database has.
    let registry = Self.registry()
    let german = try database.read { db in
      try registry.resolvedExpression(db, field: "name", locale: "de-AT", fallbacks: ["en"])
    }
    #expect(german == #"COALESCE(NULLIF("name_en", ''), "name") AS "name""#)
  }

  @Test func addingALanguageKeepsEveryValueAndTranslation() throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.path("add.sqlite")
    let database = try SQLiteDatabase.open(at: path)
    try database.migrate(try Self.migrator(languages: ["en", "ru"]))
    try database.write { db in
      try db.batchInsert(into: "place", columns: ["name", "name_en", "name_ru", "description", "description_ru"]) {
        rows in
        for index in 0..<500 {
          rows.bind("Place \(index)", at: 1)
          rows.bind("Place \(index)", at: 2)
          rows.bind(index % 2 == 0 ? "Место \(index)" : nil, at: 3)
          rows.bind("About \(index)", at: 4)
          rows.bind("О месте \(index)", at: 5)
          try rows.insert()
        }
      }
    }
    let before = try database.read { db in try Row.fetchAll(db, sql: "SELECT * FROM place ORDER BY id") }

    // The next release adds Ukrainian: one generated migration.
    let next = try Self.migrator(languages: ["en", "ru", "uk"])
    #expect(try database.migrationPlan(next).map(\.identifier) == ["localization: add language uk"])
    try database.migrate(next)

    try database.read { db in
      let columns = try db.columns(in: "place").map(\.name)
      #expect(columns.contains("name_uk") && columns.contains("description_uk"))
      let after = try Row.fetchAll(db, sql: "SELECT * FROM place ORDER BY id")
      #expect(after.count == before.count)
      for (old, new) in zip(before, after) {
        for column in old.columnNames { #expect(old[column] as DatabaseValue == new[column] as DatabaseValue) }
        #expect(new["name_uk"] as String? == nil)
      }
      #expect(try Self.registry().languages(db) == ["en", "ru", "uk"])
    }
    try database.write { db in try db.execute(sql: "UPDATE place SET name_uk = 'Місце ' || id WHERE id <= 50") }

    let completeness = try database.read { db in try Self.registry().completeness(db) }
    #expect(completeness.map(\.language) == ["en", "ru", "uk"])
    let byLanguage = Dictionary(uniqueKeysWithValues: completeness.map { ($0.language, $0) })
    #expect(byLanguage["en"]?.translated == 500)  // names only: descriptions have no English
    #expect(byLanguage["en"]?.total == 1000)
    #expect(byLanguage["ru"]?.translated == 750)
    #expect(byLanguage["uk"]?.translated == 50)
    #expect(byLanguage["uk"]?.fraction == 0.05)
    #expect(byLanguage["ru"]?.fields.first { $0.field == "name" }?.translated == 250)
    #expect(try database.integrityCheck().isOK)
  }

  @Test func localizingAFieldLaterCoversEveryLanguage() throws {
    let database = try SQLiteDatabase.inMemory()
    var registry = Self.registry()
    var migrator = try Self.migrator(languages: ["en", "uk"])
    registry.register(table: "place", fields: ["address"])
    migrator.append(registry.addFieldsMigration(table: "place", fields: ["address"]))
    migrator.append(try registry.addLanguageMigration("pl"))
    try database.migrate(migrator)
    let columns = try database.read { db in try db.columns(in: "place").map(\.name) }
    for column in ["address", "address_en", "address_uk", "address_pl", "name_pl", "description_pl"] {
      #expect(columns.contains(column), "\(column)")
    }
  }
}
