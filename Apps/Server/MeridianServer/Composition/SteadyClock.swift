import DomainKit
import Synchronization

/// The server's clock, in UTC milliseconds: the wall clock, except that it never goes back. When the wall clock is
/// stepped back (an NTP correction, an operator's `date`, a virtual machine resumed from an old snapshot) the server's
/// time runs on from where it was at the pace of the monotonic clock until the wall clock catches up; a step
/// forward is followed at once.
///
/// So a clock moved back an hour refuses no fix a device dated correctly (the future-fix rule reads this time), keeps
/// no token alive past its expiry and no rate-limit window open longer than its length; a clock moved forward only
/// ends tokens and windows early, which is the safe side. A wall clock that was wrongly ahead when the server started
/// and is then corrected back is followed only once it catches up, or after a restart.
public final class SteadyClock: Sendable {
  private let wall: @Sendable () -> Int64
  private let monotonic: @Sendable () -> ContinuousClock.Instant
  /// The latest time the wall clock led, and when (monotonic): the steady time is this plus the time since.
  private let anchor: Mutex<(wall: Int64, at: ContinuousClock.Instant)?> = Mutex(nil)

  /// A clock on `wall` (the system's by default) and `monotonic` (the system's; tests give their own).
  public init(
    wall: @escaping @Sendable () -> Int64 = Timestamp.systemClock,
    monotonic: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }
  ) {
    self.wall = wall
    self.monotonic = monotonic
  }

  /// The time: the wall clock's when it is at least the steady time, else the steady time.
  public func now() -> Int64 {
    let instant = monotonic()
    let wallNow = wall()
    return anchor.withLock { anchor in
      if let (anchorWall, anchorInstant) = anchor {
        let steady = anchorWall + Self.milliseconds(anchorInstant.duration(to: instant))
        if wallNow < steady { return steady }
      }
      anchor = (wallNow, instant)
      return wallNow
    }
  }

  /// A server's clock: a new ``SteadyClock`` on the system's clocks, as a closure.
  public static func system() -> @Sendable () -> Int64 {
    let clock = SteadyClock()
    return { clock.now() }
  }

  /// Whole milliseconds of `duration` (never negative: a monotonic clock doesn't go back).
  static func milliseconds(_ duration: Duration) -> Int64 {
    let (seconds, attoseconds) = duration.components
    return max(0, seconds * 1000 + attoseconds / 1_000_000_000_000_000)
  }
}
