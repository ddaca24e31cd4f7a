import Foundation

/// How many test databases one test process keeps open on the cluster of `Tools/postgres` at once. Every open test
/// database holds a few connections (a store's pool, a second node, a spawned `meridian-admin` or server); without a
/// bound, a slow machine that runs a whole suite's tests side by side opens more than the cluster's
/// `max_connections` and the late tests fail with "too many clients". A test that asks beyond the allowance waits
/// for another test to drop its database. `MERIDIAN_TEST_POSTGRES_DATABASES` overrides the default of 12.
actor DatabaseAllowance {
  static let shared = DatabaseAllowance(
    limit: ProcessInfo.processInfo.environment["MERIDIAN_TEST_POSTGRES_DATABASES"].flatMap(Int.init) ?? 12)

  private let limit: Int
  private var inUse = 0
  private var waiting: [CheckedContinuation<Void, Never>] = []

  init(limit: Int) {
    self.limit = max(1, limit)
  }

  /// Waits until fewer than the limit are open, then counts one more.
  func acquire() async {
    if inUse < limit {
      inUse += 1
      return
    }
    // The releasing test hands its place over directly, so `inUse` stays counted.
    await withCheckedContinuation { waiting.append($0) }
  }

  /// Counts one fewer, or hands the place to the longest-waiting test.
  func release() {
    if waiting.isEmpty {
      inUse -= 1
    } else {
      waiting.removeFirst().resume()
    }
  }
}
