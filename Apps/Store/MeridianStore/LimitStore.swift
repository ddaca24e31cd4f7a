import Synchronization

/// Counters that every server node on one database shares: the fixed windows of the rate limits and the failure
/// records of the sign-in backoff. Keys name the limit they belong to (`otp.phone:+15550100`,
/// `signin.account:anna@example.com`), so one table serves every limit.
///
/// Every engine applies the same arithmetic, ``WindowLimit`` and ``BackoffPolicy``; times are UTC milliseconds as
/// each node's clock reads them. A limit of 0 (``WindowLimit/isOff``, ``BackoffPolicy/isOff``) does no work at all.
public protocol LimitStore: Sendable {
  /// Counts `cost` units for `key` in its window at `now`, atomically for every node: nil when they fit (they are
  /// counted), else the milliseconds until the key's window starts again (nothing is counted).
  func take(_ key: String, cost: Int, in window: WindowLimit, now: Int64) async throws -> Int64?
  /// Milliseconds `key` must still wait at `now` before its next attempt, or nil when it may try now.
  func failureWait(_ key: String, policy: BackoffPolicy, now: Int64) async throws -> Int64?
  /// Records a failure of `key` at `now`.
  func recordFailure(_ key: String, policy: BackoffPolicy, now: Int64) async throws
  /// Forgets the failures of `key` (after a success).
  func clearFailures(_ key: String) async throws
  /// Deletes the counters that no longer matter at `now` (window over, failures forgotten); returns how many.
  func removeExpiredCounters(now: Int64) async throws -> Int
}

/// One key's counter: the units taken in its current window and when the window started, or the failures counted
/// and when the last one happened.
public struct LimitCounter: Sendable, Hashable {
  /// Units taken in the window, or failures.
  public var count: Int
  /// When the window started, or when the last failure happened.
  public var since: Int64

  /// A counter.
  public init(count: Int, since: Int64) {
    self.count = count
    self.since = since
  }
}

/// A fixed window per key: at most ``limit`` units per ``window`` milliseconds. The arithmetic of
/// ``LimitStore/take(_:cost:in:now:)`` in every engine.
public struct WindowLimit: Sendable, Hashable {
  /// Units allowed per window; 0 allows everything.
  public var limit: Int
  /// The window in milliseconds.
  public var window: Int64
  /// How far before a window's start a time may be and still count in that window, in milliseconds: requests that
  /// read their clock just before another reached the counters, and nodes whose clocks differ by that much, count in
  /// one window. A clock that goes back further starts a new window.
  public var skew: Int64

  /// `limit` units per `window` ms, with times up to `skew` ms before a window's start counted in it.
  public init(limit: Int, window: Int64, skew: Int64 = 1_000) {
    self.limit = limit
    self.window = window
    self.skew = skew
  }

  /// What taking units did: the counter to keep, or how long to wait (nothing is counted).
  public enum Outcome: Sendable, Hashable {
    /// The units fit; this is the key's counter now.
    case taken(LimitCounter)
    /// The units don't fit; the key's window starts again in this many milliseconds (at least 1).
    case refused(wait: Int64)
  }

  /// Whether the limit is off: nothing is counted and everything is allowed.
  public var isOff: Bool { limit <= 0 }

  /// Takes `cost` units from `counter` (nil: the key has none) at `now`. A window that is over, or that starts more
  /// than ``skew`` after `now` (the clock went back), is replaced by a new one starting at `now`. A cost larger than
  /// the whole limit never fits.
  public func take(cost: Int, from counter: LimitCounter?, now: Int64) -> Outcome {
    var counter = counter.flatMap { isCurrent($0, now: now) ? $0 : nil } ?? LimitCounter(count: 0, since: now)
    guard counter.count + cost <= limit else { return .refused(wait: max(1, counter.since + window - now)) }
    counter.count += cost
    return .taken(counter)
  }

  /// Whether `counter`'s window still runs at `now`: it started less than ``window`` before `now`, and at most
  /// ``skew`` after it.
  public func isCurrent(_ counter: LimitCounter, now: Int64) -> Bool {
    now - counter.since < window && counter.since - now <= skew
  }

  /// When `counter` stops mattering: the end of its window.
  public func expiry(of counter: LimitCounter) -> Int64 { counter.since + window }
}

