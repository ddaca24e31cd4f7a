import DomainKitTesting
import Foundation
import GeoKit
import Testing

@testable import DomainKit

/// Recorded-style tracks (positions on a bearing from a fence's centre, seconds apart, with seeded GPS jitter) run
/// through ``GeofenceRules``.
@Suite struct GeofenceRulesTests {
  static let home = Coordinate(uncheckedLatitude: 55.7558, longitude: 37.6173)
  static let fence = Geofence.circle(center: home, radius: 100)
  static let start: Int64 = 1_780_000_000_000

  /// A fix `metres` from home on `bearing`, `seconds` after the start.
  static func fix(_ seconds: Int, _ metres: Double, bearing: Double = 90, accuracy: Double = 10) throws -> LocationFix {
    let point = try home.destination(bearing: bearing, distance: metres)
    return try LocationFix(
      timestamp: start + Int64(seconds) * 1_000, latitude: point.latitude, longitude: point.longitude,
      horizontalAccuracy: accuracy)
  }

  static func run(
    _ fixes: [LocationFix], rules: GeofenceRules = GeofenceRules(), shape: Geofence = fence,
    from state: GeofenceState = GeofenceState()
  ) -> (state: GeofenceState, events: [GeofenceTransition]) {
    var state = state
    var events: [GeofenceTransition] = []
    for fix in fixes {
      let result = rules.evaluate(fix, in: shape, state: state)
      state = result.state
      events += result.events
    }
    return (state, events)
  }

  /// Walk in from 400 m, stand 85 m from the centre of a 100 m fence for 30 minutes with ±20 m jitter and 10–20 m
  /// accuracy (many fixes straddle the edge), walk out to 400 m.
  static func jitterTrack(seed: UInt64 = 7) throws -> [LocationFix] {
    var rng = SplitMix64(seed: seed)
    var fixes: [LocationFix] = []
    var second = 0
    for metres in stride(from: 400.0, through: 90, by: -10) {
      fixes.append(try fix(second, metres))
      second += 5
    }
    for _ in 0..<360 {
      let jitter = Double.random(in: -20...20, using: &rng)
      let bearing = 90 + Double.random(in: -3...3, using: &rng)
      fixes.append(try fix(second, 85 + jitter, bearing: bearing, accuracy: Double.random(in: 10...20, using: &rng)))
      second += 5
    }
    for metres in stride(from: 90.0, through: 400, by: 10) {
      fixes.append(try fix(second, metres))
      second += 5
    }
    return fixes
  }

  @Test func jitterAroundTheEdgeGivesOneEnterOneDwellOneExit() throws {
    let track = try Self.jitterTrack()
    // The jitter is real: judged by the centre alone, the person would cross the edge many times.
    var naiveCrossings = 0
    for (previous, next) in zip(track, track.dropFirst())
    where Self.fence.contains(previous.coordinate) != Self.fence.contains(next.coordinate) {
      naiveCrossings += 1
    }
    #expect(naiveCrossings > 10)
    let (state, events) = Self.run(track)
    #expect(events.map(\.kind) == [.enter, .dwell, .exit])
    #expect(state.presence == .outside)
    // Dwell five minutes after the enter.
    #expect(events[1].timestamp - events[0].timestamp >= 300_000)
    #expect(events[1].timestamp - events[0].timestamp < 310_000)
  }

  @Test func oneFixOutsideWithinTheMarginDecidesNoExitButTwoDo() throws {
    let inside = try [Self.fix(0, 400), Self.fix(10, 0), Self.fix(20, 10)]
    // Wholly outside (115 − 10 ≥ 100) but not by the 30 m margin, then back inside: no exit.
    let (_, stay) = Self.run(inside + [try Self.fix(30, 115), try Self.fix(40, 20)])
    #expect(stay.map(\.kind) == [.enter])
    // A straddling fix breaks the streak.
    let (_, broken) = Self.run(inside + [try Self.fix(30, 115), try Self.fix(40, 100), try Self.fix(50, 115)])
    #expect(broken.map(\.kind) == [.enter])
    // Two in a row: exit at the second.
    let (_, two) = Self.run(inside + [try Self.fix(30, 115), try Self.fix(40, 118)])
    #expect(two.map(\.kind) == [.enter, .exit])
    #expect(two.last?.timestamp == Self.start + 40_000)
    // One fix beyond radius + accuracy + margin (100 + 10 + 30): exit at once.
    let (_, far) = Self.run(inside + [try Self.fix(30, 141)])
    #expect(far.map(\.kind) == [.enter, .exit])
    // The margin is 20 % of a large fence's radius.
    let large = Geofence.circle(center: Self.home, radius: 1_000)
    #expect(GeofenceRules().hysteresis(of: large) == 200)
    #expect(GeofenceRules().hysteresis(of: Self.fence) == 30)
    let (_, largeEvents) = Self.run(
      [try Self.fix(0, 2_000), try Self.fix(10, 0), try Self.fix(20, 1_150)], shape: large)
    #expect(largeEvents.map(\.kind) == [.enter])
  }

  @Test func straddlingFixesDecideNothing() throws {
    // Centre inside but accuracy circle across the edge: no enter.
    let (state, events) = Self.run([try Self.fix(0, 400), try Self.fix(10, 80, accuracy: 50)])
    #expect(events.isEmpty)
    #expect(state.presence == .outside)
    // Never decisive: presence stays unknown.
    let (unknown, none) = Self.run([try Self.fix(0, 100, accuracy: 30), try Self.fix(10, 90, accuracy: 30)])
    #expect(none.isEmpty && unknown.presence == .unknown)
  }

