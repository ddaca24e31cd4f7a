import Foundation
import GRDB
import Synchronization

extension SQLiteDatabase {
  /// Runs `body` in one write transaction, like `write(_:)`, but `body` may `await`: it
  /// runs on the writer's own thread (every job of its task, whatever it awaits), so it can use `db` as a GRDB
  /// closure does, and it is rolled back when `body` throws.
  ///
  /// For code written once against an asynchronous interface that another engine implements with a network
  /// database. `body` must only touch the database: the writer waits for it, so awaiting another write (or anything
  /// that waits for one) never ends.
  @discardableResult
  public func awaitingWrite<T: Sendable>(_ body: @escaping @Sendable (Database) async throws -> T) async throws -> T {
    try await write { db in try DatabaseThreadExecutor.run(body, with: db) }
  }

  /// Runs `body` in a read-only snapshot, like `read(_:)`, but `body` may `await` (see
  /// ``awaitingWrite(_:)``).
  public func awaitingRead<T: Sendable>(_ body: @escaping @Sendable (Database) async throws -> T) async throws -> T {
    try await read { db in try DatabaseThreadExecutor.run(body, with: db) }
  }
}

/// A task executor whose jobs run on the thread that called ``run(_:with:)``: the GRDB queue that holds `db`.
/// `@unchecked Sendable`: its job list and flag are only touched under `condition`'s lock.
final class DatabaseThreadExecutor: TaskExecutor, @unchecked Sendable {
  private let condition = NSCondition()
  private var jobs: [UnownedJob] = []
  private var finished = false

  /// Runs `body(db)` as a task whose jobs all run on this thread, and waits for its result.
  static func run<T: Sendable>(_ body: @escaping @Sendable (Database) async throws -> T, with db: Database) throws -> T
  {
    let executor = DatabaseThreadExecutor()
    let handle = UncheckedDatabase(db: db)
    let result = Mutex<Result<T, any Error>?>(nil)
    Task(executorPreference: executor) {
      let outcome: Result<T, any Error>
      do { outcome = .success(try await body(handle.db)) } catch { outcome = .failure(error) }
      result.withLock { $0 = outcome }
      executor.finish()
    }
    executor.drain()
    guard let outcome = result.withLock({ $0 }) else { preconditionFailure("the task ended without a result") }
    return try outcome.get()
  }

  func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    condition.lock()
    jobs.append(job)
    condition.signal()
    condition.unlock()
  }

  private func finish() {
    condition.lock()
    finished = true
    condition.signal()
    condition.unlock()
  }

  /// Runs the jobs as they come, on this thread, until the task has finished.
  private func drain() {
    while true {
      condition.lock()
      while jobs.isEmpty && !finished { condition.wait() }
      if jobs.isEmpty {
        condition.unlock()
        return
      }
      let job = jobs.removeFirst()
      condition.unlock()
      job.runSynchronously(on: asUnownedTaskExecutor())
    }
  }
}

/// The database handle, handed to the task that runs on its own thread.
private struct UncheckedDatabase: @unchecked Sendable {
  let db: Database
}
