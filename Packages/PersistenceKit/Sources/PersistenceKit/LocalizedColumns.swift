import Foundation
import GRDB

/// The registry of localized fields: a field `name` of table `place` is stored as the base column `name` plus one
/// column per language, `name_en`, `name_ru`, `name_uk`, …
///
/// Languages live in the database (table ``languagesTable``), so adding one is a data change made by one generated
/// migration, and reads resolve the best translation in SQL:
///
/// ```swift
/// var registry = LocalizationRegistry()
/// registry.register(table: "place", fields: ["name", "description"])
/// migrator.append(try registry.addLanguageMigration("uk"))
/// let name = try LocalizationRegistry.resolvedExpression(field: "name", languages: ["uk", "ru", "en"])
/// // COALESCE(NULLIF("name_uk", ''), NULLIF("name_ru", ''), NULLIF("name_en", ''), "name") AS "name"
/// ```
public struct LocalizationRegistry: Sendable {
  /// Localized fields by table, in registration order.
  public private(set) var fieldsByTable: [String: [String]] = [:]
  /// Tables in registration order.
  public private(set) var tables: [String] = []
  /// The table that lists the languages added to the database.
  public var languagesTable: String

  /// Creates an empty registry.
  public init(languagesTable: String = "persistencekit_languages") {
    self.languagesTable = languagesTable
  }

  /// Registers localized fields of `table` (whose base columns the table's own migration creates).
  public mutating func register(table: String, fields: [String]) {
    if fieldsByTable[table] == nil { tables.append(table) }
    for field in fields where !(fieldsByTable[table] ?? []).contains(field) {
      fieldsByTable[table, default: []].append(field)
    }
  }

  /// The column that stores `field` in `language`: `name` + `uk` → `name_uk`.
  ///
  /// - Throws: ``LocalizationError/invalidLanguageCode(_:)`` for anything but a BCP 47-like code (`uk`, `pt-BR`).
  public static func column(_ field: String, language: String) throws -> String {
    "\(field)_\(try normalizedLanguage(language))"
  }

