import Synchronization

/// Supplies bearer tokens and refreshes them when the server rejects one.
public protocol CredentialsProvider: Sendable {
  /// The current token, or `nil` when signed out.
  func currentToken() async throws -> String?

  /// Called when the server rejected `rejectedToken` (401 or a token error code). Returns a fresh token, or `nil`
  /// when the user must sign in again. Concurrent calls for the same rejected token must share one refresh.
  func refreshToken(rejected rejectedToken: String) async throws -> String?
}

/// A ``CredentialsProvider`` that keeps a token and refreshes it single-flight: however many requests fail with the
/// same token at once, `refresh` runs once and every one of them gets its result.
///
/// Reading the token takes a lock, not a hop onto the actor: every authenticated request reads it, and a hop there
/// and back costs each request two task switches. Refreshes stay on the actor, which makes them single-flight.
public actor BearerTokenCredentials: CredentialsProvider {
  private let storedToken: Mutex<String?>
  private var inFlight: (rejected: String, task: Task<String?, any Error>)?
  /// The rejected token whose refresh last completed; a late failure carrying it gets the current token (even `nil`,
  /// signed out) rather than a second refresh.
  private var lastRefreshed: String?
  private let refresh: @Sendable (_ rejectedToken: String) async throws -> String?

  /// How many times `refresh` ran.
  public private(set) var refreshCount = 0

  /// Creates a provider with an initial token (or `nil`) and the function that obtains a new one.
  public init(token: String?, refresh: @escaping @Sendable (_ rejectedToken: String) async throws -> String?) {
    storedToken = Mutex(token)
    self.refresh = refresh
  }

  /// The current token.
  public nonisolated func currentToken() -> String? { storedToken.withLock { $0 } }

  /// Replaces the token (after sign-in or sign-out).
  public func setToken(_ token: String?) { storedToken.withLock { $0 = token } }

  /// Refreshes once per rejected token; a request that failed with an older token gets the current one at once —
  /// also after a refresh returned `nil` (signed out): a late failure with the token that refresh replaced gets `nil`
  /// without refreshing again. A refresh that threw may be retried by the next failure.
  public func refreshToken(rejected rejectedToken: String) async throws -> String? {
    let token = currentToken()
    if let token, token != rejectedToken { return token }
    if token == nil, lastRefreshed == rejectedToken { return nil }
    if let inFlight, inFlight.rejected == rejectedToken { return try await inFlight.task.value }
    refreshCount += 1
    let refresh = self.refresh
    let task = Task { try await refresh(rejectedToken) }
    inFlight = (rejectedToken, task)
    defer { inFlight = nil }
    let newToken = try await task.value
    setToken(newToken)
    lastRefreshed = rejectedToken
    return newToken
  }
}
