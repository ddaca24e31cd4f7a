import Foundation

/// A value for a format specifier in a catalog string.
public enum FormatArgument: Sendable, Equatable, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
  ExpressibleByStringLiteral
{
  /// An integer (`%d`, `%lld`, and plural selection).
  case int(Int)
  /// A floating-point value (`%f`, `%.1f`, …); for plural selection its shortest exact form is used.
  ///
  /// Under an integer specifier (`%lld`, `%d`, …) a whole value in `Int64`'s range prints as an integer; any other
  /// value prints as its decimal text instead of being truncated: `1.5` → `1.5`, `1e20` → `100000000000000000000`,
  /// so the digits shown match the plural form chosen (`"1.5 балла"`, not `"1 балла"`). `.decimal` text does the
  /// same and keeps its visible fraction digits (`"1.50"`).
  case double(Double)
  /// A decimal written as text, whose visible fraction digits choose the plural form (`"1.0"` ≠ `"1"`).
  case decimal(String)
  /// Text (`%@`, `%s`).
  case string(String)

  /// An integer argument.
  public init(integerLiteral value: Int) { self = .int(value) }
  /// A floating-point argument.
  public init(floatLiteral value: Double) { self = .double(value) }
  /// A text argument.
  public init(stringLiteral value: String) { self = .string(value) }

  var pluralOperands: PluralOperands? {
    switch self {
    case .int(let value): return PluralOperands(value)
    case .double(let value): return PluralOperands(value)
    case .decimal(let text): return PluralOperands(decimal: text)
    case .string(let text): return PluralOperands(decimal: text)
    }
  }

  var isNumeric: Bool {
    if case .string = self { return false }
    return true
  }
}

/// One `%…` specifier of a format string.
struct FormatSpecifier: Equatable {
  /// The 1-based explicit position (`%2$@`), if any.
  var position: Int?
  var flags = ""
  var width = ""
  var precision = ""
  var length = ""
  var conversion: Character = "@"
  /// For `%#@name@`, the substitution's name.
  var substitution: String?

  /// The kind of value the specifier expects, for comparing translations.
  var valueKind: String {
    if substitution != nil { return "substitution" }
    switch conversion {
    case "d", "i", "u", "o", "x", "X", "c": return "integer"
    case "f", "F", "e", "E", "g", "G", "a", "A": return "float"
    default: return "object"
    }
  }
}

/// A piece of a parsed format string.
enum FormatPiece: Equatable {
  case literal(String)
  case specifier(FormatSpecifier, source: String)
}

/// Parses and renders printf-style strings with Apple's extensions (`%@`, positional `%1$@`, `%#@name@`).
struct StringFormatter {
  let rules: PluralRules
  let substitutions: [String: StringCatalog.Substitution]

  static let conversions: Set<Character> = [
    "d", "i", "u", "o", "x", "X", "f", "F", "e", "E", "g", "G", "a", "A", "c", "s", "S", "@", "p",
  ]

  /// Formats a string outside any catalog (no substitutions, root plural rules).
  static func format(_ template: String, arguments: [FormatArgument]) -> String {
    StringFormatter(rules: PluralRules(locale: "und"), substitutions: [:]).format(
      template: template, arguments: arguments)
  }

  /// Parses `template` into literal text and specifiers; malformed `%` sequences stay literal.
  static func parse(_ template: String) -> [FormatPiece] {
    let characters = Array(template)
    var pieces: [FormatPiece] = []
    var literal = ""
    var index = 0
    while index < characters.count {
      let character = characters[index]
      guard character == "%" else {
        literal.append(character)
        index += 1
        continue
      }
      if index + 1 < characters.count, characters[index + 1] == "%" {
        literal.append("%")
        index += 2
        continue
      }
      if let (specifier, end) = parseSpecifier(characters, from: index) {
        if !literal.isEmpty { pieces.append(.literal(literal)) }
        literal = ""
        pieces.append(.specifier(specifier, source: String(characters[index..<end])))
        index = end
      } else {
        literal.append(character)
        index += 1
      }
    }
    if !literal.isEmpty { pieces.append(.literal(literal)) }
    return pieces
  }

