import Foundation
import PostgresNIO
import Synchronization

/// What `target_session_attrs` looks at in a session: whether the server is a hot standby, and whether the
/// session's transactions are read-only by default.
struct PostgresSessionState: Sendable, Hashable {
  var inHotStandby: Bool
  var readOnly: Bool

  /// Reads the state of `connection`'s session (one round trip).
  static func of(_ connection: PostgresConnection, logger: Logger) async throws -> PostgresSessionState {
    let rows = try await connection.query(
      "SELECT pg_is_in_recovery(), current_setting('transaction_read_only') = 'on'", logger: logger
    ).collect()
    guard let row = rows.first else { throw PostgresDatabaseError.unavailable("the server sent no session state") }
    let (inHotStandby, readOnly) = try row.decode((Bool, Bool).self)
    return PostgresSessionState(inHotStandby: inHotStandby, readOnly: readOnly)
  }
}

extension PostgresURL.TargetSessionAttributes {
  /// Whether a session in `state` is kept; ``preferStandby`` keeps any (a standby is looked for first, by
  /// ``PostgresURL/connectToTarget(connectTimeout:logger:)``).
  func accepts(_ state: PostgresSessionState) -> Bool {
    switch self {
    case .any, .preferStandby: true
    case .readWrite: !state.readOnly
    case .readOnly: state.readOnly
    case .primary: !state.inHotStandby
    case .standby: state.inHotStandby
    }
  }

  /// Why a session in `state` is not kept, in words.
  func refusal(_ state: PostgresSessionState) -> String {
    let what = state.inHotStandby ? "a hot standby" : state.readOnly ? "a read-only session" : "a read-write primary"
    return "\(what), not target_session_attrs=\(rawValue)"
  }
}

/// No host of a URL gave a session its `target_session_attrs` accepts: why, host by host.
struct PostgresNoTargetSession: Error, CustomStringConvertible {
  /// `host:port: reason`, in the order the hosts were tried (just the reason for a URL with one host).
  var reasons: [String]

  var description: String { reasons.joined(separator: "; ") }
}

extension PostgresURL {
  /// Connects to ``endpoints`` in order and returns the first connection whose session
  /// ``targetSessionAttributes`` accepts (for ``TargetSessionAttributes/preferStandby``: the first standby, else the
  /// first host that answered), with its endpoint; the others are closed.
  ///
  /// - Parameter connectTimeout: How long to wait for each host (the URL's `connect_timeout` when nil).
  /// - Throws: ``PostgresNoTargetSession`` saying, host by host, why none was kept.
  func connectToTarget(
    connectTimeout: Duration? = nil, logger: Logger
  ) async throws(PostgresNoTargetSession) -> (PostgresConnection, Endpoint) {
    var reasons: [String] = []
    var fallback: Endpoint?
    // Each host gets the connect timeout for the connection and its session's state together, enforced here too:
    // a connection attempt must never hold up the hosts after it.
    let limit = connectTimeout ?? .seconds(self.connectTimeout ?? 10)
    for endpoint in endpoints {
      let reason: String
      do {
        let (connection, state) = try await Self.withTimeLimit(limit) {
          [self, targetSessionAttributes] () async throws -> (PostgresConnection, PostgresSessionState?) in
          let connection = try await connect(to: endpoint, connectTimeout: limit, logger: logger)
          guard targetSessionAttributes != .any else { return (connection, nil) }
          do {
            return (connection, try await PostgresSessionState.of(connection, logger: logger))
          } catch {
            try? await connection.close()
            throw error
          }
        } late: { value in
          try? await value.0.close()
        }
        guard let state else { return (connection, endpoint) }
        let wanted =
          targetSessionAttributes == .preferStandby ? state.inHotStandby : targetSessionAttributes.accepts(state)
        if wanted { return (connection, endpoint) }
        if fallback == nil && targetSessionAttributes == .preferStandby { fallback = endpoint }
        reason = targetSessionAttributes.refusal(state)
        try? await connection.close()
      } catch {
        reason = PostgresDatabaseError.describe(error)
      }
      reasons.append(endpoints.count == 1 ? reason : "\(endpoint): \(reason)")
    }
    if let fallback, let connection = try? await connect(to: fallback, connectTimeout: limit, logger: logger) {
      return (connection, fallback)
    }
    throw PostgresNoTargetSession(reasons: reasons)
  }

