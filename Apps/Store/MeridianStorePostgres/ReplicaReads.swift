import DomainKit
import Foundation
import Logging
import MeridianStore
import PersistenceKitPostgres
import PostgresNIO
import Synchronization

/// Reads that may lag (history pages and exports, places, polls feeds, statistics) served by a streaming replica
/// (`MERIDIAN_DATABASE_REPLICA_URL`), with each person's own writes kept in view.
///
/// After a person's write (``noteWrite(by:)``: the primary's WAL position once it committed), their reads go to the
/// primary until the replica has replayed past that position (`pg_last_wal_replay_lsn()`, asked only while such a
/// write is pending); everyone else reads from the replica at once. A replica that can't be reached, or whose
/// connection fails, is left alone for ``restAfterFailure`` and its reads go to the primary meanwhile; one that is not
/// reachable when the store opens is connected to in the background. A query the replica refuses (a conflict with
/// recovery cancels it) runs again on the primary. The writes this node saw are what it keeps in view: a person whose
/// requests go to several nodes reads their writes made through another node once the replica replays them
/// (typically within a second).
final class ReplicaReads: Sendable {
  private struct State {
    var database: PersistenceKitPostgres.PostgresDatabase?
    /// Person → the primary's WAL position after their last write, while the replica had not replayed it.
    var pendingWrites: [UserID: Int64] = [:]
    /// The replica's replay position when last asked.
    var replayed: Int64 = 0
    /// The replica is not used before this instant (it failed).
    var restingUntil: ContinuousClock.Instant?
    var closed = false
    var reads = LaggingReads(replica: 0, primary: 0)
  }

  /// How long a replica that failed is left alone.
  static let restAfterFailure: Duration = .seconds(5)

  private let state = Mutex(State())
  private let connector = Mutex<Task<Void, Never>?>(nil)
  private let url: PostgresURL
  private let maximumConnections: Int
  private let timeouts: PostgresTimeouts
  private let primary: PostgresCalls
  private let logger: Logger

  /// Reads for the replica at `url`, falling back to `primary`; call ``start()``, then ``close()`` when done.
  init(url: PostgresURL, maximumConnections: Int, timeouts: PostgresTimeouts, primary: PostgresCalls, logger: Logger) {
    self.url = url
    self.maximumConnections = maximumConnections
    self.timeouts = timeouts
    self.primary = primary
    self.logger = logger
  }

  /// Connects to the replica: at once when it answers, else in the background every 2 s until it does.
  func start() async {
    if await connect() { return }
    connector.withLock { task in
      task = Task { [weak self] in
        while !Task.isCancelled {
          try? await Task.sleep(for: .seconds(2))
          guard let self, !Task.isCancelled else { return }
          if await self.connect() { return }
        }
      }
    }
  }

  private func connect() async -> Bool {
    do {
      let database = try await PersistenceKitPostgres.PostgresDatabase.open(
        url: url, maxConnections: maximumConnections, timeouts: timeouts, logger: logger)
      let kept = state.withLock { state in
        guard !state.closed else { return false }
        state.database = database
        return true
      }
      if !kept { await database.close() }
      logger.info("reading from the replica", metadata: ["replica": "\(url)"])
      return true
    } catch {
      logger.warning(
        "the replica can't be reached; reads go to the primary until it can",
        metadata: ["replica": "\(url)", "error": "\(PostgresDatabaseError.describe(error))"])
      return false
    }
  }

  /// Stops using the replica and closes its connections.
  func close() async {
    connector.withLock { $0?.cancel() }
    let database = state.withLock { state in
      state.closed = true
      defer { state.database = nil }
      return state.database
    }
    await database?.close()
  }

  /// How many reads the replica and the primary served (for metrics and tests).
  var readsServed: LaggingReads { state.withLock { $0.reads } }

  /// `user` wrote: their reads stay on the primary until the replica has replayed the primary's position now. A
  /// primary that can't say where it is (it just failed the write too, most likely) leaves nothing recorded.
  func noteWrite(by user: UserID) async {
    do {
      let position = try await primary.query(
        "SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint", logger: logger, within: .seconds(2)
      ).collect().first?.decode(Int64.self)
      guard let position else { return }
      state.withLock { state in
        guard position > state.replayed else { return }
        state.pendingWrites[user] = max(state.pendingWrites[user] ?? 0, position)
      }
    } catch {
      logger.debug("no WAL position after a write", metadata: ["error": "\(error)"])
    }
  }

  /// `body` on the replica when it is up and has replayed the last write of the person read for
  /// (``StoreReader/user``), else on the primary; again on the primary when the replica fails it.
  func read<T: Sendable>(_ body: @Sendable (PostgresCalls) async throws -> T) async throws -> T {
    guard let replica = await replica(for: StoreReader.user) else { return try await onPrimary(body) }
    do {
      let result = try await body(PostgresCalls(database: replica))
      state.withLock { $0.reads.replica += 1 }
      return result
    } catch let error as StoreUnavailableError {
      rest(because: error.reason)
      return try await onPrimary(body)
    } catch {
      logger.debug("the replica refused a read; asking the primary", metadata: ["error": "\(error)"])
      return try await onPrimary(body)
    }
  }

  private func onPrimary<T: Sendable>(_ body: @Sendable (PostgresCalls) async throws -> T) async throws -> T {
    let result = try await body(primary)
    state.withLock { $0.reads.primary += 1 }
    return result
  }

  /// The replica's database when a read for `user` may go there now.
  private func replica(for user: UserID?) async -> PersistenceKitPostgres.PostgresDatabase? {
    let (database, needed, replayed, restingUntil) = state.withLock { state in
      (state.database, user.flatMap { state.pendingWrites[$0] }, state.replayed, state.restingUntil)
    }
    guard let database, restingUntil.map({ ContinuousClock.now >= $0 }) ?? true else { return nil }
    guard let needed, needed > replayed else { return database }
    do {
      // NULL when the server is not in recovery (a promoted standby): it holds everything it has.
      let position =
        try await PostgresCalls(database: database).query(
          "SELECT (pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::bigint", logger: logger, within: .seconds(1)
        ).collect().first?.decode(Int64?.self) ?? nil
      let current = position ?? .max
      state.withLock { state in
        state.replayed = max(state.replayed, current)
        state.pendingWrites = state.pendingWrites.filter { $0.value > state.replayed }
      }
      return current >= needed ? database : nil
    } catch {
      rest(because: "\(error)")
      return nil
    }
  }

  private func rest(because reason: String) {
    let first = state.withLock { state in
      defer { state.restingUntil = .now + Self.restAfterFailure }
      return state.restingUntil.map { ContinuousClock.now >= $0 } ?? true
    }
    if first {
      logger.warning(
        "the replica failed; reads go to the primary for \(Self.restAfterFailure)",
        metadata: ["replica": "\(url)", "error": "\(reason)"])
    }
  }
}
