/// The database could not be reached, or did not answer within its deadline: nothing of the call was stored, and
/// the same call may succeed in a few seconds. The server answers it with 503 `unavailable` and `Retry-After`.
///
/// ``reason`` is for the operator's log; it names no library type and is never sent to clients.
public struct StoreUnavailableError: Error, Sendable, CustomStringConvertible {
  /// Why, in words (for logs).
  public var reason: String

  /// An error saying why.
  public init(reason: String) {
    self.reason = reason
  }

  public var description: String { "The database is unavailable: \(reason)" }
}
