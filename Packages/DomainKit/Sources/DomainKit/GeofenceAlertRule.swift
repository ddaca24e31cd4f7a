import Foundation

/// A day of the week, on the wire by its three-letter English name.
public enum Weekday: String, Sendable, Hashable, Codable, CaseIterable, Comparable {
  case mon, tue, wed, thu, fri, sat, sun

  /// The day of the Gregorian calendar's `weekday` component (1 is Sunday … 7 is Saturday).
  init(calendarWeekday: Int) {
    self = [.sun, .mon, .tue, .wed, .thu, .fri, .sat][((calendarWeekday - 1) % 7 + 7) % 7]
  }

  /// 0 for Monday … 6 for Sunday.
  private var number: Int { Weekday.allCases.firstIndex(of: self) ?? 0 }

  /// The day before.
  var previous: Weekday { Weekday.allCases[(number + 6) % 7] }

  /// Monday first.
  public static func < (lhs: Weekday, rhs: Weekday) -> Bool { lhs.number < rhs.number }
}

/// Daily hours `from`–`until` (`"HH:mm"`, 24-hour, local time): from `from` included to `until` excluded; an
/// `until` earlier than `from` crosses midnight (`"22:00"`–`"06:00"` is the night).
public struct DailyHours: Sendable, Hashable, Codable {
  /// The start, `"HH:mm"`.
  public var from: String
  /// The end (excluded), `"HH:mm"`; `"24:00"` is the end of the day.
  public var until: String

  /// Hours.
  public init(from: String, until: String) {
    self.from = from
    self.until = until
  }

  /// Minutes after midnight of `"HH:mm"` (`"24:00"` only when `endOfDay`), nil when it isn't such a time.
  static func minutes(_ text: String, endOfDay: Bool) -> Int? {
    let parts = text.split(separator: ":", omittingEmptySubsequences: false)
    guard parts.count == 2, parts[0].count == 2, parts[1].count == 2,
      parts.allSatisfy({ $0.allSatisfy { $0.isASCII && $0.isNumber } }),
      let hour = Int(parts[0]), let minute = Int(parts[1]), minute < 60
    else { return nil }
    let value = hour * 60 + minute
    return hour < 24 || (endOfDay && value == 1440) ? value : nil
  }
}

/// Why an alert rule was refused.
public enum GeofenceAlertRuleError: Error, Sendable, Hashable, CustomStringConvertible {
  /// `timeZone` is not an IANA time zone this server knows.
  case unknownTimeZone(String)
  /// Days or hours were given without a time zone to read them in.
  case missingTimeZone
  /// A time of `hours` is not `"HH:mm"`, or `from` equals `until`.
  case invalidHours(String)
  /// An empty list (it would allow nothing; leave the field out to allow everything).
  case emptyList(field: String)

  /// What was wrong and what to send.
  public var description: String {
    switch self {
    case .unknownTimeZone(let zone):
      "'\(zone.prefix(64))' is not an IANA time zone (such as Europe/Berlin or America/New_York)"
    case .missingTimeZone: "'days' and 'hours' need 'timeZone', the IANA time zone to read them in"
    case .invalidHours(let reason): reason
    case .emptyList(let field): "'\(field)' is empty: leave it out to allow every one"
    }
  }
}

/// When a geofence's alerts go out — its events are always recorded (the state must stay right), but the alerts
/// (webhooks, Web Push, email, ntfy, live) are sent only for the events this rule allows. Every field left out allows
/// everything; the fields together must all allow.
///
/// - `kinds`: only these event kinds (`enter` = arrive, `exit` = leave, `dwell`).
/// - `days` and `hours`: only on these days of the week and within these daily hours, both read on the wall clock of
///   `timeZone` (an IANA zone, so summer time is followed). Hours that cross midnight belong to the day they start
///   on: `fri` with `22:00`–`06:00` allows Friday night up to Saturday 06:00, not Friday 03:00.
/// - `people`: only events of these people (the owner may name themselves and people who share their location with
///   them; the server checks that when the rule is set).
public struct GeofenceAlertRule: Sendable, Hashable, Codable {
  /// The event kinds that alert, nil for all.
  public var kinds: [GeofenceEventKind]?
  /// The days that alert, nil for every day.
  public var days: [Weekday]?
  /// The daily hours that alert, nil for all day.
  public var hours: DailyHours?
  /// The IANA time zone `days` and `hours` are read in (required with either).
  public var timeZone: String?
  /// The people whose events alert, nil for everyone.
  public var people: [UserID]?

