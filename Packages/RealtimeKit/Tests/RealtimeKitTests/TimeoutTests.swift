import RealtimeKitTesting
import Synchronization
import Testing

/// `withTimeout`, what every waiting test relies on not to hang a test run.
@Suite struct TimeoutTests {
  /// A gate deaf to cancellation, open only at the test's end: what a lost continuation or a child process's exit is.
  final class DeafGate: Sendable {
    private let state = Mutex<(isOpen: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))
    func pass() async {
      await withCheckedContinuation { continuation in
        let isOpen = state.withLock { state in
          if !state.isOpen { state.waiting.append(continuation) }
          return state.isOpen
        }
        if isOpen { continuation.resume() }
      }
    }
    func open() {
      let waiting = state.withLock { state in
        state.isOpen = true
        defer { state.waiting = [] }
        return state.waiting
      }
      for continuation in waiting { continuation.resume() }
    }
  }

  @Test func aBodyThatIgnoresCancellationStillTimesOutAtTheDeadline() async throws {
    let gate = DeafGate()
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
    let gate = DeafGate()
    let waiting = Task { try await withTimeout(.seconds(60)) { await gate.pass() } }
    waiting.cancel()
    await #expect(throws: CancellationError.self) { try await waiting.value }
    gate.open()
  }
}
