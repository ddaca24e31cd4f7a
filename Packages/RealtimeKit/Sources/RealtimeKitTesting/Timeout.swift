/// Thrown by ``withTimeout(_:_:)`` when the deadline passes first.
public struct TimeoutError: Error, Sendable, Hashable {
  /// The deadline that passed.
  public let timeout: Duration
}

/// Runs `body`, failing with ``TimeoutError`` if it takes longer than `timeout` (the body is then cancelled).
public func withTimeout<T: Sendable>(
  _ timeout: Duration = .seconds(20),
  _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
  try await withThrowingTaskGroup(of: T?.self) { group in
    group.addTask { try await body() }
    group.addTask {
      try await Task.sleep(for: timeout)
      return nil
    }
    let first = try await group.next() ?? nil
    group.cancelAll()
    guard let first else { throw TimeoutError(timeout: timeout) }
    return first
  }
}
