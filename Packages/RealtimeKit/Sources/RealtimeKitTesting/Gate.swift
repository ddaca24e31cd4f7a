import Synchronization

/// Holds whoever passes it while it is closed, until it is opened; deaf to cancellation. A test uses it as an
/// application as slow as the test wants, or as a wait that never ends by itself.
public final class Gate: Sendable {
  private let state: Mutex<(isOpen: Bool, waiting: [CheckedContinuation<Void, Never>])>

  /// A gate, open unless `isOpen` is false.
  public init(isOpen: Bool = true) {
    state = Mutex((isOpen, []))
  }

  /// Holds the next ones to pass.
  public func close() { state.withLock { $0.isOpen = false } }

  /// Lets those waiting and the next ones pass.
  public func open() {
    let waiting = state.withLock { state in
      state.isOpen = true
      defer { state.waiting = [] }
      return state.waiting
    }
    for continuation in waiting { continuation.resume() }
  }

  /// Returns once the gate is open.
  public func pass() async {
    await withCheckedContinuation { continuation in
      let isOpen = state.withLock { state in
        if !state.isOpen { state.waiting.append(continuation) }
        return state.isOpen
      }
      if isOpen { continuation.resume() }
    }
  }
}
