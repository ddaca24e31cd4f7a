import DomainKit
import DomainKitTesting
import Foundation
import GeoKit
import Testing

/// Home from the nights, work from weekday daytime, in local time.
struct HomeWorkTests {
  static let hour: Int64 = 3_600_000

  @Test func theCorpusPeopleHomeAndWorkAreFoundFromTheirDetectedStays() {
    for track in StayCorpus.tracks(count: 8, days: 7) {
      let visits = VisitDetector().visits(in: track.fixes)
      let proposal = HomeWorkRules().propose(from: visits, timeZone: track.timeZone)
      #expect((proposal.home?.location.haversineDistance(to: track.home)).map { $0 < 100 } == true, "\(track.name)")
      #expect((proposal.work?.location.haversineDistance(to: track.work)).map { $0 < 100 } == true, "\(track.name)")
      #expect((proposal.home?.days).map { $0 >= 7 } == true, "\(track.name)")
      #expect(proposal.work?.days == 5, "\(track.name)")
    }
  }

  /// Stays at `place` from `from` to `to` hours after Monday 2026-11-02 00:00 UTC.
  static func stay(_ place: Coordinate, _ from: Int64, _ to: Int64) -> Visit {
    let monday: Int64 = 1_793_577_600_000
    return Visit(location: place, arrival: monday + from * hour, departure: monday + to * hour, fixCount: 10)
  }

  /// Whether `place` is proposed within a metre of `coordinate`.
  static func at(_ place: ProposedPlace?, _ coordinate: Coordinate) -> Bool {
    (place?.location.haversineDistance(to: coordinate)).map { $0 < 1 } == true
  }

  @Test func nightsAndWeekdaysAreCountedInLocalTime() {
    let a = Coordinate(uncheckedLatitude: 35.68, longitude: 139.69)
    let b = SyntheticTrack.destination(from: a, bearing: 90, distance: 5_000)
    // In UTC, a is where the person is 13:00–21:00 and b 23:00–09:00; in Tokyo (UTC+9) a is the night (22–06) and b
    // the working day (08–18).
    var visits: [Visit] = []
    for day in Int64(0)..<3 {
      visits.append(Self.stay(a, day * 24 + 13, day * 24 + 21))
      visits.append(Self.stay(b, day * 24 + 23, day * 24 + 33))
    }
    let tokyo = HomeWorkRules().propose(from: visits, timeZone: TimeZone(identifier: "Asia/Tokyo")!)
    #expect(Self.at(tokyo.home, a) && Self.at(tokyo.work, b))
    let utc = HomeWorkRules().propose(from: visits, timeZone: .gmt)
    #expect(Self.at(utc.home, b) && Self.at(utc.work, a))
  }

  @Test func oneNightOrAWeekendIsNotEnough() {
    let a = Coordinate(uncheckedLatitude: 50.45, longitude: 30.52)
    let b = SyntheticTrack.destination(from: a, bearing: 0, distance: 3_000)
    let one = HomeWorkRules().propose(from: [Self.stay(a, 20, 31), Self.stay(b, 32, 40)], timeZone: .gmt)
    #expect(one == HomeWorkProposal())
    // Saturday and Sunday daytime at b is not work.
    let weekend = HomeWorkRules().propose(
      from: [
        Self.stay(a, 5 * 24 - 4, 5 * 24 + 8), Self.stay(b, 5 * 24 + 9, 5 * 24 + 17),
        Self.stay(a, 5 * 24 + 18, 6 * 24 + 8),
        Self.stay(b, 6 * 24 + 9, 6 * 24 + 17),
      ], timeZone: .gmt)
    #expect(Self.at(weekend.home, a) && weekend.home?.days == 2 && weekend.work == nil, "\(weekend)")
  }

  @Test func hostileTimesAreLeftOut() {
    let a = Coordinate(uncheckedLatitude: 0, longitude: 0)
    let visits = [
      Visit(location: a, arrival: .min, departure: .max, fixCount: 2),
      Visit(location: a, arrival: 0, departure: Timestamp.plausibleRange.upperBound, fixCount: 2),
    ]
    #expect(HomeWorkRules().propose(from: visits, timeZone: .gmt) == HomeWorkProposal())
  }
}
