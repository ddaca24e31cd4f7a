import Foundation

/// A half-open UTC time range [start, end) in milliseconds; a nil bound is open.
public struct TimeRange: Sendable, Hashable, Codable {
  /// Inclusive start, UTC ms; nil means since the beginning.
  public var start: Int64?
  /// Exclusive end, UTC ms; nil means without end.
  public var end: Int64?

  /// A range.
  public init(start: Int64?, end: Int64?) {
    self.start = start
    self.end = end
  }

  /// Whether `timestamp` (UTC ms) lies in [start, end).
  public func contains(_ timestamp: Int64) -> Bool {
    (start.map { timestamp >= $0 } ?? true) && (end.map { timestamp < $0 } ?? true)
  }
}

/// A history filter's date preset, computed in the user's time zone. Wire form: the raw names `today`,
/// `yesterday`, `thisMonth`, `lastMonth`, `thisYear`, `lastYear`, `allTime`, or `custom` with `from`/`to` (UTC ms).
public enum DatePreset: Sendable, Hashable, Codable {
  /// From local midnight today to local midnight tomorrow.
  case today
  /// The previous local calendar day.
  case yesterday
  /// The current local calendar month.
  case thisMonth
  /// The previous local calendar month.
  case lastMonth
  /// The current local calendar year.
  case thisYear
  /// The previous local calendar year.
  case lastYear
  /// No bounds.
  case allTime
  /// An explicit half-open range [from, to) in UTC ms.
  case custom(from: Int64, to: Int64)

  /// Parses the wire name of a non-custom preset.
  public init?(name: String) {
    switch name {
    case "today": self = .today
    case "yesterday": self = .yesterday
    case "thisMonth": self = .thisMonth
    case "lastMonth": self = .lastMonth
    case "thisYear": self = .thisYear
    case "lastYear": self = .lastYear
    case "allTime": self = .allTime
    default: return nil
    }
  }

  /// The wire name.
  public var name: String {
    switch self {
    case .today: "today"
    case .yesterday: "yesterday"
    case .thisMonth: "thisMonth"
    case .lastMonth: "lastMonth"
    case .thisYear: "thisYear"
    case .lastYear: "lastYear"
    case .allTime: "allTime"
    case .custom: "custom"
    }
  }

  /// The half-open UTC range of this preset at `now` for a user in `timeZone`. Days, months and years are local
  /// calendar units, so a day across a daylight-saving change is 23 or 25 hours long.
  public func range(now: Date, timeZone: TimeZone) -> TimeRange {
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = timeZone
    func interval(_ unit: Calendar.Component, offset: Int) -> TimeRange {
      guard let current = calendar.dateInterval(of: unit, for: now) else { return TimeRange(start: nil, end: nil) }
      var start = current.start
      if offset != 0, let shifted = calendar.date(byAdding: unit, value: offset, to: current.start),
        let target = calendar.dateInterval(of: unit, for: shifted)
      {
        start = target.start
        return TimeRange(start: Timestamp.milliseconds(start), end: Timestamp.milliseconds(target.end))
      }
      return TimeRange(start: Timestamp.milliseconds(start), end: Timestamp.milliseconds(current.end))
    }
    switch self {
    case .today: return interval(.day, offset: 0)
    case .yesterday: return interval(.day, offset: -1)
    case .thisMonth: return interval(.month, offset: 0)
    case .lastMonth: return interval(.month, offset: -1)
    case .thisYear: return interval(.year, offset: 0)
    case .lastYear: return interval(.year, offset: -1)
    case .allTime: return TimeRange(start: nil, end: nil)
    case .custom(let from, let to): return TimeRange(start: from, end: to)
    }
  }

  private enum CodingKeys: String, CodingKey { case preset, from, to }

  /// Decodes `{preset}` or `{preset: "custom", from, to}`, rejecting unknown names and `to` before `from`.
  public init(from decoder: any Decoder) throws {
    let c = try decoder.container(keyedBy: CodingKeys.self)
    let name = try c.decode(String.self, forKey: .preset)
    if name == "custom" {
      let from = try c.decode(Int64.self, forKey: .from)
      let to = try c.decode(Int64.self, forKey: .to)
      guard from <= to else {
        throw DecodingError.dataCorruptedError(forKey: .to, in: c, debugDescription: "'to' is before 'from'")
      }
      self = .custom(from: from, to: to)
    } else if let preset = DatePreset(name: name) {
      self = preset
    } else {
      throw DecodingError.dataCorruptedError(
        forKey: .preset, in: c, debugDescription: "unknown preset \(QuotedValue.quote(name))")
    }
  }

  /// Encodes `{preset}`, plus `from` and `to` for ``custom(from:to:)``.
  public func encode(to encoder: any Encoder) throws {
    var c = encoder.container(keyedBy: CodingKeys.self)
    try c.encode(name, forKey: .preset)
    if case .custom(let from, let to) = self {
      try c.encode(from, forKey: .from)
      try c.encode(to, forKey: .to)
    }
  }
}

/// The history filter applied everywhere: a date range, a worst accepted accuracy and the kinds to include.
public struct HistoryFilter: Sendable, Hashable, Codable {
  /// The time range.
  public var range: TimeRange
  /// Keep fixes whose horizontal accuracy is at most this many metres (fixes without accuracy are kept).
  public var minimumAccuracy: Double?
  /// The kinds to include; empty means all.
  public var kinds: Set<FixKind>

  /// A filter.
  public init(
    range: TimeRange = TimeRange(start: nil, end: nil), minimumAccuracy: Double? = nil, kinds: Set<FixKind> = []
  ) {
    self.range = range
    self.minimumAccuracy = minimumAccuracy
    self.kinds = kinds
  }

  /// Whether `fix` passes the filter.
  public func matches(_ fix: LocationFix) -> Bool {
    guard range.contains(fix.timestamp) else { return false }
    if let limit = minimumAccuracy, let accuracy = fix.horizontalAccuracy, accuracy > limit { return false }
    return kinds.isEmpty || kinds.contains(fix.kind)
  }
}
