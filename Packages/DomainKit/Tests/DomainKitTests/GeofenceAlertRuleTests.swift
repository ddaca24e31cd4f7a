import Foundation
import Testing

@testable import DomainKit

/// ``GeofenceAlertRule``: which events of a fence send alerts, by kind, person, day and hours in the fence's zone.
@Suite struct GeofenceAlertRuleTests {
  static let ann = UserID("ann")
  static let bob = UserID("bob")

  /// UTC ms of an ISO 8601 UTC time such as `2026-03-28T07:30:00Z`.
  static func utc(_ text: String) throws -> Int64 {
    let date = try #require(ISO8601DateFormatter().date(from: text))
    return Int64(date.timeIntervalSince1970 * 1000)
  }

  @Test func anEmptyRuleAllowsEverything() throws {
    let rule = try GeofenceAlertRule().validated()
    #expect(rule.allowsEverything)
    for kind in GeofenceEventKind.allCases {
      #expect(rule.allows(kind, of: Self.bob, at: try Self.utc("2026-11-29T03:00:00Z")))
    }
  }

  @Test func kindsAndPeopleLimitTheAlerts() throws {
    let rule = try GeofenceAlertRule(kinds: [.exit, .enter, .enter], people: [Self.bob]).validated()
    #expect(rule.kinds == [.enter, .exit])
    let time = try Self.utc("2026-11-29T12:00:00Z")
    #expect(rule.allows(.enter, of: Self.bob, at: time))
    #expect(rule.allows(.exit, of: Self.bob, at: time))
    #expect(!rule.allows(.dwell, of: Self.bob, at: time))
    #expect(!rule.allows(.enter, of: Self.ann, at: time))
  }

  @Test func hoursAreReadOnTheFencesWallClock() throws {
    // 08:00–09:00 in New York (UTC−5 in November): 13:30 UTC is 08:30 there.
    let rule = try GeofenceAlertRule(
      hours: DailyHours(from: "08:00", until: "09:00"), timeZone: "America/New_York"
    ).validated()
    #expect(rule.allows(.enter, of: Self.bob, at: try Self.utc("2026-11-27T13:30:00Z")))
    #expect(!rule.allows(.enter, of: Self.bob, at: try Self.utc("2026-11-27T08:30:00Z")))
    #expect(!rule.allows(.enter, of: Self.bob, at: try Self.utc("2026-11-27T14:00:00Z")), "until is excluded")
    #expect(rule.allows(.enter, of: Self.bob, at: try Self.utc("2026-11-27T13:00:00Z")), "from is included")
  }

  /// Berlin moves to summer time on 2026-03-29 at 01:00 UTC: the same 08:00–09:00 local window is 07:00–08:00 UTC the
  /// day before and 06:00–07:00 UTC that day.
  @Test func hoursFollowTheSpringForward() throws {
    let rule = try GeofenceAlertRule(
      hours: DailyHours(from: "08:00", until: "09:00"), timeZone: "Europe/Berlin"
    ).validated()
    #expect(rule.allows(.enter, of: Self.bob, at: try Self.utc("2026-03-28T07:30:00Z")))  // 08:30 CET
    #expect(!rule.allows(.enter, of: Self.bob, at: try Self.utc("2026-03-29T07:30:00Z")))  // 09:30 CEST
    #expect(rule.allows(.enter, of: Self.bob, at: try Self.utc("2026-03-29T06:30:00Z")))  // 08:30 CEST
  }

  /// On 2026-10-25 Berlin's 02:30 happens twice (00:30 UTC in summer time, 01:30 UTC in winter time): both are in a
  /// 02:00–03:00 window, and 02:30 UTC (03:30 local) is not.
  @Test func hoursFollowTheFallBack() throws {
    let rule = try GeofenceAlertRule(
      hours: DailyHours(from: "02:00", until: "03:00"), timeZone: "Europe/Berlin"
    ).validated()
    #expect(rule.allows(.exit, of: Self.bob, at: try Self.utc("2026-10-25T00:30:00Z")))
    #expect(rule.allows(.exit, of: Self.bob, at: try Self.utc("2026-10-25T01:30:00Z")))
    #expect(!rule.allows(.exit, of: Self.bob, at: try Self.utc("2026-10-25T02:30:00Z")))
  }

