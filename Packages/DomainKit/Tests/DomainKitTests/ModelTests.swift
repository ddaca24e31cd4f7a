import DomainKitTesting
import Foundation
import GeoKit
import Testing

@testable import DomainKit

@Suite struct TimestampTests {
  @Test func parsesAndFormatsISO8601() {
    #expect(Timestamp.parseISO8601("1970-01-01T00:00:00Z") == 0)
    #expect(Timestamp.parseISO8601("2009-10-17T18:37:26Z") == 1_255_804_646_000)
    #expect(Timestamp.parseISO8601("2022-01-12T17:18:24.190Z") == 1_642_007_904_190)
    #expect(Timestamp.parseISO8601("2022-01-12T19:18:24.19+02:00") == 1_642_007_904_190)
    #expect(Timestamp.parseISO8601("2022-01-12T12:18:24.190-0500") == 1_642_007_904_190)
    #expect(Timestamp.parseISO8601("1969-12-31T23:59:59.5Z") == -500)
    #expect(Timestamp.parseISO8601("2023-02-29T00:00:00Z") == nil)
    #expect(Timestamp.parseISO8601("2022-13-01T00:00:00Z") == nil)
    #expect(Timestamp.parseISO8601("garbage") == nil)
    #expect(Timestamp.parseISO8601("2022-01-12T17:18:24Zjunk") == nil)
    #expect(Timestamp.formatISO8601(1_642_007_904_190) == "2022-01-12T17:18:24.190Z")
    #expect(Timestamp.formatISO8601(-500) == "1969-12-31T23:59:59.500Z")
    #expect(Timestamp.formatISO8601(0, alwaysMilliseconds: false) == "1970-01-01T00:00:00Z")
  }

  @Test func roundTripsManyInstants() {
    var rng = SplitMix64(seed: 7)
    for _ in 0..<2000 {
      let ms = Int64(bitPattern: rng.next() % 8_000_000_000_000) - 1_000_000_000_000
      #expect(Timestamp.parseISO8601(Timestamp.formatISO8601(ms)) == ms)
    }
  }
}

@Suite struct LocationFixTests {
  static func fix(_ t: Int64 = 1_700_000_000_000, lat: Double = 50.45, lon: Double = 30.52, acc: Double? = 5)
    throws -> LocationFix
  {
    try LocationFix(deviceID: "d1", timestamp: t, latitude: lat, longitude: lon, horizontalAccuracy: acc)
  }

  @Test(arguments: [
    ("latitude", 91.0), ("longitude", -180.5), ("horizontalAccuracy", -1.0), ("verticalAccuracy", -0.1),
    ("speed", -3.0), ("course", 360.5), ("batteryLevel", 101.0), ("batteryLevel", -1.0), ("latitude", Double.nan),
  ])
  func rejectsOutOfRangeFieldsNamingThem(field: String, value: Double) {
    var lat = 10.0
    var lon = 10.0
    var acc: Double?
    var vacc: Double?
    var speed: Double?
    var course: Double?
    var batt: Double?
    switch field {
    case "latitude": lat = value
    case "longitude": lon = value
    case "horizontalAccuracy": acc = value
    case "verticalAccuracy": vacc = value
    case "speed": speed = value
    case "course": course = value
    default: batt = value
    }
    #expect {
      try LocationFix(
        timestamp: 0, latitude: lat, longitude: lon, horizontalAccuracy: acc, verticalAccuracy: vacc, speed: speed,
        course: course, batteryLevel: batt)
    } throws: { ($0 as? FixValidationError)?.field == field }
  }

  @Test func acceptsBoundaries() throws {
    _ = try LocationFix(
      timestamp: 0, latitude: -90, longitude: 180, horizontalAccuracy: 0, course: 360, batteryLevel: 100)
    _ = try LocationFix(timestamp: 0, latitude: 90, longitude: -180, course: 0, batteryLevel: 0)
  }

  @Test func jsonWireNamesAndRoundTrip() throws {
    let fix = try LocationFix(
      deviceID: "phone-1", timestamp: 1_700_000_000_123, latitude: 50.45, longitude: 30.52, horizontalAccuracy: 4,
      verticalAccuracy: 3, altitude: 180, speed: 1.5, speedAccuracy: 0.5, course: 90, floor: 2, batteryLevel: 77,
      batteryState: .charging, kind: .visit, trigger: .region,
      refinedBy: FixID(deviceID: "phone-1", timestamp: 1_700_000_001_000))
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    let json = String(decoding: try encoder.encode(fix), as: UTF8.self)
    #expect(json.contains("\"deviceId\":\"phone-1\""))
    #expect(json.contains("\"timestamp\":1700000000123"))
    #expect(json.contains("\"batteryState\":\"charging\""))
    #expect(json.contains("\"refinedBy\":{\"deviceId\":\"phone-1\",\"timestamp\":1700000001000}"))
    #expect(try JSONDecoder().decode(LocationFix.self, from: Data(json.utf8)) == fix)
  }

  @Test func decodingValidates() {
    let json = #"{"timestamp":1,"latitude":10,"longitude":10,"course":400}"#
    #expect(throws: FixValidationError.self) { try JSONDecoder().decode(LocationFix.self, from: Data(json.utf8)) }
  }

  @Test func identityIsDeviceAndTimestamp() throws {
    let a = try Self.fix(lat: 1)
    let b = try Self.fix(lat: 2)
    #expect(a.id == b.id)
    #expect(a.id != (try Self.fix(1_700_000_000_001)).id)
  }

  @Test func geohashPrefixes() throws {
    // Reference: geohash of (57.64911, 10.40744) is u4pruydqqvj (Wikipedia).
    let fix = try Self.fix(lat: 57.64911, lon: 10.40744)
    #expect(fix.geohashes.all == ["u4", "u4p", "u4pr", "u4pru", "u4pruy"])
    #expect(fix.geohashes.cell(precision: 4) == "u4pr")
  }
}

