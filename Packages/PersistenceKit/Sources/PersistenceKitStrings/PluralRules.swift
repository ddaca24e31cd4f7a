import Foundation

/// A CLDR plural category.
public enum PluralCategory: String, Sendable, CaseIterable, Codable, Comparable {
  /// Arabic 0, for example.
  case zero
  /// The singular form, e.g. English 1, Russian 21.
  case one
  /// The dual form, e.g. Arabic 2.
  case two
  /// The paucal form, e.g. Russian 2–4, 22–24.
  case few
  /// Russian 5–20, French and Spanish round millions.
  case many
  /// Everything else; every language has it.
  case other

  private var order: Int {
    switch self {
    case .zero: return 0
    case .one: return 1
    case .two: return 2
    case .few: return 3
    case .many: return 4
    case .other: return 5
    }
  }

  /// CLDR's order: zero, one, two, few, many, other.
  public static func < (lhs: PluralCategory, rhs: PluralCategory) -> Bool {
    lhs.order < rhs.order
  }
}

/// The operands of a number as CLDR's plural rules see it (UTS #35, "Plural Operand Meanings").
///
/// Trailing zeros matter: `1` and `1.0` differ (`v` is 0 and 1), which is why decimals are best given as text.
public struct PluralOperands: Sendable, Equatable {
  /// The absolute value.
  public var n: Double
  /// The integer digits of `n` (beyond 18 digits, 10^18 plus the last 18: all any rule can tell apart).
  public var i: UInt64
  /// The number of visible fraction digits, with trailing zeros.
  public var v: Int
  /// The number of visible fraction digits, without trailing zeros.
  public var w: Int
  /// The visible fraction digits, with trailing zeros, as an integer (beyond 18 digits, as for `i`).
  public var f: UInt64
  /// The visible fraction digits, without trailing zeros, as an integer (beyond 18 digits, as for `i`).
  public var t: UInt64
  /// The compact decimal exponent (`c`/`e`), 0 unless the number was written like `1.2c6`.
  public var e: Int

  /// The operands of an integer.
  public init(_ value: Int) {
    let magnitude = value.magnitude
    self.n = Double(magnitude)
    self.i = UInt64(magnitude)
    self.v = 0
    self.w = 0
    self.f = 0
    self.t = 0
    self.e = 0
  }

  /// The operands of a floating-point value shown with `fractionDigits` digits after the point, or with the fewest
  /// digits that read back as it when `nil` (so `1.0` counts as the integer 1, `1.5` has one fraction digit and
  /// `1e20` is a 1 and twenty zeros).
  public init(_ value: Double, fractionDigits: Int? = nil) {
    let magnitude = value.magnitude
    let text: String
    if let fractionDigits {
      text = String(format: "%.\(max(0, min(fractionDigits, 15)))f", magnitude)
    } else if magnitude == magnitude.rounded(), magnitude < 1e18 {
      text = String(UInt64(magnitude))
    } else {
      // The shortest text that reads back as the value (`0.1`, `1e+20` written out), which is also what an integer
      // specifier prints for it, so the form and the digits shown always agree.
      text = StringFormatter.decimalText(of: magnitude)
    }
    self = PluralOperands(decimal: text) ?? PluralOperands(0)
  }

  /// The operands of a decimal number written as text: `"5"`, `"-1.50"`, `"1.2c6"` (compact exponent).
  ///
  /// Returns `nil` when the text is not such a number.
  public init?(decimal text: String) {
    var body = Substring(text.trimmingCharacters(in: .whitespaces))
    if body.first == "-" || body.first == "+" { body.removeFirst() }
    var exponent = 0
    if let marker = body.firstIndex(where: { $0 == "c" || $0 == "e" }) {
      guard let parsed = Int(body[body.index(after: marker)...]), (0...400).contains(parsed) else { return nil }
      exponent = parsed
      body = body[..<marker]
    }
    let parts = body.split(separator: ".", omittingEmptySubsequences: false)
    guard parts.count <= 2, let integerPart = parts.first, !integerPart.isEmpty else { return nil }
    var fraction = parts.count == 2 ? String(parts[1]) : ""
    var integer = String(integerPart)
    guard integer.allSatisfy(\.isASCII), integer.allSatisfy(\.isNumber), fraction.allSatisfy(\.isASCII),
      fraction.allSatisfy(\.isNumber), parts.count == 1 || !fraction.isEmpty
    else { return nil }
    // A compact exponent moves the point to the right.
    if exponent > 0 {
      let moved = fraction.prefix(exponent)
      integer += moved + String(repeating: "0", count: exponent - moved.count)
      fraction = String(fraction.dropFirst(exponent))
    }
    let trimmedFraction = String(fraction.reversed().drop(while: { $0 == "0" }).reversed())
    self.i = Self.operand(integer)
    self.v = fraction.count
    self.w = trimmedFraction.count
    self.f = Self.operand(fraction)
    self.t = Self.operand(trimmedFraction)
    self.e = exponent
    self.n = Double(integer + (fraction.isEmpty ? "" : "." + fraction)) ?? 0
  }

