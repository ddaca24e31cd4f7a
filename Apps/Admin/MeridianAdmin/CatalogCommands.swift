import ArgumentParser
import DomainKit
import Foundation
import MeridianStore
import PersistenceKit
import PersistenceKitStrings

/// The product's String Catalog (`.xcstrings`) in the server's database, as `i18n import-catalog` stores it.
///
/// `string_catalog_imports` holds the one imported document (source language, file name, import time) and
/// `string_catalog` one row per key and language: Xcode's JSON of that localization (`value_json`) and, when it has
/// no variations or substitutions, its plain text (`value`). So the server and operators query
/// `SELECT value FROM string_catalog WHERE key = ? AND language = ?`, and the validator reads the stored document back.
public enum StoredStringCatalog {
  /// Issues that refuse an import: plural variations without the categories the language needs, format specifiers
  /// that differ from the source language's, a `%#@name@` without its substitution. Missing translations only warn.
  public static func isError(_ issue: CatalogIssue) -> Bool {
    if case .missingTranslation = issue.kind { return false }
    return true
  }

  /// How much of a catalog one language has.
  public struct Completeness: Codable, Sendable, Hashable {
    /// The language.
    public var language: String
    /// Keys with a usable string in the language.
    public var translated: Int
    /// Keys to translate (not `shouldTranslate: false`, not stale).
    public var total: Int
    /// `translated / total` in percent, one decimal.
    public var percent: Double
  }

  /// Completeness per language of `catalog`, the source language first, from the validator's missing translations.
  public static func completeness(_ catalog: StringCatalog, issues: [CatalogIssue]) -> [Completeness] {
    let total = catalog.strings.values.filter { $0.shouldTranslate != false && $0.extractionState != "stale" }.count
    return catalog.languages.map { language in
      let missing = issues.filter { issue in
        guard issue.language == language, case .missingTranslation = issue.kind else { return false }
        return true
      }.count
      let translated = total - missing
      let percent = total == 0 ? 100 : (Double(translated) / Double(total) * 1000).rounded() / 10
      return Completeness(language: language, translated: translated, total: total, percent: percent)
    }
  }

  /// Every key and language of the document, each localization re-encoded as compact JSON with sorted keys.
  static func rows(of document: Data) throws -> [StringCatalogRow] {
    guard let root = try JSONSerialization.jsonObject(with: document) as? [String: Any] else {
      throw AdminError.failure("The catalog is not a JSON object.")
    }
    let strings = root["strings"] as? [String: Any] ?? [:]
    var rows: [StringCatalogRow] = []
    for (key, entry) in strings {
      let localizations = (entry as? [String: Any])?["localizations"] as? [String: Any] ?? [:]
      for (language, localization) in localizations {
        guard let object = localization as? [String: Any] else { continue }
        let json = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        var value: String?
        if object["variations"] == nil, object["substitutions"] == nil {
          value = (object["stringUnit"] as? [String: Any])?["value"] as? String
        }
        rows.append(
          StringCatalogRow(key: key, language: language, value: value, valueJSON: String(decoding: json, as: UTF8.self))
        )
      }
    }
    return rows.sorted { ($0.key, $0.language) < ($1.key, $1.language) }
  }

  /// The stored catalog, its file name and import time, or nil before the first import.
  static func load(_ store: some OperationsStore) async throws -> (
    catalog: StringCatalog, fileName: String, importedAt: Int64
  )? {
    guard let stored = try await store.storedStringCatalog() else { return nil }
    return (try StringCatalog(data: stored.document), stored.fileName, stored.importedAt)
  }
}

extension I18nCommand {
  /// What `i18n import-catalog --json` prints.
  struct ImportCatalogOutput: Codable {
    var file: String
    var imported: Bool
    var sourceLanguage: String
    var keys: Int
    var languages: [StoredStringCatalog.Completeness]
    var errors: [String]
    var warnings: [String]
  }

  struct ImportCatalog: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "import-catalog",
      abstract: "Import a String Catalog (.xcstrings) into the database, replacing the previous one.",
      discussion: """
        The catalog is validated first (PersistenceKit's validator): plural variations without the categories a \
        language needs, format specifiers that differ from the source language's and undefined substitutions are \
        errors, and a catalog with errors is refused (exit 1, nothing stored); missing translations are warnings.
        """)

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The .xcstrings file.")
    var file: String

    func run() async throws {
      guard FileManager.default.fileExists(atPath: file) else { throw AdminError.notFound("No file '\(file)'.") }
      try await options.withDatabase { database in
        let document = try Data(contentsOf: URL(fileURLWithPath: file))
        let catalog: StringCatalog
        do {
          catalog = try StringCatalog(data: document)
          _ = try StoredStringCatalog.rows(of: document)
        } catch {
          throw AdminError.failure("\(file) is not a String Catalog (.xcstrings JSON): \(error). Nothing was imported.")
        }
        let issues = catalog.validate()
        let errors = issues.filter(StoredStringCatalog.isError).map(\.description)
        let warnings = issues.filter { !StoredStringCatalog.isError($0) }.map(\.description)
        for warning in warnings { Console.error("warning: \(warning)") }
        let name = URL(fileURLWithPath: file).lastPathComponent
        let refusal = "Refused \(name): \(errors.count) error\(errors.count == 1 ? "" : "s"); nothing was imported."
        if errors.isEmpty {
          let now = Timestamp.milliseconds(Date())
          let source = catalog.sourceLanguage
          try await database.store.replaceStringCatalog(
            try StoredStringCatalog.rows(of: document), document: document, sourceLanguage: source, fileName: name,
            now: now)
        }
        let output = ImportCatalogOutput(
          file: name, imported: errors.isEmpty, sourceLanguage: catalog.sourceLanguage, keys: catalog.strings.count,
          languages: StoredStringCatalog.completeness(catalog, issues: issues), errors: errors, warnings: warnings)
        try options.emit(output) {
          var table = TextTable(["language", "translated", "of", "complete"])
          for language in output.languages {
            table.add([language.language, "\(language.translated)", "\(language.total)", "\(language.percent) %"])
          }
          guard errors.isEmpty else { return ([refusal] + errors).joined(separator: "\n") }
          return "Imported \(output.keys) keys in \(output.languages.count) languages from \(name) "
            + "(source \(output.sourceLanguage)); it replaces the previous catalog.\n" + table.text
        }
        if !errors.isEmpty {
          if options.json { Console.error(refusal) }
          throw ExitCode(ExitStatus.failure)
        }
      }
    }
  }

  /// The stored catalog's completeness and validator issues, or nil before the first import.
  static func storedCatalog(_ database: AdminDatabase) async throws -> (
    file: String, importedAt: Int64, languages: [StoredStringCatalog.Completeness], issues: [CatalogIssue]
  )? {
    guard let stored = try await StoredStringCatalog.load(database.store) else { return nil }
    let issues = stored.catalog.validate()
    return (
      stored.fileName, stored.importedAt, StoredStringCatalog.completeness(stored.catalog, issues: issues), issues
    )
  }
}