  /// A language code as used in column names: lowercase, `-` turned into `_` (`pt-BR` → `pt_br`).
  public static func normalizedLanguage(_ code: String) throws -> String {
    let normalized = code.lowercased().replacingOccurrences(of: "-", with: "_")
    let parts = normalized.split(separator: "_", omittingEmptySubsequences: false)
    guard let first = parts.first, (2...3).contains(first.count), first.allSatisfy({ $0.isASCII && $0.isLetter }),
      parts.dropFirst().allSatisfy({
        (2...8).contains($0.count) && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }
      })
    else { throw LocalizationError.invalidLanguageCode(code) }
    return normalized
  }

  /// The SQL expression that resolves `field` to the first non-empty translation in `languages`, then to the base
  /// column, named `field` (or `alias`): `COALESCE(NULLIF("name_uk", ''), NULLIF("name_ru", ''), "name") AS "name"`.
  ///
  /// - Parameter table: A table name or alias to qualify the columns with, for joins.
  public static func resolvedExpression(
    field: String,
    languages: [String],
    table: String? = nil,
    as alias: String? = nil
  ) throws -> String {
    let qualifier = table.map { $0.quotedDatabaseIdentifier + "." } ?? ""
    var seen = Set<String>()
    var parts: [String] = []
    for language in languages {
      let column = try column(field, language: language)
      guard seen.insert(column).inserted else { continue }
      parts.append("NULLIF(\(qualifier)\(column.quotedDatabaseIdentifier), '')")
    }
    parts.append(qualifier + field.quotedDatabaseIdentifier)
    let name = (alias ?? field).quotedDatabaseIdentifier
    return parts.count == 1 ? "\(parts[0]) AS \(name)" : "COALESCE(\(parts.joined(separator: ", "))) AS \(name)"
  }

  /// The fallback chain for a locale: `"uk-UA"` with fallbacks `["ru", "en"]` → `["uk_ua", "uk", "ru", "en"]`,
  /// keeping only languages present in `available` when given.
  public static func fallbackChain(for locale: String, fallbacks: [String], available: [String]? = nil) -> [String] {
    var candidates: [String] = []
    var parts = locale.lowercased().replacingOccurrences(of: "-", with: "_").split(separator: "_").map(String.init)
    while !parts.isEmpty {
      candidates.append(parts.joined(separator: "_"))
      parts.removeLast()
    }
    candidates += fallbacks.compactMap { try? normalizedLanguage($0) }
    var chain: [String] = []
    for candidate in candidates where !chain.contains(candidate) {
      if let available, !available.contains(candidate) { continue }
      if (try? normalizedLanguage(candidate)) != nil { chain.append(candidate) }
    }
    return chain
  }

  /// The migration that adds `language`: a column for every registered field of every existing table, and a row in
  /// ``languagesTable``. Existing values and translations are kept. Fields registered later get the column from
  /// ``addFieldsMigration(table:fields:)``.
  public func addLanguageMigration(_ language: String) throws -> Migration {
    let code = try Self.normalizedLanguage(language)
    let registry = self
    return .code("localization: add language \(code)", revision: "1") { connection in
      guard let db = connection.sqlite else { throw LocalizationError.unsupportedDatabase }
      try registry.createLanguagesTable(db)
      for table in registry.tables where try db.tableExists(table) {
        let existing = Set(try db.columns(in: table).map { $0.name.lowercased() })
        for field in registry.fieldsByTable[table] ?? [] where existing.contains(field.lowercased()) {
          let column = "\(field)_\(code)"
          if existing.contains(column.lowercased()) { continue }
          try db.execute(
            sql: "ALTER TABLE \(table.quotedDatabaseIdentifier) ADD COLUMN \(column.quotedDatabaseIdentifier) TEXT"
          )
        }
      }
      try db.execute(
        sql: "INSERT OR IGNORE INTO \(registry.languagesTable.quotedDatabaseIdentifier) (code, added_at) VALUES (?, ?)",
        arguments: [code, Date().timeIntervalSince1970]
      )
    }
  }

  /// The migration that makes `fields` of `table` localized: adds the base column when missing and a column for
  /// every language already added.
  public func addFieldsMigration(table: String, fields: [String]) -> Migration {
    let languagesTable = self.languagesTable
    let registry = self
    return .code("localization: localize \(table).\(fields.joined(separator: ","))", revision: "1") { connection in
      guard let db = connection.sqlite else { throw LocalizationError.unsupportedDatabase }
      try registry.createLanguagesTable(db)
      let languages = try String.fetchAll(
        db,
        sql: "SELECT code FROM \(languagesTable.quotedDatabaseIdentifier) ORDER BY rowid"
      )
      var existing = Set(try db.columns(in: table).map { $0.name.lowercased() })
      for field in fields {
        for column in [field] + languages.map({ "\(field)_\($0)" }) where !existing.contains(column.lowercased()) {
          try db.execute(
            sql: "ALTER TABLE \(table.quotedDatabaseIdentifier) ADD COLUMN \(column.quotedDatabaseIdentifier) TEXT"
          )
          existing.insert(column.lowercased())
        }
      }
    }
  }

  /// The languages added to the database, in the order they were added.
  public func languages(_ db: Database) throws -> [String] {
    guard try db.tableExists(languagesTable) else { return [] }
    return try String.fetchAll(db, sql: "SELECT code FROM \(languagesTable.quotedDatabaseIdentifier) ORDER BY rowid")
  }

  /// Translation completeness per language: of all (row, localized field) cells, how many have a non-empty value.
  public func completeness(_ db: Database) throws -> [LanguageCompleteness] {
    let languages = try languages(db)
    var results: [LanguageCompleteness] = []
    for language in languages {
      var fieldResults: [LanguageCompleteness.Field] = []
      for table in tables where try db.tableExists(table) {
        let existing = Set(try db.columns(in: table).map { $0.name.lowercased() })
        for field in fieldsByTable[table] ?? [] {
          let column = "\(field)_\(language)"
          let total = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(table.quotedDatabaseIdentifier)") ?? 0
          var translated = 0
          if existing.contains(column.lowercased()) {
            translated =
              try Int.fetchOne(
                db,
                sql: """
                  SELECT COUNT(*) FROM \(table.quotedDatabaseIdentifier)
                  WHERE \(column.quotedDatabaseIdentifier) IS NOT NULL AND \(column.quotedDatabaseIdentifier) != ''
                  """
              ) ?? 0
          }
          fieldResults.append(.init(table: table, field: field, translated: translated, total: total))
        }
      }
      results.append(LanguageCompleteness(language: language, fields: fieldResults))
    }
    return results
  }

  /// ``resolvedExpression(field:languages:table:as:)`` for `locale`, with its fallback chain restricted to the
  /// languages added to the database.
  public func resolvedExpression(
    _ db: Database,
    field: String,
    locale: String,
    fallbacks: [String] = ["en"],
    table: String? = nil
  ) throws -> String {
    let chain = Self.fallbackChain(for: locale, fallbacks: fallbacks, available: try languages(db))
    return try Self.resolvedExpression(field: field, languages: chain, table: table)
  }

  private func createLanguagesTable(_ db: Database) throws {
    try db.execute(
      sql: """
        CREATE TABLE IF NOT EXISTS \(languagesTable.quotedDatabaseIdentifier) (
          code TEXT NOT NULL PRIMARY KEY,
          added_at REAL NOT NULL
        )
        """
    )
  }
}

/// How much of the localized content is translated into one language.
public struct LanguageCompleteness: Sendable, Equatable {
  /// One localized field's counts.
  public struct Field: Sendable, Equatable {
    /// The table.
    public var table: String
    /// The field.
    public var field: String
    /// Rows with a non-empty translation.
    public var translated: Int
    /// All rows.
    public var total: Int
  }

  /// The language code.
  public var language: String
  /// Counts per field.
  public var fields: [Field]

  /// Translated cells over all fields.
  public var translated: Int { fields.reduce(0) { $0 + $1.translated } }
  /// All cells over all fields.
  public var total: Int { fields.reduce(0) { $0 + $1.total } }
  /// `translated / total`, 1 when there is nothing to translate.
  public var fraction: Double { total == 0 ? 1 : Double(translated) / Double(total) }
}

/// Errors of localized columns.
public enum LocalizationError: Error, Equatable, CustomStringConvertible {
  /// The language code can't be used in a column name; use a code like `uk` or `pt-BR`.
  case invalidLanguageCode(String)
  /// The generated migrations ran on an engine other than SQLite.
  case unsupportedDatabase

  /// What went wrong and what to do.
  public var description: String {
    switch self {
    case .invalidLanguageCode(let code):
      return "'\(code)' is not a language code; use two or three letters with optional subtags, like 'uk' or 'pt-BR'."
    case .unsupportedDatabase:
      return "Localized-column migrations run on SQLite only in this version."
    }
  }
}
