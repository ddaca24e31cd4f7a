import Synchronization
import Testing

@testable import MeridianServer

/// The server's clock follows the wall clock forward at once and never back: after a step back it runs on at the
/// monotonic clock's pace until the wall clock catches up.
@Suite struct SteadyClockTests {
  /// A wall clock and a monotonic clock the test moves.
  final class Clocks: Sendable {
    let wall = Mutex<Int64>(1_800_000_000_000)
    let elapsed = Mutex<Duration>(.zero)
    let start = ContinuousClock.now

    func steady() -> SteadyClock {
      SteadyClock(wall: { self.wall.withLock { $0 } }, monotonic: { self.start + self.elapsed.withLock { $0 } })
    }

    /// Real time passing: both clocks move.
    func pass(_ milliseconds: Int64) {
      wall.withLock { $0 += milliseconds }
      elapsed.withLock { $0 += .milliseconds(milliseconds) }
    }

    /// The wall clock stepped (an NTP correction, `date`): only it moves.
    func step(_ milliseconds: Int64) { wall.withLock { $0 += milliseconds } }
  }

  @Test func itFollowsTheWallClockForwardAndNeverBack() {
    let clocks = Clocks()
    let clock = clocks.steady()
    #expect(clock.now() == 1_800_000_000_000)
    clocks.pass(1_500)
    #expect(clock.now() == 1_800_000_001_500)

    // Stepped back an hour: the time runs on from where it was.
    clocks.step(-3_600_000)
    #expect(clock.now() == 1_800_000_001_500)
    clocks.pass(2_000)
    #expect(clock.now() == 1_800_000_003_500)

    // Stepped forward a day: followed at once, and from there on.
    clocks.step(86_400_000 + 3_600_000)
    #expect(clock.now() == 1_800_086_403_500)
    clocks.pass(250)
    #expect(clock.now() == 1_800_086_403_750)

    // Corrected back by the day: the clock runs on until the wall clock has caught up, never repeating a time.
    clocks.step(-86_400_000)
    var readings: [Int64] = []
    for _ in 0..<5 {
      clocks.pass(10)
      readings.append(clock.now())
    }
    #expect(
      readings == [1_800_086_403_760, 1_800_086_403_770, 1_800_086_403_780, 1_800_086_403_790, 1_800_086_403_800])
  }

  @Test func aStepBackSmallerThanTheTimeSinceIsCaughtUpAndFollowedAgain() {
    let clocks = Clocks()
    let clock = clocks.steady()
    _ = clock.now()
    clocks.step(-100)
    #expect(clock.now() == 1_800_000_000_000)
    clocks.pass(60)
    #expect(clock.now() == 1_800_000_000_060)
    clocks.pass(60)  // the wall clock (1_800_000_000_020) is still behind
    #expect(clock.now() == 1_800_000_000_120)
    clocks.step(200)  // ahead again: followed
    #expect(clock.now() == 1_800_000_000_220)
  }
}
