import Dispatch
import Foundation
import GRDB

/// Checkpoints a WAL database from a connection of its own, off the writer's thread
/// (``CheckpointPolicy/background(interval:)``): every interval, a passive checkpoint copies the pages committed
/// since the last one into the database file, and syncs it. It never waits for readers or the writer; a commit never
/// waits for it.
///
/// `@unchecked Sendable`: the timer is only configured here and cancelled in ``stop()``, which Dispatch allows from
/// any thread; the connection is a `DatabaseQueue`, which serializes its own use.
final class BackgroundCheckpointer: @unchecked Sendable {
  private let connection: DatabaseQueue
  private let queue: DispatchQueue
  private let timer: any DispatchSourceTimer

  /// Starts checkpointing the database file at `path` every `interval`.
  /// - Throws: GRDB's error when the file can't be opened.
  init(path: String, interval: Duration) throws {
    var configuration = Configuration()
    configuration.label = "PersistenceKit.checkpointer"
    connection = try DatabaseQueue(path: path, configuration: configuration)
    queue = DispatchQueue(label: "PersistenceKit.checkpointer")
    let nanoseconds = max(1_000_000, Int(interval / .nanoseconds(1)))
    timer = DispatchSource.makeTimerSource(queue: queue)
    timer.schedule(
      deadline: .now() + .nanoseconds(nanoseconds), repeating: .nanoseconds(nanoseconds),
      leeway: .nanoseconds(nanoseconds / 10))
    timer.setEventHandler { [connection] in
      // Busy (another process checkpointing) or interrupted: the next tick tries again.
      try? connection.writeWithoutTransaction { db in _ = try db.checkpoint(.passive) }
    }
    timer.resume()
  }

  /// Stops the timer, waits for a checkpoint in progress, and closes the connection.
  func stop() {
    timer.cancel()
    queue.sync {}
    try? connection.close()
  }
}