  private static func parseSpecifier(_ characters: [Character], from start: Int) -> (FormatSpecifier, Int)? {
    var specifier = FormatSpecifier()
    var index = start + 1
    func peek(_ offset: Int = 0) -> Character? {
      index + offset < characters.count ? characters[index + offset] : nil
    }
    // Positional argument: digits followed by `$`.
    var digits = ""
    var probe = index
    while probe < characters.count, characters[probe].isASCII, characters[probe].isNumber {
      digits.append(characters[probe])
      probe += 1
    }
    if !digits.isEmpty, probe < characters.count, characters[probe] == "$", let position = Int(digits), position > 0 {
      specifier.position = position
      index = probe + 1
    }
    if peek() == "#", peek(1) == "@" {
      var name = ""
      var cursor = index + 2
      while cursor < characters.count, characters[cursor] != "@" {
        name.append(characters[cursor])
        cursor += 1
      }
      guard cursor < characters.count, !name.isEmpty else { return nil }
      specifier.substitution = name
      return (specifier, cursor + 1)
    }
    while let next = peek(), "-+ #0'".contains(next) {
      specifier.flags.append(next)
      index += 1
    }
    while let next = peek(), next.isASCII, next.isNumber {
      specifier.width.append(next)
      index += 1
    }
    if peek() == "." {
      specifier.precision = "."
      index += 1
      while let next = peek(), next.isASCII, next.isNumber {
        specifier.precision.append(next)
        index += 1
      }
    }
    while let next = peek(), "hlqLzjt".contains(next) {
      specifier.length.append(next)
      index += 1
    }
    guard let conversion = peek(), conversions.contains(conversion) else { return nil }
    specifier.conversion = conversion
    return (specifier, index + 1)
  }

  /// Renders a localization: picks the plural variant by the first numeric argument, then formats it.
  func format(_ localization: StringCatalog.Localization, arguments: [FormatArgument]) -> String {
    if let variations = localization.variations {
      let selector = arguments.first(where: \.isNumeric)
      if let text = select(variations, by: selector) {
        return format(template: text, arguments: arguments)
      }
    }
    return format(template: localization.stringUnit?.value ?? "", arguments: arguments)
  }

  /// The variant text of `variations` for the plural category of `argument` (`other` when there is none).
  func select(_ variations: StringCatalog.Variations, by argument: FormatArgument?) -> String? {
    if let plural = variations.plural {
      let category = argument?.pluralOperands.map(rules.category(for:)) ?? .other
      let variant = plural[category.rawValue] ?? plural[PluralCategory.other.rawValue] ?? plural.values.first
      if let variant { return text(of: variant, argument: argument) }
    }
    if let device = variations.device {
      let variant = device["other"] ?? device.sorted(by: { $0.key < $1.key }).first?.value
      if let variant { return text(of: variant, argument: argument) }
    }
    return nil
  }

  private func text(of variant: StringCatalog.Variant, argument: FormatArgument?) -> String? {
    if let nested = variant.variations, let text = select(nested, by: argument) { return text }
    return variant.stringUnit?.value
  }

  /// Formats `template`, expanding substitutions at most `depth` levels deep.
  func format(template: String, arguments: [FormatArgument], depth: Int = 0) -> String {
    var output = ""
    var nextSequential = 0
    for piece in Self.parse(template) {
      switch piece {
      case .literal(let text):
        output += text
      case .specifier(let specifier, let source):
        let index = specifier.position.map { $0 - 1 } ?? nextSequential
        if specifier.position == nil { nextSequential += 1 }
        if let name = specifier.substitution {
          guard depth < 4, let substitution = substitutions[name] else {
            output += source
            continue
          }
          let argumentIndex = substitution.argNum.map { $0 - 1 } ?? index
          let argument = arguments.indices.contains(argumentIndex) ? arguments[argumentIndex] : nil
          guard let variations = substitution.variations, let variant = select(variations, by: argument) else {
            output += source
            continue
          }
          let spec = "%\(argumentIndex + 1)$" + (substitution.formatSpecifier ?? "lld")
          let expanded = variant.replacingOccurrences(of: "%arg", with: spec)
          output += format(template: expanded, arguments: arguments, depth: depth + 1)
          continue
        }
        guard arguments.indices.contains(index) else {
          output += source
          continue
        }
        output += render(arguments[index], as: specifier)
      }
    }
    return output
  }

