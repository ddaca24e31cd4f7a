/// A condition that did not hold within its wait (``waitUntil(_:timeout:_:)``).
public struct WaitTimedOut: Error, CustomStringConvertible {
  /// What was waited for.
  public let what: String
  public var description: String { "timed out waiting for \(what)" }
}

/// The tests' one wait for a state nothing announces (a row in another process's database, a lock waiter): asks
/// `condition` every 20 ms until it holds; throws ``WaitTimedOut`` after `timeout`. Prefer an acknowledgement or the
/// injected clock wherever one exists.
public func waitUntil(
  _ what: String, timeout: Duration = .seconds(120), _ condition: () async throws -> Bool
) async throws {
  let deadline = ContinuousClock.now + timeout
  while try await !condition() {
    guard ContinuousClock.now < deadline else { throw WaitTimedOut(what: what) }
    try await Task.sleep(for: .milliseconds(20))
  }
}
