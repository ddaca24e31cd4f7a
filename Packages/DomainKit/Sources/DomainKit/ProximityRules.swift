import GeoKit

extension IdentifierTags {
  /// Proximity rules ("tell me when A and B are within R metres").
  public enum ProximityRule {}
}

/// The id of a proximity rule.
public typealias ProximityRuleID = Identifier<IdentifierTags.ProximityRule>

/// What happened between two people of a proximity rule.
public enum ProximityEventKind: String, Sendable, Hashable, Codable, CaseIterable {
  /// They came within the rule's distance (were apart, now near).
  case near
  /// They moved apart (were near, now beyond the distance and its margin).
  case apart
  /// They have been near each other for the dwell time.
  case dwell

  /// The geofence event kind it reads as for clients that know only those: `near` is `enter`, `apart` is `exit`.
  public var geofenceKind: GeofenceEventKind {
    switch self {
    case .near: .enter
    case .apart: .exit
    case .dwell: .dwell
    }
  }

  /// The proximity kind a geofence event kind stands for (the inverse of ``geofenceKind``).
  public init(_ kind: GeofenceEventKind) {
    switch kind {
    case .enter: self = .near
    case .exit: self = .apart
    case .dwell: self = .dwell
    }
  }
}

/// "Tell me when A and B are within R metres", with the hysteresis, gap and dwell of ``GeofenceRules``: one person's
/// new fix is a fix against a circle of `radius` around the other's last fix, with the two accuracies added (so a
/// pair whose circles straddle the distance decides nothing), and the state is a ``GeofenceState`` per pair.
/// Pure: a fix, the partner's last fix and the previous state give the next state and the events.
public struct ProximityRules: Sendable, Hashable, Codable {
  /// The rules of fences (dwell time, exit margin, exit fixes, longest gap) the pairs follow too.
  public var fences: GeofenceRules
  /// Smallest and largest distance of a rule, metres (default 25…50,000, a fence's radii).
  public var radiusRange: ClosedRange<Double> { fences.radiusRange }

  /// Rules over `fences`.
  public init(fences: GeofenceRules = GeofenceRules()) { self.fences = fences }

  /// The next state of a pair after `fix` of one of them, given `partner`, the other's newest fix. A partner's fix
  /// older than ``GeofenceRules/maximumGap`` before `fix` says nothing about where they are now: nothing changes.
  public func evaluate(
    _ fix: LocationFix, partner: LocationFix, radius: Double, state: GeofenceState
  ) -> (state: GeofenceState, events: [ProximityTransition]) {
    guard fix.timestamp.saturatingDifference(partner.timestamp) <= fences.maximumGap else { return (state, []) }
    let accuracy = max(0, fix.horizontalAccuracy ?? 0) + max(0, partner.horizontalAccuracy ?? 0)
    guard
      let combined = try? LocationFix(
        timestamp: max(fix.timestamp, partner.timestamp), latitude: fix.latitude, longitude: fix.longitude,
        horizontalAccuracy: accuracy)
    else { return (state, []) }
    let (next, transitions) = fences.evaluate(
      combined, in: .circle(center: partner.coordinate, radius: radius), state: state)
    return (
      next,
      transitions.map { transition in
        let kind: ProximityEventKind =
          switch transition.kind {
          case .enter: .near
          case .exit: .apart
          case .dwell: .dwell
          }
        return ProximityTransition(kind: kind, timestamp: transition.timestamp)
      }
    )
  }
}

/// One event of a pair: its kind and the time of the fix that decided it (UTC ms).
public struct ProximityTransition: Sendable, Hashable, Codable {
  /// What happened.
  public var kind: ProximityEventKind
  /// UTC ms.
  public var timestamp: Int64

  /// A transition.
  public init(kind: ProximityEventKind, timestamp: Int64) {
    self.kind = kind
    self.timestamp = timestamp
  }
}

/// The last positions of people under geohash cells at least `radius` metres wide, so that the people within
/// `radius` of a point are among those of its cell and the 8 around it — never all pairs.
public struct ProximityGrid<Person: Hashable & Sendable>: Sendable {
  /// The string precision of the cells.
  public let precision: Int
  private var cells: [String: Set<Person>] = [:]
  private var positions: [Person: (cell: String, coordinate: Coordinate)] = [:]

  /// A grid for distances up to `radius` metres at latitudes up to `latitude` (cells get narrower poleward).
  public init(radius: Double, latitude: Double = 60) {
    precision = Geohash.precision(forRadius: radius, latitude: latitude)
  }

  /// How many people it holds.
  public var count: Int { positions.count }

  /// Moves `person` to `coordinate`.
  public mutating func update(_ person: Person, at coordinate: Coordinate) {
    guard let cell = try? Geohash.encode(coordinate, precision: precision) else { return }
    if let old = positions[person]?.cell, old != cell { cells[old]?.remove(person) }
    cells[cell, default: []].insert(person)
    positions[person] = (cell, coordinate)
  }

  /// Forgets `person` (who stopped sharing).
  public mutating func remove(_ person: Person) {
    guard let old = positions.removeValue(forKey: person) else { return }
    cells[old.cell]?.remove(person)
  }

  /// The people within `radius` metres of `coordinate` (at most the grid's radius), by their last positions.
  public func people(within radius: Double, of coordinate: Coordinate) -> [Person] {
    people(within: radius, of: coordinate, unlessMoreThan: .max) ?? []
  }

  /// ``people(within:of:)``, or nil when the cells it would look at hold more than `limit` people — for a caller
  /// who can check `limit` known people directly for less.
  public func people(within radius: Double, of coordinate: Coordinate, unlessMoreThan limit: Int) -> [Person]? {
    guard let cell = try? Geohash.encode(coordinate, precision: precision),
      let around = try? Geohash.neighbors(of: cell)
    else { return [] }
    let looked = [cell] + around.all.compactMap({ $0 })
    var population = 0
    for candidate in looked {
      population += cells[candidate]?.count ?? 0
      if population > limit { return nil }
    }
    var found: [Person] = []
    for candidate in looked {
      for person in cells[candidate] ?? []
      where (positions[person]?.coordinate.haversineDistance(to: coordinate) ?? .infinity) <= radius {
        found.append(person)
      }
    }
    return found
  }
}
