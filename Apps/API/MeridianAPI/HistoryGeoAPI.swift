import DomainKit
import Foundation
import NetworkingKit

extension API {
  /// `GET /v1/history/places?level=country|admin1|admin2|locality`: "Where I've been" — the stays detected in the
  /// caller's filtered history, grouped by the administrative area they fall in (from the offline gazetteer), most
  /// visited first, with time spent and names in the caller's language (`lang`, else `Accept-Language`, then
  /// English, then the GeoNames name).
  public static let historyPlaces = Endpoint<HistoryPlacesQuery, NoBody, HistoryPlaces>(
    .get, "/v1/history/places", query: { $0.queryItems })

  /// `GET /v1/history/stats`: travel statistics of the caller's filtered history — distance travelled (WGS84
  /// geodesic, moves within the fixes' accuracy left out as jitter), countries and towns stayed in, days tracked and
  /// days away from home — in all and per year and month, each fix and stay in the local time of where it was (its
  /// nearest town's time zone in the gazetteer), else of `timeZone`.
  public static let historyStats = Endpoint<HistoryStatsQuery, NoBody, HistoryStats>(
    .get, "/v1/history/stats", query: { $0.queryItems })

  /// `POST /v1/history/import`: a history file as the body (GPX, CSV, GeoJSON or any Google export, told apart by
  /// content; `Content-Encoding: gzip` accepted), merged into the caller's history without duplicates.
  public static let importHistory = Endpoint<Void, Data, HistoryImportSummary>(
    .post, "/v1/history/import", body: .raw(contentType: "application/octet-stream"))

  /// The "Where I've been" endpoints, for ``all``.
  static let historyGeoEndpoints = [historyPlaces.descriptor, historyStats.descriptor, importHistory.descriptor]
}

/// What `POST /v1/history/import` did.
public struct HistoryImportSummary: Sendable, Hashable, Codable {
  /// `gpx`, `csv`, `geojson` or `google`, as told from the content.
  public var format: String
  /// Fixes read from the file.
  public var read: Int
  /// Fixes stored now (new to the history).
  public var stored: Int
  /// Fixes the history held already.
  public var duplicates: Int
  /// Fixes inside one of the account's privacy zones that store nothing: read and left out; absent when none.
  public var withheld: Int?
  /// Points skipped for lack of a time.
  public var skipped: Int
  /// The lines of the first skipped points.
  public var skippedLines: [Int]
  /// The devices the fixes were stored under.
  public var devices: [String]
  /// For a Google export: its shape and what was read.
  public var google: GoogleTimelineSummary?

  /// A summary.
  public init(
    format: String, read: Int, stored: Int, duplicates: Int, skipped: Int, skippedLines: [Int], devices: [String],
    google: GoogleTimelineSummary?, withheld: Int? = nil
  ) {
    self.format = format
    self.read = read
    self.stored = stored
    self.duplicates = duplicates
    self.skipped = skipped
    self.skippedLines = skippedLines
    self.devices = devices
    self.google = google
    self.withheld = withheld
  }
}

/// `GET /v1/history/places`: the history filters plus the level and an optional language.
public struct HistoryPlacesQuery: RouteParameters, Hashable {
  /// The levels: `country`, `admin1` (region), `admin2` (district), `locality`.
  public static let levels = ["country", "admin1", "admin2", "locality"]

  /// The history filters (`limit` and `cursor` are ignored).
  public var history: HistoryQuery
  /// One of ``levels``; default `country`.
  public var level: String
  /// A language code (`ru`, `uk`, `en`) that wins over `Accept-Language`.
  public var language: String?

  /// A query.
  public init(history: HistoryQuery = HistoryQuery(), level: String = "country", language: String? = nil) {
    self.history = history
    self.level = level
    self.language = language
  }

  /// Reads `level`, `lang` and the history filters.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    history = try HistoryQuery(path: path, query: query)
    level = query.string("level") ?? "country"
    guard Self.levels.contains(level) else {
      throw .invalidRequest("'level' must be one of country, admin1, admin2, locality.")
    }
    language = try Self.language(in: query)
  }

  /// The `lang` parameter, checked.
  static func language(in query: [String: [String]]) throws(APIError) -> String? {
    guard let language = query.string("lang") else { return nil }
    if language.isEmpty || language.count > 35
      || !language.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") })
    {
      throw .invalidRequest("'lang' must be a language code like ru, uk or pt-BR.")
    }
    return language
  }

  var queryItems: [QueryItem] {
    history.queryItems + [QueryItem("level", level)] + (language.map { [QueryItem("lang", $0)] } ?? [])
  }
}

/// `GET /v1/history/stats`: the history filters (`timeZone` also sets the days, months and years) and an optional
/// language.
public struct HistoryStatsQuery: RouteParameters, Hashable {
  /// The history filters (`limit` and `cursor` are ignored).
  public var history: HistoryQuery
  /// A language code that wins over `Accept-Language`.
  public var language: String?

  /// A query.
  public init(history: HistoryQuery = HistoryQuery(), language: String? = nil) {
    self.history = history
    self.language = language
  }

  /// Reads `lang` and the history filters.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    history = try HistoryQuery(path: path, query: query)
    language = try HistoryPlacesQuery.language(in: query)
  }

  var queryItems: [QueryItem] { history.queryItems + (language.map { [QueryItem("lang", $0)] } ?? []) }
}

