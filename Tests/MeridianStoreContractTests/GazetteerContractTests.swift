import Foundation
import MeridianStore
import MeridianStoreTesting
import Testing

/// The gazetteer: a file's rows are invisible until its commit, which applies them all; an import resumes after
/// its last staged line and restarts on other content; a second commit updates in place, keeping translations the
/// newer rows lack; labelled names win by rank; names resolve through the language chain — on every engine.
@Suite("Store contract: gazetteer")
struct GazetteerContractTests {
  static let country = GazetteerStagedRow(
    line: 1,
    content: .area(
      GazetteerArea(
        code: "RU", level: .country, country: "RU", geonameID: 2_017_370, name: "Russia", names: ["en": "Russia"])))
  static let region = GazetteerStagedRow(
    line: 2, content: .area(GazetteerArea(code: "RU.75", level: .admin1, country: "RU", name: "Tomsk")))

  static func tomsk(line: Int = 1, name: String = "Tomsk", ru: String? = "Томск") -> GazetteerStagedRow {
    var names = ["en": name]
    names["ru"] = ru
    return GazetteerStagedRow(
      line: line,
      content: .locality(
        GazetteerLocality(
          geonameID: 1_489_425, name: name, names: names, country: "RU", admin1: "RU.75", latitude: 56.50049,
          longitude: 84.98216, population: 574_002, timeZone: "Asia/Tomsk")))
  }

  @Test(arguments: StoreEngine.all)
  func rowsAreInvisibleUntilTheCommitThenAllApplied(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      #expect(
        try await store.beginGazetteerFile("countryInfo.txt", digest: "a", restart: false, now: 1)
          == .staged(through: 0))
      try await store.stageGazetteerRows([Self.country, Self.region], file: "countryInfo.txt", through: 2)
      #expect(try await store.gazetteerCounts() == GazetteerCounts())
      #expect(try await store.commitGazetteerFile("countryInfo.txt", now: 2) == 2)
      #expect(try await store.gazetteerCounts() == GazetteerCounts(countries: 1, admin1: 1))

      _ = try await store.beginGazetteerFile("cities.txt", digest: "c", restart: false, now: 3)
      try await store.stageGazetteerRows([Self.tomsk()], file: "cities.txt", through: 1)
      #expect(try await store.gazetteerLocalities().isEmpty)
      #expect(try await store.commitGazetteerFile("cities.txt", now: 4) == 1)
      let places = try await store.gazetteerLocalities()
      #expect(places.map(\.geonameID) == [1_489_425])
      #expect(places.first?.admin1 == "RU.75")
      #expect(places.first?.latitude == 56.50049)

