import Foundation
import HTTPTypes
import Synchronization

/// When and how long to wait before sending a failed request again.
///
/// Defaults: 3 attempts in all; exponential backoff with full jitter (a uniformly random wait between 0 and
/// `min(maxDelay, baseDelay × 2^(n−1))` before attempt n+1), base 0.5 s, cap 20 s; an overall deadline of 60 s;
/// `Retry-After` honoured exactly up to 60 s (a longer one ends the request with its wait, see ``maxRetryAfter``). Retried: timeouts, lost connections, and statuses 408, 429, 500, 502, 503, 504 —
/// for idempotent methods, or any method when the request carries an `Idempotency-Key`.
public struct RetryPolicy: Sendable, Hashable {
  /// Attempts in all, the first included (1 disables retries).
  public var maxAttempts: Int
  /// The backoff before the second attempt is drawn from `0...baseDelay`.
  public var baseDelay: Duration
  /// No backoff exceeds this.
  public var maxDelay: Duration
  /// The whole call — every attempt and wait — must end within this; `nil` for no deadline.
  public var deadline: Duration?
  /// Statuses that are retried.
  public var retryableStatuses: Set<Int>
  /// The longest `Retry-After` the client will wait. The client never waits less than the server asked:
  /// - a `Retry-After` within this maximum is honoured exactly (the next attempt follows after that wait, instead of
  ///   the backoff), as long as it ends before the ``deadline``;
  /// - a longer one is not shortened: the request ends at once, without another attempt, with
  ///   ``NetworkingError/server(_:)`` whose ``ServerError/retryAfter`` is the server's requested wait (also read as
  ///   ``NetworkingError/retryAfter``), so a caller or an outbox can schedule the request for then. The attempt
  ///   event's decision is ``AttemptEvent/Decision/retryAfterTooLong(_:)``.
  public var maxRetryAfter: Duration

  /// Creates a policy; every argument has the documented default.
  public init(
    maxAttempts: Int = 3,
    baseDelay: Duration = .milliseconds(500),
    maxDelay: Duration = .seconds(20),
    deadline: Duration? = .seconds(60),
    retryableStatuses: Set<Int> = [408, 429, 500, 502, 503, 504],
    maxRetryAfter: Duration = .seconds(60)
  ) {
    self.maxAttempts = max(1, maxAttempts)
    self.baseDelay = baseDelay
    self.maxDelay = maxDelay
    self.deadline = deadline
    self.retryableStatuses = retryableStatuses
    self.maxRetryAfter = maxRetryAfter
  }

  /// The defaults.
  public static let `default` = RetryPolicy()

  /// One attempt, no retries.
  public static let none = RetryPolicy(maxAttempts: 1)

  /// The full-jitter backoff after failed attempt `attempt` (1-based), for a uniform `unit` in `0..<1`.
  public func backoff(afterAttempt attempt: Int, unit: Double) -> Duration {
    let exponent = min(max(attempt - 1, 0), 62)
    let ceiling = min(Self.seconds(maxDelay), Self.seconds(baseDelay) * pow(2, Double(exponent)))
    return .seconds(ceiling * min(max(unit, 0), 1))
  }

  static func seconds(_ duration: Duration) -> Double {
    let parts = duration.components
    return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
  }
}

/// A source of uniform random numbers in `0..<1`, injectable so that jitter is reproducible in tests.
public struct RandomSource: Sendable {
  /// Returns the next number in `0..<1`.
  public let next: @Sendable () -> Double

  /// Creates a source from a function.
  public init(next: @escaping @Sendable () -> Double) {
    self.next = next
  }

  /// The system's random number generator.
  public static let system = RandomSource { Double.random(in: 0..<1) }
}

/// Parses `Retry-After`: delay-seconds or an HTTP-date (RFC 9110 §10.2.3).
public enum RetryAfter {
  /// The wait the value asks for, relative to `now`; `nil` when it doesn't parse. A date in the past is zero.
  public static func parse(_ value: String, now: Date = Date()) -> Duration? {
    let trimmed = value.trimmingCharacters(in: .whitespaces)
    if let seconds = Int(trimmed) {
      return seconds >= 0 ? .seconds(seconds) : nil
    }
    let date = formatters.withLock { formatters in formatters.lazy.compactMap { $0.date(from: trimmed) }.first }
    return date.map { .seconds(max(0, $0.timeIntervalSince(now).rounded(.up))) }
  }

  /// Parsers of the three HTTP-date forms, behind a lock (DateFormatter's thread safety differs between platforms).
  private static let formatters = Mutex(
    [
      "EEE, dd MMM yyyy HH:mm:ss zzz",  // IMF-fixdate
      "EEEE, dd-MMM-yy HH:mm:ss zzz",  // RFC 850
      "EEE MMM d HH:mm:ss yyyy",  // asctime
    ].map { format in
      let formatter = DateFormatter()
      formatter.locale = Locale(identifier: "en_US_POSIX")
      formatter.timeZone = TimeZone(identifier: "GMT")
      formatter.dateFormat = format
      return formatter
    })
}

/// What happened in one attempt and what the client does next; emitted for every attempt, for logs and metrics.
public struct AttemptEvent: Sendable, CustomStringConvertible {
  /// How the attempt ended.
  public enum Outcome: Sendable, Hashable, CustomStringConvertible {
    /// The server answered with this status (success or failure).
    case status(Int)
    /// No complete response.
    case transport(TransportError.Kind)

    /// `503` or `timedOut`.
    public var description: String {
      switch self {
      case .status(let code): String(code)
      case .transport(let kind): kind.rawValue
      }
    }
  }

  /// What the client does after the attempt.
  public enum Decision: Sendable, Hashable, CustomStringConvertible {
    /// The attempt's result is final (success or a failure that isn't retried).
    case finish
    /// Another attempt follows after this wait.
    case retry(after: Duration)
    /// The failure was retryable but the attempts are used up.
    case attemptsExhausted
    /// The failure was retryable but the host's retry budget is empty.
    case budgetExhausted
    /// The failure was retryable but the wait would cross the deadline.
    case deadlineExceeded
    /// The server asked for a longer `Retry-After` than the policy allows.
    case retryAfterTooLong(Duration)
    /// The token was rejected; the request is replayed once with a refreshed token.
    case refreshCredentials

    /// A short label.
    public var description: String {
      switch self {
      case .finish: "finish"
      case .retry(let delay): "retry after \(delay)"
      case .attemptsExhausted: "attempts exhausted"
      case .budgetExhausted: "retry budget exhausted"
      case .deadlineExceeded: "deadline exceeded"
      case .retryAfterTooLong(let delay): "Retry-After \(delay) too long"
      case .refreshCredentials: "refresh credentials"
      }
    }
  }

  /// The method.
  public var method: HTTPRequest.Method
  /// The endpoint's path template.
  public var pathTemplate: String
  /// `host[:port]`.
  public var authority: String
  /// The attempt number, from 1.
  public var attempt: Int
  /// How it ended.
  public var outcome: Outcome
  /// What follows.
  public var decision: Decision
  /// The request's idempotency key, if it has one.
  public var idempotencyKey: String?
  /// How long the attempt took by the client's clock.
  public var duration: Duration

  /// `GET /v1/me attempt 1: 503 → retry after 0.4 seconds`.
  public var description: String {
    "\(method.rawValue) \(pathTemplate) attempt \(attempt): \(outcome) → \(decision)"
  }

  /// The wait before the next attempt, if there is one.
  public var delay: Duration? {
    if case .retry(let delay) = decision { return delay }
    return nil
  }
}
