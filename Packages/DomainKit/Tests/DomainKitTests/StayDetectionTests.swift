import DomainKit
import DomainKitTesting
import Foundation
import GeoKit
import Testing

/// `VisitDetector` against the labelled corpus, and the situations the corpus is made of, one by one.
struct StayDetectionTests {
  static let home = Coordinate(uncheckedLatitude: 50.45, longitude: 30.52)
  static let minute: Int64 = 60_000

  /// A fix `metres` north of `home` at `minutes`.
  static func fix(_ minutes: Double, north metres: Double = 0, accuracy: Double? = 10) throws -> LocationFix {
    let point = SyntheticTrack.destination(from: home, bearing: 0, distance: metres)
    return try LocationFix(
      timestamp: Int64(minutes * 60_000), latitude: point.latitude, longitude: point.longitude,
      horizontalAccuracy: accuracy)
  }

  @Test func theGeneratedCorpusReachesNinetyFivePercentPrecisionAndRecall() {
    let tracks = StayCorpus.tracks(count: 8, days: 7)
    #expect(tracks.reduce(0) { $0 + $1.stays.count } > 200)
    let score = StayCorpus.score(VisitDetector(), on: tracks)
    #expect(score.precision >= 0.95, "\(score)")
    #expect(score.recall >= 0.95, "\(score)")
  }

  @Test func theCorpusIsTheSameForTheSameSeedAndKnowsItsStays() {
    let first = StayCorpus.track(index: 3, days: 2, seed: 7)
    let again = StayCorpus.track(index: 3, days: 2, seed: 7)
    #expect(first.fixes == again.fixes && first.stays == again.stays)
    #expect(first.fixes != StayCorpus.track(index: 3, days: 2, seed: 8).fixes)
    // Time order, true stays of ten minutes or more, consecutive stays at least 400 m apart; nights at home.
    #expect(zip(first.fixes, first.fixes.dropFirst()).allSatisfy { $0.timestamp <= $1.timestamp })
    #expect(first.stays.allSatisfy { $0.departure - $0.arrival >= 10 * Self.minute })
    #expect(
      zip(first.stays, first.stays.dropFirst()).allSatisfy {
        $0.departure <= $1.arrival && $0.center.haversineDistance(to: $1.center) >= 400
      })
    #expect(first.stays.first?.role == .home && first.stays.last?.role == .home)
    #expect(first.stays.contains { $0.role == .work })
  }

  @Test func aDetectionMatchesWhenItOverlapsHalfOfEachAndLiesWithinTheRadius() {
    let stay = LabelledStay(center: Self.home, arrival: 0, departure: 60 * Self.minute, role: .home)
    func visit(_ from: Int64, _ to: Int64, north: Double = 0) -> Visit {
      Visit(
        location: SyntheticTrack.destination(from: Self.home, bearing: 0, distance: north),
        arrival: from * Self.minute, departure: to * Self.minute, fixCount: 2)
    }
    #expect(StayScore.matches(visit(30, 60), stay))
    #expect(!StayScore.matches(visit(31, 60), stay))  // 29 of 60 minutes
    #expect(!StayScore.matches(visit(0, 121), stay))  // 60 of 121 minutes of the detection
    #expect(StayScore.matches(visit(0, 60, north: 99), stay))
    #expect(!StayScore.matches(visit(0, 60, north: 101), stay))
    let score = StayScore(detected: [visit(0, 50), visit(50, 60), visit(200, 260)], truth: [stay])
    #expect(score == StayScore(truth: 1, detected: 3, matched: 1))
    #expect(score.precision == 1.0 / 3 && score.recall == 1)
  }

  @Test func aPhoneAsleepAtHomeForHoursStillStaysThere() throws {
    // Two fixes at home three hours apart, then a walk away.
    let fixes =
      try [Self.fix(0), Self.fix(180, north: 20)]
      + (1...10).map {
        try Self.fix(180 + Double($0) / 2, north: 100 + Double($0) * 60)
      }
    let visits = VisitDetector().visits(in: fixes)
    #expect(visits.count == 1)
    #expect(visits.first?.arrival == 0 && visits.first?.departure == 180 * Self.minute)
  }

  @Test func anOutlierOrAJitteredFirstFixDoesNotSplitAStay() throws {
    // The first fix 70 m north, the rest around home and 60 m south; one fix 300 m away (multipath) in the middle.
    var fixes = [try Self.fix(0, north: 70)]
    for minute in 1...40 {
      fixes.append(try Self.fix(Double(minute), north: minute == 20 ? 300 : (minute % 2 == 0 ? -60 : 0)))
    }
    let visits = VisitDetector().visits(in: fixes)
    #expect(visits.count == 1)
    #expect(visits.first?.arrival == 0 && visits.first?.departure == 40 * Self.minute)
    #expect(visits.first?.fixCount == 40)
    #expect((visits.first?.location.haversineDistance(to: Self.home)).map { $0 < 30 } == true)
  }

  @Test func aLongerExcursionEndsTheStayAndAShortStopIsNoStay() throws {
    var fixes: [LocationFix] = []
    for minute in 0...10 { fixes.append(try Self.fix(Double(minute))) }
    // Three minutes 500 m away, then back: two stays at home, not one.
    for minute in 11...14 { fixes.append(try Self.fix(Double(minute), north: 500)) }
    for minute in 15...30 { fixes.append(try Self.fix(Double(minute))) }
    // A three-minute stop 2 km away is no stay.
    for minute in 31...34 { fixes.append(try Self.fix(Double(minute), north: 2_000)) }
    let visits = VisitDetector().visits(in: fixes)
    #expect(visits.map(\.arrival) == [0, 15 * Self.minute])
    #expect(visits.map(\.departure) == [10 * Self.minute, 30 * Self.minute])
  }

  @Test func lapsOfARunningTrackForAnHourAreOneStay() throws {
    // A fix a second on a circle of 75 m radius: never within the core, always within the radius.
    let fixes = try (0..<3_600).map { second in
      let point = SyntheticTrack.destination(from: Self.home, bearing: Double(second % 360), distance: 75)
      return try LocationFix(timestamp: Int64(second) * 1000, latitude: point.latitude, longitude: point.longitude)
    }
    let visits = VisitDetector().visits(in: fixes)
    #expect(visits.count == 1 && visits.first?.fixCount == 3_600)
    #expect((visits.first?.location.haversineDistance(to: Self.home)).map { $0 < 5 } == true)
  }

  @Test func aGapWhileMovingIsNoStay() throws {
    // A drive: a fix, twenty minutes with none (a tunnel, a flat battery), a fix 15 km on.
    let fixes = try [
      Self.fix(0), Self.fix(0.5, north: 200), Self.fix(20.5, north: 15_000), Self.fix(21, north: 15_300),
    ]
    #expect(VisitDetector().visits(in: fixes).isEmpty)
  }

  @Test func stayAcrossTheAntimeridianHasItsCentreThere() throws {
    let fixes = try (0...10).map {
      try LocationFix(
        timestamp: Int64($0) * Self.minute, latitude: -17.0, longitude: $0 % 2 == 0 ? 179.9997 : -179.9997)
    }
    let visits = VisitDetector().visits(in: fixes)
    #expect(visits.count == 1)
    #expect((visits.first?.location.longitude).map { abs(abs($0) - 180) < 0.001 } == true)
  }
}
