import Foundation
import GeoKit
import Testing

@testable import DomainKit

/// ``ProximityRules`` (two people within a distance, with a fence's hysteresis and dwell) and ``ProximityGrid``.
@Suite struct ProximityRulesTests {
  static let centre = Coordinate(uncheckedLatitude: 48.8566, longitude: 2.3522)
  static let start: Int64 = 1_780_000_000_000

  /// A fix `metres` east of the centre, `seconds` after the start.
  static func fix(_ seconds: Int, _ metres: Double, accuracy: Double = 5) throws -> LocationFix {
    let point = try centre.destination(bearing: 90, distance: metres)
    return try LocationFix(
      timestamp: start + Int64(seconds) * 1_000, latitude: point.latitude, longitude: point.longitude,
      horizontalAccuracy: accuracy)
  }

  /// A walks towards B, who stands at the centre; each of A's fixes is evaluated against B's last fix.
  func run(_ walk: [(Int, Double, Double)], rules: ProximityRules = ProximityRules(), radius: Double = 200) throws
    -> [ProximityEventKind]
  {
    let partner = try Self.fix(0, 0)
    var state = GeofenceState()
    var kinds: [ProximityEventKind] = []
    for (seconds, metres, accuracy) in walk {
      let (next, events) = rules.evaluate(
        try Self.fix(seconds, metres, accuracy: accuracy), partner: partner, radius: radius, state: state)
      state = next
      kinds += events.map(\.kind)
    }
    return kinds
  }

  @Test func approachingGivesOneNearAndJitterAtTheEdgeDoesNotFlap() throws {
    // From 2 km to 100 m, then jitter across 200 m with accuracies that straddle it, then apart.
    let approach: [(Int, Double, Double)] = [
      (1, 2_000, 5), (2, 1_000, 5), (3, 400, 5), (4, 100, 5), (5, 195, 10), (6, 205, 10), (7, 190, 15), (8, 212, 10),
      (9, 150, 5),
    ]
    #expect(try run(approach) == [.near])
    // Leaving: one fix wholly beyond 200 m + the 40 m margin is enough.
    #expect(try run(approach + [(10, 600, 5)]) == [.near, .apart])
  }

  @Test func theTwoAccuraciesAreAddedBeforeDeciding() throws {
    // 150 m apart with 30 m + 40 m accuracy: 150 + 70 > 200, undecided; 100 + 70 < 200, near.
    let partner = try Self.fix(0, 0, accuracy: 40)
    let rules = ProximityRules()
    let outside = rules.evaluate(try Self.fix(1, 1_000), partner: partner, radius: 200, state: GeofenceState())
    let straddling = rules.evaluate(
      try Self.fix(2, 150, accuracy: 30), partner: partner, radius: 200, state: outside.state)
    #expect(straddling.events.isEmpty && straddling.state.presence == .outside)
    let near = rules.evaluate(try Self.fix(3, 100, accuracy: 30), partner: partner, radius: 200, state: outside.state)
    #expect(near.events.map(\.kind) == [.near])
  }

  @Test func stayingNearForTheDwellTimeReportsItOnce() throws {
    var walk: [(Int, Double, Double)] = [(0, 1_000, 5), (1, 50, 5)]
    for minute in 1...7 { walk.append((minute * 60, 40, 5)) }
    #expect(try run(walk) == [.near, .dwell])
  }

  @Test func aPartnersStalePositionDecidesNothing() throws {
    let partner = try Self.fix(0, 0)
    let rules = ProximityRules()
    let far = try LocationFix(
      timestamp: Self.start + rules.fences.maximumGap + 1_000, latitude: Self.centre.latitude,
      longitude: Self.centre.longitude, horizontalAccuracy: 5)
    let result = rules.evaluate(far, partner: partner, radius: 200, state: GeofenceState(presence: .outside))
    #expect(result.events.isEmpty && result.state == GeofenceState(presence: .outside))
  }

  /// 10,000 people in one city: the grid finds exactly those a scan of all finds.
  @Test func theGridFindsExactlyThePeopleWithinTheDistance() throws {
    var grid = ProximityGrid<Int>(radius: 500)
    var generator = SystemRandomNumberGenerator()
    var positions: [Coordinate] = []
    for person in 0..<10_000 {
      let point = try Self.centre.destination(
        bearing: Double.random(in: 0..<360, using: &generator),
        distance: Double.random(in: 0...10_000, using: &generator))
      positions.append(point)
      grid.update(person, at: point)
    }
    // Some move, some stop sharing.
    for person in 0..<100 { grid.update(person, at: Self.centre) }
    for person in 100..<200 { grid.remove(person) }
    for person in 0..<100 { positions[person] = Self.centre }
    #expect(grid.count == 9_900)
    for probe in 0..<50 {
      let point = try Self.centre.destination(bearing: Double(probe) * 7, distance: Double(probe) * 150)
      let expected = positions.indices.filter { person in
        !(100..<200).contains(person) && positions[person].haversineDistance(to: point) <= 500
      }
      #expect(grid.people(within: 500, of: point).sorted() == expected)
      // Bounded: the same people, or nil when the cells looked at hold more than the limit.
      #expect(grid.people(within: 500, of: point, unlessMoreThan: 10_000)?.sorted() == expected)
      if let bounded = grid.people(within: 500, of: point, unlessMoreThan: expected.count) {
        #expect(bounded.sorted() == expected)
      }
      #expect(expected.isEmpty || grid.people(within: 500, of: point, unlessMoreThan: expected.count - 1) == nil)
    }
  }
}