  /// The value of `operation`, run in a task of its own, or ``PostgresDatabaseError/timedOut(_:)`` once `limit` has
  /// passed — without waiting for `operation` to notice; a value it returns after that is given to `late`.
  private static func withTimeLimit<T: Sendable>(
    _ limit: Duration, _ operation: @escaping @Sendable () async throws -> T,
    late: @escaping @Sendable (T) async -> Void
  ) async throws -> T {
    let answer = FirstAnswer<T>()
    return try await withCheckedThrowingContinuation { continuation in
      answer.start(continuation)
      let work = Task {
        do {
          let value = try await operation()
          if !answer.give(.success(value)) { await late(value) }
        } catch {
          answer.give(.failure(error))
        }
      }
      Task {
        try? await Task.sleep(for: limit)
        if answer.give(.failure(PostgresDatabaseError.timedOut(.connectionWait(limit)))) { work.cancel() }
      }
    }
  }

  /// A connection of its own, outside any pool, to the first of ``endpoints`` whose session
  /// ``targetSessionAttributes`` accepts; the caller closes it.
  ///
  /// - Throws: for a URL with one host and no target, the driver's own error (a `PSQLError` with the server's
  ///   SQLSTATE, e.g. 3D000 for a missing database); otherwise ``PostgresDatabaseError/cannotConnect(url:reason:)``
  ///   saying, host by host, why none was kept.
  public func connect(logger: Logger) async throws -> PostgresConnection {
    if endpoints.count == 1 && targetSessionAttributes == .any {
      return try await connect(to: endpoint, connectTimeout: nil, logger: logger)
    }
    do {
      return try await connectToTarget(logger: logger).0
    } catch {
      throw PostgresDatabaseError.cannotConnect(url: description, reason: error.description)
    }
  }

  /// A connection to `endpoint`, outside any pool.
  func connect(to endpoint: Endpoint, connectTimeout: Duration?, logger: Logger) async throws -> PostgresConnection {
    var configuration = try connectionConfiguration(for: endpoint)
    if let connectTimeout {
      let parts = connectTimeout.components
      configuration.options.connectTimeout = .nanoseconds(
        parts.seconds * 1_000_000_000 + parts.attoseconds / 1_000_000_000)
    }
    let connection = try await PostgresConnection.connect(
      configuration: configuration, id: Self.connectionIDs.add(1, ordering: .relaxed).newValue, logger: logger)
    try await applySettings(on: connection, logger: logger)
    return connection
  }

  /// Ids of connections made outside a pool (the pools number theirs from 0).
  private static let connectionIDs = Atomic<Int>(1_000_000)
}

/// The one answer of an operation racing its time limit.
private final class FirstAnswer<T: Sendable>: Sendable {
  private let state = Mutex<(continuation: CheckedContinuation<T, any Error>?, answered: Bool)>((nil, false))

  func start(_ continuation: CheckedContinuation<T, any Error>) {
    state.withLock { $0.continuation = continuation }
  }

  /// Resumes the waiting caller with `result` unless it was answered already; whether it was this answer.
  @discardableResult
  func give(_ result: Result<T, any Error>) -> Bool {
    let continuation: CheckedContinuation<T, any Error>?? = state.withLock { state in
      guard !state.answered else { return .none }
      state.answered = true
      defer { state.continuation = nil }
      return .some(state.continuation)
    }
    guard case .some(let waiting) = continuation else { return false }
    waiting?.resume(with: result)
    return true
  }
}
