import RealtimeKitTesting
import Testing

/// `withTimeout`, what every waiting test relies on not to hang a test run.
@Suite struct TimeoutTests {
  @Test func aBodyThatIgnoresCancellationStillTimesOutAtTheDeadline() async throws {
    let gate = Gate(isOpen: false)  // deaf to cancellation, as a lost continuation or a process's exit
    let start = ContinuousClock.now
    let error = await #expect(throws: TimeoutError.self) {
      try await withTimeout(.milliseconds(200)) { await gate.pass() }
    }
    #expect(error?.timeout == .milliseconds(200))
    #expect(ContinuousClock.now - start < .seconds(5))
    gate.open()
  }

  @Test func theBodysResultOrErrorIsTheAnswer() async throws {
    #expect(try await withTimeout { 42 } == 42)
    struct Refused: Error, Equatable {}
    await #expect(throws: Refused()) { try await withTimeout { throw Refused() } }
  }

  @Test func cancellingTheCallerEndsTheWait() async throws {
    let gate = Gate(isOpen: false)  // deaf to cancellation, as a lost continuation or a process's exit
    let waiting = Task { try await withTimeout(.seconds(60)) { await gate.pass() } }
    waiting.cancel()
    await #expect(throws: CancellationError.self) { try await waiting.value }
    gate.open()
  }
}
