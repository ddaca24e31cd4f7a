/// A fixed-window counter per key: at most `limit` units (requests, fixes) per `window` milliseconds. In memory, per
/// process (several nodes each count their own).
public actor RateLimiter {
  /// Units allowed per window; 0 allows everything.
  public let limit: Int
  /// The window in milliseconds.
  public let window: Int64
  private var windows: [String: (start: Int64, count: Int)] = [:]

  /// A limiter allowing `limit` units per `window` ms.
  public init(limit: Int, window: Int64) {
    self.limit = limit
    self.window = window
  }

  /// Counts one event for `key` at `now`; false when the key is over its limit (the event is not counted).
  public func allow(_ key: String, now: Int64) -> Bool { take(key, cost: 1, now: now) == nil }

  /// Counts `cost` units for `key` at `now`. Returns nil when they fit in the key's window, else the milliseconds
  /// until its window starts again (nothing is counted). A cost larger than the whole limit never fits.
  public func take(_ key: String, cost: Int, now: Int64) -> Int64? {
    guard limit > 0 else { return nil }
    if windows.count > 100_000 { windows = windows.filter { now - $0.value.start < window } }
    var entry = windows[key] ?? (start: now, count: 0)
    if now - entry.start >= window || now < entry.start { entry = (start: now, count: 0) }
    guard entry.count + cost <= limit else { return max(1, entry.start + window - now) }
    entry.count += cost
    windows[key] = entry
    return nil
  }
}

/// Slows down guessing: after `freeFailures` failures for a key (an account, a client address), each further attempt
/// must wait a delay that doubles with every failure (1 s, 2 s, 4 s, … up to `maximumDelay`) counted from the last
/// failure. A success clears the key; failures are forgotten `forgetAfter` milliseconds after the last one. In memory,
/// per process.
public actor FailureBackoff {
  /// Failures allowed before the delays start; 0 turns the backoff off.
  public let freeFailures: Int
  /// The first delay, in milliseconds.
  public let baseDelay: Int64
  /// The longest delay, in milliseconds.
  public let maximumDelay: Int64
  /// How long after its last failure a key starts afresh, in milliseconds.
  public let forgetAfter: Int64
  private var failures: [String: (count: Int, last: Int64)] = [:]

  /// A backoff starting after `freeFailures`.
  public init(
    freeFailures: Int, baseDelay: Int64 = 1_000, maximumDelay: Int64 = 15 * 60_000, forgetAfter: Int64 = 3_600_000
  ) {
    self.freeFailures = freeFailures
    self.baseDelay = baseDelay
    self.maximumDelay = maximumDelay
    self.forgetAfter = forgetAfter
  }

  /// Milliseconds `key` must still wait before its next attempt at `now`, or nil when it may try now.
  public func wait(_ key: String, now: Int64) -> Int64? {
    guard freeFailures > 0, let entry = failures[key] else { return nil }
    if now - entry.last >= forgetAfter {
      failures[key] = nil
      return nil
    }
    guard entry.count >= freeFailures else { return nil }
    let doublings = min(entry.count - freeFailures, 30)
    let delay = min(maximumDelay, baseDelay << Int64(doublings))
    let remaining = entry.last + delay - now
    return remaining > 0 ? remaining : nil
  }

  /// Records a failure of `key` at `now`.
  public func failed(_ key: String, now: Int64) {
    guard freeFailures > 0 else { return }
    if failures.count > 100_000 { failures = failures.filter { now - $0.value.last < forgetAfter } }
    let previous = failures[key].flatMap { now - $0.last < forgetAfter ? $0.count : nil } ?? 0
    failures[key] = (previous + 1, now)
  }

  /// Clears `key` after a success.
  public func succeeded(_ key: String) { failures[key] = nil }
}