/// Slows down guessing: after ``freeFailures`` failures for a key, each further attempt must wait a delay that
/// doubles with every failure (``baseDelay``, twice that, … up to ``maximumDelay``) counted from the last failure.
/// Failures are forgotten ``forgetAfter`` milliseconds after the last one. The arithmetic of the failure records of
/// ``LimitStore`` in every engine.
public struct BackoffPolicy: Sendable, Hashable {
  /// Failures allowed before the delays start; 0 turns the backoff off.
  public var freeFailures: Int
  /// The first delay, in milliseconds.
  public var baseDelay: Int64
  /// The longest delay, in milliseconds.
  public var maximumDelay: Int64
  /// How long after its last failure a key starts afresh, in milliseconds.
  public var forgetAfter: Int64

  /// A backoff starting after `freeFailures`.
  public init(
    freeFailures: Int, baseDelay: Int64 = 1_000, maximumDelay: Int64 = 15 * 60_000, forgetAfter: Int64 = 3_600_000
  ) {
    self.freeFailures = freeFailures
    self.baseDelay = baseDelay
    self.maximumDelay = maximumDelay
    self.forgetAfter = forgetAfter
  }

  /// Whether the backoff is off: nothing is recorded and nobody waits.
  public var isOff: Bool { freeFailures <= 0 }

  /// Whether `counter`'s failures are forgotten at `now`.
  public func isForgotten(_ counter: LimitCounter, now: Int64) -> Bool { now - counter.since >= forgetAfter }

  /// Milliseconds to wait at `now` after the failures of `counter` (nil: none), or nil when the key may try now.
  public func wait(after counter: LimitCounter?, now: Int64) -> Int64? {
    guard !isOff, let counter, !isForgotten(counter, now: now), counter.count >= freeFailures else { return nil }
    let doublings = min(counter.count - freeFailures, 30)
    let delay = min(maximumDelay, baseDelay << Int64(doublings))
    let remaining = counter.since + delay - now
    return remaining > 0 ? remaining : nil
  }

  /// `counter` (nil: none) after one more failure at `now`; failures already forgotten count no more.
  public func recordingFailure(on counter: LimitCounter?, now: Int64) -> LimitCounter {
    let previous = counter.flatMap { isForgotten($0, now: now) ? nil : $0.count } ?? 0
    return LimitCounter(count: previous + 1, since: now)
  }

  /// When `counter` stops mattering: its failures are forgotten.
  public func expiry(of counter: LimitCounter) -> Int64 { counter.since + forgetAfter }
}

/// The counters of one process, in memory: what a single node uses (no database round trip). Thread-safe and
/// synchronous; above ``capacity`` keys, the expired ones are dropped before another is added.
public final class InMemoryLimitStore: LimitStore {
  /// How many keys it holds before it drops the expired ones.
  public let capacity: Int
  private let counters = Mutex<[String: (counter: LimitCounter, expiry: Int64)]>([:])

  /// An empty store.
  public init(capacity: Int = 100_000) { self.capacity = capacity }

  public func take(_ key: String, cost: Int, in window: WindowLimit, now: Int64) -> Int64? {
    guard !window.isOff else { return nil }
    return counters.withLock { counters in
      switch window.take(cost: cost, from: counters[key]?.counter, now: now) {
      case .refused(let wait):
        return wait
      case .taken(let counter):
        if counters[key] == nil { Self.dropExpired(from: &counters, now: now, above: capacity) }
        counters[key] = (counter, window.expiry(of: counter))
        return nil
      }
    }
  }

  public func failureWait(_ key: String, policy: BackoffPolicy, now: Int64) -> Int64? {
    guard !policy.isOff else { return nil }
    return counters.withLock { counters in
      guard let counter = counters[key]?.counter else { return nil }
      if policy.isForgotten(counter, now: now) { counters[key] = nil }
      return policy.wait(after: counter, now: now)
    }
  }

  public func recordFailure(_ key: String, policy: BackoffPolicy, now: Int64) {
    guard !policy.isOff else { return }
    counters.withLock { counters in
      Self.dropExpired(from: &counters, now: now, above: capacity)
      let counter = policy.recordingFailure(on: counters[key]?.counter, now: now)
      counters[key] = (counter, policy.expiry(of: counter))
    }
  }

  public func clearFailures(_ key: String) {
    _ = counters.withLock { $0.removeValue(forKey: key) }
  }

  public func removeExpiredCounters(now: Int64) -> Int {
    counters.withLock { counters in
      let before = counters.count
      Self.dropExpired(from: &counters, now: now, above: 0)
      return before - counters.count
    }
  }

  /// The number of keys held.
  public var count: Int { counters.withLock { $0.count } }

  private static func dropExpired(
    from counters: inout [String: (counter: LimitCounter, expiry: Int64)], now: Int64, above capacity: Int
  ) {
    guard counters.count > capacity else { return }
    counters = counters.filter { $0.value.expiry > now }
  }
}
