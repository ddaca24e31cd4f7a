import Foundation
import PersistenceKitStrings
import Testing

@Suite struct StringCatalogTests {
  static func catalog(_ fallbacks: [String] = []) throws -> StringCatalog {
    try StringCatalog(contentsOf: Fixtures.url("Localizable.xcstrings"), fallbackLanguages: fallbacks)
  }

  @Test func russianPointsFromTheIssue() throws {
    let catalog = try Self.catalog()
    #expect(catalog.localized("points", count: 21, locale: "ru") == "21 балл")
    #expect(catalog.localized("points", count: 2, locale: "ru") == "2 балла")
    #expect(catalog.localized("points", count: 5, locale: "ru") == "5 баллов")
    #expect(catalog.localized("points", count: 11, locale: "ru") == "11 баллов")
    #expect(catalog.localized("points", count: 1, locale: "ru") == "1 балл")
    #expect(catalog.localized("points", count: 111, locale: "ru-RU") == "111 баллов")
    // 1.5 takes the `other` form, and `%lld` prints the decimal rather than truncating it to a misleading 1.
    #expect(catalog.localized("points", decimal: "1.5", locale: "ru") == "1.5 балла")
  }

  @Test func pluralsInEveryCatalogLanguage() throws {
    let catalog = try Self.catalog()
    #expect(catalog.localized("points", count: 1, locale: "en") == "1 point")
    #expect(catalog.localized("points", count: 0, locale: "en") == "0 points")
    #expect(catalog.localized("points", count: 22, locale: "uk") == "22 бали")
    #expect(catalog.localized("points", count: 25, locale: "uk") == "25 балів")
    #expect(catalog.localized("points", count: 22, locale: "pl") == "22 punkty")
    #expect(catalog.localized("points", count: 12, locale: "pl") == "12 punktów")
    #expect(catalog.localized("points", count: 0, locale: "ar") == "لا نقاط")
    #expect(catalog.localized("points", count: 2, locale: "ar") == "نقطتان")
    #expect(catalog.localized("points", count: 7, locale: "ar") == "7 نقاط")
    #expect(catalog.localized("points", count: 0, locale: "fr") == "0 point")
    #expect(catalog.localized("points", count: 1_000_000, locale: "fr") == "1000000 de points")
  }

  @Test func decimalsChooseTheirOwnForm() throws {
    let catalog = try Self.catalog()
    #expect(catalog.localized("distance_km", decimal: "1", locale: "en") == "1 kilometre")
    #expect(catalog.localized("distance_km", decimal: "1.0", locale: "en") == "1.0 kilometres")
    #expect(catalog.localized("distance_km", decimal: "1.5", locale: "ru") == "1.5 километра")
    #expect(catalog.localized("distance_km", decimal: "5", locale: "ru") == "5 километров")
    #expect(catalog.localized("distance_km", decimal: "1.5", locale: "fr") == "1.5 kilomètre")
    #expect(catalog.string("distance_km", locale: "fr", arguments: [.double(2.5)]) == "2.5 kilomètres")
  }

  @Test func substitutionsWithSeveralPlurals() throws {
    let catalog = try Self.catalog()
    let key = "%@ has %lld points and %lld friends"
    #expect(catalog.string(key, locale: "en", arguments: ["Ann", 1, 3]) == "Ann has 1 point and 3 friends")
    #expect(catalog.string(key, locale: "en", arguments: ["Ann", 2, 1]) == "Ann has 2 points and 1 friend")
    #expect(catalog.string(key, locale: "ru", arguments: ["Ани", 21, 5]) == "У Ани 21 балл и 5 друзей")
    #expect(catalog.string(key, locale: "ru", arguments: ["Ани", 3, 22]) == "У Ани 3 балла и 22 друга")
    // The Ukrainian text puts the arguments in another order.
    #expect(catalog.string(key, locale: "uk", arguments: ["Ані", 11, 2]) == "2 друзі у Ані, 11 балів")
  }

