import Foundation

/// The offline gazetteer: countries, first- and second-level administrative areas and populated places (GeoNames),
/// with their names in every language the database has (PersistenceKit's localized columns `name_<language>`).
///
/// A file of a dump is imported in two steps so that an import streams, resumes and is all or nothing per file:
/// its rows are **staged** in batches (each batch its own transaction, recording the last line staged), then the
/// file is **committed** in one transaction that upserts every staged row into the gazetteer. Until the commit the
/// gazetteer is unchanged; a stopped import resumes after the last staged line when the file is the same (by
/// digest). A commit updates rows in place: a newer dump's values replace the stored ones, and a language the
/// newer dump has no name in keeps the stored translation.
public protocol GazetteerStore: Sendable {
  /// Prepares `file` (a dump file's name) with content `digest` for staging: the same digest completed before is
  /// ``GazetteerFileProgress/completed`` (unless `restart`), the same digest staged in part resumes after its last
  /// staged line; anything else discards what was staged and starts at line 0.
  func beginGazetteerFile(_ file: String, digest: String, restart: Bool, now: Int64) async throws
    -> GazetteerFileProgress
  /// Stages `rows` of `file` (one transaction) and records `line` as the last line staged.
  /// - Throws: ``GazetteerStoreError/notStarted(_:)`` when the file was not begun.
  func stageGazetteerRows(_ rows: [GazetteerStagedRow], file: String, through line: Int) async throws
  /// Applies every staged row of `file` to the gazetteer in one transaction, marks the file completed and returns
  /// the number of rows applied.
  /// - Throws: ``GazetteerStoreError/notStarted(_:)`` when the file was not begun.
  func commitGazetteerFile(_ file: String, now: Int64) async throws -> Int
  /// The files imported or being imported.
  func gazetteerFiles() async throws -> [GazetteerFileState]
  /// How many countries, admin1 and admin2 areas and places the gazetteer holds.
  func gazetteerCounts() async throws -> GazetteerCounts
  /// Every populated place with its base name only (`names` empty): what the reverse-geocoding index is built from.
  func gazetteerLocalities() async throws -> [GazetteerLocality]
  /// The names of the areas (by code) and places (by GeoNames id) asked for, each the first non-empty of
  /// `languages` (`en`, `pt-BR`; languages the database lacks are skipped), else the base name.
  func gazetteerNames(areas: [String], localities: [Int64], languages: [String]) async throws -> GazetteerNames
  /// The stored names of one area or place by language (the base name under `""`); empty when there is none.
  func gazetteerTranslations(area: String?, locality: Int64?) async throws -> [String: String]
}

/// What ``GazetteerStore/beginGazetteerFile(_:digest:restart:now:)`` found.
public enum GazetteerFileProgress: Sendable, Hashable {
  /// The file with this digest was imported before; nothing to do.
  case completed
  /// Stage the lines after this one (0: from the start).
  case staged(through: Int)
}

/// A dump file's import.
public struct GazetteerFileState: Sendable, Hashable {
  /// The file's name (`cities500.txt`).
  public var file: String
  /// Its content's digest (SHA-256, hex).
  public var digest: String
  /// The last line staged.
  public var stagedThrough: Int
  /// Rows applied by the commit; 0 before it.
  public var rows: Int
  /// When the commit happened, UTC ms; nil while staging.
  public var completedAt: Int64?

  /// A state.
  public init(file: String, digest: String, stagedThrough: Int, rows: Int, completedAt: Int64?) {
    self.file = file
    self.digest = digest
    self.stagedThrough = stagedThrough
    self.rows = rows
    self.completedAt = completedAt
  }
}

/// The gazetteer's size.
public struct GazetteerCounts: Sendable, Hashable, Codable {
  /// Countries.
  public var countries: Int
  /// First-level areas (regions).
  public var admin1: Int
  /// Second-level areas (districts).
  public var admin2: Int
  /// Populated places.
  public var localities: Int

