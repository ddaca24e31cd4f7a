import DomainKit

/// The times a fix from outside may carry, uploaded or imported from a file (by the server or
/// `meridian-admin history import`): none before 2000, none more than a few minutes ahead of the clock.
public enum FixTimes {
  /// The earliest time a fix may carry: 2000-01-01T00:00:00Z. Anything earlier is a device without a clock, or
  /// seconds sent as milliseconds (`1795656894` is January 1970).
  public static let earliest: Int64 = 946_684_800_000
  /// How far ahead of the clock a fix may be dated by default (the server's `MERIDIAN_LIMIT_FUTURE_FIX_SECONDS`).
  public static let defaultFutureSeconds = 300

  /// Refuses fixes of which one is dated before ``earliest`` or more than `futureSeconds` ahead of `now`. `name`
  /// names a fix by its index in `fixes` (`fixes[3]`).
  /// - Throws: ``APIError`` `invalid_fix` naming the first such fix.
  public static func check(
    _ fixes: [LocationFix], now: Int64, futureSeconds: Int, name: (Int) -> String = { "fixes[\($0)]" }
  ) throws(APIError) {
    let latest = now + Int64(futureSeconds) * 1000
    for (index, fix) in fixes.enumerated() {
      if fix.timestamp < earliest {
        let seconds = fix.timestamp >= earliest / 1000 && fix.timestamp <= latest / 1000
        throw APIError(
          status: 400, code: .invalidFix,
          message: "\(name(index)).timestamp \(fix.timestamp) is before 2000-01-01"
            + (seconds
              ? ": it looks like seconds, but timestamps are UTC milliseconds since 1970."
              : "; timestamps are UTC milliseconds since 1970."))
      }
      if fix.timestamp > latest {
        throw APIError(
          status: 400, code: .invalidFix,
          message: "\(name(index)).timestamp \(fix.timestamp) is more than \(futureSeconds) s ahead of the server's "
            + "clock (\(now), UTC milliseconds since 1970); check the device's clock.")
      }
    }
  }
}
