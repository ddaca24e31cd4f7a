import Foundation
import Synchronization

/// How long a ``PostgresDatabase`` lets each call take: every call leases a connection within
/// ``connectionWait`` and finishes within its statement deadline (``statement`` unless the call gives its own), or
/// throws ``PostgresDatabaseError/timedOut(_:)``. A call whose deadline passes while it runs has its connection
/// closed (the pool never hands that connection out again), and PostgreSQL stops its statement within about a second
/// and ends the session (pooled sessions check their client every second: `client_connection_check_interval`).
public struct PostgresTimeouts: Sendable, Hashable {
  /// How long a call waits for a pooled connection (all busy, or the server unreachable); 30 s by default (a
  /// server sets its own, shorter wait: 3 s in meridian-server).
  public var connectionWait: Duration
  /// How long a call may run once it has its connection (one query, or a transaction from `BEGIN` to `COMMIT`);
  /// 30 s by default.
  public var statement: Duration
  /// How often the database is tried while it does not answer, so that the pool is made afresh as soon as it
  /// answers again (postgres-nio's pool waits up to a minute between its own attempts); 250 ms by default.
  public var reconnectInterval: Duration

  /// Timeouts; the defaults suit an interactive server.
  public init(
    connectionWait: Duration = .seconds(30), statement: Duration = .seconds(30),
    reconnectInterval: Duration = .milliseconds(250)
  ) {
    self.connectionWait = connectionWait
    self.statement = statement
    self.reconnectInterval = reconnectInterval
  }
}

/// One call's deadline: it times out waiting for a connection after `wait`, or `limit` after it got one (then its
/// connection is closed, which fails whatever the call still awaits on it).
final class PostgresDeadline: Sendable {
  private enum State {
    case waiting
    case leased(PostgresConnection, since: ContinuousClock.Instant)
    case finished
    case expired(PostgresDatabaseError.Timeout)
    /// Ended as unavailable, for this reason.
    case lost(String)
  }

  private let state = Mutex(State.waiting)
  private let lostHandler = Mutex<(@Sendable (String) -> Void)?>(nil)
  private let created = ContinuousClock.now
  private let wait: Duration
  private let limit: Duration

  init(wait: Duration, limit: Duration) {
    self.wait = wait
    self.limit = limit
  }

  /// Records that the call got `connection`; false when its wait had expired meanwhile (it must not run then).
  ///
  /// Registers nothing on the connection: a pooled connection outlives thousands of calls, so each call watching
  /// its close (`closeFuture.whenComplete`) would keep every finished call's deadline, and what it holds, for the
  /// connection's lifetime. The connection's one close watch (``PostgresDatabase``) calls ``connectionClosed()``.
  func leased(_ connection: PostgresConnection) -> Bool {
    state.withLock { state in
      guard case .waiting = state else { return false }
      state = .leased(connection, since: .now)
      return true
    }
  }

  /// The connection the call leased closed: if the call still runs on it 100 ms later (postgres-nio never answers
  /// a query written to a closed connection), it ends as lost.
  func connectionClosed() {
    Task {
      try? await Task.sleep(for: .milliseconds(100))
      let reason = "the server closed the connection during the call"
      let running = self.state.withLock { state in
        guard case .leased = state else { return false }
        state = .lost(reason)
        return true
      }
      if running, let handler = self.lostHandler.withLock({ $0 }) { handler(reason) }
    }
  }

  /// What ends the call when its connection is lost under it, or ``abandonIfWaiting(_:)`` abandons it; run at once
  /// if that happened already.
  func onLost(_ handler: @escaping @Sendable (String) -> Void) {
    lostHandler.withLock { $0 = handler }
    let reason: String? = state.withLock { state in
      guard case .lost(let reason) = state else { return nil }
      return reason
    }
    if let reason { handler(reason) }
  }

  /// Ends the call as unavailable, for `reason`, if it still waits for a connection (its pool was replaced by one
  /// for another host, and will never give it one it may use).
  func abandonIfWaiting(_ reason: String) {
    let abandoned = state.withLock { state in
      guard case .waiting = state else { return false }
      state = .lost(reason)
      return true
    }
    if abandoned, let handler = lostHandler.withLock({ $0 }) { handler(reason) }
  }