  /// Counts.
  public init(countries: Int = 0, admin1: Int = 0, admin2: Int = 0, localities: Int = 0) {
    self.countries = countries
    self.admin1 = admin1
    self.admin2 = admin2
    self.localities = localities
  }
}

/// An administrative level.
public enum GazetteerLevel: Int, Sendable, Hashable, Codable, CaseIterable {
  /// A country (code `RU`).
  case country = 0
  /// A first-level area (code `RU.75`).
  case admin1 = 1
  /// A second-level area (code `RU.75.123`).
  case admin2 = 2
  /// A populated place (by GeoNames id).
  case locality = 3

  /// The wire name: `country`, `admin1`, `admin2`, `locality`.
  public var name: String { ["country", "admin1", "admin2", "locality"][rawValue] }

  /// The level with this wire name.
  public init?(name: String) {
    guard let level = Self.allCases.first(where: { $0.name == name }) else { return nil }
    self = level
  }
}

/// A country or an administrative area.
public struct GazetteerArea: Sendable, Hashable {
  /// `RU`, `RU.75`, `RU.75.123`: the country code, then the GeoNames admin codes, dot-separated.
  public var code: String
  /// Country, admin1 or admin2.
  public var level: GazetteerLevel
  /// The country's ISO code.
  public var country: String
  /// The GeoNames id, when the dump gives one.
  public var geonameID: Int64?
  /// The base name (GeoNames' name).
  public var name: String
  /// Names by language code (`ru`, `uk`).
  public var names: [String: String]

  /// An area.
  public init(
    code: String, level: GazetteerLevel, country: String, geonameID: Int64? = nil, name: String,
    names: [String: String] = [:]
  ) {
    self.code = code
    self.level = level
    self.country = country
    self.geonameID = geonameID
    self.name = name
    self.names = names
  }
}

/// A populated place.
public struct GazetteerLocality: Sendable, Hashable {
  /// The GeoNames id.
  public var geonameID: Int64
  /// The base name (GeoNames' name).
  public var name: String
  /// Names by language code.
  public var names: [String: String]
  /// The country's ISO code.
  public var country: String
  /// The first-level area's code (`RU.75`), if any.
  public var admin1: String?
  /// The second-level area's code (`RU.75.123`), if any.
  public var admin2: String?
  /// Latitude, degrees.
  public var latitude: Double
  /// Longitude, degrees.
  public var longitude: Double
  /// Population.
  public var population: Int64
  /// GeoNames feature code (`PPL`, `PPLC`, …).
  public var featureCode: String

  /// Feature codes of populated places that are not towns: a section of a town (a city district), and historical,
  /// abandoned or destroyed places. The reverse-geocoding index leaves them out.
  public static let notTownFeatureCodes: Set<String> = ["PPLX", "PPLH", "PPLQ", "PPLW", "PPLCH"]

  /// Whether the place is a town (not a district of one, nor a historical place): what a stay is placed at.
  public var isTown: Bool { !Self.notTownFeatureCodes.contains(featureCode) }
  /// IANA time zone.
  public var timeZone: String?

  /// A place.
  public init(
    geonameID: Int64, name: String, names: [String: String] = [:], country: String, admin1: String? = nil,
    admin2: String? = nil, latitude: Double, longitude: Double, population: Int64 = 0, featureCode: String = "PPL",
    timeZone: String? = nil
  ) {
    self.geonameID = geonameID
    self.name = name
    self.names = names
    self.country = country
    self.admin1 = admin1
    self.admin2 = admin2
    self.latitude = latitude
    self.longitude = longitude
    self.population = population
    self.featureCode = featureCode
    self.timeZone = timeZone
  }
}

/// A name of a place or area in one language (a row of `alternateNamesV2.txt`).
public struct GazetteerAlternateName: Sendable, Hashable {
  /// The place's or area's GeoNames id.
  public var geonameID: Int64
  /// The language code.
  public var language: String
  /// The name.
  public var name: String
  /// How it ranks among names of the same language (``rank(preferred:short:colloquial:historic:)``); a name of a
  /// negative rank never replaces a name the place has.
  public var rank: Int

