import Dispatch
import Foundation
import GRDB
import Synchronization

/// Checkpoints a WAL database from a connection of its own, off the writer's thread
/// (``CheckpointPolicy/background(interval:)``): every interval, a passive checkpoint copies the pages committed
/// since the last one into the database file, and syncs it. It never waits for readers or the writer; a commit never
/// waits for it.
final class BackgroundCheckpointer: Sendable {
  private let connection: DatabaseQueue
  private let queue: DispatchQueue
  /// The running timer (Dispatch's timer types aren't `Sendable`), until ``stop()`` cancels it.
  private let timer: Mutex<(any DispatchSourceTimer)?>

  /// Starts checkpointing the database file at `path` every `interval`.
  /// - Throws: GRDB's error when the file can't be opened.
  init(path: String, interval: Duration) throws {
    var configuration = Configuration()
    configuration.label = "PersistenceKit.checkpointer"
    connection = try DatabaseQueue(path: path, configuration: configuration)
    queue = DispatchQueue(label: "PersistenceKit.checkpointer")
    let nanoseconds = max(1_000_000, Int(interval / .nanoseconds(1)))
    let timer = DispatchSource.makeTimerSource(queue: queue)
    timer.schedule(
      deadline: .now() + .nanoseconds(nanoseconds), repeating: .nanoseconds(nanoseconds),
      leeway: .nanoseconds(nanoseconds / 10))
    timer.setEventHandler { [connection] in
      // Busy (another process checkpointing) or interrupted: the next tick tries again.
      try? connection.writeWithoutTransaction { db in _ = try db.checkpoint(.passive) }
    }
    timer.resume()
    self.timer = Mutex(timer)
  }

  /// Stops the timer, waits for a checkpoint in progress, and closes the connection.
  func stop() {
    timer.withLock { timer in
      timer?.cancel()
      timer = nil
    }
    queue.sync {}
    try? connection.close()
  }
}