  private func render(_ argument: FormatArgument, as specifier: FormatSpecifier) -> String {
    let plain = specifier.flags.isEmpty && specifier.width.isEmpty && specifier.precision.isEmpty
    let prefix = "%" + specifier.flags + specifier.width + specifier.precision
    switch specifier.valueKind {
    case "integer":
      // Only a whole number in Int64's range goes through printf; anything else (1.5, 1e20, "1.50", ∞) prints as
      // its decimal text, so the digits shown always match the number the plural form was chosen for.
      let value: Int64
      switch argument {
      case .int(let int): value = Int64(int)
      case .double(let double):
        guard let exact = Int64(exactly: double) else { return pad(Self.decimalText(of: double), specifier) }
        value = exact
      case .decimal(let text), .string(let text):
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let exact = Int64(trimmed) {
          value = exact
        } else if let plain = Self.plainDecimal(trimmed) {
          return pad(plain, specifier)
        } else {
          return text
        }
      }
      if plain && "di".contains(specifier.conversion) { return String(value) }
      let conversion = specifier.conversion == "c" ? "d" : String(specifier.conversion)
      return String(format: prefix + "ll" + conversion, value)
    case "float":
      let value: Double
      switch argument {
      case .int(let int): value = Double(int)
      case .double(let double): value = double
      case .decimal(let text), .string(let text):
        guard let parsed = Double(text) else { return text }
        value = parsed
      }
      return String(format: prefix + String(specifier.conversion), value)
    default:
      switch argument {
      case .int(let int): return String(int)
      case .double(let double): return String(double)
      case .decimal(let text), .string(let text): return text
      }
    }
  }

  /// Pads `text` to the specifier's width (left-aligned with the `-` flag), for values printed as decimal text.
  private func pad(_ text: String, _ specifier: FormatSpecifier) -> String {
    guard let width = Int(specifier.width), text.count < width else { return text }
    let padding = String(repeating: " ", count: width - text.count)
    return specifier.flags.contains("-") ? text + padding : padding + text
  }

  /// The shortest decimal text that reads back as `value`, without an exponent: `1.5`, `100000000000000000000`
  /// for `1e20`; `inf`, `-inf` and `nan` as printf writes them.
  static func decimalText(of value: Double) -> String {
    if value.isNaN { return "nan" }
    if value.isInfinite { return value < 0 ? "-inf" : "inf" }
    return plainDecimal(value.description) ?? value.description
  }

  /// Rewrites a decimal number's text without an exponent, keeping its visible fraction digits: `"1e30"` → `1`
  /// followed by 30 zeros, `"-2.50"` → `"-2.50"`, `"1.2c6"` → `"1200000"`. Returns `nil` for anything else, or when
  /// the exponent is beyond ±400 (no finite `Double` needs more).
  static func plainDecimal(_ text: String) -> String? {
    var body = Substring(text)
    var sign = ""
    if let first = body.first, first == "-" || first == "+" {
      if first == "-" { sign = "-" }
      body.removeFirst()
    }
    var exponent = 0
    if let marker = body.firstIndex(where: { "eEcC".contains($0) }) {
      guard let parsed = Int(body[body.index(after: marker)...]), (-400...400).contains(parsed) else { return nil }
      exponent = parsed
      body = body[..<marker]
    }
    let parts = body.split(separator: ".", omittingEmptySubsequences: false)
    guard parts.count <= 2 else { return nil }
    var integer = String(parts[0])
    var fraction = parts.count == 2 ? String(parts[1]) : ""
    guard !(integer.isEmpty && fraction.isEmpty), (integer + fraction).allSatisfy({ $0.isASCII && $0.isNumber })
    else { return nil }
    if exponent > 0 {
      let moved = fraction.prefix(exponent)
      integer += moved + String(repeating: "0", count: exponent - moved.count)
      fraction = String(fraction.dropFirst(exponent))
    } else if exponent < 0 {
      let shift = -exponent
      let padded = String(repeating: "0", count: max(0, shift - integer.count)) + integer
      fraction = String(padded.suffix(shift)) + fraction
      integer = String(padded.dropLast(shift))
    }
    integer = String(integer.drop(while: { $0 == "0" }))
    if integer.isEmpty { integer = "0" }
    return sign + integer + (fraction.isEmpty ? "" : "." + fraction)
  }
}
