import PersistenceKitStrings
import Testing

/// Reference values are CLDR's own samples (`@integer` / `@decimal` in plurals.xml) plus full tables over 0…200
/// written from the grammar of each language, independently of the implementation's structure.
@Suite struct PluralRulesTests {
  /// Expands CLDR sample notation: `"0, 5~19, 100"` and decimals `"0.0~1.5"` (one step of the last digit).
  static func samples(_ text: String) -> [String] {
    var values: [String] = []
    for item in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where item != "…" {
      let bounds = item.split(separator: "~").map(String.init)
      guard bounds.count == 2 else {
        values.append(item)
        continue
      }
      let pieces = bounds[0].split(separator: ".")
      let digits = pieces.count == 2 ? pieces[1].count : 0
      var scale = 1
      for _ in 0..<digits { scale *= 10 }
      let low = Int(bounds[0].replacingOccurrences(of: ".", with: ""))!
      let high = Int(bounds[1].replacingOccurrences(of: ".", with: ""))!
      for value in low...high {
        if digits == 0 {
          values.append(String(value))
        } else {
          let fraction = String(value % scale)
          values.append("\(value / scale)." + String(repeating: "0", count: digits - fraction.count) + fraction)
        }
      }
    }
    return values
  }

  typealias Samples = [PluralCategory: String]

  static let englishLike: Samples = [
    .one: "1",
    .other: "0, 2~16, 100, 1000, 10000, 100000, 1000000, 0.0~1.5, 10.0, 100.0, 1000.0, 10000.0, 100000.0, 1000000.0",
  ]
  static let otherOnly: Samples = [
    .other: "0~15, 100, 1000, 10000, 100000, 1000000, 0.0~1.5, 10.0, 100.0, 1000.0, 10000.0, 100000.0, 1000000.0"
  ]

  static let cldrSamples: [(String, Samples)] = [
    ("nl", englishLike),
    ("sv", englishLike),
    ("ja", otherOnly),
    ("ko", otherOnly),
    ("zh", otherOnly),
    ("und", otherOnly),
    (
      "en",
      [
        .one: "1",
        .other:
          "0, 2~16, 100, 1000, 10000, 100000, 1000000, 0.0~1.5, 10.0, 100.0, 1000.0, 10000.0, 100000.0, 1000000.0",
      ]
    ),
    (
      "de",
      [
        .one: "1",
        .other:
          "0, 2~16, 100, 1000, 10000, 100000, 1000000, 0.0~1.5, 10.0, 100.0, 1000.0, 10000.0, 100000.0, 1000000.0",
      ]
    ),
    (
      "es",
      [
        .one: "1, 1.0, 1.00, 1.000, 1.0000",
        .many: "1000000, 1c6, 2c6, 3c6, 4c6, 5c6, 6c6, 1.0000001c6, 1.1c6, 2.0000001c6, 2.1c6, 3.0000001c6, 3.1c6",
        .other:
          "0, 2~16, 100, 1000, 10000, 100000, 1c3, 2c3, 3c3, 4c3, 5c3, 6c3, 0.0~0.9, 1.1~1.6, 10.0, 100.0, 1000.0, "
          + "10000.0, 100000.0, 1000000.0, 1.0001c3, 1.1c3, 2.0001c3, 2.1c3, 3.0001c3, 3.1c3",
      ]
    ),
    (
      "fr",
      [
        .one: "0, 1, 0.0~1.5",
        .many: "1000000, 1c6, 2c6, 3c6, 4c6, 5c6, 6c6, 1.0000001c6, 1.1c6, 2.0000001c6, 2.1c6, 3.0000001c6, 3.1c6",
        .other:
          "2~17, 100, 1000, 10000, 100000, 1c3, 2c3, 3c3, 4c3, 5c3, 6c3, 2.0~3.5, 10.0, 100.0, 1000.0, 10000.0, "
          + "100000.0, 1000000.0, 1.0001c3, 1.1c3, 2.0001c3, 2.1c3, 3.0001c3, 3.1c3",
      ]
    ),
    (
      "ru",
      [
        .one: "1, 21, 31, 41, 51, 61, 71, 81, 101, 1001",
        .few: "2~4, 22~24, 32~34, 42~44, 52~54, 62, 102, 1002",
        .many: "0, 5~19, 100, 1000, 10000, 100000, 1000000",
        .other: "0.0~1.5, 10.0, 100.0, 1000.0, 10000.0, 100000.0, 1000000.0",
      ]
    ),
    (
      "uk",
      [
        .one: "1, 21, 31, 41, 51, 61, 71, 81, 101, 1001",
        .few: "2~4, 22~24, 32~34, 42~44, 52~54, 62, 102, 1002",
        .many: "0, 5~19, 100, 1000, 10000, 100000, 1000000",
        .other: "0.0~1.5, 10.0, 100.0, 1000.0, 10000.0, 100000.0, 1000000.0",
      ]
    ),
    (
      "pl",
      [
        .one: "1",
        .few: "2~4, 22~24, 32~34, 42~44, 52~54, 62, 102, 1002",
        .many: "0, 5~19, 100, 1000, 10000, 100000, 1000000",
        .other: "0.0~1.5, 10.0, 100.0, 1000.0, 10000.0, 100000.0, 1000000.0",
      ]
    ),
    (
      "ar",
      [
        .zero: "0, 0.0, 0.00, 0.000, 0.0000",
        .one: "1, 1.0, 1.00, 1.000, 1.0000",
        .two: "2, 2.0, 2.00, 2.000, 2.0000",
        .few: "3~10, 103~110, 1003, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 103.0, 1003.0",
        .many: "11~26, 111, 1011, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 111.0, 1011.0",
        .other:
          "100~102, 200~202, 300~302, 400~402, 500~502, 600, 1000, 10000, 100000, 1000000, 0.1~0.9, 1.1~1.7, 10.1, "
          + "100.0, 1000.0, 10000.0, 100000.0, 1000000.0",
      ]
    ),
  ]

