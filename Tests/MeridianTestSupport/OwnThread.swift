import Foundation

/// Runs `work` — blocking or long CPU-bound synchronous code — on a thread started for it and returns its result,
/// never on one of the concurrency pool's threads: the pool has one per core (two in CI), and every test of the
/// process, with the servers it starts in-process, waits while they are held.
///
/// `work` runs outside the test's task, so it records no `#expect`: return what to check.
public func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
  try await withCheckedThrowingContinuation { continuation in
    Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
  }
}

/// ``onOwnThread(_:)`` for work that doesn't throw.
public func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
  await withCheckedContinuation { continuation in
    Thread.detachNewThread { continuation.resume(returning: work()) }
  }
}
