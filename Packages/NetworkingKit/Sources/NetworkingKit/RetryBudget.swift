import Synchronization

/// The sizes of a retry budget, after the AWS SDKs' standard retry mode.
public struct RetryBudgetConfiguration: Sendable, Hashable {
  /// Tokens in a full bucket.
  public var capacity: Int
  /// Tokens a retry after a failure status or a lost connection takes.
  public var retryCost: Int
  /// Tokens a retry after a timeout takes.
  public var timeoutCost: Int
  /// Tokens a first-attempt success returns to the bucket.
  public var successRefund: Int

  /// Creates a configuration; the defaults are the AWS standard mode's: 500, 5, 10, 1.
  public init(capacity: Int = 500, retryCost: Int = 5, timeoutCost: Int = 10, successRefund: Int = 1) {
    self.capacity = capacity
    self.retryCost = retryCost
    self.timeoutCost = timeoutCost
    self.successRefund = successRefund
  }

  /// 500 tokens; a retry costs 5, a retry after a timeout 10; a success returns 1 (or the retry's cost).
  public static let standard = RetryBudgetConfiguration()
}

/// A token bucket that limits retries to one host, so that an outage doesn't multiply the load on the server.
///
/// Every retry takes tokens; a success puts back what its retry took, or ``RetryBudgetConfiguration/successRefund``
/// when it needed none. When the bucket is empty, retries are refused and requests fail fast with
/// ``NetworkingError/retryBudgetExhausted(host:lastError:)``; first attempts are never refused.
public final class RetryBudget: Sendable {
  /// The sizes.
  public let configuration: RetryBudgetConfiguration
  private let state: Mutex<Int>

  /// Creates a full bucket.
  public init(configuration: RetryBudgetConfiguration = .standard) {
    self.configuration = configuration
    self.state = Mutex(configuration.capacity)
  }

  /// The tokens left.
  public var available: Int { state.withLock { $0 } }

  /// Takes `cost` tokens if there are enough, and says whether it did.
  public func tryAcquire(_ cost: Int) -> Bool {
    state.withLock { tokens in
      guard tokens >= cost else { return false }
      tokens -= cost
      return true
    }
  }

  /// Records a success: returns `retryCost` (what the request's last retry took) or the success refund.
  public func recordSuccess(retryCost: Int?) {
    let refund = retryCost ?? configuration.successRefund
    state.withLock { tokens in tokens = min(configuration.capacity, tokens + refund) }
  }
}

/// One ``RetryBudget`` per host, shared by every request to that host. Share one instance between clients
/// that talk to the same servers.
public final class RetryBudgets: Sendable {
  /// The sizes of every host's bucket.
  public let configuration: RetryBudgetConfiguration
  private let budgets = Mutex<[String: RetryBudget]>([:])

  /// The process-wide registry with the standard sizes, used by clients unless configured otherwise.
  public static let shared = RetryBudgets()

  /// Creates an empty registry.
  public init(configuration: RetryBudgetConfiguration = .standard) {
    self.configuration = configuration
  }

  /// The budget of `host` (`host[:port]`), created full on first use.
  public func budget(for host: String) -> RetryBudget {
    budgets.withLock { budgets in
      if let budget = budgets[host] { return budget }
      let budget = RetryBudget(configuration: configuration)
      budgets[host] = budget
      return budget
    }
  }
}
