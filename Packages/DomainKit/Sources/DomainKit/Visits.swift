import Foundation
import GeoKit

/// A stay at one place, detected from fixes. Wire names: `id`, `userId`, `placeId`, `location`, `arrival`,
/// `departure` (UTC ms), `fixCount`.
public struct Visit: Sendable, Hashable, Codable {
  /// The id, if stored.
  public var id: VisitID?
  /// The user.
  public var userID: UserID?
  /// The place, when matched to one.
  public var placeID: PlaceID?
  /// The centroid of the stay's fixes.
  public var location: Coordinate
  /// First fix of the stay, UTC ms.
  public var arrival: Int64
  /// Last fix of the stay, UTC ms.
  public var departure: Int64
  /// Number of fixes in the stay.
  public var fixCount: Int

  /// A visit.
  public init(
    id: VisitID? = nil, userID: UserID? = nil, placeID: PlaceID? = nil, location: Coordinate, arrival: Int64,
    departure: Int64, fixCount: Int
  ) {
    self.id = id
    self.userID = userID
    self.placeID = placeID
    self.location = location
    self.arrival = arrival
    self.departure = departure
    self.fixCount = fixCount
  }

  /// Duration in milliseconds.
  public var duration: Int64 { departure.saturatingDifference(arrival) }

  private enum CodingKeys: String, CodingKey {
    case id
    case userID = "userId"
    case placeID = "placeId"
    case location, arrival, departure, fixCount
  }
}

/// Stay-point detection: consecutive fixes that stay within `radius` metres of the stay's first fix for at least
/// `minimumDuration` ms form a visit. Fixes worse than `maximumAccuracy` are ignored. Input must be in time order.
public struct VisitDetector: Sendable, Hashable {
  /// Radius of a stay, metres (default 100).
  public var radius: Double
  /// Shortest stay, ms (default 5 minutes).
  public var minimumDuration: Int64
  /// Fixes with a worse horizontal accuracy are ignored (default 200 m).
  public var maximumAccuracy: Double

  /// A detector.
  public init(radius: Double = 100, minimumDuration: Int64 = 300_000, maximumAccuracy: Double = 200) {
    self.radius = radius
    self.minimumDuration = minimumDuration
    self.maximumAccuracy = maximumAccuracy
  }

  /// The visits in `fixes` (sorted by time).
  public func visits(in fixes: [LocationFix]) -> [Visit] {
    let usable = fixes.filter { ($0.horizontalAccuracy ?? 0) <= maximumAccuracy }
    var result: [Visit] = []
    var start = 0
    while start < usable.count {
      var end = start + 1
      while end < usable.count, usable[start].distance(to: usable[end]) <= radius { end += 1 }
      let stay = usable[start..<end]
      if let first = stay.first, let last = stay.last,
        last.timestamp.saturatingDifference(first.timestamp) >= minimumDuration
      {
        let lat = stay.reduce(0) { $0 + $1.latitude } / Double(stay.count)
        let lon = stay.reduce(0) { $0 + $1.longitude } / Double(stay.count)
        result.append(
          Visit(
            location: Coordinate(uncheckedLatitude: lat, longitude: lon), arrival: first.timestamp,
            departure: last.timestamp, fixCount: stay.count))
        start = end
      } else {
        start += 1
      }
    }
    return result
  }
}

extension PlaceDirectory {
  /// Places of `kind` (e.g. ``PlaceKind/country``, ``PlaceKind/locality``) with the number of visits to them or to
  /// any place below them in the hierarchy, most visited first (ties by id). Visits without a `placeId` are ignored.
  public static func visitCounts(places: [Place], visits: [Visit], kind: PlaceKind) -> [(place: Place, visits: Int)] {
    let byID = Dictionary(places.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
    var counts: [PlaceID: Int] = [:]
    for visit in visits {
      var current = visit.placeID
      var seen: Set<PlaceID> = []
      while let id = current, let place = byID[id], seen.insert(id).inserted {
        if place.kind == kind { counts[id, default: 0] += 1 }
        current = place.parentID
      }
    }
    return counts.compactMap { id, count in byID[id].map { (place: $0, visits: count) } }
      .sorted { $0.visits != $1.visits ? $0.visits > $1.visits : $0.place.id < $1.place.id }
  }
}

extension Int64 {
  /// `self − other`, clamped to `Int64.min…Int64.max` instead of trapping (times from outside input may be
  /// anything).
  func saturatingDifference(_ other: Int64) -> Int64 {
    let (value, overflow) = subtractingReportingOverflow(other)
    guard overflow else { return value }
    return other < 0 ? .max : .min
  }
}
