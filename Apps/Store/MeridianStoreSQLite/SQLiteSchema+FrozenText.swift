import Foundation

/// The text rules of the released migrations, frozen as they were when each migration was released: a migration
/// never calls the application's rules (`PlaceSearch`, `PlaceRecord`), which may change later, because a released
/// migration must do tomorrow what it did the day it ran (GRDB's migration guide). Change the store's rules freely;
/// never change these.
enum FrozenMigrationText {
  /// Case and diacritics folded, runs of white space one space (`PlaceSearch.fold` of 2026-11-26).
  static func fold(_ text: String) -> String {
    text.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil)
      .split(whereSeparator: \.isWhitespace).joined(separator: " ")
  }

  /// Folded words (letters and digits) separated by one space (`PlaceSearch.normalized` of 2026-11-26).
  static func normalized(_ text: String) -> String {
    fold(text).split { !($0.isLetter || $0.isNumber) }.joined(separator: " ")
  }

  /// Texts as ``normalized(_:)`` lines, empty ones left out: a place's `title_key`, `search_title` and `search_text`
  /// of 2026-11-26 (`PlaceRecord.titleKey` and `searchText`), given its texts in that order.
  static func lines(_ texts: [String]) -> String {
    texts.map(normalized).filter { !$0.isEmpty }.joined(separator: "\n")
  }

  /// The values of a language → text map in the order of their languages.
  static func byLanguage(_ texts: [String: String]) -> [String] {
    texts.keys.sorted().compactMap { texts[$0] }
  }
}