  /// Records that the call ended.
  func finish() { state.withLock { $0 = .finished } }

  /// The deadline that passed, if one did.
  var expired: PostgresDatabaseError.Timeout? {
    state.withLock { state in
      if case .expired(let timeout) = state { return timeout }
      return nil
    }
  }

  /// Sleeps until the deadline (or cancellation), then marks the call expired and closes its connection. Returns
  /// whether it expired the call.
  func enforce() async -> Bool {
    while true {
      let step: (expired: Bool, connection: PostgresConnection?, sleep: Duration?) = state.withLock { state in
        switch state {
        case .waiting:
          let remaining = created.advanced(by: wait) - .now
          // Waking at least every `limit`, a lease made meanwhile is never overrun by more than its limit.
          if remaining > .zero { return (false, nil, min(remaining, limit)) }
          state = .expired(.connectionWait(wait))
          return (true, nil, nil)
        case .leased(let connection, let since):
          let remaining = since.advanced(by: limit) - .now
          if remaining > .zero { return (false, nil, remaining) }
          state = .expired(.statement(limit))
          return (true, connection, nil)
        case .finished, .expired, .lost: return (false, nil, nil)
        }
      }
      if let sleep = step.sleep {
        guard (try? await Task.sleep(for: sleep)) != nil else { return false }
        continue
      }
      if let connection = step.connection { try? await connection.close() }
      return step.expired
    }
  }
}

extension PostgresDatabase {
  /// Runs `operation` (which leases a connection and reports it to `deadline`) in a task of its own, and returns
  /// its result, or throws ``PostgresDatabaseError/timedOut(_:)`` as soon as `deadline` passes: the lease is
  /// cancelled, or the connection closed, and the caller does not wait for `operation` to notice. (A query written
  /// to a connection the server has just closed never completes in postgres-nio: waiting for it would hang the
  /// caller for good.)
  static func underDeadline<T: Sendable>(
    _ deadline: PostgresDeadline, _ operation: @escaping @Sendable () async throws -> T
  ) async throws -> T {
    let outcome = DeadlineOutcome<T>()
    return try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { continuation in
        outcome.start(continuation)
        let work = Task {
          defer { deadline.finish() }
          do {
            outcome.resume(.success(try await operation()))
          } catch {
            outcome.resume(.failure(deadline.expired.map(PostgresDatabaseError.timedOut) ?? error))
          }
        }
        let enforcer = Task {
          guard await deadline.enforce(), let timeout = deadline.expired else { return }
          work.cancel()
          outcome.resume(.failure(PostgresDatabaseError.timedOut(timeout)))
        }
        deadline.onLost { reason in
          work.cancel()
          outcome.resume(.failure(PostgresDatabaseError.unavailable(reason)))
        }
        outcome.onEnd {
          work.cancel()
          enforcer.cancel()
        }
      }
    } onCancel: {
      outcome.resume(.failure(CancellationError()))
    }
  }
}

/// The one answer of a call under a deadline: from the call, its enforcer or the caller's cancellation, whichever
/// comes first.
private final class DeadlineOutcome<T: Sendable>: Sendable {
  private struct State {
    var continuation: CheckedContinuation<T, any Error>?
    var early: Result<T, any Error>?
    var ended = false
    var onEnd: (@Sendable () -> Void)?
  }

  private let state = Mutex(State())

  func start(_ continuation: CheckedContinuation<T, any Error>) {
    let early: Result<T, any Error>? = state.withLock { state in
      if let early = state.early { return early }
      state.continuation = continuation
      return nil
    }
    if let early { continuation.resume(with: early) }
  }

  func onEnd(_ action: @escaping @Sendable () -> Void) {
    let ended = state.withLock { state in
      if !state.ended { state.onEnd = action }
      return state.ended
    }
    if ended { action() }
  }

  func resume(_ result: Result<T, any Error>) {
    let (continuation, action): (CheckedContinuation<T, any Error>?, (@Sendable () -> Void)?) = state.withLock {
      state in
      guard !state.ended else { return (nil, nil) }
      state.ended = true
      defer { (state.continuation, state.onEnd) = (nil, nil) }
      if state.continuation == nil { state.early = result }
      return (state.continuation, state.onEnd)
    }
    continuation?.resume(with: result)
    action?()
  }
}