  @Test(arguments: cldrSamples.map(\.0))
  func cldrSamplesFromPluralsXML(language: String) {
    let rules = PluralRules(locale: language)
    let samples = Self.cldrSamples.first { $0.0 == language }!.1
    #expect(rules.categories == Set(samples.keys))
    for (category, text) in samples {
      for value in Self.samples(text) {
        #expect(rules.category(forDecimal: value) == category, "\(language) \(value)")
      }
    }
  }

  /// Each language's table over 0…200, spelled from the grammar: which endings take which form.
  static func expectedInteger(_ language: String, _ n: Int) -> PluralCategory {
    let last = n % 10
    let lastTwo = n % 100
    switch language {
    case "en", "de": return n == 1 ? .one : .other
    case "es": return n == 1 ? .one : .other
    case "fr": return n <= 1 ? .one : .other
    case "ru", "uk":
      if lastTwo >= 11 && lastTwo <= 14 { return .many }
      if last == 1 { return .one }
      if last >= 2 && last <= 4 { return .few }
      return .many
    case "pl":
      if n == 1 { return .one }
      if lastTwo >= 12 && lastTwo <= 14 { return .many }
      if last >= 2 && last <= 4 { return .few }
      return .many
    case "ar":
      switch n {
      case 0: return .zero
      case 1: return .one
      case 2: return .two
      default:
        if lastTwo >= 3 && lastTwo <= 10 { return .few }
        if lastTwo >= 11 { return .many }
        return .other
      }
    default: return .other
    }
  }

  @Test(arguments: ["en", "de", "es", "fr", "ru", "uk", "pl", "ar"])
  func integerTableFrom0Through200(language: String) {
    let rules = PluralRules(locale: language)
    for n in 0...200 {
      #expect(rules.category(for: n) == Self.expectedInteger(language, n), "\(language) \(n)")
      #expect(rules.category(forDecimal: String(n)) == Self.expectedInteger(language, n), "\(language) \(n)")
    }
  }

  @Test(arguments: ["en", "de", "es", "fr", "ru", "uk", "pl", "ar"])
  func decimalTableFrom0Through200(language: String) {
    let rules = PluralRules(locale: language)
    for tenths in 0...2000 {
      let text = "\(tenths / 10).\(tenths % 10)"
      let whole = tenths % 10 == 0
      let integer = tenths / 10
      let expected: PluralCategory
      switch language {
      case "en", "de", "ru", "uk", "pl": expected = .other  // a visible fraction digit is never one/few/many
      case "es": expected = tenths == 10 ? .one : .other  // n = 1 holds for 1.0
      case "fr": expected = integer <= 1 ? .one : .other  // i = 0,1 holds for 0.0…1.9
      case "ar": expected = whole ? Self.expectedInteger("ar", integer) : .other
      default: expected = .other
      }
      #expect(rules.category(forDecimal: text) == expected, "\(language) \(text)")
      // Two fraction digits behave the same.
      #expect(rules.category(forDecimal: text + "0") == expected, "\(language) \(text)0")
    }
  }

