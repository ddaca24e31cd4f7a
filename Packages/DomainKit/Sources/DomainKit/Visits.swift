import Foundation
import GeoKit

/// A stay at one place, detected from fixes. Wire names: `id`, `userId`, `placeId`, `location`, `arrival`,
/// `departure` (UTC ms), `fixCount`, `name` (absent unless the person named the place, ``StayCorrection/rename``).
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
  /// The name the person gave the place of the stay, if any.
  public var name: String?

  /// A visit.
  public init(
    id: VisitID? = nil, userID: UserID? = nil, placeID: PlaceID? = nil, location: Coordinate, arrival: Int64,
    departure: Int64, fixCount: Int, name: String? = nil
  ) {
    self.name = name
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
    case location, arrival, departure, fixCount, name
  }
}

/// Stay-point detection judged by time spent, not by the number of fixes.
///
/// A stay is a run of fixes that keep within `radius` metres of the run's centroid (the geographic mean of its fixes,
/// updated as fixes join) for at least `minimumDuration` ms from its first fix to its last, and whose core (the fixes
/// within half the radius) spans `minimumDuration` too unless the run lasts twice as long. Time between fixes counts
/// in full: a phone asleep at home that reports once an hour still stays there. A short excursion — fixes outside the
/// radius for at most `maximumExcursion` ms, after which the track is back inside — is GPS noise (a multipath jump, a
/// fix from a cell tower) and neither ends the stay nor moves its centre. Fixes worse than `maximumAccuracy` are
/// ignored. Input must be in time order.
///
/// ``StayScore`` in DomainKitTesting measures it against a labelled corpus (`domainkit-bench` prints
/// `stays.precision` and `stays.recall`).
public struct VisitDetector: Sendable, Hashable {
  /// Radius of a stay, metres (default 100).
  public var radius: Double
  /// Shortest stay, ms (default 5 minutes).
  public var minimumDuration: Int64
  /// Fixes with a worse horizontal accuracy are ignored (default 200 m).
  public var maximumAccuracy: Double
  /// Longest run of fixes outside the radius (first to last, ms) that is noise when the next fix is back inside
  /// (default 2 minutes).
  public var maximumExcursion: Int64

  /// A detector.
  public init(
    radius: Double = 100, minimumDuration: Int64 = 300_000, maximumAccuracy: Double = 200,
    maximumExcursion: Int64 = 120_000
  ) {
    self.radius = radius
    self.minimumDuration = minimumDuration
    self.maximumAccuracy = maximumAccuracy
    self.maximumExcursion = maximumExcursion
  }

  /// The visits in `fixes` (sorted by time), oldest first, with the person's `corrections` applied in order.
  ///
  /// Corrections name times and places, not detected stays, so they hold when stays are detected again (after an
  /// import, or with a better detector): a merge joins whatever stays overlap its period, a split cuts whatever stay
  /// spans its instant, a rename names the stays within the radius of its place.
  public func visits(in fixes: [LocationFix], corrections: [StayCorrection] = []) -> [Visit] {
    let usable = fixes.filter { ($0.horizontalAccuracy ?? 0) <= maximumAccuracy }
    var stays: [[Int]] = []
    var start = 0
    while start < usable.count {
      let members = cluster(from: start, in: usable)
      if let last = members.last, isStay(members, in: usable) {
        // Two stays at the same place with nothing between them but noise are one (a lagging centre split it).
        if let previous = stays.last, let end = previous.last,
          span(of: usable[(end + 1)..<start]) <= maximumExcursion,
          centre(of: previous, in: usable).haversineDistance(to: centre(of: members, in: usable)) <= radius
        {
          stays[stays.count - 1] += members
        } else {
          stays.append(members)
        }
        start = last + 1
      } else {
        start += 1
      }
    }
    var names: [(location: Coordinate, name: String)] = []
    for correction in corrections {
      switch correction {
      case .merge(let from, let to):
        let joined = stays.indices.filter { index in
          guard let first = stays[index].first, let last = stays[index].last else { return false }
          return usable[first].timestamp <= to && usable[last].timestamp >= from
        }
        guard let head = joined.first, joined.count > 1 else { continue }
        stays[head] = joined.flatMap { stays[$0] }
        for index in joined.dropFirst().reversed() { stays.remove(at: index) }
      case .split(let at):
        guard
          let index = stays.firstIndex(where: { members in
            members.contains { usable[$0].timestamp <= at } && members.contains { usable[$0].timestamp > at }
          })
        else { continue }
        let members = stays[index]
        stays.replaceSubrange(
          index...index,
          with: [members.filter { usable[$0].timestamp <= at }, members.filter { usable[$0].timestamp > at }])
      case .rename(let location, let name):
        names.removeAll { $0.location.haversineDistance(to: location) <= radius }
        names.append((location, name))
      }
    }
    return stays.compactMap { members in
      guard let first = members.first, let last = members.last else { return nil }
      let location = centre(of: members, in: usable)
      return Visit(
        location: location, arrival: usable[first].timestamp, departure: usable[last].timestamp,
        fixCount: members.count,
        name: names.last { $0.location.haversineDistance(to: location) <= radius }?.name)
    }
  }

