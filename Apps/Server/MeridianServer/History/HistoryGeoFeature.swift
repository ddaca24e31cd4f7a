import DomainKit
import Foundation
import GeoKit
import HTTPTypes
import MeridianAPI
import MeridianStore

/// `GET /v1/history/places`: "Where I've been" — the caller's stays grouped by country, region, district or
/// locality from the offline gazetteer, with DomainKit's `PlaceDirectory.visitCounts` over the hierarchy; and
/// `GET /v1/history/stats`, the travel statistics (``HistoryStatistics``).
struct HistoryGeoFeature: Sendable {
  let environment: ServerEnvironment
  let gazetteer: GazetteerCache

  /// The feature, with the server's gazetteer cache (a cache of its own when nil).
  init(environment: ServerEnvironment, gazetteer: GazetteerCache? = nil) {
    self.environment = environment
    self.gazetteer = gazetteer ?? GazetteerCache(store: environment.store, now: environment.now)
  }

  func register(on routes: RouteRegistrar) {
    routes.on(API.historyPlaces) { call in
      let user = try call.authenticated()
      let languages = Self.languages(requested: call.parameters.language, acceptLanguage: call.headers[.acceptLanguage])
      let history = HistoryExport(environment: environment)
      let visits = try await history.visits(of: user, in: history.allFixes(user, call.parameters.history))
      let level = GazetteerLevel(name: call.parameters.level) ?? .country
      return try await places(visits, level: level, languages: languages)
    }
    routes.on(API.historyStats) { call in
      let user = try call.authenticated()
      let languages = Self.languages(requested: call.parameters.language, acceptLanguage: call.headers[.acceptLanguage])
      let history = call.parameters.history
      let export = HistoryExport(environment: environment)
      let fixes = try await export.allFixes(user, history)
      let visits = try await export.visits(of: user, in: fixes)
      let labels = try await gazetteer.labels(for: visits.map(\.location), languages: languages)
      return HistoryStatistics(timeZone: history.timeZone).stats(
        fixes: fixes, zones: try await gazetteer.timeZones(for: fixes.map(\.coordinate)),
        visits: Array(zip(visits, labels)), visitZones: try await gazetteer.timeZones(for: visits.map(\.location)),
        languages: languages)
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
    let labels = try await gazetteer.labels(for: visits.map(\.location), languages: languages)
    // The hierarchy as DomainKit places: country ← admin1 ← admin2 ← locality, each stay at its locality.
    var places: [PlaceID: Place] = [:]
    var chains: [PlaceID: [Link]] = [:]
    var placed: [Visit] = []
    for (visit, label) in zip(visits, labels) {
      guard let label else { continue }
      let chain = Link.chain(label)
      var parent: PlaceID?
      for link in chain {
        if places[link.id] == nil {
          places[link.id] = try Place(
            id: link.id, parentID: parent, kind: Self.kind(link.level), name: LocalizedText(["": link.area.code]))
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
    var locations: [PlaceID: [(coordinate: Coordinate, weight: Double)]] = [:]
    var reached = 0
    for stay in placed {
      guard let id = stay.placeID, let area = chains[id]?.first(where: { $0.level == level }) else { continue }
      reached += 1
      locations[area.id, default: []].append((stay.location, Double(max(stay.duration, 1))))
      let current = spent[area.id] ?? (0, stay.arrival, stay.departure)
      spent[area.id] = (
        current.time + stay.duration, min(current.first, stay.arrival), max(current.last, stay.departure)
      )
    }
    var ancestors: [PlaceID: [HistoryPlace.Area]] = [:]
    var areas: [PlaceID: HistoryPlace.Area] = [:]
    for chain in chains.values {
      for (position, link) in chain.enumerated() where areas[link.id] == nil {
        areas[link.id] = link.area
        ancestors[link.id] = chain.prefix(position).map(\.area)
      }
    }
    var result: [HistoryPlace] = []
    for (place, visits) in counts {
      guard let area = areas[place.id], let figures = spent[place.id] else { continue }
      let midpoint = Coordinate.midpoint(of: locations[place.id] ?? [])
      result.append(
        HistoryPlace(
          area: area, ancestors: ancestors[place.id] ?? [], visits: visits, timeSpent: figures.time,
          firstVisit: figures.first, lastVisit: figures.last, latitude: midpoint?.latitude,
          longitude: midpoint?.longitude))
    }
    return HistoryPlaces(
      level: level.name, languages: languages, places: result, visits: visits.count, unplaced: visits.count - reached)
  }

  /// An area of a label's hierarchy as a DomainKit place.
  struct Link {
    var id: PlaceID
    var area: HistoryPlace.Area
    var level: GazetteerLevel

    /// The label's country, region, district (those the gazetteer has) and town, in that order.
    static func chain(_ label: GazetteerLabel) -> [Link] {
      [GazetteerLevel.country, .admin1, .admin2, .locality].compactMap { level in
        label.name(at: level).map {
          Link(
            id: PlaceID("\(level.name):\($0.code)"),
            area: HistoryPlace.Area(code: $0.code, name: $0.name, level: level.name),
            level: level)
        }
      }
    }
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

/// The gazetteer's in-memory index and the nearest place of each geohash cell of precision 6 (labels are computed
/// on first query, never on ingest). Each cell is placed by its centre, so a cell's place does not depend on which
/// of its coordinates was asked first. The index is built on first use; whether an import changed the gazetteer is
/// asked of the store at most every ``recheckInterval`` (on every request while the gazetteer is empty), so most
/// requests make no store round-trip for it.
actor GazetteerCache {
  let store: any GazetteerStore
  let now: @Sendable () -> Int64
  private var index: GazetteerIndex?
  private var version: [GazetteerFileState] = []
  private var checked: Int64?
  private var cells: [UInt64: GazetteerIndex.Match?] = [:]
  private var zones: [String: TimeZone?] = [:]

  /// Cells remembered before the cache starts over.
  static let maximumCells = 200_000
  /// How long (ms) a loaded gazetteer is trusted before the store is asked whether an import changed it.
  static let recheckInterval: Int64 = 60_000
  /// Geohash precision 6, in bits.
  static let cellBits = 30

  init(store: any GazetteerStore, now: @escaping @Sendable () -> Int64) {
    self.store = store
    self.now = now
  }

  /// The nearest place of each coordinate's cell; nil entries when the gazetteer is empty.
  func matches(for coordinates: [Coordinate]) async throws -> [GazetteerIndex.Match?] {
    try await refresh()
    guard let index, index.count > 0 else { return coordinates.map { _ in nil } }
    if cells.count > Self.maximumCells { cells.removeAll() }
    return coordinates.map { coordinate in
      guard let cell = try? GeohashCell(coordinate, bits: Self.cellBits) else {
        return index.nearest(latitude: coordinate.latitude, longitude: coordinate.longitude).first
      }
      if let cached = cells[cell.value] { return cached }
      let centre = cell.center
      let found = index.nearest(latitude: centre.latitude, longitude: centre.longitude).first
      cells[cell.value] = found
      return found
    }
  }

  /// The local time zone of each coordinate: its nearest town's (GeoNames gives each place its zone), however far;
  /// nil when the gazetteer is empty or the town has no zone.
  func timeZones(for coordinates: [Coordinate]) async throws -> [TimeZone?] {
    try await matches(for: coordinates).map { match in
      guard let identifier = match?.locality.timeZone else { return nil }
      if let known = zones[identifier] { return known }
      let zone = TimeZone(identifier: identifier)
      zones[identifier] = zone
      return zone
    }
  }

  /// The labels of the coordinates' cells in `languages` (one names query for all).
  func labels(for coordinates: [Coordinate], languages: [String]) async throws -> [GazetteerLabel?] {
    try await GazetteerLabeler.labels(of: matches(for: coordinates), store: store, languages: languages)
  }

  /// `messages` with each location's place from the gazetteer, as the OwnTracks Recorder's reverse geocoding gives
  /// it: `cc` (country code), `locality` (town) and `addr` (town, region, country), in `languages`; unchanged when
  /// the gazetteer is empty.
  func ownTracksPlaces(_ messages: [OwnTracks.Message], languages: [String]) async throws -> [OwnTracks.Message] {
    var positions: [Int] = []
    var coordinates: [Coordinate] = []
    for (position, message) in messages.enumerated() {
      guard case .location(let location) = message,
        let coordinate = try? Coordinate(latitude: location.lat, longitude: location.lon)
      else { continue }
      positions.append(position)
      coordinates.append(coordinate)
    }
    guard !coordinates.isEmpty else { return messages }
    var named = messages
    for (position, label) in zip(positions, try await labels(for: coordinates, languages: languages)) {
      guard let label, case .location(var location) = named[position] else { continue }
      location.cc = label.country.code
      location.locality = label.locality.name
      location.addr = [label.locality.name, label.admin1?.name, label.country.name].compactMap { $0 }
        .joined(separator: ", ")
      named[position] = .location(location)
    }
    return named
  }

  private func refresh() async throws {
    let time = now()
    if let index, index.count > 0, let checked, (checked..<checked + Self.recheckInterval).contains(time) {
      return
    }
    let files = try await store.gazetteerFiles()
    checked = time
    guard index == nil || files != version else { return }
    index = GazetteerIndex(try await store.gazetteerLocalities())
    version = files
    cells.removeAll()
  }
}
