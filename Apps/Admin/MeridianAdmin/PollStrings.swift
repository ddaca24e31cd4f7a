import Foundation
import PersistenceKitStrings

/// The counts of polls and rewards as people read them — "1 голос", "3 голоса", "5 голосов", "21 голос" — from the
/// String Catalog the CLI ships (`Resources/Localizable.xcstrings`, plural variations in English, Russian and
/// Ukrainian; PersistenceKitStrings chooses the form by CLDR's rules). Adding a language is adding its forms to that
/// file; `i18n check` validates it, and `i18n import-catalog` takes it as it is.
enum PollStrings {
  /// The languages every key must have.
  static let requiredLanguages = ["en", "ru", "uk"]

  /// The file's name in the CLI's resources.
  static let fileName = "Localizable.xcstrings"

  /// Where the shipped catalog is.
  static var url: URL? { Bundle.module.url(forResource: "Localizable", withExtension: "xcstrings") }

  /// The shipped catalog, and why it couldn't be read (then it is empty and every count reads as its key).
  static let loaded: (catalog: StringCatalog, problem: String?) = {
    let empty = StringCatalog(sourceLanguage: "en", strings: [:])
    guard let url else { return (empty, "the CLI's resources have no \(fileName)") }
    do {
      return (try StringCatalog(contentsOf: url), nil)
    } catch {
      return (empty, "\(fileName) can't be read: \(error)")
    }
  }()

  /// The shipped catalog.
  static var catalog: StringCatalog { loaded.catalog }

  /// The language counts are printed in: `MERIDIAN_LANG`, else the language of `LANG` (`ru_RU.UTF-8` → `ru`), else
  /// English.
  static var language: String {
    let environment = ProcessInfo.processInfo.environment
    let raw = [environment["MERIDIAN_LANG"], environment["LANG"]].compactMap { $0 }.first { !$0.isEmpty } ?? "en"
    let code = raw.split(whereSeparator: { $0 == "_" || $0 == "." || $0 == "-" }).first.map(String.init) ?? "en"
    return code == "C" || code == "POSIX" ? "en" : code.lowercased()
  }

  /// What PersistenceKit's catalog validator finds wrong or missing in the shipped catalog for en, ru, uk and any
  /// other language it has (missing translations, plural categories a language's CLDR rules need, format
  /// specifiers that differ), or that it can't be read: empty when every count reads right.
  static func issues() -> [String] {
    if let problem = loaded.problem { return [problem] }
    let languages = requiredLanguages + catalog.languages.filter { !requiredLanguages.contains($0) }
    return catalog.validate(languages: languages).map(\.description)
  }

  /// `count` with the noun of `key` in `language`: `count("polls.votes", 21, language: "ru")` → `21 голос`.
  static func count(_ key: String, _ count: Int, language: String = PollStrings.language) -> String {
    catalog.localized(key, count: count, locale: language)
  }
}
