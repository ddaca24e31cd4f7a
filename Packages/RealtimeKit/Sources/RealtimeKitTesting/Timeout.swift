import Synchronization

/// Thrown by ``withTimeout(_:_:)`` when the deadline passes first.
public struct TimeoutError: Error, Sendable, Hashable {
  /// The deadline that passed.
  public let timeout: Duration
}

/// Runs `body`, failing with ``TimeoutError`` if it takes longer than `timeout`. The body is then cancelled and not
/// waited for: one that doesn't end when cancelled (a task's `value`, a child process's exit, a continuation nobody
/// resumes) still fails the caller at the deadline, rather than holding it (and a test run) for ever.
public func withTimeout<T: Sendable>(
  _ timeout: Duration = .seconds(20),
  _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
  let race = FirstOutcome<T>()
  let work = Task {
    do {
      race.settle(.success(try await body()))
    } catch {
      race.settle(.failure(error))
    }
  }
  let timer = Task {
    try? await Task.sleep(for: timeout)
    race.settle(.failure(TimeoutError(timeout: timeout)))
  }
  defer {
    work.cancel()
    timer.cancel()
  }
  return try await withTaskCancellationHandler {
    try await withCheckedThrowingContinuation { race.wait($0) }
  } onCancel: {
    race.settle(.failure(CancellationError()))
  }
}

/// The first of several outcomes, handed to the one waiting for it whether it came before or after the wait began.
private final class FirstOutcome<T: Sendable>: Sendable {
  private enum State {
    case pending
    case waiting(CheckedContinuation<T, any Error>)
    case settled(Result<T, any Error>)
    case delivered
  }
  private let state = Mutex(State.pending)

  func wait(_ continuation: CheckedContinuation<T, any Error>) {
    let outcome = state.withLock { state -> Result<T, any Error>? in
      guard case .settled(let outcome) = state else {
        state = .waiting(continuation)
        return nil
      }
      state = .delivered
      return outcome
    }
    if let outcome { continuation.resume(with: outcome) }
  }

  /// Settles the race with `outcome` unless it is settled already.
  func settle(_ outcome: Result<T, any Error>) {
    let waiting = state.withLock { state -> CheckedContinuation<T, any Error>? in
      switch state {
      case .pending:
        state = .settled(outcome)
        return nil
      case .waiting(let continuation):
        state = .delivered
        return continuation
      case .settled, .delivered:
        return nil
      }
    }
    waiting?.resume(with: outcome)
  }
}
