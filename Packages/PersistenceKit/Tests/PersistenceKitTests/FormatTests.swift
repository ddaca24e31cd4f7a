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

  /// Integer specifiers never trap and never truncate: a value that isn't a whole number in Int64's range prints as
  /// its decimal text (the same number the plural form is chosen for).
  static let integerSpecifierCases: [(String, [FormatArgument], String)] = [
    ("%lld", [.double(1e20)], "100000000000000000000"),
    ("%lld", [.double(-1e20)], "-100000000000000000000"),
    ("%d", [.double(9.3e18)], "9300000000000000000"),
    ("%lld", [.double(0x1p63)], "9223372036854776000"),  // just past Int64.max; its shortest form, written out
    ("%lld", [.decimal("1e30")], "1" + String(repeating: "0", count: 30)),
    ("%lld", [.decimal("-2.5e1")], "-25"),
    ("%lld", [.decimal("9223372036854775807")], "9223372036854775807"),
    ("%lld", [.decimal("9223372036854775808")], "9223372036854775808"),
    ("%lld", [.decimal("1.2c6")], "1200000"),
    ("%lld", [.double(1.5)], "1.5"),
    ("%lld", [.decimal("1.50")], "1.50"),
    ("%lld", [.string("2.0")], "2.0"),
    ("%lld", [.double(3.0)], "3"),
    ("%lld", [.double(-0.0)], "0"),
    ("%lld", [.double(1e-7)], "0.0000001"),
    ("%lld", [.double(.infinity)], "inf"),
    ("%lld", [.double(-.infinity)], "-inf"),
    ("%lld", [.double(.nan)], "nan"),
    ("%5lld|", [.double(1.5)], "  1.5|"),
    ("%-5lld|", [.double(1.5)], "1.5  |"),
    ("%x", [.double(1e20)], "100000000000000000000"),
    ("%03d", [.double(7)], "007"),
  ]

  @Test(arguments: integerSpecifierCases)
  func integerSpecifiersWithValuesOutsideInt(template: String, arguments: [FormatArgument], expected: String) {
    #expect(Self.catalog(template).string("key", locale: "en", arguments: arguments) == expected)
  }

  /// The plural form comes from the decimal operands and the digits printed are the same number.
  @Test func pluralWithNonIntegerUnderLLD() {
    let catalog = StringCatalog.single(
      key: "points",
      language: "ru",
      variations: .plural([
        "one": "%lld балл", "few": "%lld балла", "many": "%lld баллов", "other": "%lld балла",
      ])
    )
    #expect(catalog.string("points", locale: "ru", arguments: [.double(1.5)]) == "1.5 балла")
    #expect(catalog.string("points", locale: "ru", arguments: [.decimal("1.0")]) == "1.0 балла")
    #expect(catalog.string("points", locale: "ru", arguments: [.double(21)]) == "21 балл")
    #expect(catalog.string("points", locale: "ru", arguments: [.double(1e20)]) == "100000000000000000000 баллов")
    #expect(
      catalog.string("points", locale: "ru", arguments: [.decimal("1e30")])
        == "1" + String(repeating: "0", count: 30) + " баллов")
    #expect(
      catalog.string("points", locale: "ru", arguments: [.decimal("1000000000000000000001")])
        == "1000000000000000000001 балл")
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
