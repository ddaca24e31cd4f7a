import DomainKit
import Foundation
import GeoKit
import HTTPTypes
import MeridianAPI
import MeridianStore

/// `GET /v1/history/places`: "Where I've been" — the caller's stays grouped by country, region, district or
/// locality from the offline gazetteer, with DomainKit's `PlaceDirectory.visitCounts` over the hierarchy.
struct HistoryGeoFeature: Sendable {
  let environment: ServerEnvironment
  let gazetteer: GazetteerCache

  init(environment: ServerEnvironment) {
    self.environment = environment
    gazetteer = GazetteerCache(store: environment.store)
  }

  func register(on routes: RouteRegistrar) {
    routes.on(API.historyPlaces) { call in
      let user = try call.authenticated()
      let languages = Self.languages(requested: call.parameters.language, acceptLanguage: call.headers[.acceptLanguage])
      let fixes = try await HistoryExport(environment: environment).allFixes(user, call.parameters.history)
      let level = GazetteerLevel(name: call.parameters.level) ?? .country
      return try await places(VisitDetector().visits(in: fixes), level: level, languages: languages)
    }
  }

  /// `requested`, else the languages of `Accept-Language` by weight, then English.
  static func languages(requested: String?, acceptLanguage: String?) -> [String] {
    var languages: [String] = []
    for code in (requested.map { [$0] } ?? []) + AcceptLanguage(acceptLanguage).ranges + ["en"] {
      for candidate in [code, String(code.split(separator: "-").first ?? "")] {
        let normalized = candidate.lowercased().replacingOccurrences(of: "-", with: "_")
        if !normalized.isEmpty, !languages.contains(normalized) { languages.append(normalized) }
      }
    }
    return languages
  }

  /// The stays grouped at `level`, most visited first, named in `languages`.
  func places(_ visits: [Visit], level: GazetteerLevel, languages: [String]) async throws -> HistoryPlaces {
    let localities = try await gazetteer.localities(for: visits.map { ($0.location.latitude, $0.location.longitude) })
    // The hierarchy as DomainKit places: country ← admin1 ← admin2 ← locality, each stay at its locality.
    var places: [PlaceID: Place] = [:]
    var chains: [PlaceID: [(id: PlaceID, code: String, level: GazetteerLevel)]] = [:]
    var placed: [Visit] = []
    for (visit, locality) in zip(visits, localities) {
      guard let locality else { continue }
      var chain: [(id: PlaceID, code: String, level: GazetteerLevel)] = [
        (PlaceID("country:\(locality.country)"), locality.country, .country)
      ]
      if let admin1 = locality.admin1 { chain.append((PlaceID("admin1:\(admin1)"), admin1, .admin1)) }
      if let admin2 = locality.admin2 { chain.append((PlaceID("admin2:\(admin2)"), admin2, .admin2)) }
      chain.append((PlaceID("locality:\(locality.geonameID)"), String(locality.geonameID), .locality))
      var parent: PlaceID?
      for link in chain {
        if places[link.id] == nil {
          places[link.id] = try Place(
            id: link.id, parentID: parent, kind: Self.kind(link.level), name: LocalizedText(["": link.code]))
        }
        parent = link.id
      }
      let id = chain[chain.count - 1].id
      chains[id] = chain
      var stay = visit
      stay.placeID = id
      placed.append(stay)
    }
    let counts = PlaceDirectory.visitCounts(places: Array(places.values), visits: placed, kind: Self.kind(level))
    // Time spent and the first and last stay per area, from the same chains.
    var spent: [PlaceID: (time: Int64, first: Int64, last: Int64)] = [:]
    var reached = 0
    for stay in placed {
      guard let id = stay.placeID, let area = chains[id]?.first(where: { $0.level == level }) else { continue }
      reached += 1
      let current = spent[area.id] ?? (0, stay.arrival, stay.departure)
      spent[area.id] = (
        current.time + stay.duration, min(current.first, stay.arrival), max(current.last, stay.departure)
      )
    }
    let links = Dictionary(chains.values.flatMap { $0 }.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
    let areaCodes = Set(links.values.filter { $0.level != .locality }.map(\.code)).sorted()
    let localityIDs = Set(links.values.filter { $0.level == .locality }.compactMap { Int64($0.code) }).sorted()
    let names = try await environment.store.gazetteerNames(
      areas: areaCodes, localities: localityIDs, languages: languages)
    func area(_ link: (id: PlaceID, code: String, level: GazetteerLevel)) -> HistoryPlace.Area {
      let name = link.level == .locality ? Int64(link.code).flatMap { names.localities[$0] } : names.areas[link.code]
      return HistoryPlace.Area(code: link.code, name: name ?? link.code, level: link.level.name)
    }
    var result: [HistoryPlace] = []
    for (place, visits) in counts {
      guard let link = links[place.id], let figures = spent[place.id] else { continue }
      let chain = chains.values.first { $0.contains { $0.id == place.id } } ?? []
      result.append(
        HistoryPlace(
          area: area(link), ancestors: chain.prefix { $0.id != place.id }.map(area), visits: visits,
          timeSpent: figures.time, firstVisit: figures.first, lastVisit: figures.last))
    }
    return HistoryPlaces(
      level: level.name, languages: languages, places: result, visits: visits.count, unplaced: visits.count - reached)
  }

  static func kind(_ level: GazetteerLevel) -> PlaceKind {
    switch level {
    case .country: .country
    case .admin1: .region
    case .admin2: .district
    case .locality: .locality
    }
  }
}

/// The gazetteer's in-memory index, built on first use and rebuilt when an import changed the gazetteer, and the
/// nearest place of each geohash cell of precision 6 (labels are computed on first query, never on ingest).
actor GazetteerCache {
  let store: any GazetteerStore
  private var index: GazetteerIndex?
  private var version: [GazetteerFileState] = []
  private var cells: [String: GazetteerLocality?] = [:]

  /// Cells remembered before the cache starts over.
  static let maximumCells = 200_000

  init(store: any GazetteerStore) { self.store = store }

  /// The nearest place of each coordinate (latitude, longitude), nil when the gazetteer is empty.
  func localities(for coordinates: [(Double, Double)]) async throws -> [GazetteerLocality?] {
    let files = try await store.gazetteerFiles()
    if index == nil || files != version {
      let built = GazetteerIndex(try await store.gazetteerLocalities())
      index = built
      version = files
      cells.removeAll()
    }
    guard let index else { return coordinates.map { _ in nil } }
    if cells.count > Self.maximumCells { cells.removeAll() }
    return coordinates.map { latitude, longitude in
      guard let coordinate = try? Coordinate(latitude: latitude, longitude: longitude),
        let cell = try? Geohash.encode(coordinate, precision: 6)
      else { return index.nearest(latitude: latitude, longitude: longitude).first?.locality }
      if let cached = cells[cell] { return cached }
      let found = index.nearest(latitude: latitude, longitude: longitude).first?.locality
      cells[cell] = found
      return found
    }
  }
}
