import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import MeridianStore

/// The reference of a places query in plain Swift, which every engine's SQL must agree with: the places a query
/// keeps, by the rules ``PlaceQuery`` documents, in the order ``PlacePaging`` defines. The engines rank in SQL
/// only; this is what the contract suite compares their pages with.
struct PlaceRankingOracle {
  /// A stored place as the reference sees it.
  struct Entry {
    /// Its position in insertion order (what the engine's sequence orders by).
    var sequence: Int64
    /// The place.
    var record: PlaceRecord
    /// The rating the query orders by (the subtree's, or a venue's imported plus its reviews).
    var rating: RatingAggregate
  }

  /// Every stored place, in insertion order.
  var entries: [Entry]

  /// Every place `query` keeps, in its order, as `id@distance` (the form the tests compare pages in).
  func answer(_ query: PlaceQuery) throws -> [String] {
    let paging = try PlacePaging(query)
    let center = query.effectiveCenter
    var kept: [(key: [Int64], text: String)] = []
    for entry in entries where keeps(entry.record, query) {
      let place = entry.record.place
      let distance = center.flatMap { c in place.location.map { c.haversineDistance(to: $0) } }
      if case .circle(_, let radius) = query.area, (distance ?? .infinity) > radius { continue }
      let key = paging.values(
        sequence: entry.sequence, rating: entry.rating, distance: distance, titleKey: entry.record.titleKey)
      kept.append((key, "\(place.id)@\(distance.map { String($0) } ?? "-")"))
    }
    return kept.sorted { $0.key.lexicographicallyPrecedes($1.key) }.map(\.text)
  }

  /// Whether `record` passes every condition of `query` but the circle's exact radius.
  func keeps(_ record: PlaceRecord, _ query: PlaceQuery) -> Bool {
    let place = record.place
    switch query.scope {
    case .all: break
    case .roots: if place.parentID != nil { return false }
    case .children(let parent): if place.parentID != parent { return false }
    }
    if !query.kinds.isEmpty && !query.kinds.contains(place.kind) { return false }
    if let type = query.venueType, place.venueType != type { return false }
    if let city = query.city, place.city.map(PlaceSearch.fold) != PlaceSearch.fold(city) { return false }
    if !matches(record, words: PlaceSearch.words(query.text ?? "")) { return false }
    if !query.attributes.allSatisfy({ Self.accepts($0, record.attributes) }) { return false }
    switch query.area {
    case nil: return true
    case .circle: return place.location != nil
    case .box(let south, let west, let north, let east):
      guard let location = place.location, (south...north).contains(location.latitude) else { return false }
      return west <= east
        ? (west...east).contains(location.longitude) : location.longitude >= west || location.longitude <= east
    }
  }

  /// Every word starts a word of a title or short title, or (a word of three characters or more, or a number) of a
  /// keyword or description.
  func matches(_ record: PlaceRecord, words: [String]) -> Bool {
    let titles = record.titleKey.split(whereSeparator: { $0 == "\n" || $0 == " " })
    let others = record.searchText.split(whereSeparator: { $0 == "\n" || $0 == " " })
    return words.allSatisfy { word in
      titles.contains { $0.hasPrefix(word) }
        || (!PlaceSearch.matchesTitlesOnly(word) && others.contains { $0.hasPrefix(word) })
    }
  }

  /// Whether `attributes` pass `filter`: the attribute is there, a number within the range, equal to the text (folded),
  /// the flag or the number.
  static func accepts(_ filter: PlaceAttributeFilter, _ attributes: [String: PlaceAttribute]) -> Bool {
    guard let value = attributes[filter.name] else { return false }
    if filter.minimum != nil || filter.maximum != nil {
      guard let number = value.number else { return false }
      if let minimum = filter.minimum, number < minimum { return false }
      if let maximum = filter.maximum, number > maximum { return false }
    }
    if let equals = filter.equals {
      switch value {
      case .text(let text): return PlaceSearch.fold(text) == PlaceSearch.fold(equals)
      case .flag(let flag): return String(flag) == equals.lowercased()
      case .number(let number): return Double(equals) == number
      }
    }
    return true
  }
}
