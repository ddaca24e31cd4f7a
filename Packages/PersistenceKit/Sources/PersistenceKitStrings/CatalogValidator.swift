/// A problem found in a string catalog by ``StringCatalog/validate(languages:)``.
public struct CatalogIssue: Sendable, Equatable, CustomStringConvertible {
  /// What is wrong.
  public enum Kind: Sendable, Equatable {
    /// The key has no usable string in this language.
    case missingTranslation
    /// A plural variation (top level, or the substitution named) lacks categories the language needs.
    case missingPluralCategories(substitution: String?, missing: [PluralCategory])
    /// The translation's format specifiers differ from the source language's (argument positions and kinds).
    case formatSpecifiersDiffer(source: [String], translation: [String])
    /// The string refers to a `%#@name@` substitution that the localization doesn't define.
    case undefinedSubstitution(String)
  }

  /// The catalog key.
  public var key: String
  /// The language the problem is in.
  public var language: String
  /// What is wrong.
  public var kind: Kind

  /// Creates an issue.
  public init(key: String, language: String, kind: Kind) {
    self.key = key
    self.language = language
    self.kind = kind
  }

  /// A one-line explanation.
  public var description: String {
    switch kind {
    case .missingTranslation:
      return "\(language): '\(key)' is not translated"
    case .missingPluralCategories(let substitution, let missing):
      let place = substitution.map { " (substitution \($0))" } ?? ""
      return
        "\(language): '\(key)'\(place) lacks plural forms \(missing.map(\.rawValue).joined(separator: ", "))"
    case .formatSpecifiersDiffer(let source, let translation):
      return
        "\(language): '\(key)' has arguments [\(translation.joined(separator: ", "))] "
        + "but the source has [\(source.joined(separator: ", "))]"
    case .undefinedSubstitution(let name):
      return "\(language): '\(key)' uses %#@\(name)@ but defines no substitution '\(name)'"
    }
  }
}

extension StringCatalog {
  /// Checks every key in `languages` (every language of the catalog when `nil`): missing translations, plural
  /// variations without the categories the language's CLDR rules need, and format specifiers that differ from the
  /// source language's.
  ///
  /// Keys marked `shouldTranslate: false` and `stale` keys are skipped. Issues are sorted by key, then language.
  public func validate(languages: [String]? = nil) -> [CatalogIssue] {
    let targetLanguages = languages ?? self.languages
    var issues: [CatalogIssue] = []
    for key in strings.keys.sorted() {
      guard let entry = strings[key], entry.shouldTranslate != false, entry.extractionState != "stale" else {
        continue
      }
      let sourceSignature = entry.localizations[sourceLanguage].map(Self.signature(of:)) ?? Self.signature(of: key)
      for language in targetLanguages {
        guard let localization = entry.localizations[language] else {
          if language != sourceLanguage {
            issues.append(CatalogIssue(key: key, language: language, kind: .missingTranslation))
          }
          continue
        }
        if !localization.isUsable(isSource: language == sourceLanguage) {
          issues.append(CatalogIssue(key: key, language: language, kind: .missingTranslation))
          continue
        }
        issues += pluralIssues(key: key, language: language, localization: localization)
        for name in Self.referencedSubstitutions(localization) where localization.substitutions?[name] == nil {
          issues.append(CatalogIssue(key: key, language: language, kind: .undefinedSubstitution(name)))
        }
        let signature = Self.signature(of: localization)
        if language != sourceLanguage && signature != sourceSignature {
          issues.append(
            CatalogIssue(
              key: key,
              language: language,
              kind: .formatSpecifiersDiffer(source: sourceSignature, translation: signature)
            )
          )
        }
      }
    }
    return issues
  }

  private func pluralIssues(key: String, language: String, localization: Localization) -> [CatalogIssue] {
    let rules = PluralRules(locale: language)
    guard rules.isSupported else { return [] }
    var issues: [CatalogIssue] = []
    func check(_ variations: Variations?, substitution: String?) {
      guard let plural = variations?.plural else { return }
      let present = Set(plural.keys.compactMap(PluralCategory.init(rawValue:)))
      let missing = rules.categories.subtracting(present).sorted()
      if !missing.isEmpty {
        issues.append(
          CatalogIssue(
            key: key,
            language: language,
            kind: .missingPluralCategories(substitution: substitution, missing: missing)
          )
        )
      }
    }
    check(localization.variations, substitution: nil)
    for (name, substitution) in (localization.substitutions ?? [:]).sorted(by: { $0.key < $1.key }) {
      check(substitution.variations, substitution: name)
    }
    return issues
  }

  /// Every text of a localization: the unit and all variants.
  static func texts(of localization: Localization) -> [String] {
    var texts: [String] = []
    if let value = localization.stringUnit?.value { texts.append(value) }
    func collect(_ variations: Variations?) {
      for variant in Array((variations?.plural ?? [:]).values) + Array((variations?.device ?? [:]).values) {
        if let value = variant.stringUnit?.value { texts.append(value) }
        collect(variant.variations)
      }
    }
    collect(localization.variations)
    return texts
  }

  static func referencedSubstitutions(_ localization: Localization) -> Set<String> {
    var names = Set<String>()
    for text in texts(of: localization) {
      for case .specifier(let specifier, _) in StringFormatter.parse(text) {
        if let name = specifier.substitution { names.insert(name) }
      }
    }
    return names
  }

  /// The arguments a localization consumes, as sorted `"<position>:<kind>"` strings; substitutions count as the
  /// kind of their `%arg` at their `argNum`.
  static func signature(of localization: Localization) -> [String] {
    var arguments = Set<String>()
    for text in texts(of: localization) {
      arguments.formUnion(signature(ofTemplate: text, substitutions: localization.substitutions ?? [:]))
    }
    return arguments.sorted()
  }

  static func signature(of template: String) -> [String] {
    signature(ofTemplate: template, substitutions: [:]).sorted()
  }

  private static func signature(ofTemplate template: String, substitutions: [String: Substitution]) -> Set<String> {
    var arguments = Set<String>()
    var nextSequential = 1
    for case .specifier(let specifier, _) in StringFormatter.parse(template) {
      let position = specifier.position ?? nextSequential
      if specifier.position == nil { nextSequential += 1 }
      if let name = specifier.substitution {
        guard let substitution = substitutions[name] else { continue }
        let format = substitution.formatSpecifier ?? "lld"
        let kind =
          StringFormatter.parse("%" + format).compactMap { piece -> String? in
            if case .specifier(let inner, _) = piece { return inner.valueKind }
            return nil
          }.first ?? "object"
        arguments.insert("\(substitution.argNum ?? position):\(kind)")
        // Specifiers inside the variants other than %arg count too.
        for variant in (substitution.variations?.plural ?? [:]).values {
          guard let value = variant.stringUnit?.value else { continue }
          let withoutArg = value.replacingOccurrences(of: "%arg", with: "")
          arguments.formUnion(signature(ofTemplate: withoutArg, substitutions: [:]).filter { !$0.isEmpty })
        }
        continue
      }
      arguments.insert("\(position):\(specifier.valueKind)")
    }
    return arguments
  }
}
