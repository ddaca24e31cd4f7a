import Foundation

/// Conversions between UTC milliseconds since 1970, `Date` and ISO 8601 text (RFC 3339 profile).
///
/// Hand-written so that it is fast, `Sendable` and identical on every platform.
public enum Timestamp {
  /// The system's clock in UTC milliseconds: what every `now` parameter of the stores and the server defaults to
  /// (tests pass a clock of their own and move it instead of waiting).
  public static let systemClock: @Sendable () -> Int64 = { milliseconds(Date()) }

  /// Milliseconds since 1970-01-01T00:00:00Z for `date`, rounded to the nearest millisecond (saturating at the
  /// ends of `Int64` rather than trapping for absurd dates).
  public static func milliseconds(_ date: Date) -> Int64 {
    let value = (date.timeIntervalSince1970 * 1000).rounded()
    guard value.isFinite else { return value > 0 ? .max : .min }
    guard value > -9.2e18 else { return .min }
    guard value < 9.2e18 else { return .max }
    return Int64(value)
  }

  /// The times accepted from outside input (file and wire formats): 1970-01-01T00:00:00.000Z through
  /// 2200-12-31T23:59:59.999Z, in UTC milliseconds.
  public static let plausibleRange: ClosedRange<Int64> = 0...7_289_654_399_999

  /// UTC milliseconds for whole epoch `seconds`, or nil when the result falls outside ``plausibleRange``
  /// (never overflows).
  public static func milliseconds(epochSeconds seconds: Int64) -> Int64? {
    let (ms, overflow) = seconds.multipliedReportingOverflow(by: 1000)
    guard !overflow, plausibleRange.contains(ms) else { return nil }
    return ms
  }

  /// UTC milliseconds for fractional epoch `seconds` (rounded to the millisecond), or nil when not finite or
  /// outside ``plausibleRange``.
  public static func milliseconds(epochSeconds seconds: Double) -> Int64? {
    let ms = (seconds * 1000).rounded()
    guard ms.isFinite, ms >= Double(plausibleRange.lowerBound), ms <= Double(plausibleRange.upperBound) else {
      return nil
    }
    return Int64(ms)
  }

  /// The `Date` for `milliseconds` since 1970 UTC.
  public static func date(_ milliseconds: Int64) -> Date {
    Date(timeIntervalSince1970: Double(milliseconds) / 1000)
  }

  /// Parses `YYYY-MM-DDTHH:MM:SS[.fraction][Z|±HH:MM|±HHMM]` (a missing zone means UTC) into UTC milliseconds.
  /// Returns nil when the text is not such a timestamp or a field is out of range.
  public static func parseISO8601(_ text: some StringProtocol) -> Int64? {
    let bytes = Array(text.utf8)
    var index = 0
    func digits(_ count: Int) -> Int? {
      guard index + count <= bytes.count else { return nil }
      var value = 0
      for _ in 0..<count {
        let byte = bytes[index]
        guard byte >= 48, byte <= 57 else { return nil }
        value = value * 10 + Int(byte - 48)
        index += 1
      }
      return value
    }
    func expect(_ characters: [UInt8]) -> Bool {
      guard index < bytes.count, characters.contains(bytes[index]) else { return false }
      index += 1
      return true
    }
    guard let year = digits(4), expect([45]), let month = digits(2), expect([45]), let day = digits(2),
      expect([84, 116, 32]), let hour = digits(2), expect([58]), let minute = digits(2), expect([58]),
      let second = digits(2)
    else { return nil }
    guard (1...12).contains(month), day >= 1, day <= daysInMonth(year: year, month: month), hour <= 23,
      minute <= 59, second <= 60
    else { return nil }
    var millis = 0
    if index < bytes.count, bytes[index] == 46 || bytes[index] == 44 {
      index += 1
      var scale = 100
      var count = 0
      while index < bytes.count, bytes[index] >= 48, bytes[index] <= 57 {
        millis += Int(bytes[index] - 48) * scale
        scale /= 10
        index += 1
        count += 1
      }
      guard count > 0 else { return nil }
    }
    var offsetSeconds = 0
    if index < bytes.count {
      let sign = bytes[index]
      if sign == 90 || sign == 122 {
        index += 1
      } else if sign == 43 || sign == 45 {
        index += 1
        guard let offsetHours = digits(2) else { return nil }
        _ = expect([58])
        guard let offsetMinutes = digits(2), offsetHours <= 23, offsetMinutes <= 59 else { return nil }
        offsetSeconds = (offsetHours * 3600 + offsetMinutes * 60) * (sign == 45 ? -1 : 1)
      } else {
        return nil
      }
    }
    guard index == bytes.count else { return nil }
    let days = daysFromCivil(year: year, month: month, day: day)
    let seconds = Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + second) - Int64(offsetSeconds)
    return seconds * 1000 + Int64(millis)
  }

  /// Formats UTC milliseconds as `YYYY-MM-DDTHH:MM:SS.sssZ` (or without the fraction when it is zero and
  /// `alwaysMilliseconds` is false).
  public static func formatISO8601(_ milliseconds: Int64, alwaysMilliseconds: Bool = true) -> String {
    let (seconds, millis) = floorDivide(milliseconds, 1000)
    let (days, secondOfDay) = floorDivide(seconds, 86_400)
    let (year, month, day) = civilFromDays(Int(days))
    let hour = Int(secondOfDay / 3600)
    let minute = Int(secondOfDay % 3600 / 60)
    let second = Int(secondOfDay % 60)
    var text = pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2)
    text += "T" + pad(hour, 2) + ":" + pad(minute, 2) + ":" + pad(second, 2)
    if alwaysMilliseconds || millis != 0 { text += "." + pad(Int(millis), 3) }
    return text + "Z"
  }

  /// The UTC day of `milliseconds`: days since 1970-01-01 (negative before it).
  public static func utcDay(_ milliseconds: Int64) -> Int64 { floorDivide(milliseconds, 86_400_000).0 }

  private static func pad(_ value: Int, _ width: Int) -> String {
    let digits = String(abs(value))
    let padded = String(repeating: "0", count: max(0, width - digits.count)) + digits
    return value < 0 ? "-" + padded : padded
  }

  private static func floorDivide(_ value: Int64, _ divisor: Int64) -> (Int64, Int64) {
    var quotient = value / divisor
    var remainder = value % divisor
    if remainder < 0 {
      quotient -= 1
      remainder += divisor
    }
    return (quotient, remainder)
  }

  static func daysInMonth(year: Int, month: Int) -> Int {
    switch month {
    case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
    case 4, 6, 9, 11: 30
    default: 31
    }
  }

  // Howard Hinnant's days_from_civil / civil_from_days.
  static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
    let y = month <= 2 ? year - 1 : year
    let era = (y >= 0 ? y : y - 399) / 400
    let yoe = y - era * 400
    let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
    return era * 146_097 + doe - 719_468
  }

  static func civilFromDays(_ days: Int) -> (Int, Int, Int) {
    let z = days + 719_468
    let era = (z >= 0 ? z : z - 146_096) / 146_097
    let doe = z - era * 146_097
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
    let mp = (5 * doy + 2) / 153
    let day = doy - (153 * mp + 2) / 5 + 1
    let month = mp < 10 ? mp + 3 : mp - 9
    return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
  }
}
