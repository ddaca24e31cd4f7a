import DomainKitTesting
import Foundation
import GeoKit
import Testing

@testable import DomainKit

@Suite struct ReportingPolicyTests {
  /// A fix `metres` north of a base point (1° latitude ≈ 111 195 m on the GeoKit sphere).
  static func fix(_ seconds: Int64, north metres: Double, acc: Double? = 5) -> LocationFix {
    let degrees = metres / (meanEarthRadius * .pi / 180)
    return try! LocationFix(timestamp: seconds * 1000, latitude: 50 + degrees, longitude: 30, horizontalAccuracy: acc)
  }

  @Test func foregroundSendsEveryFix() {
    var policy = ReportingPolicy(appState: .foreground, profile: .high)
    for i in 0..<5 { #expect(policy.decide(Self.fix(Int64(i) * 2, north: 0)) == .send) }
  }

  @Test func backgroundNeedsTenMetresFromLastSent() {
    var policy = ReportingPolicy(appState: .background, profile: .high)
    #expect(policy.decide(Self.fix(0, north: 0)) == .send)
    #expect(
      policy.decide(Self.fix(10, north: 6))
        == .skip(.tooClose(distance: Self.fix(0, north: 0).distance(to: Self.fix(10, north: 6)), required: 10)))
    // Drift accumulates against the last *sent* fix.
    #expect(policy.decide(Self.fix(20, north: 10.5)) == .send)
    #expect(policy.decide(Self.fix(30, north: 15)) != .send)
  }

  @Test func closedNeedsHundredMetres() {
    var policy = ReportingPolicy(appState: .closed, profile: .medium)
    #expect(policy.decide(Self.fix(0, north: 0)) == .send)
    #expect(policy.decide(Self.fix(60, north: 99)) != .send)
    #expect(policy.decide(Self.fix(120, north: 101)) == .send)
  }

  @Test func significantProfileNeedsFiveHundredMetres() {
    var policy = ReportingPolicy(appState: .foreground, profile: .significant)
    #expect(policy.requiredDistance == 500)
    #expect(policy.decide(Self.fix(0, north: 0, acc: 800)) == .send)
    #expect(policy.decide(Self.fix(60, north: 499, acc: 800)) != .send)
    #expect(policy.decide(Self.fix(120, north: 501, acc: 800)) == .send)
  }

  @Test func dropsFixesWorseThanProfile() {
    var high = ReportingPolicy(profile: .high)
    #expect(high.decide(Self.fix(0, north: 0, acc: 12)) == .skip(.accuracyTooPoor(accuracy: 12, limit: 10)))
    #expect(high.decide(Self.fix(1, north: 0, acc: 10)) == .send)
    var medium = ReportingPolicy(profile: .medium)
    #expect(medium.decide(Self.fix(0, north: 0, acc: 1001)) != .send)
    var low = ReportingPolicy(profile: .low)
    #expect(low.decide(Self.fix(0, north: 0, acc: 2500)) == .send)
    #expect(low.decide(Self.fix(10, north: 0, acc: 3500)) != .send)
    // Unknown accuracy can't be shown to meet a bounded profile: every current profile skips it.
    for profile in AccuracyProfile.allCases {
      var policy = ReportingPolicy(profile: profile)
      let limit = profile.worstAcceptedAccuracy
      #expect(policy.decide(Self.fix(5, north: 0, acc: nil)) == .skip(.accuracyUnknown(limit: limit)))
      #expect(policy.lastSent == nil)
    }
  }

  @Test func hostileTimestampsDoNotOverflowElapsed() throws {
    var policy = ReportingPolicy(appState: .foreground, minimumInterval: 1000)
    let early = try LocationFix(timestamp: .min, latitude: 0, longitude: 0, horizontalAccuracy: 5)
    let late = try LocationFix(timestamp: .max, latitude: 0, longitude: 0, horizontalAccuracy: 5)
    #expect(policy.decide(early) == .send)
    #expect(policy.decide(late) == .send)
  }

  @Test func minimumIntervalAndOrdering() {
    var policy = ReportingPolicy(appState: .foreground, minimumInterval: 5000)
    #expect(policy.decide(Self.fix(10, north: 0)) == .send)
    #expect(policy.decide(Self.fix(12, north: 50)) == .skip(.tooSoon(elapsed: 2000, required: 5000)))
    #expect(policy.decide(Self.fix(9, north: 50)) == .skip(.outOfOrder))
    #expect(policy.decide(Self.fix(15, north: 50)) == .send)
  }

  @Test func syntheticWalkInBackgroundSendsEveryTenMetres() {
    // 1.4 m/s, one fix per second for 100 s: 140 m ⇒ a send roughly every 8th fix (11.2 m).
    let walk = SyntheticTrack.straightLine(
      from: Coordinate(uncheckedLatitude: 50.45, longitude: 30.52), bearing: 45, speed: 1.4, count: 101)
    var background = ReportingPolicy(appState: .background, profile: .high)
    let sent = walk.filter { background.decide($0) == .send }
    #expect(sent.count == 13)
    #expect(zip(sent, sent.dropFirst()).allSatisfy { $0.distance(to: $1) >= 10 })
    var closed = ReportingPolicy(appState: .closed, profile: .high)
    #expect(walk.filter { closed.decide($0) == .send }.count == 2)
  }