  /// A name.
  public init(geonameID: Int64, language: String, name: String, rank: Int = 0) {
    self.geonameID = geonameID
    self.language = language
    self.name = name
    self.rank = rank
  }

  /// The rank of a name by GeoNames' flags: preferred 2, short 1, unlabelled 0; colloquial or historic -1 (a
  /// nickname such as "Південна Пальміра", a former name), used only where a language has no other name.
  public static func rank(preferred: Bool, short: Bool, colloquial: Bool, historic: Bool) -> Int {
    colloquial || historic ? -1 : preferred ? 2 : short ? 1 : 0
  }
}

/// One row of a dump file, staged.
public struct GazetteerStagedRow: Sendable, Hashable {
  /// What a row holds.
  public enum Content: Sendable, Hashable {
    /// A country, admin1 or admin2 area.
    case area(GazetteerArea)
    /// A populated place.
    case locality(GazetteerLocality)
    /// A name in a language.
    case alternateName(GazetteerAlternateName)
  }

  /// The file's line number (1-based).
  public var line: Int
  /// The row.
  public var content: Content

  /// A staged row.
  public init(line: Int, content: Content) {
    self.line = line
    self.content = content
  }
}

/// Names resolved in a language.
public struct GazetteerNames: Sendable, Hashable {
  /// Area names by code.
  public var areas: [String: String]
  /// Place names by GeoNames id.
  public var localities: [Int64: String]

  /// Names.
  public init(areas: [String: String] = [:], localities: [Int64: String] = [:]) {
    self.areas = areas
    self.localities = localities
  }
}

/// Errors of the gazetteer store.
public enum GazetteerStoreError: Error, Hashable, CustomStringConvertible {
  /// Rows were staged or committed for a file that was not begun.
  case notStarted(String)

  /// What went wrong.
  public var description: String {
    switch self {
    case .notStarted(let file): "The import of '\(file)' was not begun; begin it first."
    }
  }
}

extension GazetteerStagedRow {
  /// The row's columns as both engines stage them: kind (`area`, `locality`, `name`), code, level, country,
  /// GeoNames id, name, names (JSON object), admin1, admin2, latitude, longitude, population, feature code, time
  /// zone, language, rank.
  public var stagingColumns: GazetteerStagingColumns {
    switch content {
    case .area(let area):
      return GazetteerStagingColumns(
        kind: "area", code: area.code, level: area.level.rawValue, country: area.country, geonameID: area.geonameID,
        name: area.name, names: Self.json(area.names))
    case .locality(let place):
      return GazetteerStagingColumns(
        kind: "locality", code: nil, level: GazetteerLevel.locality.rawValue, country: place.country,
        geonameID: place.geonameID, name: place.name, names: Self.json(place.names), admin1: place.admin1,
        admin2: place.admin2, latitude: place.latitude, longitude: place.longitude, population: place.population,
        featureCode: place.featureCode, timeZone: place.timeZone)
    case .alternateName(let alternate):
      return GazetteerStagingColumns(
        kind: "name", code: nil, level: nil, country: nil, geonameID: alternate.geonameID, name: alternate.name,
        names: "{}", language: alternate.language, rank: alternate.rank)
    }
  }

  private static func json(_ names: [String: String]) -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    return (try? encoder.encode(names)).flatMap { String(data: $0, encoding: .utf8) } ?? "{}"
  }
}

/// A staged row as flat columns (see ``GazetteerStagedRow/stagingColumns``).
public struct GazetteerStagingColumns: Sendable, Hashable {
  public var kind: String
  public var code: String?
  public var level: Int?
  public var country: String?
  public var geonameID: Int64?
  public var name: String
  public var names: String
  public var admin1: String? = nil
  public var admin2: String? = nil
  public var latitude: Double? = nil
  public var longitude: Double? = nil
  public var population: Int64? = nil
  public var featureCode: String? = nil
  public var timeZone: String? = nil
  public var language: String? = nil
  public var rank: Int? = nil
}
