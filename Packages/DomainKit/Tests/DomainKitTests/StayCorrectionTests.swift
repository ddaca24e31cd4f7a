import DomainKit
import DomainKitTesting
import Foundation
import GeoKit
import Testing

/// Merges, splits and renames kept as times and places, so they hold when stays are detected again.
struct StayCorrectionTests {
  static let minute: Int64 = 60_000
  static let home = Coordinate(uncheckedLatitude: 50.45, longitude: 30.52)

  /// A fix `metres` north of home at `minutes`.
  static func fix(_ minutes: Int64, north metres: Double = 0) throws -> LocationFix {
    let point = SyntheticTrack.destination(from: home, bearing: 0, distance: metres)
    return try LocationFix(timestamp: minutes * minute, latitude: point.latitude, longitude: point.longitude)
  }

  /// 20 minutes at home, a 9-minute walk to a café 1 km north (110 m a minute), 31 minutes there, a walk back, 20
  /// minutes at home.
  static func morning() throws -> [LocationFix] {
    var fixes: [LocationFix] = []
    for minute: Int64 in 0...20 { fixes.append(try fix(minute)) }
    for step in 1...9 { fixes.append(try fix(20 + Int64(step), north: Double(step) * 110)) }
    for minute: Int64 in 30...60 { fixes.append(try fix(minute, north: 1_000)) }
    for step in 1...9 { fixes.append(try fix(60 + Int64(step), north: 1_000 - Double(step) * 110)) }
    for minute: Int64 in 70...90 { fixes.append(try fix(minute)) }
    return fixes
  }

  @Test func withoutCorrectionsTheMorningHasThreeStays() throws {
    let visits = VisitDetector().visits(in: try Self.morning())
    #expect(visits.map(\.arrival) == [0, 29, 69].map { $0 * Self.minute })
    #expect(visits.allSatisfy { $0.name == nil })
  }

  @Test func aMergeJoinsTheStaysItsPeriodOverlaps() throws {
    let merged = VisitDetector().visits(
      in: try Self.morning(), corrections: [.merge(from: 10 * Self.minute, to: 40 * Self.minute)])
    #expect(merged.map(\.arrival) == [0, 69 * Self.minute])
    #expect(merged.first?.departure == 60 * Self.minute)
    #expect(merged.first?.fixCount == 21 + 1 + 31)
    // A merge that touches one stay only changes nothing.
    let one = VisitDetector().visits(in: try Self.morning(), corrections: [.merge(from: 0, to: 5 * Self.minute)])
    #expect(one == VisitDetector().visits(in: try Self.morning()))
  }

  @Test func aSplitCutsTheStayThatSpansItsInstant() throws {
    let split = VisitDetector().visits(in: try Self.morning(), corrections: [.split(at: 45 * Self.minute)])
    #expect(split.map(\.arrival) == [0, 29, 46, 69].map { $0 * Self.minute })
    #expect(split[1].departure == 45 * Self.minute && split[2].departure == 60 * Self.minute)
    // An instant between stays cuts nothing.
    #expect(
      VisitDetector().visits(in: try Self.morning(), corrections: [.split(at: 25 * Self.minute + 30_000)]).count == 3)
  }

  @Test func aRenameNamesEveryStayAtThatPlace() throws {
    let named = VisitDetector().visits(
      in: try Self.morning(),
      corrections: [
        .rename(location: Self.home, name: "Old name"),
        .rename(location: SyntheticTrack.destination(from: Self.home, bearing: 90, distance: 30), name: "Home"),
      ])
    #expect(named.map(\.name) == ["Home", nil, "Home"])
  }

  @Test func correctionsHoldWhenTheStaysAreDetectedAgainFromMoreFixes() throws {
    let corrections: [StayCorrection] = [
      .split(at: 80 * Self.minute),
      .rename(location: SyntheticTrack.destination(from: Self.home, bearing: 0, distance: 1_000), name: "Café"),
    ]
    let before = VisitDetector().visits(in: try Self.morning(), corrections: corrections)
    // An import adds fixes in between (every 30 s): the detected stays change, the corrections still apply.
    var more = try Self.morning()
    for fix in try Self.morning() {
      more.append(try LocationFix(timestamp: fix.timestamp + 30_000, latitude: fix.latitude, longitude: fix.longitude))
    }
    more.sort { $0.timestamp < $1.timestamp }
    let after = VisitDetector().visits(in: more, corrections: corrections)
    #expect(after.map(\.fixCount).reduce(0, +) > before.map(\.fixCount).reduce(0, +))
    for visits in [before, after] {
      #expect(visits.map(\.name) == [nil, "Café", nil, nil])
      #expect(visits.count == 4 && visits[2].departure <= 80 * Self.minute && visits[3].arrival > 80 * Self.minute)
    }
  }

  @Test func correctionsAtTheEndsOfTimeDoNotTrap() throws {
    let morning = try Self.morning()
    let all = VisitDetector().visits(in: morning, corrections: [.merge(from: .min, to: .max)])
    #expect(all.count == 1 && all.first?.fixCount == VisitDetector().visits(in: morning).map(\.fixCount).reduce(0, +))
    #expect(VisitDetector().visits(in: morning, corrections: [.split(at: .max), .split(at: .min)]).count == 3)
    let hostile = try [Int64.min, Int64.max].map { try LocationFix(timestamp: $0, latitude: 0, longitude: 0) }
    #expect(VisitDetector().visits(in: hostile, corrections: [.merge(from: .min, to: .max), .split(at: 0)]).count == 2)
  }

  @Test func correctionsRoundTripTheirWireFormAndRefuseNonsense() throws {
    let corrections: [StayCorrection] = [
      .merge(from: 1, to: 2), .split(at: 3), .rename(location: Self.home, name: "Home"),
    ]
    let json = try JSONEncoder().encode(corrections)
    #expect(try JSONDecoder().decode([StayCorrection].self, from: json) == corrections)
    #expect(String(decoding: json, as: UTF8.self).contains(#""kind":"merge""#))
    #expect(throws: DecodingError.self) {
      try JSONDecoder().decode(StayCorrection.self, from: Data(#"{"kind":"delete","at":1}"#.utf8))
    }
    #expect(throws: StayCorrection.Invalid.emptyPeriod) { try StayCorrection.merge(from: 2, to: 1).validated() }
    #expect(throws: StayCorrection.Invalid.name) {
      try StayCorrection.rename(location: Self.home, name: " ").validated()
    }
    #expect(
      try StayCorrection.rename(location: Self.home, name: " Home\n").validated()
        == .rename(location: Self.home, name: "Home"))
  }
}