  /// The time from the first to the last of `fixes` (0 for none).
  private func span(of fixes: ArraySlice<LocationFix>) -> Int64 {
    guard let first = fixes.first, let last = fixes.last else { return 0 }
    return last.timestamp.saturatingDifference(first.timestamp)
  }

  /// The fixes (indices) of the stay that starts at `start`: those within the radius of the running centroid, up to
  /// the first excursion longer than `maximumExcursion` (shorter ones are noise and left out).
  private func cluster(from start: Int, in fixes: [LocationFix]) -> [Int] {
    var centroid = Centroid(fixes[start])
    var members = [start]
    var next = start + 1
    while next < fixes.count {
      if centroid.distance(to: fixes[next]) <= radius {
        centroid.add(fixes[next])
        members.append(next)
        next += 1
        continue
      }
      var back = next
      while back < fixes.count, centroid.distance(to: fixes[back]) > radius,
        fixes[back].timestamp.saturatingDifference(fixes[next].timestamp) <= maximumExcursion
      {
        back += 1
      }
      guard back < fixes.count, centroid.distance(to: fixes[back]) <= radius else { break }
      next = back
    }
    return members
  }

  /// Whether `members` last `minimumDuration` and dwell: the fixes within half the radius of their centre — the
  /// stay's core — span `minimumDuration` too, so someone who walked slowly through the circle and paused at a
  /// crossing is no stay. Twice `minimumDuration` within the radius is a stay whatever the core (laps of a running
  /// track, a dog walked round a yard).
  private func isStay(_ members: [Int], in fixes: [LocationFix]) -> Bool {
    guard let first = members.first, let last = members.last else { return false }
    let duration = fixes[last].timestamp.saturatingDifference(fixes[first].timestamp)
    guard duration >= minimumDuration else { return false }
    if duration / 2 >= minimumDuration { return true }
    let centre = centre(of: members, in: fixes)
    let core = members.filter { centre.haversineDistance(to: fixes[$0].coordinate) <= radius / 2 }
    guard let coreFirst = core.first, let coreLast = core.last else { return false }
    return fixes[coreLast].timestamp.saturatingDifference(fixes[coreFirst].timestamp) >= minimumDuration
  }

  /// Where the time of the stay was spent: the geographic mean of its fixes, each weighted by the time it stands
  /// for (half the time to its neighbours), so a phone asleep for hours at one spot outweighs the fixes of the walk
  /// in.
  private func centre(of members: [Int], in fixes: [LocationFix]) -> Coordinate {
    let weighted = members.indices.map { position in
      let before = position > 0 ? fixes[members[position - 1]].timestamp : fixes[members[position]].timestamp
      let after =
        position + 1 < members.count ? fixes[members[position + 1]].timestamp : fixes[members[position]].timestamp
      return (coordinate: fixes[members[position]].coordinate, weight: max(Double(after) - Double(before), 1) / 2)
    }
    return Coordinate.midpoint(of: weighted) ?? fixes[members[0]].coordinate
  }

