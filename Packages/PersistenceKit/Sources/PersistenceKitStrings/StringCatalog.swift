import Foundation

/// An Apple String Catalog (`.xcstrings`), decoded from the JSON Xcode writes.
///
/// ```swift
/// let catalog = try StringCatalog(contentsOf: url, fallbackLanguages: ["en"])
/// catalog.localized("points", count: 21, locale: "ru")   // "21 балл"
/// catalog.string("greeting", locale: "uk", arguments: ["Олена"])
/// ```
public struct StringCatalog: Sendable, Decodable {
  /// The language the keys and source strings are written in.
  public var sourceLanguage: String
  /// The file format version Xcode wrote (`"1.0"`).
  public var version: String?
  /// Every entry by key.
  public var strings: [String: Entry]
  /// Languages tried, in order, after the requested locale and before ``sourceLanguage``.
  public var fallbackLanguages: [String] = []

  enum CodingKeys: String, CodingKey {
    case sourceLanguage, version, strings
  }

  /// One key of the catalog.
  public struct Entry: Sendable, Decodable, Equatable {
    /// The translator's comment.
    public var comment: String?
    /// How Xcode found the key (`manual`, `extracted_with_value`, `stale`, …).
    public var extractionState: String?
    /// `false` for keys that must not be translated.
    public var shouldTranslate: Bool?
    /// The localizations by language code.
    public var localizations: [String: Localization]

    /// Creates an entry.
    public init(
      comment: String? = nil,
      extractionState: String? = nil,
      shouldTranslate: Bool? = nil,
      localizations: [String: Localization] = [:]
    ) {
      self.comment = comment
      self.extractionState = extractionState
      self.shouldTranslate = shouldTranslate
      self.localizations = localizations
    }

    /// Decodes an entry; a missing `localizations` object means the key itself is the source text.
    public init(from decoder: any Decoder) throws {
      let container = try decoder.container(keyedBy: CodingKeys.self)
      comment = try container.decodeIfPresent(String.self, forKey: .comment)
      extractionState = try container.decodeIfPresent(String.self, forKey: .extractionState)
      shouldTranslate = try container.decodeIfPresent(Bool.self, forKey: .shouldTranslate)
      localizations = try container.decodeIfPresent([String: Localization].self, forKey: .localizations) ?? [:]
    }

    enum CodingKeys: String, CodingKey {
      case comment, extractionState, shouldTranslate, localizations
    }
  }

  /// A string in one language: a plain unit, or variations, plus the substitutions it refers to.
  public struct Localization: Sendable, Decodable, Equatable {
    /// The plain string.
    public var stringUnit: StringUnit?
    /// Plural (or device) variations.
    public var variations: Variations?
    /// Substitutions referenced as `%#@name@`.
    public var substitutions: [String: Substitution]?

    /// Creates a localization.
    public init(
      stringUnit: StringUnit? = nil,
      variations: Variations? = nil,
      substitutions: [String: Substitution]? = nil
    ) {
      self.stringUnit = stringUnit
      self.variations = variations
      self.substitutions = substitutions
    }
  }

  /// A translated string and its review state.
  public struct StringUnit: Sendable, Decodable, Equatable {
    /// `translated`, `needs_review`, `new` or `stale`.
    public var state: String?
    /// The text, with format specifiers.
    public var value: String

    /// Creates a unit.
    public init(state: String? = "translated", value: String) {
      self.state = state
      self.value = value
    }
  }

  /// Variations of a string by plural category or by device.
  public struct Variations: Sendable, Decodable, Equatable {
    /// Variants keyed by CLDR category name (`zero`, `one`, `two`, `few`, `many`, `other`).
    public var plural: [String: Variant]?
    /// Variants keyed by device (`iphone`, `mac`, `other`, …).
    public var device: [String: Variant]?

    /// Creates variations.
    public init(plural: [String: Variant]? = nil, device: [String: Variant]? = nil) {
      self.plural = plural
      self.device = device
    }
  }

  /// One variant: a unit or, for device variations, nested plural variations.
  public struct Variant: Sendable, Decodable, Equatable {
    /// The variant's text.
    public var stringUnit: StringUnit?
    /// Nested variations.
    public var variations: Variations?

    /// Creates a variant.
    public init(stringUnit: StringUnit? = nil, variations: Variations? = nil) {
      self.stringUnit = stringUnit
      self.variations = variations
    }
  }

  /// A `%#@name@` substitution: the argument it takes and the plural variants it expands to (`%arg` inside a
  /// variant stands for the argument).
  public struct Substitution: Sendable, Decodable, Equatable {
    /// The 1-based argument the substitution's plural is chosen by.
    public var argNum: Int?
    /// The specifier without `%` used for `%arg`, e.g. `lld`.
    public var formatSpecifier: String?
    /// The variants.
    public var variations: Variations?

