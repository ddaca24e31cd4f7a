import Foundation

/// A coordinate's place in the administrative hierarchy, with names in one language.
public struct GazetteerLabel: Sendable, Hashable, Codable {
  /// An area or place: its code (`RU`, `RU.75`, `RU.75.123`, or the place's GeoNames id) and name.
  public struct Name: Sendable, Hashable, Codable {
    /// The code.
    public var code: String
    /// The name in the language asked for, else English, else the GeoNames name.
    public var name: String

    /// A name.
    public init(code: String, name: String) {
      self.code = code
      self.name = name
    }
  }

  /// The nearest populated place.
  public var locality: Name
  /// Its second-level area, if the gazetteer has one.
  public var admin2: Name?
  /// Its first-level area, if the gazetteer has one.
  public var admin1: Name?
  /// Its country.
  public var country: Name
  /// Metres from the coordinate to the place.
  public var distance: Double

  /// The name at `level`.
  public func name(at level: GazetteerLevel) -> Name? {
    switch level {
    case .country: country
    case .admin1: admin1
    case .admin2: admin2
    case .locality: locality
    }
  }
}

/// Labels coordinates with the gazetteer: the nearest place from the in-memory ``GazetteerIndex``, its areas'
/// names from the store in one query per batch.
public struct GazetteerLabeler: Sendable {
  /// Where names come from.
  public var store: any GazetteerStore
  /// The places.
  public var index: GazetteerIndex

  /// How far (metres) a coordinate may be from its nearest town to be placed there: 50 km. The dumps give areas per
  /// town, not outlines, so a coordinate farther from every town (the open sea, an empty wilderness) gets no town,
  /// region or country.
  public static let maximumDistance: Double = 50_000

  /// A labeler.
  public init(store: any GazetteerStore, index: GazetteerIndex) {
    self.store = store
    self.index = index
  }

  /// The label of one coordinate; nil when the gazetteer is empty or no town is within ``maximumDistance``.
  public func label(latitude: Double, longitude: Double, languages: [String]) async throws -> GazetteerLabel? {
    try await labels([(latitude, longitude)], languages: languages).first ?? nil
  }

  /// The labels of `coordinates` (latitude, longitude), in order; nil entries when the gazetteer is empty or no town
  /// is within ``maximumDistance``.
  public func labels(_ coordinates: [(Double, Double)], languages: [String]) async throws -> [GazetteerLabel?] {
    try await Self.labels(
      of: coordinates.map { index.nearest(latitude: $0.0, longitude: $0.1).first }, store: store,
      languages: languages)
  }

  /// The labels of places found in the index, in order, named from `store` in one query: the first of `languages`
  /// that has a name, else the base name; an area the gazetteer lacks is left out (a country keeps its code). A
  /// match farther than ``maximumDistance`` has no label.
  public static func labels(
    of matches: [GazetteerIndex.Match?], store: any GazetteerStore, languages: [String]
  ) async throws -> [GazetteerLabel?] {
    let matches = matches.map { $0.flatMap { $0.distance <= maximumDistance ? $0 : nil } }
    let places = matches.compactMap { $0?.locality }
    guard !places.isEmpty else { return matches.map { _ in nil } }
    var areas = Set<String>()
    for place in places {
      areas.insert(place.country)
      if let admin1 = place.admin1 { areas.insert(admin1) }
      if let admin2 = place.admin2 { areas.insert(admin2) }
    }
    let names = try await store.gazetteerNames(
      areas: areas.sorted(), localities: Array(Set(places.map(\.geonameID))).sorted(), languages: languages)
    return matches.map { match in
      guard let match else { return nil }
      let place = match.locality
      return GazetteerLabel(
        locality: .init(code: String(place.geonameID), name: names.localities[place.geonameID] ?? place.name),
        admin2: place.admin2.flatMap { code in names.areas[code].map { .init(code: code, name: $0) } },
        admin1: place.admin1.flatMap { code in names.areas[code].map { .init(code: code, name: $0) } },
        country: .init(code: place.country, name: names.areas[place.country] ?? place.country),
        distance: match.distance)
    }
  }
}
