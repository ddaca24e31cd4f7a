import PersistenceKitStrings
import Testing

@Suite struct FormatTests {
  static func catalog(_ value: String, substitutions: [String: StringCatalog.Substitution]? = nil) -> StringCatalog {
    StringCatalog(
      sourceLanguage: "en",
      strings: [
        "key": StringCatalog.Entry(localizations: [
          "en": StringCatalog.Localization(stringUnit: .init(value: value), substitutions: substitutions)
        ])
      ]
    )
  }

  @Test(arguments: [
    ("%lld items", [FormatArgument.int(3)], "3 items"),
    ("%d/%i/%ld", [.int(1), .int(-2), .int(3)], "1/-2/3"),
    ("%@ and %@", [.string("a"), .string("b")], "a and b"),
    ("%2$@ before %1$@", [.string("a"), .string("b")], "b before a"),
    ("%.2f km", [.double(3.14159)], "3.14 km"),
    ("%f", [.double(1.5)], "1.500000"),
    ("%5.1f|", [.double(2.25)], "  2.2|"),
    ("%03d", [.int(7)], "007"),
    ("%x %X %o", [.int(255), .int(255), .int(8)], "ff FF 10"),
    ("100%% sure", [], "100% sure"),
    ("%s", [.string("text")], "text"),
    ("%@", [.int(42)], "42"),
    ("%lld", [.string("not a number")], "not a number"),
    ("%q oops %", [], "%q oops %"),
    ("%1$@ %1$@", [.string("echo")], "echo echo"),
  ])
  func specifiers(template: String, arguments: [FormatArgument], expected: String) {
    #expect(Self.catalog(template).string("key", locale: "en", arguments: arguments) == expected)
  }

  @Test func deviceVariationsWithNestedPlurals() {
    let catalog = StringCatalog.single(
      key: "taps",
      language: "en",
      variations: StringCatalog.Variations(device: [
        "mac": .init(stringUnit: .init(value: "%lld clicks")),
        "other": .init(variations: .plural(["one": "%lld tap", "other": "%lld taps"])),
      ])
    )
    #expect(catalog.localized("taps", count: 1, locale: "en") == "1 tap")
    #expect(catalog.localized("taps", count: 4, locale: "en") == "4 taps")
  }

  @Test func substitutionWithoutArgNumTakesTheNextArgument() {
    let catalog = Self.catalog(
      "%@ walked %#@km@",
      substitutions: [
        "km": StringCatalog.Substitution(
          formatSpecifier: "lld",
          variations: .init(plural: [
            "one": .init(stringUnit: .init(value: "%arg kilometre")),
            "other": .init(stringUnit: .init(value: "%arg kilometres")),
          ])
        )
      ]
    )
    #expect(catalog.string("key", locale: "en", arguments: ["Ann", 1]) == "Ann walked 1 kilometre")
    #expect(catalog.string("key", locale: "en", arguments: ["Ann", 12]) == "Ann walked 12 kilometres")
    // An undefined substitution stays visible.
    #expect(Self.catalog("%#@nope@").string("key", locale: "en", arguments: [1]) == "%#@nope@")
  }
}