  @Test func switchingStateKeepsLastSent() {
    var policy = ReportingPolicy(appState: .foreground)
    #expect(policy.decide(Self.fix(0, north: 0)) == .send)
    policy.appState = .closed
    #expect(policy.decide(Self.fix(10, north: 50)) != .send)
    #expect(policy.lastSent?.timestamp == 0)
  }
}

@Suite struct DatePresetTests {
  func ms(_ text: String) -> Int64 { Timestamp.parseISO8601(text)! }

  @Test func kyivSpringForwardDayIs23Hours() throws {
    // Europe/Kyiv: 2026-03-29 03:00 EET → 04:00 EEST.
    let kyiv = try #require(TimeZone(identifier: "Europe/Kyiv"))
    let now = Timestamp.date(ms("2026-03-29T12:00:00Z"))
    let today = DatePreset.today.range(now: now, timeZone: kyiv)
    #expect(today.start == ms("2026-03-28T22:00:00Z"))
    #expect(today.end == ms("2026-03-29T21:00:00Z"))
    let yesterday = DatePreset.yesterday.range(now: now, timeZone: kyiv)
    #expect(yesterday == TimeRange(start: ms("2026-03-27T22:00:00Z"), end: ms("2026-03-28T22:00:00Z")))
    let thisMonth = DatePreset.thisMonth.range(now: now, timeZone: kyiv)
    #expect(thisMonth == TimeRange(start: ms("2026-02-28T22:00:00Z"), end: ms("2026-03-31T21:00:00Z")))
  }

  @Test func kyivFallBackDayIs25Hours() throws {
    let kyiv = try #require(TimeZone(identifier: "Europe/Kyiv"))
    let now = Timestamp.date(ms("2026-10-25T20:00:00Z"))
    let today = DatePreset.today.range(now: now, timeZone: kyiv)
    #expect(today == TimeRange(start: ms("2026-10-24T21:00:00Z"), end: ms("2026-10-25T22:00:00Z")))
  }

  @Test func newYorkTransitions() throws {
    let ny = try #require(TimeZone(identifier: "America/New_York"))
    // 2026-03-08 02:00 EST → 03:00 EDT.
    let spring = DatePreset.today.range(now: Timestamp.date(ms("2026-03-08T15:00:00Z")), timeZone: ny)
    #expect(spring == TimeRange(start: ms("2026-03-08T05:00:00Z"), end: ms("2026-03-09T04:00:00Z")))
    // 2026-11-01 02:00 EDT → 01:00 EST.
    let fall = DatePreset.today.range(now: Timestamp.date(ms("2026-11-01T15:00:00Z")), timeZone: ny)
    #expect(fall == TimeRange(start: ms("2026-11-01T04:00:00Z"), end: ms("2026-11-02T05:00:00Z")))
    // Just after local midnight the day after the change, "yesterday" is the 25-hour day.
    let yesterday = DatePreset.yesterday.range(now: Timestamp.date(ms("2026-11-02T05:30:00Z")), timeZone: ny)
    #expect(yesterday == fall)
  }

  @Test func monthsAndYears() throws {
    let ny = try #require(TimeZone(identifier: "America/New_York"))
    let now = Timestamp.date(ms("2026-01-15T12:00:00Z"))
    #expect(
      DatePreset.lastMonth.range(now: now, timeZone: ny)
        == TimeRange(start: ms("2025-12-01T05:00:00Z"), end: ms("2026-01-01T05:00:00Z")))
    #expect(
      DatePreset.thisYear.range(now: now, timeZone: ny)
        == TimeRange(start: ms("2026-01-01T05:00:00Z"), end: ms("2027-01-01T05:00:00Z")))
    #expect(
      DatePreset.lastYear.range(now: now, timeZone: ny)
        == TimeRange(start: ms("2025-01-01T05:00:00Z"), end: ms("2026-01-01T05:00:00Z")))
    #expect(DatePreset.allTime.range(now: now, timeZone: ny) == TimeRange(start: nil, end: nil))
    #expect(DatePreset.custom(from: 1, to: 5).range(now: now, timeZone: ny) == TimeRange(start: 1, end: 5))
  }

  @Test func halfOpenAndCodable() throws {
    let range = TimeRange(start: 10, end: 20)
    #expect(range.contains(10) && range.contains(19) && !range.contains(20))
    let data = try JSONEncoder().encode([DatePreset.custom(from: 1, to: 2), .lastMonth])
    #expect(try JSONDecoder().decode([DatePreset].self, from: data) == [.custom(from: 1, to: 2), .lastMonth])
    #expect(DatePreset(name: "thisYear") == .thisYear)
    #expect(DatePreset(name: "nope") == nil)
  }

  @Test func historyFilter() throws {
    let filter = HistoryFilter(range: TimeRange(start: 0, end: 100), minimumAccuracy: 50, kinds: [.movement])
    #expect(filter.matches(try LocationFix(timestamp: 5, latitude: 0, longitude: 0, horizontalAccuracy: 10)))
    #expect(!filter.matches(try LocationFix(timestamp: 5, latitude: 0, longitude: 0, horizontalAccuracy: 60)))
    #expect(!filter.matches(try LocationFix(timestamp: 5, latitude: 0, longitude: 0, kind: .photo)))
    #expect(!filter.matches(try LocationFix(timestamp: 100, latitude: 0, longitude: 0)))
  }
}
