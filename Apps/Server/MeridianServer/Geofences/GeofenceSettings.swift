import DomainKit
import Foundation

/// Geofence rules and limits.
///
/// | setting | default | variable |
/// |---|---|---|
/// | time inside before `dwell` | 300 s | `MERIDIAN_GEOFENCE_DWELL_SECONDS` |
/// | a gap between fixes longer than this resets the state | 7,200 s | `MERIDIAN_GEOFENCE_GAP_SECONDS` |
/// | exit margin, share of the radius | 20 % | `MERIDIAN_GEOFENCE_HYSTERESIS_PERCENT` (0…100) |
/// | smallest exit margin | 30 m | `MERIDIAN_GEOFENCE_HYSTERESIS_METRES` |
/// | geofences per person (device-made ones included) | 100 | `MERIDIAN_GEOFENCE_MAX_PER_PERSON` |
/// | queue entries (one per upload) the monitor reads and evaluates at a time | 512 | `MERIDIAN_GEOFENCE_QUEUE_BATCH` |
/// | fixes one read of the queue holds, about (the first entry always read) | 5,000 | `MERIDIAN_GEOFENCE_QUEUE_FIXES` |
public struct GeofenceSettings: Sendable, Hashable {
  /// The rules every fix is evaluated with (DomainKit's defaults unless set).
  public var rules = GeofenceRules()
  /// The most geofences one person may have; one more is refused with `409 geofence_limit_reached`.
  public var maximumPerPerson = 100
  /// How many entries of the geofence queue (``GeofenceQueue``, one per upload) the monitor reads and evaluates at
  /// a time at most: with ``queueFixes``, what it holds in memory, however long the queue grows.
  public var queueBatch = 512
  /// About how many fixes one read of the geofence queue holds: entries stop being read once those before hold this
  /// many (the first is always read). Uploads of 10,000 fixes read 512 at a time were 5 million fixes in one read,
  /// 12 s on PostgreSQL (past its deadline, so never evaluated) and gigabytes of memory.
  public var queueFixes = 5_000
  /// The events after which the monitor commits what it has evaluated of a person's fixes and goes on with the
  /// rest: what bounds a transaction (and how long it holds SQLite's writer). A fix among many fences may make
  /// dozens of events; 6,700 events a commit made uploads wait 0.6–0.8 s (p99) for SQLite's writer, 1,700 about
  /// 0.25–0.35 s. A person driving through a city makes less than one event a fix: 1,000 of their fixes are one
  /// commit.
  public var eventsPerCommit = 1_000
  /// How often the monitor looks at the queue without being woken (for the entries of another node sharing the
  /// database; this node's own commits wake it at once).
  public var queuePollInterval: Duration = .seconds(1)

  /// The defaults.
  public init() {}

  /// Reads the `MERIDIAN_GEOFENCE_*` variables.
  /// - Throws: ``ConfigurationError`` naming the variable for a value out of range.
  mutating func read(_ environment: [String: String]) throws(ConfigurationError) {
    func number(_ name: String, _ range: ClosedRange<Int64>) throws(ConfigurationError) -> Int64? {
      guard let text = environment[name], !text.isEmpty else { return nil }
      guard let value = Int64(text), range.contains(value) else {
        throw ConfigurationError(
          setting: name, value: text, reason: "must be a whole number from \(range.lowerBound) to \(range.upperBound)")
      }
      return value
    }
    if let seconds = try number("MERIDIAN_GEOFENCE_DWELL_SECONDS", 1...604_800) { rules.dwellTime = seconds * 1000 }
    if let seconds = try number("MERIDIAN_GEOFENCE_GAP_SECONDS", 1...604_800) { rules.maximumGap = seconds * 1000 }
    if let percent = try number("MERIDIAN_GEOFENCE_HYSTERESIS_PERCENT", 0...100) {
      rules.hysteresisFraction = Double(percent) / 100
    }
    if let metres = try number("MERIDIAN_GEOFENCE_HYSTERESIS_METRES", 0...10_000) {
      rules.minimumHysteresis = Double(metres)
    }
    if let count = try number("MERIDIAN_GEOFENCE_MAX_PER_PERSON", 1...100_000) { maximumPerPerson = Int(count) }
    if let count = try number("MERIDIAN_GEOFENCE_QUEUE_BATCH", 1...10_000) { queueBatch = Int(count) }
    if let count = try number("MERIDIAN_GEOFENCE_QUEUE_FIXES", 1...1_000_000) { queueFixes = Int(count) }
  }
}