  /// The running geographic mean of a stay's fixes (GeoKit's midpoint, so it is right across the antimeridian).
  private struct Centroid {
    private(set) var coordinate: Coordinate
    private var count = 1.0

    init(_ fix: LocationFix) { coordinate = fix.coordinate }

    /// Moves the mean towards `fix` by its share of the fixes so far.
    mutating func add(_ fix: LocationFix) {
      coordinate = Coordinate.midpoint(of: [(coordinate, count), (fix.coordinate, 1)]) ?? coordinate
      count += 1
    }

    func distance(to fix: LocationFix) -> Double { coordinate.haversineDistance(to: fix.coordinate) }
  }
}

/// A person's correction of their detected stays, kept and applied again each time stays are detected
/// (``VisitDetector/visits(in:corrections:)``). Wire form: `{"kind": "merge", "from": ms, "to": ms}`,
/// `{"kind": "split", "at": ms}`, `{"kind": "rename", "location": {"lat", "lon"}, "name": "…"}`.
public enum StayCorrection: Sendable, Hashable, Codable {
  /// The stays that overlap `from`…`to` (UTC ms) are one stay.
  case merge(from: Int64, to: Int64)
  /// The stay that spans `at` (UTC ms) is two: its fixes up to `at`, and those after.
  case split(at: Int64)
  /// The place of the stays within the detector's radius of `location` is called `name`.
  case rename(location: Coordinate, name: String)

  /// The longest name, in characters.
  public static let maximumNameLength = 100

  /// `merge`, `split` or `rename` (the wire's `kind`).
  public var kind: String {
    switch self {
    case .merge: "merge"
    case .split: "split"
    case .rename: "rename"
    }
  }

  /// Why a correction is refused.
  public enum Invalid: Error, Sendable, Hashable, CustomStringConvertible {
    /// A merge whose `to` is before its `from`.
    case emptyPeriod
    /// A rename with an empty name or one longer than ``StayCorrection/maximumNameLength``.
    case name

    /// A sentence for the person.
    public var description: String {
      switch self {
      case .emptyPeriod: "to must not be before from"
      case .name: "name must have 1 to \(StayCorrection.maximumNameLength) characters"
      }
    }
  }

  /// The correction, or the reason it is refused (a name is trimmed of surrounding white space).
  public func validated() throws(Invalid) -> StayCorrection {
    switch self {
    case .merge(let from, let to):
      guard from <= to else { throw .emptyPeriod }
      return self
    case .split: return self
    case .rename(let location, let name):
      let trimmed = name.trimmingCharacters(in: .whitespacesAndNewlines)
      guard !trimmed.isEmpty, trimmed.count <= Self.maximumNameLength else { throw .name }
      return .rename(location: location, name: trimmed)
    }
  }

  private enum CodingKeys: String, CodingKey {
    case kind, from, to, at, location, name
  }

  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    switch try container.decode(String.self, forKey: .kind) {
    case "merge":
      self = .merge(
        from: try container.decode(Int64.self, forKey: .from), to: try container.decode(Int64.self, forKey: .to))
    case "split": self = .split(at: try container.decode(Int64.self, forKey: .at))
    case "rename":
      self = .rename(
        location: try container.decode(Coordinate.self, forKey: .location),
        name: try container.decode(String.self, forKey: .name))
    case let other:
      throw DecodingError.dataCorruptedError(
        forKey: .kind, in: container, debugDescription: "kind: \(other) is not merge, split or rename")
    }
  }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(kind, forKey: .kind)
    switch self {
    case .merge(let from, let to):
      try container.encode(from, forKey: .from)
      try container.encode(to, forKey: .to)
    case .split(let at):
      try container.encode(at, forKey: .at)
    case .rename(let location, let name):
      try container.encode(location, forKey: .location)
      try container.encode(name, forKey: .name)
    }
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