  /// A rule; every field left out allows everything.
  public init(
    kinds: [GeofenceEventKind]? = nil, days: [Weekday]? = nil, hours: DailyHours? = nil, timeZone: String? = nil,
    people: [UserID]? = nil
  ) {
    self.kinds = kinds
    self.days = days
    self.hours = hours
    self.timeZone = timeZone
    self.people = people
  }

  /// Whether the rule allows everything (it is then not stored).
  public var allowsEverything: Bool { kinds == nil && days == nil && hours == nil && people == nil }

  /// The rule with its lists sorted and without repeats, once valid.
  /// - Throws: ``GeofenceAlertRuleError``.
  public func validated() throws(GeofenceAlertRuleError) -> GeofenceAlertRule {
    var rule = self
    if kinds?.isEmpty == true { throw .emptyList(field: "kinds") }
    if days?.isEmpty == true { throw .emptyList(field: "days") }
    if people?.isEmpty == true { throw .emptyList(field: "people") }
    rule.kinds = kinds.map { Array(Set($0)).sorted { $0.rawValue < $1.rawValue } }
    rule.days = days.map { Array(Set($0)).sorted() }
    rule.people = people.map { Array(Set($0)).sorted() }
    if let hours {
      guard let from = DailyHours.minutes(hours.from, endOfDay: false) else {
        throw .invalidHours("'hours.from' must be a time \"HH:mm\" from 00:00 to 23:59, not '\(hours.from.prefix(16))'")
      }
      guard let until = DailyHours.minutes(hours.until, endOfDay: true) else {
        throw .invalidHours(
          "'hours.until' must be a time \"HH:mm\" from 00:00 to 24:00, not '\(hours.until.prefix(16))'")
      }
      guard from != until % 1440 else {
        throw .invalidHours("'hours.from' and 'hours.until' are the same time: leave 'hours' out to allow all day")
      }
    }
    if let timeZone {
      guard TimeZone(identifier: timeZone) != nil else { throw .unknownTimeZone(timeZone) }
    } else if days != nil || hours != nil {
      throw .missingTimeZone
    }
    return rule
  }

  /// Whether an event of `kind` about `person` at `timestamp` (UTC ms) sends alerts. A rule whose time zone this
  /// system doesn't know (it was checked when set) allows by `kinds` and `people` alone.
  public func allows(_ kind: GeofenceEventKind, of person: UserID, at timestamp: Int64) -> Bool {
    if let kinds, !kinds.contains(kind) { return false }
    if let people, !people.contains(person) { return false }
    guard days != nil || hours != nil, let zone = timeZone.flatMap(TimeZone.init(identifier:)) else { return true }
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = zone
    let local = calendar.dateComponents(
      [.weekday, .hour, .minute], from: Date(timeIntervalSince1970: Double(timestamp) / 1000))
    let day = Weekday(calendarWeekday: local.weekday ?? 1)
    let allowedDay = { (day: Weekday) in self.days?.contains(day) ?? true }
    guard let hours, let from = DailyHours.minutes(hours.from, endOfDay: false),
      let until = DailyHours.minutes(hours.until, endOfDay: true)
    else { return allowedDay(day) }
    let minute = (local.hour ?? 0) * 60 + (local.minute ?? 0)
    if from < until { return allowedDay(day) && minute >= from && minute < until }
    // Across midnight: the evening part on its own day, the morning part on the day it started.
    return (minute >= from && allowedDay(day)) || (minute < until && allowedDay(day.previous))
  }
}
