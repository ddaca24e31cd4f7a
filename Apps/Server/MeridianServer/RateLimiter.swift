/// A fixed-window counter per key: at most `limit` events per `window` milliseconds. In memory, per process
/// (several instances would share a limiter in the database or a cache instead).
public actor RateLimiter {
  /// Events allowed per window.
  public let limit: Int
  /// The window in milliseconds.
  public let window: Int64
  private var windows: [String: (start: Int64, count: Int)] = [:]

  /// A limiter allowing `limit` events per `window` ms.
  public init(limit: Int, window: Int64) {
    self.limit = limit
    self.window = window
  }

  /// Counts an event for `key` at `now`; false when the key is over its limit (the event is not counted).
  public func allow(_ key: String, now: Int64) -> Bool {
    if windows.count > 100_000 { windows = windows.filter { now - $0.value.start < window } }
    var entry = windows[key] ?? (start: now, count: 0)
    if now - entry.start >= window { entry = (start: now, count: 0) }
    guard entry.count < limit else { return false }
    entry.count += 1
    windows[key] = entry
    return true
  }
}
