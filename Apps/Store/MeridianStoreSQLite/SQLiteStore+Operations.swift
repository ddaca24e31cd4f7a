import Foundation
import GRDB
import MeridianStore
import PersistenceKit

extension SQLiteStore {
  /// The ledger of the migrations `addDataLanguage(_:)` runs (apart from the schema's own, which a new release may
  /// extend).
  static let languageLedgerTable = "meridian_admin_migrations"

  // MARK: Retention

  /// SQLite keeps no statistics of `fixes` (nothing analyzes it), so its plans of fixes do not go stale with a
  /// history import: nothing to do for one.
  public func refreshPlannerStatistics(after load: BulkLoad) async throws {
    let tables =
      switch load {
      case .places: ["places", "venues", "place_closure"]
      case .gazetteer: ["geo_places", "geo_areas"]
      case .history: [String]()
      }
    guard !tables.isEmpty else { return }
    try await database.write { db in
      for table in tables { try db.execute(sql: "ANALYZE \(table)") }
    }
  }

  public func retentionPreview(olderThan cutoff: Int64) async throws -> RetentionReport {
    try await database.read { db in
      let row = try Row.fetchOne(
        db,
        sql: "SELECT COUNT(*) AS n, MIN(timestamp) AS oldest, MAX(timestamp) AS newest FROM fixes WHERE timestamp < ?",
        arguments: [cutoff])
      let users =
        try Int.fetchOne(db, sql: "SELECT COUNT(DISTINCT user_id) FROM fixes WHERE timestamp < ?", arguments: [cutoff])
        ?? 0
      return RetentionReport(
        dryRun: true, cutoff: cutoff, deleted: row?["n"] ?? 0, batches: 0, users: users, oldest: row?["oldest"],
        newest: row?["newest"])
    }
  }

  /// Each batch's rows are found in a read snapshot (readers never block the server's writers in WAL mode) by rowid
  /// after the previous batch, then deleted by rowid range in their own transaction, so the write lock is held for
  /// one batch at a time.
  public func applyRetention(olderThan cutoff: Int64, batchSize: Int, progress: @Sendable (Int) -> Void)
    async throws -> RetentionReport
  {
    var report = RetentionReport(
      dryRun: false, cutoff: cutoff, deleted: 0, batches: 0, users: 0, oldest: nil, newest: nil)
    var users = Set<String>()
    var after: Int64 = 0
    let limit = max(1, batchSize)
    while true {
      let start = after
      let rows = try await database.read { db in
        try Row.fetchAll(
          db, sql: "SELECT id, timestamp, user_id FROM fixes WHERE id > ? AND timestamp < ? ORDER BY id LIMIT ?",
          arguments: [start, cutoff, limit]
        ).map { row in (id: row["id"] as Int64, timestamp: row["timestamp"] as Int64, user: row["user_id"] as String) }
      }
      guard let first = rows.first, let last = rows.last else { break }
      let deleted = try await database.write { db in
        try db.execute(
          sql: "DELETE FROM fixes WHERE id BETWEEN ? AND ? AND timestamp < ?", arguments: [first.id, last.id, cutoff])
        return db.changesCount
      }
      report.deleted += deleted
      report.batches += 1
      for row in rows {
        users.insert(row.user)
        report.oldest = min(report.oldest ?? row.timestamp, row.timestamp)
        report.newest = max(report.newest ?? row.timestamp, row.timestamp)
      }
      progress(report.deleted)
      after = last.id
      await Task.yield()
    }
    report.users = users.count
    return report
  }

  // MARK: Languages

  public func dataLanguages() async throws -> [String] {
    try await database.read { db in try SQLiteSchema.localization.languages(db) }
  }

  public func dataLanguageCompleteness() async throws -> [DataLanguageCompleteness] {
    try await database.read { db in
      try SQLiteSchema.localization.completeness(db).map { entry in
        DataLanguageCompleteness(
          language: entry.language,
          fields: entry.fields.map {
            .init(table: $0.table, field: $0.field, translated: $0.translated, total: $0.total)
          })
      }
    }
  }

  public func addDataLanguage(_ code: String) async throws -> Bool {
    let migration = try SQLiteSchema.localization.addLanguageMigration(code)
    let language = try LocalizationRegistry.normalizedLanguage(code)
    guard try await !dataLanguages().contains(language) else { return false }
    try database.migrate(Migrator([migration], ledgerTable: Self.languageLedgerTable))
    return true
  }

  public func missingTranslations() async throws -> [MissingTranslation] {
    try await database.read { db -> [MissingTranslation] in
      let registry = SQLiteSchema.localization
      var missing: [MissingTranslation] = []
      for language in try registry.languages(db) {
        for table in registry.tables where try db.tableExists(table) {
          let columns = Set(try db.columns(in: table).map { $0.name.lowercased() })
          for field in registry.fieldsByTable[table] ?? [] {
            let column = "\(field)_\(language)"
            guard columns.contains(column.lowercased()) else { continue }
            // The base column holds English, else any translation: non-empty means the value exists.
            let condition = """
              COALESCE(\(field.quotedDatabaseIdentifier), '') <> '' AND COALESCE(\(column.quotedDatabaseIdentifier), '') = ''
              """
            let rows =
              try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(table.quotedDatabaseIdentifier) WHERE \(condition)")
              ?? 0
            guard rows > 0 else { continue }
            let examples =
              columns.contains("id")
              ? try String.fetchAll(
                db, sql: "SELECT id FROM \(table.quotedDatabaseIdentifier) WHERE \(condition) ORDER BY id LIMIT 10")
              : []
            missing.append(
              MissingTranslation(language: language, table: table, field: field, rows: rows, examples: examples))
          }
        }
      }
      return missing
    }
  }

  public func existingVenueCount(ids: [String]) async throws -> Int {
    try await database.read { db in
      try ids.reduce(0) { count, id in
        count + (try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM venues WHERE id = ?", arguments: [id]) ?? 0)
      }
    }
  }

  // MARK: String catalog

  public func replaceStringCatalog(
    _ rows: [StringCatalogRow], document: Data, sourceLanguage: String, fileName: String, now: Int64
  ) async throws {
    try await database.write { db in
      try db.execute(sql: "DELETE FROM string_catalog")
      try db.execute(sql: "DELETE FROM string_catalog_imports")
      try db.execute(
        sql: """
          INSERT INTO string_catalog_imports(id, source_language, file_name, document, imported_at)
          VALUES (1, ?, ?, ?, ?)
          """,
        arguments: [sourceLanguage, fileName, String(decoding: document, as: UTF8.self), now])
      let insert = try db.makeStatement(
        sql: "INSERT INTO string_catalog(key, language, value, value_json) VALUES (?, ?, ?, ?)")
      for row in rows {
        try insert.execute(arguments: [row.key, row.language, row.value, row.valueJSON])
      }
    }
  }

  public func storedStringCatalog() async throws -> StoredStringCatalogDocument? {
    try await database.read { db in
      try Row.fetchOne(db, sql: "SELECT file_name, document, imported_at FROM string_catalog_imports WHERE id = 1")
        .map { row in
          StoredStringCatalogDocument(
            document: Data((row["document"] as String).utf8), fileName: row["file_name"],
            importedAt: row["imported_at"])
        }
    }
  }
}
