import DomainKit
import Foundation
import MeridianAPI

/// The time flags of `history` commands: date presets and `--from`/`--to` times, turned into a ``TimeRange``.
public enum HistoryPeriod {
  /// The preset names accepted, as shown in help: DomainKit's `DatePreset` names and the rolling `last7Days` and
  /// `last30Days` (today and the days before it). Case, `-` and `_` don't matter (`last-7-days` works).
  public static let presetNames = [
    "today", "yesterday", "last7Days", "last30Days", "thisMonth", "lastMonth", "thisYear", "lastYear", "allTime",
  ]

  /// The local-time range of the preset `name` at `now`.
  /// - Throws: ``TrackerError/badArgument(_:)`` listing the presets when the name is unknown.
  public static func range(preset name: String, now: Date, timeZone: TimeZone) throws -> TimeRange {
    let key = name.lowercased().filter { $0 != "-" && $0 != "_" && $0 != " " }
    if let days = ["last7days": 7, "last30days": 30][key] {
      var calendar = Calendar(identifier: .gregorian)
      calendar.timeZone = timeZone
      let today = calendar.startOfDay(for: now)
      guard let start = calendar.date(byAdding: .day, value: -(days - 1), to: today),
        let end = calendar.date(byAdding: .day, value: 1, to: today)
      else { return TimeRange(start: nil, end: nil) }
      return TimeRange(start: Timestamp.milliseconds(start), end: Timestamp.milliseconds(end))
    }
    guard let preset = presetNames.first(where: { $0.lowercased() == key }).flatMap(DatePreset.init(name:)) else {
      throw TrackerError.badArgument(
        "unknown date preset '\(name)'; use one of \(presetNames.joined(separator: ", "))")
    }
    return preset.range(now: now, timeZone: timeZone)
  }

  /// A time given on the command line, as every CLI reads it (``CommandLineTime``: a date alone is local midnight
  /// in `timeZone`).
  /// - Throws: ``TrackerError/badArgument(_:)`` saying what is accepted.
  public static func time(_ text: String, timeZone: TimeZone) throws -> Int64 {
    guard let milliseconds = CommandLineTime.parse(text, timeZone: timeZone) else {
      throw TrackerError.badArgument("'\(text)' is not a time: use \(CommandLineTime.accepted)")
    }
    return milliseconds
  }

  /// The range of `--preset` or `--from`/`--to` (`to` exclusive); all time when none is given.
  /// - Throws: ``TrackerError/badArgument(_:)`` when both a preset and times are given, or `to` is before `from`.
  public static func range(
    preset: String?, from: String?, to: String?, now: Date = Date(), timeZone: TimeZone = .current
  ) throws -> TimeRange {
    if let preset {
      guard from == nil, to == nil else { throw TrackerError.badArgument("give --preset or --from/--to, not both") }
      return try range(preset: preset, now: now, timeZone: timeZone)
    }
    let start = try from.map { try time($0, timeZone: timeZone) }
    let end = try to.map { try time($0, timeZone: timeZone) }
    if let start, let end, end < start { throw TrackerError.badArgument("--to is before --from") }
    return TimeRange(start: start, end: end)
  }
}
