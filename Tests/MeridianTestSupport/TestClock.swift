import Foundation
import Synchronization

/// A clock a test moves, in UTC milliseconds: what a server or a rule reads as "now" when the test would otherwise
/// sleep until a time has passed.
public final class TestClock: Sendable {
  private let value: Mutex<Int64>

  /// A clock at `start` (UTC ms; by default the real time now).
  public init(start: Int64 = Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))) {
    value = Mutex(start)
  }

  /// The time, UTC ms.
  public var now: Int64 { value.withLock { $0 } }

  /// Moves the clock `milliseconds` forward.
  public func advance(_ milliseconds: Int64) { value.withLock { $0 += milliseconds } }
}