  /// Friday 22:00–06:00 in London (UTC in winter): Friday late evening and Saturday early morning alert; Friday early
  /// morning (Thursday's night) and Saturday late evening do not.
  @Test func hoursAcrossMidnightBelongToTheDayTheyStart() throws {
    let rule = try GeofenceAlertRule(
      days: [.fri], hours: DailyHours(from: "22:00", until: "06:00"), timeZone: "Europe/London"
    ).validated()
    #expect(rule.allows(.enter, of: Self.bob, at: try Self.utc("2026-11-27T23:00:00Z")))  // Fri 23:00
    #expect(rule.allows(.enter, of: Self.bob, at: try Self.utc("2026-11-28T05:59:00Z")))  // Sat 05:59
    #expect(!rule.allows(.enter, of: Self.bob, at: try Self.utc("2026-11-28T06:00:00Z")))  // Sat 06:00
    #expect(!rule.allows(.enter, of: Self.bob, at: try Self.utc("2026-11-27T03:00:00Z")))  // Fri 03:00
    #expect(!rule.allows(.enter, of: Self.bob, at: try Self.utc("2026-11-28T23:00:00Z")))  // Sat 23:00
    #expect(!rule.allows(.enter, of: Self.bob, at: try Self.utc("2026-11-27T12:00:00Z")))  // Fri noon
  }

  /// Days alone are local days: 23:30 UTC on a Saturday is already Sunday in Tokyo.
  @Test func daysAreLocalDays() throws {
    let rule = try GeofenceAlertRule(days: [.sun], timeZone: "Asia/Tokyo").validated()
    #expect(rule.allows(.dwell, of: Self.bob, at: try Self.utc("2026-11-28T23:30:00Z")))
    #expect(!rule.allows(.dwell, of: Self.bob, at: try Self.utc("2026-11-28T12:00:00Z")))
  }

  @Test func badRulesAreRefusedWithTheirReason() throws {
    #expect(throws: GeofenceAlertRuleError.unknownTimeZone("Mars/Olympus")) {
      try GeofenceAlertRule(days: [.mon], timeZone: "Mars/Olympus").validated()
    }
    #expect(throws: GeofenceAlertRuleError.missingTimeZone) {
      try GeofenceAlertRule(hours: DailyHours(from: "08:00", until: "09:00")).validated()
    }
    for (from, until) in [("8:00", "09:00"), ("24:00", "09:00"), ("08:60", "09:00"), ("08:00", "24:01"), ("x", "y")] {
      #expect(throws: GeofenceAlertRuleError.self) {
        try GeofenceAlertRule(hours: DailyHours(from: from, until: until), timeZone: "UTC").validated()
      }
    }
    #expect(throws: GeofenceAlertRuleError.self) {
      try GeofenceAlertRule(hours: DailyHours(from: "00:00", until: "24:00"), timeZone: "UTC").validated()
    }
    #expect(throws: GeofenceAlertRuleError.emptyList(field: "kinds")) { try GeofenceAlertRule(kinds: []).validated() }
    #expect(throws: GeofenceAlertRuleError.emptyList(field: "people")) {
      try GeofenceAlertRule(people: []).validated()
    }
    // Until the end of the day is allowed.
    let evening = try GeofenceAlertRule(hours: DailyHours(from: "18:00", until: "24:00"), timeZone: "UTC").validated()
    #expect(evening.allows(.enter, of: Self.bob, at: try Self.utc("2026-11-27T23:59:00Z")))
    #expect(!evening.allows(.enter, of: Self.bob, at: try Self.utc("2026-11-27T00:00:00Z")))
  }

  @Test func theRuleReadsItsWireForm() throws {
    let json = """
      {"kinds":["enter"],"days":["sat","sun"],"hours":{"from":"07:00","until":"19:30"},"timeZone":"Europe/Paris",
       "people":["bob"]}
      """
    let rule = try JSONDecoder().decode(GeofenceAlertRule.self, from: Data(json.utf8))
    #expect(
      rule
        == GeofenceAlertRule(
          kinds: [.enter], days: [.sat, .sun], hours: DailyHours(from: "07:00", until: "19:30"),
          timeZone: "Europe/Paris", people: [Self.bob]))
  }
}
