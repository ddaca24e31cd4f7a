import Foundation
import GRDB
import PersistenceKit
import PersistenceKitStrings
import Testing

/// The README's examples, end to end, so they keep compiling and stay true.
@Suite struct ReadmeExampleTests {
  struct Fix {
    var deviceID: Int
    var recordedAt: Double
    var latitude: Double
    var longitude: Double
    var geohash: String
  }

  @Test func databaseMigrationsAndLocalizedColumns() throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let database = try SQLiteDatabase.open(at: directory.path("main.sqlite"))

    var registry = LocalizationRegistry()
    registry.register(table: "place", fields: ["name", "description"])

    var migrator = Migrator()
    migrator.append(
      .sql(
        "2026-11-01 create place",
        """
        CREATE TABLE place(id INTEGER PRIMARY KEY, name TEXT NOT NULL, description TEXT);
        CREATE TABLE fix(
          id INTEGER PRIMARY KEY, device_id INTEGER, recorded_at REAL, latitude REAL, longitude REAL, geohash TEXT
        );
        """
      )
    )
    migrator.append(
      .code("2026-11-02 normalize names", revision: "1") { connection in
        try connection.execute(sql: "UPDATE place SET name = trim(name)")
      }
    )
    migrator.append(try registry.addLanguageMigration("en"))
    migrator.append(try registry.addLanguageMigration("ru"))
    migrator.append(try registry.addLanguageMigration("uk"))

    #expect(try database.migrationPlan(migrator).count == 5)
    let report = try database.migrate(migrator)
    #expect(report.applied.count == 5)
    #expect(try database.migrationStatus(migrator).isUpToDate)

    let fixes = (0..<100).map {
      Fix(deviceID: 1, recordedAt: Double($0), latitude: 50.45, longitude: 30.52, geohash: "u8vxn")
    }
    try database.write { db in
      try db.batchInsert(into: "fix", columns: ["device_id", "recorded_at", "latitude", "longitude", "geohash"]) {
        rows in
        for fix in fixes {
          rows.bind(fix.deviceID, at: 1)
          rows.bind(fix.recordedAt, at: 2)
          rows.bind(fix.latitude, at: 3)
          rows.bind(fix.longitude, at: 4)
          rows.bind(fix.geohash, at: 5)
          try rows.insert()
        }
      }
      try db.execute(sql: "INSERT INTO place(name, name_ru, name_uk) VALUES ('Kyiv', 'Киев', 'Київ')")
    }

    let name = try LocalizationRegistry.resolvedExpression(field: "name", languages: ["uk", "ru", "en"])
    #expect(try database.read { db in try String.fetchAll(db, sql: "SELECT \(name) FROM place") } == ["Київ"])
    let completeness = try database.read { db in try registry.completeness(db) }
    #expect(completeness.first { $0.language == "uk" }?.translated == 1)

    try database.backup(to: directory.path("backup.sqlite"))
    #expect(try database.integrityCheck().isOK)
    #expect(try database.foreignKeyCheck().isEmpty)
    #expect(try database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM fix") } == 100)
  }

  @Test func catalogExample() throws {
    let catalog = try StringCatalog(contentsOf: Fixtures.url("Localizable.xcstrings"), fallbackLanguages: ["ru"])
    #expect(catalog.localized("points", count: 21, locale: "ru") == "21 балл")
    #expect(catalog.localized("points", count: 2, locale: "ru") == "2 балла")
    #expect(catalog.localized("points", count: 5, locale: "ru") == "5 баллов")
    #expect(catalog.localized("points", count: 11, locale: "ru") == "11 баллов")
    #expect(PluralRules(locale: "fr").category(forDecimal: "1.5") == .one)
    #expect(PluralRules(locale: "ar").category(for: 11) == .many)
  }
}
