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

/// Waits until `remaining()` is 0 for as long as it keeps going down: throws ``WaitTimedOut`` once it has not gone
/// down for `stall`. For a backlog that drains slowly on a busy machine (hundreds of transactions on two shared
/// cores) but must never stop draining. Each stretch is one ``waitUntil(_:timeout:_:)``: the tests' one poll.
public func waitUntilDrained(
  _ what: String, stall: Duration = .seconds(60), _ remaining: () async throws -> Int
) async throws {
  var least = try await remaining()
  while least > 0 {
    var left = least
    do {
      try await waitUntil(what, timeout: stall) {
        left = try await remaining()
        return left < least
      }
    } catch is WaitTimedOut {
      throw WaitTimedOut(what: "\(what) (\(left) left, none done for \(stall))")
    }
    least = left
  }
}