    /// Creates a substitution.
    public init(argNum: Int? = nil, formatSpecifier: String? = nil, variations: Variations? = nil) {
      self.argNum = argNum
      self.formatSpecifier = formatSpecifier
      self.variations = variations
    }
  }

  /// Creates a catalog in memory.
  public init(sourceLanguage: String, strings: [String: Entry], fallbackLanguages: [String] = []) {
    self.sourceLanguage = sourceLanguage
    self.version = "1.0"
    self.strings = strings
    self.fallbackLanguages = fallbackLanguages
  }

  /// Decodes a catalog from `.xcstrings` JSON.
  ///
  /// - Throws: ``StringCatalogError/invalidFormat(_:)`` when the data is not a string catalog.
  public init(data: Data, fallbackLanguages: [String] = []) throws {
    do {
      self = try JSONDecoder().decode(StringCatalog.self, from: data)
    } catch {
      throw StringCatalogError.invalidFormat(String(describing: error))
    }
    self.fallbackLanguages = fallbackLanguages
  }

  /// Reads and decodes a `.xcstrings` file.
  public init(contentsOf url: URL, fallbackLanguages: [String] = []) throws {
    try self.init(data: try Data(contentsOf: url), fallbackLanguages: fallbackLanguages)
  }

  /// Decodes a catalog (the `Decodable` entry point; prefer ``init(data:fallbackLanguages:)``).
  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    sourceLanguage = try container.decode(String.self, forKey: .sourceLanguage)
    version = try container.decodeIfPresent(String.self, forKey: .version)
    strings = try container.decodeIfPresent([String: Entry].self, forKey: .strings) ?? [:]
  }

  /// Every language that appears in the catalog, the source language first.
  public var languages: [String] {
    var others = Set<String>()
    for entry in strings.values { others.formUnion(entry.localizations.keys) }
    others.remove(sourceLanguage)
    return [sourceLanguage] + others.sorted()
  }

  /// The languages tried for `locale`, in order: the locale itself, its language, ``fallbackLanguages``, the source.
  public func languageChain(for locale: String) -> [String] {
    let normalized = locale.replacingOccurrences(of: "_", with: "-")
    var chain: [String] = []
    var candidates = [normalized]
    var parts = normalized.split(separator: "-").map(String.init)
    while parts.count > 1 {
      parts.removeLast()
      candidates.append(parts.joined(separator: "-"))
    }
    candidates += fallbackLanguages + [sourceLanguage]
    for candidate in candidates where !chain.contains(candidate) { chain.append(candidate) }
    return chain
  }

  /// The localized, formatted string for `key`, following the language chain.
  ///
  /// Returns the key itself when no language has it, so a missing translation is visible but never a crash.
  public func string(_ key: String, locale: String, arguments: [FormatArgument] = []) -> String {
    guard let entry = strings[key] else { return StringFormatter.format(key, arguments: arguments) }
    for language in languageChain(for: locale) {
      if let localization = entry.localizations[language], localization.isUsable(isSource: language == sourceLanguage) {
        return StringFormatter(
          rules: PluralRules(locale: language),
          substitutions: localization.substitutions ?? [:]
        ).format(localization, arguments: arguments)
      }
    }
    // A key without a source localization is its own source text.
    return StringFormatter(rules: PluralRules(locale: sourceLanguage), substitutions: [:])
      .format(template: key, arguments: arguments)
  }

  /// The string for `key` with one integer argument that also chooses the plural form:
  /// `localized("points", count: 21, locale: "ru")` → `"21 балл"`.
  public func localized(_ key: String, count: Int, locale: String) -> String {
    string(key, locale: locale, arguments: [.int(count)])
  }

  /// The string for `key` with one decimal argument (`"1.5"`) that also chooses the plural form.
  public func localized(_ key: String, decimal: String, locale: String) -> String {
    string(key, locale: locale, arguments: [.decimal(decimal)])
  }
}

/// Why a catalog could not be loaded.
public enum StringCatalogError: Error, Equatable, CustomStringConvertible {
  /// The data is not a valid `.xcstrings` document.
  case invalidFormat(String)

  /// What went wrong.
  public var description: String {
    switch self {
    case .invalidFormat(let detail): return "Not a valid .xcstrings string catalog: \(detail)"
    }
  }
}

extension StringCatalog.Localization {
  func isUsable(isSource: Bool) -> Bool {
    if variations != nil { return true }
    guard let unit = stringUnit else { return false }
    return isSource || unit.state != "new"
  }
}