      let russian = try await store.gazetteerNames(areas: ["RU", "RU.75"], localities: [1_489_425], languages: ["ru"])
      #expect(russian.localities[1_489_425] == "Томск")
      #expect(russian.areas["RU"] == "Russia")  // no Russian name: the base name
      let ukrainian = try await store.gazetteerNames(areas: [], localities: [1_489_425], languages: ["uk", "en"])
      #expect(ukrainian.localities[1_489_425] == "Tomsk")
      let files = try await store.gazetteerFiles()
      #expect(files.map(\.file).sorted() == ["cities.txt", "countryInfo.txt"])
      #expect(files.allSatisfy { $0.completedAt != nil })
    }
  }

  @Test(arguments: StoreEngine.all)
  func anImportResumesAfterItsLastStagedLineAndRestartsOnOtherContent(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      _ = try await store.beginGazetteerFile("countryInfo.txt", digest: "a", restart: false, now: 1)
      try await store.stageGazetteerRows([Self.country], file: "countryInfo.txt", through: 1)
      // Interrupted here: the same content resumes after line 1, with line 1 still staged.
      #expect(
        try await store.beginGazetteerFile("countryInfo.txt", digest: "a", restart: false, now: 2)
          == .staged(through: 1))
      try await store.stageGazetteerRows([Self.region], file: "countryInfo.txt", through: 2)
      #expect(try await store.commitGazetteerFile("countryInfo.txt", now: 3) == 2)
      #expect(try await store.beginGazetteerFile("countryInfo.txt", digest: "a", restart: false, now: 4) == .completed)

      // Other content starts over: what was staged of it is discarded.
      #expect(
        try await store.beginGazetteerFile("countryInfo.txt", digest: "b", restart: false, now: 5)
          == .staged(through: 0))
      #expect(try await store.gazetteerFiles().first?.completedAt == nil)
      try await store.stageGazetteerRows([Self.region], file: "countryInfo.txt", through: 9)
      #expect(
        try await store.beginGazetteerFile("countryInfo.txt", digest: "c", restart: false, now: 6)
          == .staged(through: 0))
      #expect(try await store.commitGazetteerFile("countryInfo.txt", now: 7) == 0)
      #expect(try await store.gazetteerCounts() == GazetteerCounts(countries: 1, admin1: 1))  // nothing lost
      // A restart re-imports completed content.
      #expect(
        try await store.beginGazetteerFile("countryInfo.txt", digest: "c", restart: true, now: 8) == .staged(through: 0)
      )
    }
  }

  @Test(arguments: StoreEngine.all)
  func aNewerDumpUpdatesInPlaceKeepingTranslationsItLacks(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      _ = try await store.beginGazetteerFile("cities.txt", digest: "1", restart: false, now: 1)
      try await store.stageGazetteerRows([Self.tomsk()], file: "cities.txt", through: 1)
      _ = try await store.commitGazetteerFile("cities.txt", now: 2)
      _ = try await store.beginGazetteerFile("cities.txt", digest: "2", restart: false, now: 3)
      try await store.stageGazetteerRows([Self.tomsk(name: "Tomsk City", ru: nil)], file: "cities.txt", through: 1)
      #expect(try await store.commitGazetteerFile("cities.txt", now: 4) == 1)
      #expect(try await store.gazetteerLocalities().map(\.name) == ["Tomsk City"])
      let names = try await store.gazetteerTranslations(area: nil, locality: 1_489_425)
      #expect(names[""] == "Tomsk City")
      #expect(names["en"] == "Tomsk City")
      #expect(names["ru"] == "Томск")  // kept
      #expect(try await store.gazetteerCounts().localities == 1)
    }
  }

  @Test(arguments: StoreEngine.all)
  func labelledNamesWinByRankAndReachAreasByGeonameID(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      _ = try await store.beginGazetteerFile("countryInfo.txt", digest: "a", restart: false, now: 1)
      try await store.stageGazetteerRows([Self.country], file: "countryInfo.txt", through: 1)
      _ = try await store.commitGazetteerFile("countryInfo.txt", now: 1)
      _ = try await store.beginGazetteerFile("cities.txt", digest: "c", restart: false, now: 1)
      try await store.stageGazetteerRows([Self.tomsk(ru: "Томскай")], file: "cities.txt", through: 1)
      _ = try await store.commitGazetteerFile("cities.txt", now: 1)
      _ = try await store.beginGazetteerFile("alternateNamesV2.txt", digest: "n", restart: false, now: 1)
      let names: [(Int64, String, String, Int)] = [
        (1_489_425, "ru", "Томьск", 0), (1_489_425, "ru", "Томск", 2), (1_489_425, "uk", "Томськ", 1),
        (2_017_370, "ru", "Россия", 2), (999, "ru", "Nowhere", 2),
      ]
      try await store.stageGazetteerRows(
        names.enumerated().map { index, name in
          GazetteerStagedRow(
            line: index + 1,
            content: .alternateName(
              GazetteerAlternateName(geonameID: name.0, language: name.1, name: name.2, rank: name.3)))
        }, file: "alternateNamesV2.txt", through: names.count)
      #expect(try await store.commitGazetteerFile("alternateNamesV2.txt", now: 2) == 3)
      let russian = try await store.gazetteerNames(areas: ["RU"], localities: [1_489_425], languages: ["ru"])
      #expect(russian == GazetteerNames(areas: ["RU": "Россия"], localities: [1_489_425: "Томск"]))
      let ukrainian = try await store.gazetteerNames(
        areas: ["RU"], localities: [1_489_425], languages: ["uk-UA", "uk"])
      #expect(ukrainian == GazetteerNames(areas: ["RU": "Russia"], localities: [1_489_425: "Томськ"]))
    }
  }

  @Test(arguments: StoreEngine.all)
  func stagingOrCommittingAFileNotBegunIsRefused(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      await #expect(throws: GazetteerStoreError.notStarted("x.txt")) {
        try await store.stageGazetteerRows([Self.country], file: "x.txt", through: 1)
      }
      await #expect(throws: GazetteerStoreError.notStarted("x.txt")) {
        try await store.commitGazetteerFile("x.txt", now: 1)
      }
      let counts = try await store.gazetteerCounts()
      #expect(counts == GazetteerCounts())
    }
  }
}
