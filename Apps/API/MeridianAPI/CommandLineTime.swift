import DomainKit
import Foundation

/// A time typed on a command line (`meridian-tracker`, `meridian-admin`), read the same way by every CLI:
///
/// - ISO 8601 with a time (`2026-11-24T08:30:00Z`, `2026-11-24T10:30:00+02:00`); without a zone it is UTC;
/// - a date alone (`2026-11-24`): midnight at the start of that day in `timeZone` — the machine's local time zone
///   by default (`TZ`), as a person typing a date means it;
/// - epoch milliseconds (`1795656894000`), between 1970 and 9999.
public enum CommandLineTime {
  /// What `parse` accepts, for error messages.
  public static let accepted =
    "a date (2026-11-24, local midnight), ISO 8601 (2026-11-24T08:30:00Z) or epoch milliseconds"

  /// The UTC milliseconds of `text`, or nil when it is none of the accepted forms.
  public static func parse(_ text: String, timeZone: TimeZone = .current) -> Int64? {
    let text = text.trimmingCharacters(in: .whitespaces)
    if let milliseconds = Int64(text) { return Timestamp.plausibleRange.contains(milliseconds) ? milliseconds : nil }
    if let milliseconds = Timestamp.parseISO8601(text) { return milliseconds }
    let parts = text.split(separator: "-", omittingEmptySubsequences: false)
    guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
      let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2])
    else { return nil }
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = timeZone
    let components = DateComponents(year: year, month: month, day: day)
    guard components.isValidDate(in: calendar), let date = calendar.date(from: components) else { return nil }
    return Timestamp.milliseconds(date)
  }
}