  @Test func tunnelGapResetsInsteadOfInventingACrossing() throws {
    let rules = GeofenceRules(maximumGap: 600_000)
    // Inside, then a 20-minute gap (a tunnel under the fence's edge), then far away: no exit is invented.
    let (afterGap, gapEvents) = Self.run(
      [try Self.fix(0, 400), try Self.fix(10, 0), try Self.fix(1_210, 2_000)], rules: rules)
    #expect(gapEvents.map(\.kind) == [.enter])
    #expect(afterGap.presence == .outside)
    // Outside, gap, inside: no enter either; dwell counts from the first fix after the gap.
    let (inside, entered) = Self.run(
      [try Self.fix(0, 400), try Self.fix(1_210, 0), try Self.fix(1_510, 0)], rules: rules)
    #expect(entered.map(\.kind) == [.dwell])
    #expect(inside.since == Self.start + 1_210_000)
    // A gap just within the limit keeps the state.
    let (_, kept) = Self.run([try Self.fix(0, 400), try Self.fix(600, 0)], rules: rules)
    #expect(kept.map(\.kind) == [.enter])
  }

  @Test func fastDriveThrough() throws {
    // 30 m/s along a chord through the centre, a fix every 2 s: one enter, one exit.
    let drive = try (0...40).map { step -> LocationFix in
      let metres = -600 + Double(step) * 30
      return try Self.fix(step * 2, abs(metres), bearing: metres < 0 ? 270 : 90, accuracy: 15)
    }
    let (state, events) = Self.run(drive)
    #expect(events.map(\.kind) == [.enter, .exit])
    #expect(state.presence == .outside)
    // A fix every 10 s (300 m apart) jumps over the fence: nothing is invented.
    let sparse = try (0...4).map { step -> LocationFix in
      let metres = -600 + Double(step) * 300
      return try Self.fix(step * 10, abs(metres) + (metres == 0 ? 150 : 0), bearing: metres < 0 ? 270 : 90)
    }
    #expect(Self.run(sparse).events.isEmpty)
  }

  @Test func duplicatesAndOutOfOrderFixesNeverRepeatAnEvent() throws {
    let track = try Self.jitterTrack(seed: 11)
    let expected = Self.run(track).events
    #expect(expected.map(\.kind) == [.enter, .dwell, .exit])
    // Every fix delivered twice.
    #expect(Self.run(track.flatMap { [$0, $0] }).events == expected)
    // Batches delivered late and shuffled: older fixes are ignored, no event happens twice.
    var rng = SplitMix64(seed: 3)
    var shuffled: [LocationFix] = []
    for batch in stride(from: 0, to: track.count, by: 8) {
      shuffled += track[batch..<min(batch + 8, track.count)].shuffled(using: &rng)
    }
    shuffled += track.prefix(50)
    let events = Self.run(shuffled).events
    for kind in GeofenceEventKind.allCases {
      #expect(events.filter { $0.kind == kind }.count <= 1)
    }
    #expect(events.map(\.kind).first == .enter)
    #expect(events.map(\.timestamp) == events.map(\.timestamp).sorted())
  }

  @Test func polygonFence() throws {
    // A 200 m square around home.
    let corners = try [(-100.0, -100.0), (-100, 100), (100, 100), (100, -100)].map { north, east in
      try Self.home.destination(bearing: 0, distance: north).destination(bearing: 90, distance: east)
    }
    let square = Geofence.polygon(Polygon(corners))
    try GeofenceRules().validate(square)
    let (_, events) = Self.run(
      [try Self.fix(0, 400), try Self.fix(10, 50), try Self.fix(20, 95, accuracy: 10), try Self.fix(30, 300)],
      shape: square)
    #expect(events.map(\.kind) == [.enter, .exit])
  }

  @Test func deviceReportedTransitionsAreNotDoubled() throws {
    let rules = GeofenceRules()
    // The device reports the enter first: the server's fix inside adds nothing.
    let outside = Self.run([try Self.fix(0, 400)]).state
    let reported = rules.applyReported(.enter, at: Self.start + 5_000, to: outside)
    #expect(reported.recorded)
    #expect(rules.evaluate(try Self.fix(10, 0), in: Self.fence, state: reported.state).events.isEmpty)
    // The server saw it first: the device's report is not recorded again.
    let entered = Self.run([try Self.fix(0, 400), try Self.fix(10, 0)]).state
    #expect(!rules.applyReported(.enter, at: Self.start + 12_000, to: entered).recorded)
    // A report older than the state's last change is stale.
    #expect(!rules.applyReported(.exit, at: Self.start + 5_000, to: entered).recorded)
    #expect(rules.applyReported(.exit, at: Self.start + 20_000, to: entered).recorded)
  }

  @Test func shapesAreValidated() {
    let rules = GeofenceRules()
    #expect(throws: GeofenceShapeError.radiusOutOfRange(24, allowed: 25...50_000)) {
      try rules.validate(.circle(center: Self.home, radius: 24))
    }
    #expect(throws: GeofenceShapeError.self) { try rules.validate(.circle(center: Self.home, radius: 50_001)) }
    #expect(throws: GeofenceShapeError.self) { try rules.validate(.circle(center: Self.home, radius: .nan)) }
    let bowTie = Polygon([
      Coordinate(uncheckedLatitude: 0, longitude: 0), Coordinate(uncheckedLatitude: 1, longitude: 1),
      Coordinate(uncheckedLatitude: 1, longitude: 0), Coordinate(uncheckedLatitude: 0, longitude: 1),
    ])
    #expect(throws: GeofenceShapeError.self) { try rules.validate(.polygon(bowTie)) }
  }
}
