import Foundation
import PersistenceKitStrings

/// The counts of polls and rewards as people read them — "1 голос", "3 голоса", "5 голосов", "21 голос" — from a
/// String Catalog with CLDR plural variations in English, Russian and Ukrainian (PersistenceKitStrings chooses the
/// form). Adding a language is adding its forms here.
enum PollStrings {
  /// Key → language → plural category → format.
  static let forms: [String: [String: [String: String]]] = [
    "polls.votes": [
      "en": ["one": "%lld vote", "other": "%lld votes"],
      "ru": ["one": "%lld голос", "few": "%lld голоса", "many": "%lld голосов", "other": "%lld голоса"],
      "uk": ["one": "%lld голос", "few": "%lld голоси", "many": "%lld голосів", "other": "%lld голосу"],
    ],
    "polls.comments": [
      "en": ["one": "%lld comment", "other": "%lld comments"],
      "ru": [
        "one": "%lld комментарий", "few": "%lld комментария", "many": "%lld комментариев",
        "other": "%lld комментария",
      ],
      "uk": [
        "one": "%lld коментар", "few": "%lld коментарі", "many": "%lld коментарів", "other": "%lld коментаря",
      ],
    ],
    "points.count": [
      "en": ["one": "%lld point", "other": "%lld points"],
      "ru": ["one": "%lld балл", "few": "%lld балла", "many": "%lld баллов", "other": "%lld балла"],
      "uk": ["one": "%lld бал", "few": "%lld бали", "many": "%lld балів", "other": "%lld бала"],
    ],
    "coupons.count": [
      "en": ["one": "%lld coupon", "other": "%lld coupons"],
      "ru": ["one": "%lld купон", "few": "%lld купона", "many": "%lld купонов", "other": "%lld купона"],
      "uk": ["one": "%lld купон", "few": "%lld купони", "many": "%lld купонів", "other": "%lld купона"],
    ],
  ]

  /// The catalog of ``forms``.
  static let catalog: StringCatalog = {
    var strings: [String: StringCatalog.Entry] = [:]
    for (key, languages) in forms {
      var localizations: [String: StringCatalog.Localization] = [:]
      for (language, plural) in languages {
        localizations[language] = StringCatalog.Localization(
          variations: StringCatalog.Variations(
            plural: plural.mapValues { StringCatalog.Variant(stringUnit: StringCatalog.StringUnit(value: $0)) }))
      }
      strings[key] = StringCatalog.Entry(localizations: localizations)
    }
    return StringCatalog(sourceLanguage: "en", strings: strings)
  }()

  /// The language counts are printed in: `MERIDIAN_LANG`, else the language of `LANG` (`ru_RU.UTF-8` → `ru`), else
  /// English.
  static var language: String {
    let environment = ProcessInfo.processInfo.environment
    let raw = [environment["MERIDIAN_LANG"], environment["LANG"]].compactMap { $0 }.first { !$0.isEmpty } ?? "en"
    let code = raw.split(whereSeparator: { $0 == "_" || $0 == "." || $0 == "-" }).first.map(String.init) ?? "en"
    return code == "C" || code == "POSIX" ? "en" : code.lowercased()
  }

  /// What PersistenceKit's catalog validator finds wrong or missing in en, ru and uk (missing translations, plural
  /// categories a language's CLDR rules need, format specifiers that differ): empty when every count reads right.
  static func issues() -> [String] {
    catalog.validate(languages: ["en", "ru", "uk"]).map(\.description)
  }

  /// `count` with the noun of `key` in `language`: `count("polls.votes", 21, language: "ru")` → `21 голос`.
  static func count(_ key: String, _ count: Int, language: String = PollStrings.language) -> String {
    catalog.localized(key, count: count, locale: language)
  }
}
