import Testing

@testable import MeridianAdmin

@Suite struct GazetteerNamePickerTests {
  /// The one-pass test of "at most one edit apart" agrees with the full edit distance: on every pair of strings of
  /// up to four letters over a two-letter alphabet, and on Cyrillic spellings whose letters are several code points.
  @Test func withinOneEditAgreesWithTheEditDistance() {
    var words = [""]
    var level = [""]
    for _ in 1...4 {
      level = level.flatMap { [$0 + "a", $0 + "b"] }
      words += level
    }
    words += ["Харків", "Харьков", "Харков", "Хaрків", "Томск", "Томськ", "Томьскъ", "Й", "И\u{306}", "ё", "е\u{308}"]
    for a in words {
      for b in words {
        #expect(
          GazetteerNamePicker.isWithinOneEdit(a, b) == (GazetteerNamePicker.editDistance(a, b) <= 1), "\(a) / \(b)")
      }
    }
  }
}