  @Test func formatSpecifiersAndPositions() throws {
    let catalog = try Self.catalog()
    #expect(catalog.string("greeting", locale: "uk", arguments: ["Олено"]) == "Привіт, Олено!")
    #expect(catalog.string("swap", locale: "en", arguments: ["Ann", 3]) == "Ann sent 3 coupons")
    #expect(catalog.string("swap", locale: "ru", arguments: ["Аня", 3]) == "3 купонов отправил Аня")
    #expect(catalog.string("progress", locale: "ru", arguments: [.double(42.25)]) == "Готово на 42.2%")
    // A missing argument leaves the specifier visible instead of crashing.
    #expect(catalog.string("greeting", locale: "en") == "Hello, %@!")
  }

  @Test func fallbackChain() throws {
    let catalog = try Self.catalog(["ru"])
    #expect(catalog.languageChain(for: "uk-UA") == ["uk-UA", "uk", "ru", "en"])
    // "swap" has no Ukrainian: falls back to Russian, then English.
    #expect(catalog.string("swap", locale: "uk", arguments: ["Аня", 3]) == "3 купонов отправил Аня")
    #expect(try Self.catalog().string("swap", locale: "uk", arguments: ["Ann", 3]) == "Ann sent 3 coupons")
    // A "new" (untranslated) Ukrainian unit is skipped.
    #expect(catalog.string("progress", locale: "uk", arguments: [.double(10)]) == "Готово на 10.0%")
    // A key with no localization is its own source text; an unknown key comes back as is.
    #expect(catalog.string("Only in English", locale: "ru") == "Only in English")
    #expect(catalog.string("no such key", locale: "ru") == "no such key")
    // Plural rules follow the language actually used: Russian text for a Ukrainian request.
    let pluralOnlyRussian = StringCatalog.single(
      key: "files",
      language: "ru",
      variations: .plural(["one": "%lld файл", "few": "%lld файла", "many": "%lld файлов", "other": "%lld файла"])
    )
    #expect(pluralOnlyRussian.localized("files", count: 3, locale: "uk") == "3 файла")
  }

  @Test func catalogShapeAndErrors() throws {
    let catalog = try Self.catalog()
    #expect(catalog.sourceLanguage == "en")
    #expect(catalog.version == "1.0")
    #expect(catalog.languages == ["en", "ar", "fr", "pl", "ru", "uk"])
    #expect(catalog.strings["Meridian"]?.shouldTranslate == false)
    #expect(catalog.strings["points"]?.comment == "A number of reward points")
    #expect(throws: StringCatalogError.self) { try StringCatalog(data: Data("{\"strings\": {}}".utf8)) }
    #expect(throws: StringCatalogError.self) { try StringCatalog(data: Data("not json".utf8)) }
  }

  @Test func validatorFindsEveryKindOfProblem() throws {
    let broken = try StringCatalog(contentsOf: Fixtures.url("Broken.xcstrings"))
    let issues = broken.validate()
    let expected: [CatalogIssue] = [
      CatalogIssue(key: "farewell", language: "ru", kind: .missingTranslation),
      CatalogIssue(key: "friends", language: "ar", kind: .missingTranslation),
      CatalogIssue(
        key: "friends",
        language: "ru",
        kind: .missingPluralCategories(substitution: "friends", missing: [.many])
      ),
      CatalogIssue(key: "greeting", language: "ar", kind: .missingTranslation),
      CatalogIssue(
        key: "greeting",
        language: "ru",
        kind: .formatSpecifiersDiffer(source: ["1:object"], translation: ["1:integer"])
      ),
      CatalogIssue(
        key: "points", language: "ar",
        kind: .missingPluralCategories(substitution: nil, missing: [.zero, .two, .few, .many])),
      CatalogIssue(
        key: "points", language: "ru", kind: .missingPluralCategories(substitution: nil, missing: [.few, .many])),
    ]
    #expect(issues == expected)
    #expect(issues.allSatisfy { !$0.description.isEmpty })
  }

  @Test func validatorAcceptsTheCompleteCatalog() throws {
    let catalog = try Self.catalog()
    let issues = catalog.validate(languages: ["en", "ru"])
    // Only keys deliberately left untranslated in the fixture are reported.
    #expect(issues.map(\.key) == ["Only in English"])
    #expect(catalog.validate(languages: ["uk"]).map(\.key) == ["Only in English", "distance_km", "progress", "swap"])
  }
}
