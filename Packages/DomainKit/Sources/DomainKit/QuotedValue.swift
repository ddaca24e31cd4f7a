/// How an error message quotes a value that came from outside: at most ``maximumLength`` characters of it, so a
/// megabyte of bad input never comes back as a megabyte of error. Every message that repeats input quotes it
/// through here (MeridianAPI's `echo` too).
public enum QuotedValue {
  /// The most characters of a value a message repeats.
  public static let maximumLength = 64

  /// `value` cut to `limit` characters, with `…` when it was longer.
  public static func clip(_ value: some StringProtocol, limit: Int = maximumLength) -> String {
    guard value.count > limit else { return String(value) }
    return String(value.prefix(limit)) + "…"
  }

  /// `value` clipped and in single quotes: `'abc'`.
  public static func quote(_ value: some StringProtocol) -> String { "'" + clip(value) + "'" }
}
