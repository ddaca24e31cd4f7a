import Foundation

/// What operators do to the data as a whole: retention, and the languages of localized data and the string catalog.
/// Each engine answers these with its own queries; `meridian-admin` calls them without knowing the engine.
public protocol OperationsStore: Sendable {
  // MARK: Retention

  /// What ``applyRetention(olderThan:batchSize:progress:)`` would delete.
  func retentionPreview(olderThan cutoff: Int64) async throws -> RetentionReport
  /// Deletes every fix older than `cutoff` in batches of `batchSize` rows, one short transaction each, so the
  /// server's commits interleave with the batches; `progress` gets the running total.
  func applyRetention(olderThan cutoff: Int64, batchSize: Int, progress: @Sendable (Int) -> Void) async throws
    -> RetentionReport

  // MARK: Languages

  /// The languages localized data has columns for (`en` first).
  func dataLanguages() async throws -> [String]
  /// How much of the localized data each language has.
  func dataLanguageCompleteness() async throws -> [DataLanguageCompleteness]
  /// Adds a language to the localized data, keeping every translation; false when it was there already.
  /// - Throws: the engine's error for a code that isn't a language code.
  func addDataLanguage(_ code: String) async throws -> Bool
  /// Values that exist in some language but not in another.
  func missingTranslations() async throws -> [MissingTranslation]
  /// How many of `ids` are stored venues.
  func existingVenueCount(ids: [String]) async throws -> Int

  // MARK: String catalog

  /// Replaces the stored String Catalog with `document` and its `rows`, in one transaction.
  func replaceStringCatalog(
    _ rows: [StringCatalogRow], document: Data, sourceLanguage: String, fileName: String, now: Int64) async throws
  /// The stored String Catalog document, or nil before the first import.
  func storedStringCatalog() async throws -> StoredStringCatalogDocument?

  // MARK: Bulk loads

  /// Brings the query planner's statistics up to date with the tables `load` filled (`ANALYZE`), so that the next
  /// queries use the spatial and search indexes at the new size: run at the end of an import.
  func refreshPlannerStatistics(after load: BulkLoad) async throws
}

/// What a bulk import filled.
public enum BulkLoad: Sendable, Hashable {
  /// Places and venues (`places import`, `venues import`).
  case places
  /// The gazetteer (`geo import`).
  case gazetteer
  /// A history file's fixes of these UTC days (days since 1970-01-01), and their cells (``HistoryBatchWriter``).
  case history(days: Set<Int64>)
}

/// What `retention apply` deleted (or would delete).
public struct RetentionReport: Sendable, Hashable, Codable {
  /// Whether nothing was deleted.
  public var dryRun: Bool
  /// Fixes older than this (UTC ms) are deleted.
  public var cutoff: Int64
  /// Fixes deleted (or that would be).
  public var deleted: Int
  /// Write transactions used.
  public var batches: Int
  /// Users whose fixes were deleted.
  public var users: Int
  /// The oldest deleted fix, UTC ms.
  public var oldest: Int64?
  /// The newest deleted fix, UTC ms.
  public var newest: Int64?

  /// A report.
  public init(
    dryRun: Bool, cutoff: Int64, deleted: Int, batches: Int, users: Int, oldest: Int64?, newest: Int64?
  ) {
    self.dryRun = dryRun
    self.cutoff = cutoff
    self.deleted = deleted
    self.batches = batches
    self.users = users
    self.oldest = oldest
    self.newest = newest
  }
}

/// How much of the localized data one language has.
public struct DataLanguageCompleteness: Sendable, Hashable {
  /// One localized field of one table.
  public struct Field: Sendable, Hashable {
    /// The table.
    public var table: String
    /// The field.
    public var field: String
    /// Rows with a text in the language.
    public var translated: Int
    /// Rows with a text in any language.
    public var total: Int
    /// A field's figures.
    public init(table: String, field: String, translated: Int, total: Int) {
      self.table = table
      self.field = field
      self.translated = translated
      self.total = total
    }
  }

  /// The language code.
  public var language: String
  /// Its fields.
  public var fields: [Field]
  /// Values with a text in the language.
  public var translated: Int { fields.reduce(0) { $0 + $1.translated } }
  /// Values with a text in any language.
  public var total: Int { fields.reduce(0) { $0 + $1.total } }
  /// `translated / total` (1 when there is nothing to translate).
  public var fraction: Double { total == 0 ? 1 : Double(translated) / Double(total) }

  /// A language's figures.
  public init(language: String, fields: [Field]) {
    self.language = language
    self.fields = fields
  }
}

/// Values of one localized field that exist in some language but not in `language`.
public struct MissingTranslation: Sendable, Hashable, Codable {
  /// The language without a text.
  public var language: String
  /// The table.
  public var table: String
  /// The field.
  public var field: String
  /// How many rows lack the text.
  public var rows: Int
  /// Up to ten of their ids.
  public var examples: [String]
  /// A finding.
  public init(language: String, table: String, field: String, rows: Int, examples: [String]) {
    self.language = language
    self.table = table
    self.field = field
    self.rows = rows
    self.examples = examples
  }
}

/// One key and language of a String Catalog as stored: Xcode's JSON of that localization and, when it has no
/// variations, the plain text.
public struct StringCatalogRow: Sendable, Hashable {
  /// The key.
  public var key: String
  /// The language.
  public var language: String
  /// The text, when the localization has no plural or device variations.
  public var value: String?
  /// The localization as compact JSON with sorted keys.
  public var valueJSON: String
  /// A row.
  public init(key: String, language: String, value: String?, valueJSON: String) {
    self.key = key
    self.language = language
    self.value = value
    self.valueJSON = valueJSON
  }
}

/// The stored String Catalog document and when it was imported.
public struct StoredStringCatalogDocument: Sendable, Hashable {
  /// The `.xcstrings` JSON as imported.
  public var document: Data
  /// Its file name.
  public var fileName: String
  /// When it was imported, UTC ms.
  public var importedAt: Int64
  /// A document.
  public init(document: Data, fileName: String, importedAt: Int64) {
    self.document = document
    self.fileName = fileName
    self.importedAt = importedAt
  }
}