  /// Integer parts longer than 18 digits keep their remainders and are never taken for 0, 1 or 2.
  @Test func hugeNumbers() {
    let huge = "1" + String(repeating: "0", count: 18)  // 10^18: its last 18 digits are all zero
    #expect(PluralRules(locale: "fr").category(forDecimal: huge) == .many)
    #expect(PluralRules(locale: "es").category(forDecimal: huge) == .many)
    #expect(PluralRules(locale: "ar").category(forDecimal: huge) == .other)
    #expect(PluralRules(locale: "ru").category(forDecimal: huge) == .many)
    #expect(PluralRules(locale: "ru").category(forDecimal: huge + "001") == .one)
    #expect(PluralRules(locale: "pl").category(forDecimal: "1" + String(repeating: "0", count: 20) + "1") == .many)
    #expect(PluralRules(locale: "ar").category(forDecimal: "1" + String(repeating: "0", count: 20) + "2") == .other)
    #expect(PluralRules(locale: "ar").category(forDecimal: "1" + String(repeating: "0", count: 20) + "5") == .few)
    #expect(PluralRules(locale: "fr").category(for: 1e20) == .many)
    #expect(PluralRules(locale: "ru").category(for: 1e20) == .many)
    #expect(PluralRules(locale: "ru").category(forDecimal: "1e30") == .many)
    #expect(PluralRules(locale: "fr").category(forDecimal: "1c30") == .many)
    #expect(PluralRules(locale: "fr").category(forDecimal: "1.5c2") == .other)
  }

  @Test func operandsFollowUTS35() throws {
    let operands = try #require(PluralOperands(decimal: "1.230"))
    #expect(operands.i == 1 && operands.v == 3 && operands.w == 2 && operands.f == 230 && operands.t == 23)
    #expect(operands.n == 1.23)
    let compact = try #require(PluralOperands(decimal: "1.2c6"))
    #expect(compact.i == 1_200_000 && compact.v == 0 && compact.e == 6)
    #expect(PluralOperands(decimal: "-5")?.i == 5)
    #expect(PluralOperands(decimal: "abc") == nil)
    #expect(PluralOperands(decimal: "1.") == nil)
    #expect(PluralOperands(decimal: "") == nil)
    #expect(PluralOperands(1.5) == PluralOperands(decimal: "1.5"))
    #expect(PluralOperands(2.0) == PluralOperands(2))
    #expect(PluralOperands(1, fractionDigits: 1) == PluralOperands(decimal: "1.0"))
    #expect(PluralOperands(0.1) == PluralOperands(decimal: "0.1"))
    #expect(PluralOperands(1e20) == PluralOperands(decimal: "1" + String(repeating: "0", count: 20)))
    // A long fraction keeps its non-zero digits visible to the rules.
    let tiny = try #require(PluralOperands(decimal: "0." + String(repeating: "0", count: 19) + "1"))
    #expect(tiny.t != 0 && tiny.t % 10 == 1 && tiny.v == 20)
    #expect(PluralRules(locale: "ar").category(for: 1e-20) == .other)
    #expect(PluralRules(locale: "ar").category(forDecimal: "0." + String(repeating: "0", count: 25)) == .zero)
  }

  @Test func issueExamples() {
    let ru = PluralRules(locale: "ru-RU")
    #expect(ru.category(for: 21) == .one)
    #expect(ru.category(for: 2) == .few)
    #expect(ru.category(for: 5) == .many)
    #expect(ru.category(for: 11) == .many)
    #expect(ru.category(for: 1.5) == .other)
    #expect(ru.category(for: -21) == .one)
    #expect(PluralRules(locale: "fr_FR").category(for: 1.5) == .one)
    #expect(PluralRules(locale: "pl").category(for: 2.5) == .other)
    #expect(PluralRules(locale: "en").category(forDecimal: "1.0") == .other)
    #expect(PluralRules(locale: "ja").category(for: 1) == .other)
    #expect(PluralRules(locale: "xx").categories == [.other])
    #expect(!PluralRules(locale: "xx").isSupported)
  }
}
