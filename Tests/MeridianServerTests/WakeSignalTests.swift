import Testing

@testable import MeridianServer

/// The webhook delivery loop's wake-up: a wake-up is remembered for the next wait, and a wait's own timer never
/// counts as a wake-up for a later wait (the cause of an idle server spinning a core after its first delivery).
@Suite struct WakeSignalTests {
  @Test func aWakeUpBeforeTheWaitIsRememberedOnce() async {
    let signal = WakeSignal()
    signal.wake()
    let clock = ContinuousClock()
    let first = await clock.measure { await signal.wait(timeout: .seconds(10)) }
    #expect(first < .seconds(5))
    // The wake-up was used: the next wait lasts its timeout.
    let second = await clock.measure { await signal.wait(timeout: .milliseconds(300)) }
    #expect(second >= .milliseconds(250))
  }

  @Test func aWaitEndedByAWakeUpLeavesNothingForTheNextWait() async {
    let signal = WakeSignal()
    for _ in 0..<3 {
      let waiting = Task { await signal.wait(timeout: .seconds(10)) }
      try? await Task.sleep(for: .milliseconds(20))
      signal.wake()
      await waiting.value
    }
    // The three waits' cancelled timers must not wake this one.
    let clock = ContinuousClock()
    let elapsed = await clock.measure { await signal.wait(timeout: .milliseconds(300)) }
    #expect(elapsed >= .milliseconds(250))
  }

  @Test func aTimedOutWaitLeavesNothingForTheNextWait() async {
    let signal = WakeSignal()
    await signal.wait(timeout: .milliseconds(50))
    let clock = ContinuousClock()
    let elapsed = await clock.measure { await signal.wait(timeout: .milliseconds(300)) }
    #expect(elapsed >= .milliseconds(250))
  }

  /// A wait of an hour ends when its task is cancelled: the test would hit its time limit otherwise (a bound on the
  /// elapsed time failed at a load of 19, where the process's threads were starved for 40 s).
  @Test(.timeLimit(.minutes(2))) func cancellationEndsTheWait() async {
    let signal = WakeSignal()
    let waiting = Task { await signal.wait(timeout: .seconds(3_600)) }
    try? await Task.sleep(for: .milliseconds(20))
    waiting.cancel()
    await waiting.value
  }
}