  /// The integer written by `digits`. Rules look at operands modulo powers of ten up to 10^6 and compare them with
  /// small numbers, so more than 18 significant digits are kept as 10^18 plus the last 18: the same remainders, and
  /// never mistaken for 0, 1 or 2.
  private static func operand(_ digits: String) -> UInt64 {
    let significant = digits.drop(while: { $0 == "0" })
    let last = UInt64(significant.suffix(18)) ?? 0
    return significant.count > 18 ? 1_000_000_000_000_000_000 + last : last
  }

  /// Whether the value has no non-zero fraction digit, i.e. `n` is a whole number.
  var isWhole: Bool { t == 0 }
}

/// CLDR cardinal plural rules for one language.
///
/// ```swift
/// PluralRules(locale: "ru").category(for: 21)   // .one   — "21 балл"
/// PluralRules(locale: "ru").category(for: 5)    // .many  — "5 баллов"
/// PluralRules(locale: "ru").category(forDecimal: "1.5") // .other
/// ```
///
/// Implemented for en, de, nl, sv, es, fr, ru, uk, pl, ar, and ja, ko, zh (which have only `other`). Any other
/// language gets `other` for every number, CLDR's root rule.
public struct PluralRules: Sendable, Hashable {
  enum Family: Sendable, Hashable {
    case oneIfIntegerOne  // en, de, nl, sv
    case spanish, french, eastSlavic, polish, arabic, otherOnly
  }

  /// The language the rules were chosen for, e.g. `"ru"`.
  public let language: String
  let family: Family

  /// The languages implemented here (others use the root rule: always `other`).
  public static let supportedLanguages: [String] = [
    "ar", "de", "en", "es", "fr", "ja", "ko", "nl", "pl", "ru", "sv", "uk", "zh",
  ]

  /// The rules for a locale identifier such as `"uk"`, `"ru-RU"`, `"pt_BR"` or `"zh-Hans"`.
  public init(locale identifier: String) {
    let language = Self.languageCode(of: identifier)
    self.language = language
    switch language {
    case "en", "de", "nl", "sv": family = .oneIfIntegerOne
    case "es": family = .spanish
    case "fr": family = .french
    case "ru", "uk": family = .eastSlavic
    case "pl": family = .polish
    case "ar": family = .arabic
    default: family = .otherOnly
    }
  }

  /// Whether this language has real rules here rather than the root fallback.
  public var isSupported: Bool { Self.supportedLanguages.contains(language) }

  /// The categories the language uses for integers and decimals together.
  public var categories: Set<PluralCategory> {
    switch family {
    case .oneIfIntegerOne: return [.one, .other]
    case .spanish, .french: return [.one, .many, .other]
    case .eastSlavic, .polish: return [.one, .few, .many, .other]
    case .arabic: return [.zero, .one, .two, .few, .many, .other]
    case .otherOnly: return [.other]
    }
  }

  /// The category of an integer.
  public func category(for value: Int) -> PluralCategory {
    category(for: PluralOperands(value))
  }

  /// The category of a floating-point value (see ``PluralOperands/init(_:fractionDigits:)``).
  public func category(for value: Double, fractionDigits: Int? = nil) -> PluralCategory {
    category(for: PluralOperands(value, fractionDigits: fractionDigits))
  }

  /// The category of a decimal written as text, keeping its visible fraction digits (`"1.0"` ≠ `"1"`).
  /// Text that is not a number gets `other`.
  public func category(forDecimal text: String) -> PluralCategory {
    PluralOperands(decimal: text).map(category(for:)) ?? .other
  }

  /// The category of a number given by its operands.
  public func category(for operands: PluralOperands) -> PluralCategory {
    let i = operands.i
    let v = operands.v
    let e = operands.e
    let millions = (e == 0 && i != 0 && i % 1_000_000 == 0 && v == 0) || !(0...5).contains(e)
    switch family {
    case .oneIfIntegerOne:
      return i == 1 && v == 0 ? .one : .other
    case .spanish:
      if operands.n == 1 { return .one }
      return millions ? .many : .other
    case .french:
      if i == 0 || i == 1 { return .one }
      return millions ? .many : .other
    case .eastSlavic:
      guard v == 0 else { return .other }
      let mod10 = i % 10
      let mod100 = i % 100
      if mod10 == 1 && mod100 != 11 { return .one }
      if (2...4).contains(mod10) && !(12...14).contains(mod100) { return .few }
      return .many
    case .polish:
      guard v == 0 else { return .other }
      let mod10 = i % 10
      let mod100 = i % 100
      if i == 1 { return .one }
      if (2...4).contains(mod10) && !(12...14).contains(mod100) { return .few }
      return .many
    case .arabic:
      // n-based conditions hold only for whole values: n % 100 = 3..10 excludes 3.5.
      guard operands.isWhole else { return .other }
      if i == 0 { return .zero }
      if i == 1 { return .one }
      if i == 2 { return .two }
      let mod100 = i % 100
      if (3...10).contains(mod100) { return .few }
      if (11...99).contains(mod100) { return .many }
      return .other
    case .otherOnly:
      return .other
    }
  }

  static func languageCode(of identifier: String) -> String {
    let code = identifier.split(whereSeparator: { $0 == "-" || $0 == "_" || $0 == "." || $0 == "@" }).first ?? ""
    return code.lowercased()
  }
}