@Suite struct AccountModelTests {
  @Test func profileCodableWithAudience() throws {
    let profile = Profile(
      userID: "u1", fullName: "Anna", phone: "+380671234567", birthday: CalendarDay(year: 1990, month: 2, day: 28),
      gender: .female, audience: [.phone: .nobody, .fullName: .everyone])
    let data = try JSONEncoder().encode(profile)
    let text = String(decoding: data, as: UTF8.self)
    #expect(text.contains("\"birthday\":\"1990-02-28\""))
    #expect(text.contains("\"userId\":\"u1\""))
    #expect(try JSONDecoder().decode(Profile.self, from: data) == profile)
    #expect(CalendarDay("2023-02-29") == nil)
  }

  /// The `YYYY-MM-DD` form is `printf`'s `%04d-%02d-%02d`, for short, long and negative years too.
  @Test func calendarDayDescriptionIsPrintfs() throws {
    for (year, month, day) in [(2026, 12, 1), (33, 1, 5), (1, 10, 31), (12345, 6, 7), (-5, 3, 9), (-12345, 2, 28)] {
      let calendarDay = try #require(CalendarDay(year: year, month: month, day: day))
      #expect(calendarDay.description == String(format: "%04d-%02d-%02d", year, month, day))
    }
    #expect(CalendarDay("0033-01-05")?.description == "0033-01-05")
  }

  @Test func redaction() {
    let profile = Profile(userID: "u1", fullName: "Anna", phone: "+1", status: "hi")
    let redacted = profile.redacted(keeping: [.fullName])
    #expect(redacted.fullName == "Anna")
    #expect(redacted.phone == nil)
    #expect(redacted.status == nil)
  }

  @Test func standardGroupsCannotBeRenamedOrDeleted() throws {
    var groups = Group.standardGroups(for: "owner")
    #expect(groups.map(\.kind) == [.family, .friends, .blacklist])
    #expect(throws: GroupError.cannotRenameStandardGroup(.family)) { try groups[0].rename(to: "Relatives") }
    #expect(throws: GroupError.cannotDeleteStandardGroup(.blacklist)) { try groups[2].checkDeletable() }
    try groups[1].add("friend")
    #expect(groups[1].members == ["friend"])
    #expect(throws: GroupError.ownerCannotBeMember) { try groups[1].add("owner") }
    var custom = try Group(id: "g", ownerID: "owner", name: "  Climbing  ")
    #expect(custom.name == "Climbing")
    try custom.rename(to: "Hiking")
    try custom.checkDeletable()
    #expect(throws: GroupError.self) { try custom.rename(to: "   ") }
  }

  @Test func sharingStateEncodesDictionariesAsObjects() throws {
    let state = SharingState(paused: false, until: 5, groupUntil: ["g1": 10], viewerGrants: ["v1": 20, "v2": nil])
    let data = try JSONEncoder().encode(state)
    let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
    #expect((object?["groupUntil"] as? [String: Any])?["g1"] as? Int == 10)
    #expect(try JSONDecoder().decode(SharingState.self, from: data) == state)
  }

  @Test func shareDurations() throws {
    let kyiv = try #require(TimeZone(identifier: "Europe/Kyiv"))
    let now = Timestamp.date(try #require(Timestamp.parseISO8601("2026-06-01T10:30:00Z")))
    #expect(ShareDuration.oneHour.expiry(from: now, timeZone: kyiv) == now.addingTimeInterval(3600))
    #expect(ShareDuration.always.expiry(from: now, timeZone: kyiv) == nil)
    let end = try #require(ShareDuration.untilEndOfDay.expiry(from: now, timeZone: kyiv))
    #expect(Timestamp.formatISO8601(Timestamp.milliseconds(end)) == "2026-06-01T21:00:00.000Z")
  }
}