/// "Where I've been" at one level.
public struct HistoryPlaces: Sendable, Hashable, Codable {
  /// The level asked for.
  public var level: String
  /// The languages the names were resolved in, in order of preference.
  public var languages: [String]
  /// The areas, most visited first (ties by code).
  public var places: [HistoryPlace]
  /// All stays in the filtered history.
  public var visits: Int
  /// Stays that could not be placed (an empty gazetteer, or no area at this level).
  public var unplaced: Int

  /// A result.
  public init(level: String, languages: [String], places: [HistoryPlace], visits: Int, unplaced: Int) {
    self.level = level
    self.languages = languages
    self.places = places
    self.visits = visits
    self.unplaced = unplaced
  }
}

/// An area the person stayed in.
public struct HistoryPlace: Sendable, Hashable, Codable {
  /// An area's code or ancestor: `RU`, `RU.75`, `RU.75.h363486`, or a place's GeoNames id.
  public struct Area: Sendable, Hashable, Codable {
    /// The code.
    public var code: String
    /// The name in the caller's language.
    public var name: String
    /// The level (`country`, `admin1`, `admin2`, `locality`).
    public var level: String

    /// An area.
    public init(code: String, name: String, level: String) {
      self.code = code
      self.name = name
      self.level = level
    }
  }

  /// The area.
  public var area: Area
  /// Its ancestors, the country first.
  public var ancestors: [Area]
  /// Stays in it.
  public var visits: Int
  /// Time spent in those stays, ms.
  public var timeSpent: Int64
  /// The first stay's arrival, UTC ms.
  public var firstVisit: Int64
  /// The last stay's departure, UTC ms.
  public var lastVisit: Int64
  /// Where the stays in it were: their geographic midpoint weighted by the time spent in each (to draw the area on a
  /// map where its person was, not at its administrative centre).
  public var latitude: Double?
  /// The midpoint's longitude (see ``latitude``).
  public var longitude: Double?

  /// An entry.
  public init(
    area: Area, ancestors: [Area], visits: Int, timeSpent: Int64, firstVisit: Int64, lastVisit: Int64,
    latitude: Double? = nil, longitude: Double? = nil
  ) {
    self.area = area
    self.ancestors = ancestors
    self.visits = visits
    self.timeSpent = timeSpent
    self.firstVisit = firstVisit
    self.lastVisit = lastVisit
    self.latitude = latitude
    self.longitude = longitude
  }
}

/// Travel statistics of a filtered history (`GET /v1/history/stats`).
public struct HistoryStats: Sendable, Hashable, Codable {
  /// The time zone the days, months and years are counted in where the gazetteer gives no local one.
  public var timeZone: String
  /// The languages the names were resolved in, in order of preference.
  public var languages: [String]
  /// Home: the town with the most time spent in stays in the filtered history; nil with no placed stay.
  public var home: HistoryPlace.Area?
  /// The whole filtered history (`period` is `all`).
  public var total: HistoryStatsPeriod
  /// Per calendar year (`2024`), oldest first; only years with fixes.
  public var years: [HistoryStatsPeriod]
  /// Per calendar month (`2024-01`), oldest first; only months with fixes.
  public var months: [HistoryStatsPeriod]
  /// The countries stayed in, most time first (ties by code).
  public var countries: [HistoryPlace.Area]
  /// The towns stayed in, most time first (ties by code).
  public var cities: [HistoryPlace.Area]

  /// Statistics.
  public init(
    timeZone: String, languages: [String], home: HistoryPlace.Area?, total: HistoryStatsPeriod,
    years: [HistoryStatsPeriod], months: [HistoryStatsPeriod], countries: [HistoryPlace.Area],
    cities: [HistoryPlace.Area]
  ) {
    self.timeZone = timeZone
    self.languages = languages
    self.home = home
    self.total = total
    self.years = years
    self.months = months
    self.countries = countries
    self.cities = cities
  }
}

/// The figures of one period.
public struct HistoryStatsPeriod: Sendable, Hashable, Codable {
  /// `all`, a year (`2024`) or a month (`2024-01`).
  public var period: String
  /// Metres travelled: the WGS84 geodesic between successive fixes, a move no longer than the larger accuracy of
  /// its two ends left out (jitter); a move belongs to the period of the fix it ends at.
  public var distance: Double
  /// Fixes in the period.
  public var fixes: Int
  /// Stays that began in the period.
  public var visits: Int
  /// Countries of those stays.
  public var countries: Int
  /// Towns of those stays.
  public var cities: Int
  /// Calendar days with at least one fix.
  public var daysTracked: Int
  /// Tracked days without time in a stay at home (all tracked days when there is no home).
  public var daysAway: Int

  /// Figures.
  public init(
    period: String, distance: Double = 0, fixes: Int = 0, visits: Int = 0, countries: Int = 0, cities: Int = 0,
    daysTracked: Int = 0, daysAway: Int = 0
  ) {
    self.period = period
    self.distance = distance
    self.fixes = fixes
    self.visits = visits
    self.countries = countries
    self.cities = cities
    self.daysTracked = daysTracked
    self.daysAway = daysAway
  }
}
