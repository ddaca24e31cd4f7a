import MeridianStore
import MeridianStorePostgres
import MeridianTestSupport
import PostgresNIO

/// The PostgreSQL live log's lock (``PostgresStore/liveLogLock``) held by a test on a connection of one node's pool:
/// every node's fix commits then write their fixes and wait for it at their last statement, so a test sees how many
/// run at once without timing them.
public final class LiveLogLockHold: Sendable {
  private let store: PostgresStore
  private let hold: ConnectionHold

  /// Takes the lock on a connection of `store` (a ``PostgresStore``), returning once it holds it.
  public init(on store: any MeridianStore) async throws {
    guard let store = store as? PostgresStore else { throw LiveLogLockHoldError() }
    self.store = store
    hold = try await ConnectionHold(
      on: store, holding: ["SELECT pg_advisory_lock(\(PostgresStore.liveLogLock))"],
      releasing: ["SELECT pg_advisory_unlock(\(PostgresStore.liveLogLock))"])
  }

  /// How many transactions of the database wait for an advisory lock now. (`pg_locks` is the cluster's: other tests'
  /// databases on it take advisory locks too, and a root test run once counted one of theirs here.)
  public func waiting() async throws -> Int {
    try await store.database.withConnection { connection in
      try await connection.query(
        """
        SELECT count(*) FROM pg_locks
        WHERE locktype = 'advisory' AND NOT granted
          AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
        """, logger: self.store.database.logger
      ).collect().first?.decode(Int.self) ?? 0
    }
  }

  /// Waits (up to 15 seconds, ``waitUntil(_:timeout:_:)``: PostgreSQL announces no lock waiter) until at least
  /// `count` transactions wait for the lock; returns how many do.
  public func waitForWaiters(_ count: Int) async throws -> Int {
    do {
      try await waitUntil("\(count) waiters for the live log's lock", timeout: .seconds(15)) {
        try await self.waiting() >= count
      }
    } catch is WaitTimedOut {}
    return try await waiting()
  }

  /// Releases the lock; returns once it is released.
  public func release() async throws {
    try await hold.release()
  }
}

/// The store given to ``LiveLogLockHold`` is not PostgreSQL's, or the lock could not be taken.
public struct LiveLogLockHoldError: Error {}
