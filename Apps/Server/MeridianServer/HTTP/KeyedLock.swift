/// Serializes work per key inside one process: a request holding `Idempotency-Key` K makes a concurrent retry with
/// K wait, so the retry is answered from the stored first answer instead of being processed twice.
///
/// Several server instances would need the database to arbitrate (e.g. inserting the key row first); this is the
/// single-process SQLite setup's version.
actor KeyedLock {
  private var waiters: [String: [CheckedContinuation<Void, Never>]] = [:]

  /// Runs `body` while holding `key`.
  func withLock<T: Sendable>(_ key: String, _ body: @Sendable () async throws -> T) async throws -> T {
    await acquire(key)
    do {
      let result = try await body()
      release(key)
      return result
    } catch {
      release(key)
      throw error
    }
  }

  private func acquire(_ key: String) async {
    if waiters[key] == nil {
      waiters[key] = []
      return
    }
    await withCheckedContinuation { continuation in waiters[key, default: []].append(continuation) }
  }

  private func release(_ key: String) {
    guard var queue = waiters[key] else { return }
    if queue.isEmpty {
      waiters[key] = nil
    } else {
      let next = queue.removeFirst()
      waiters[key] = queue
      next.resume()
    }
  }
}
