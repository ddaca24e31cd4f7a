import Logging
import MeridianStore

/// Where a limiter keeps its counters: in this process's memory (one node, no database round trip), or in the
/// store's ``LimitStore`` that every node on the database shares, under keys that start with the limiter's purpose
/// (`otp.phone:+15550100`), so one table serves every limiter.
public struct LimitCounters: Sendable {
  /// The counters.
  public let store: any LimitStore
  /// The keys' prefix in a shared store; nil in memory.
  public let purpose: String?

  /// This process's memory.
  public static func memory() -> LimitCounters { LimitCounters(store: InMemoryLimitStore(), purpose: nil) }

  /// `store`, shared by every node, under keys `<purpose>:<key>`.
  public static func shared(_ store: any LimitStore, purpose: String) -> LimitCounters {
    LimitCounters(store: store, purpose: purpose)
  }

  /// `shared` under `purpose`, or this process's memory when `shared` is nil.
  public static func of(_ shared: (any LimitStore)?, purpose: String) -> LimitCounters {
    shared.map { .shared($0, purpose: purpose) } ?? .memory()
  }

  /// How long a request waits, in milliseconds, when the shared counters can't be reached: a limit that can't be
  /// checked is not lifted (the request is refused with `Retry-After: 1`).
  public static let unavailableWait: Int64 = 1_000

  private static let logger = Logger(label: "meridian.limits")

  /// Runs `body` with the store and the key as stored; logs and returns `unavailable` when the store throws.
  func run<Result: Sendable>(
    _ key: String, _ operation: String, unavailable: Result,
    _ body: (any LimitStore, String) async throws -> Result
  ) async -> Result {
    (try? await run(key, operation, unavailable: unavailable, rethrowingUnavailable: false, body)) ?? unavailable
  }

  /// ``run(_:_:unavailable:_:)``, except that a database that can't be reached is thrown
  /// (`StoreUnavailableError`, which the server answers with 503) when `rethrowingUnavailable`.
  func run<Result: Sendable>(
    _ key: String, _ operation: String, unavailable: Result, rethrowingUnavailable: Bool,
    _ body: (any LimitStore, String) async throws -> Result
  ) async throws(StoreUnavailableError) -> Result {
    let key = purpose.map { "\($0):\(key)" } ?? key
    do {
      return try await body(store, key)
    } catch let error as StoreUnavailableError where rethrowingUnavailable {
      throw error
    } catch {
      Self.logger.error(
        "limit counters unavailable", metadata: ["key": "\(key)", "operation": "\(operation)", "error": "\(error)"])
      return unavailable
    }
  }
}

/// A fixed-window counter per key: at most `limit` units (requests, fixes) per `window` milliseconds, counted in
/// this process's memory or, with several nodes on one database, in the store every node shares.
public final class RateLimiter: Sendable {
  /// Units allowed per window; 0 allows everything (and does no work).
  public let limit: Int
  /// The window in milliseconds.
  public let window: Int64
  /// Where the counters are.
  public let counters: LimitCounters
  private let rule: WindowLimit

  /// A limiter allowing `limit` units per `window` ms, counting in `counters` (default: this process's memory).
  public init(limit: Int, window: Int64, counters: LimitCounters = .memory()) {
    self.limit = limit
    self.window = window
    self.counters = counters
    self.rule = WindowLimit(limit: limit, window: window)
  }

  /// Counts one event for `key` at `now`; false when the key is over its limit (the event is not counted).
  public func allow(_ key: String, now: Int64) async -> Bool { await take(key, cost: 1, now: now) == nil }

  /// Counts `cost` units for `key` at `now`. Returns nil when they fit in the key's window, else the milliseconds
  /// until its window starts again (nothing is counted). A cost larger than the whole limit never fits; a `now` up to
  /// ``WindowLimit/skew`` before the window's start counts in it, an earlier one starts a new window. When the
  /// shared counters can't be reached, the units don't fit either (``LimitCounters/unavailableWait``).
  public func take(_ key: String, cost: Int, now: Int64) async -> Int64? {
    guard limit > 0 else { return nil }
    return await counters.run(key, "take", unavailable: LimitCounters.unavailableWait) { store, key in
      try await store.take(key, cost: cost, in: rule, now: now)
    }
  }

  /// ``take(_:cost:now:)`` for a write, which the database must store anyway: when the shared counters' database
  /// can't be reached, it throws `StoreUnavailableError` (the server answers 503 `unavailable`, as the write itself
  /// would) rather than blaming the caller with a limit.
  public func reserve(_ key: String, cost: Int, now: Int64) async throws(StoreUnavailableError) -> Int64? {
    guard limit > 0 else { return nil }
    return try await counters.run(
      key, "take", unavailable: LimitCounters.unavailableWait, rethrowingUnavailable: true
    ) { store, key in
      try await store.take(key, cost: cost, in: rule, now: now)
    }
  }
}

/// Slows down guessing: after `freeFailures` failures for a key (an account, a client address), each further attempt
/// must wait a delay that doubles with every failure (1 s, 2 s, 4 s, … up to `maximumDelay`) counted from the last
/// failure. A success clears the key; failures are forgotten `forgetAfter` milliseconds after the last one. Counted
/// in this process's memory or in the store every node shares; ``BackoffPolicy`` is the arithmetic.
public final class FailureBackoff: Sendable {
  /// The delays and when failures are forgotten.
  public let policy: BackoffPolicy
  /// Where the failures are counted.
  public let counters: LimitCounters

  /// Failures allowed before the delays start; 0 turns the backoff off (and does no work).
  public var freeFailures: Int { policy.freeFailures }

  /// A backoff starting after `freeFailures`, counting in `counters` (default: this process's memory).
  public init(
    freeFailures: Int, baseDelay: Int64 = 1_000, maximumDelay: Int64 = 15 * 60_000, forgetAfter: Int64 = 3_600_000,
    counters: LimitCounters = .memory()
  ) {
    self.policy = BackoffPolicy(
      freeFailures: freeFailures, baseDelay: baseDelay, maximumDelay: maximumDelay, forgetAfter: forgetAfter)
    self.counters = counters
  }

  /// Milliseconds `key` must still wait before its next attempt at `now`, or nil when it may try now. When the
  /// shared counters' database can't be reached, it throws `StoreUnavailableError` (the server answers 503
  /// `unavailable` with `Retry-After`: a sign-in needs that database anyway, and nobody guessed wrong); when they
  /// fail otherwise, it must wait (``LimitCounters/unavailableWait``).
  @inline(never)
  public func wait(_ key: String, now: Int64) async throws(StoreUnavailableError) -> Int64? {
    // Never inlined: inlined into `ServerEnvironment.checkSignInAllowed`, it crashed Swift 6.3.1's release build
    // (LLVM's coroutine splitting of that function, at its swifterror value).
    guard !policy.isOff else { return nil }
    return try await counters.run(
      key, "failureWait", unavailable: LimitCounters.unavailableWait, rethrowingUnavailable: true
    ) { store, key in
      try await store.failureWait(key, policy: policy, now: now)
    }
  }

  /// Records a failure of `key` at `now` (logged and dropped when the shared counters can't be reached).
  public func failed(_ key: String, now: Int64) async {
    guard !policy.isOff else { return }
    await counters.run(key, "recordFailure", unavailable: ()) { store, key in
      try await store.recordFailure(key, policy: policy, now: now)
    }
  }

  /// Clears `key` after a success.
  public func succeeded(_ key: String) async {
    guard !policy.isOff else { return }
    await counters.run(key, "clearFailures", unavailable: ()) { store, key in try await store.clearFailures(key) }
  }
}
