import DomainKit
import Foundation
import Logging
import MeridianStore
import PersistenceKit
import PersistenceKitPostgres
import PostgresNIO
import Synchronization

/// The PostgreSQL engine of the store interfaces: several server nodes on one PostgreSQL/PostGIS database.
///
/// Every method is one transaction; what every node must agree on (sessions, one-time codes and their attempts,
/// idempotency keys, deployment secrets) lives in the database, never in one node's memory.
///
/// ```swift
/// let store = try await PostgresStore.open(url: "postgres://meridian@127.0.0.1:5432/meridian")
/// // … serve …
/// await store.close()
/// ```
public final class PostgresStore: Sendable {
  /// The database: its connection pool, transactions and scripts (PersistenceKitPostgres).
  public let database: PersistenceKitPostgres.PostgresDatabase
  /// The deadlines of the database's calls (PersistenceKitPostgres' `PostgresTimeouts`).
  public typealias Timeouts = PostgresTimeouts
  /// The calls to the database, each with its deadlines (``PostgresCalls``).
  public var client: PostgresCalls { PostgresCalls(database: database) }
  /// How long the group commit of ``insertFixes(_:now:completion:)`` may take, from `BEGIN` to `COMMIT`.
  let commitTimeout: Duration
  /// How long ``checkHealth()`` waits for the database's answer.
  let healthTimeout: Duration
  /// How many group commits of ``insertFixes(_:now:completion:)`` run at once, each on its own connection.
  public let fixCommitsInFlight: Int
  /// The default of ``fixCommitsInFlight``: enough to overlap each commit's round trips and WAL flush with the others'
  /// statements, few enough to leave the pool's connections to the requests.
  public static let defaultFixCommitsInFlight = 4
  let logger: Logger
  /// Device → owner, for a minute: a device never changes owner; deleting an account drops its entries here, and
  /// the lifetime bounds how long another node's deletion can go unseen.
  let deviceOwners = LookupCache<DeviceID, UserID>(lifetime: 60_000)
  /// The monthly partitions of `fixes` known to exist.
  let fixPartitions = FixPartitions()
  /// The group commit of ``insertFixes(_:now:completion:)``.
  let fixCommits = FixCommitQueue()
  /// The live log's epoch (``LiveLog``).
  let liveState = Mutex(LiveLogState())
  /// The streaming replica reads that may lag go to, if one is configured.
  let replica: ReplicaReads?
  /// The time the store stamps rows with itself (a token's revocation, a group's change) and its caches' lifetimes
  /// run on, UTC milliseconds: the system clock unless a test gives its own.
  public let now: @Sendable () -> Int64

  private init(
    database: PersistenceKitPostgres.PostgresDatabase, replica: ReplicaReads?, commitTimeout: Duration,
    healthTimeout: Duration, fixCommitsInFlight: Int, logger: Logger, now: @escaping @Sendable () -> Int64
  ) {
    self.database = database
    self.fixCommitsInFlight = max(1, min(fixCommitsInFlight, 64))
    self.replica = replica
    self.now = now
    self.commitTimeout = commitTimeout
    self.healthTimeout = healthTimeout
    self.logger = logger
  }

  /// `url` with the settings the store's sessions run with, unless the URL's `options` set them otherwise: `jit`
  /// off, because the store's statements are short and PostgreSQL's planner overestimates those that join an
  /// `unnest` of parameters, then spends ten times the statement's own work compiling it (a year of promotion
  /// statistics: 470 ms of JIT for 80 ms of execution).
  static func withStoreSettings(_ url: PostgresURL) -> PostgresURL {
    var url = url
    if url.settings["jit"] == nil { url.settings["jit"] = "off" }  // the URL's names are in lower case
    return url
  }

  /// Connects to the database at `url` (`postgres://user[:password]@host[:port]/database`), migrates it to
  /// ``PostgresSchema/migrator`` (once, even when several nodes start together: `PostgresMigrator` takes an advisory
  /// lock) and returns the store.
  ///
  /// Call ``close()`` when done: it waits for the fixes handed to ``insertFixes(_:now:completion:)`` to commit.
  ///
  /// Every call has a deadline: `timeouts` (a connection within its wait, a call within its statement deadline),
  /// `commitTimeout` for the group commit, `healthTimeout` for ``checkHealth()``. A call that can't reach the
  /// database in time throws ``StoreUnavailableError``. The store reads the time from `now`. Up to
  /// `fixCommitsInFlight` group commits run at once (``fixCommitsInFlight``), at most half the connections.
  ///
  /// With `replicaURL` (a streaming replica of that database), reads that may lag go there (``ReplicaReads``: history
  /// pages and exports, places, polls feeds, statistics), each person's own writes kept in view; a replica that is
  /// down costs nothing but its reads going to the primary.
  ///
  /// - Throws: `PostgresURLError` for a malformed URL, `PostgresDatabaseError.cannotConnect` saying why the server
  ///   can't be reached, `MigrationError` when the database can't be migrated (drift, a newer database).
  public static func open(
    url: String, replicaURL: String? = nil, maximumConnections: Int = 20,
    timeouts: PostgresTimeouts = PostgresTimeouts(),
    commitTimeout: Duration = .seconds(5), healthTimeout: Duration = .seconds(2),
    fixCommitsInFlight: Int = PostgresStore.defaultFixCommitsInFlight,
    logger: Logger = Logger(label: "meridian.store.postgres"),
    now: @escaping @Sendable () -> Int64 = Timestamp.systemClock
  ) async throws -> PostgresStore {
    let replicaLocation = try replicaURL.map { withStoreSettings(try PostgresURL($0)) }
    let database = try await PersistenceKitPostgres.PostgresDatabase.open(
      url: withStoreSettings(try PostgresURL(url)), maxConnections: maximumConnections, timeouts: timeouts,
      logger: logger)
    let replica = replicaLocation.map {
      ReplicaReads(
        url: $0, maximumConnections: maximumConnections, timeouts: timeouts,
        primary: PostgresCalls(database: database), logger: logger)
    }
    let store = PostgresStore(
      database: database, replica: replica, commitTimeout: commitTimeout, healthTimeout: healthTimeout,
      fixCommitsInFlight: min(fixCommitsInFlight, maximumConnections / 2), logger: logger, now: now)
    do {
      try await PostgresMigrator(PostgresSchema.migrator).migrate(on: database)
      try await store.loadLiveEpoch()
      await replica?.start()
    } catch {
      await store.close()
      throw error
    }
    return store
  }

  /// Waits for the pending fix commits, then closes the connections. The store must not be used afterwards.
  public func close() async {
    await fixCommits.drain()
    await replica?.close()
    await database.close()
  }

  /// How many reads that may lag the replica and the primary served since the store opened; nil without a replica.
  public var laggingReads: LaggingReads? { replica?.readsServed }

  /// Keeps `user`'s write in view of their next reads (``ReplicaReads``); nothing without a replica.
  public func noteWrite(by user: UserID) async {
    await replica?.noteWrite(by: user)
  }
}

/// What went wrong opening or using the store.
public enum PostgresStoreError: Error, CustomStringConvertible {
  /// A row the store just wrote could not be read back.
  case missingRow(String)

  public var description: String {
    switch self {
    case .missingRow(let what): "PostgreSQL returned no row for \(what)"
    }
  }
}

// MARK: Queries and transactions

extension PostgresStore {
  /// The rows of `query`, on a pooled connection.
  func rows(_ query: PostgresQuery) async throws -> [PostgresRow] {
    try await client.query(query, logger: logger).collect()
  }

  /// The rows of `query`, a read that may lag: from the replica when one is configured and has the reader's own
  /// writes (``ReplicaReads``), else from the primary.
  func rowsThatMayLag(_ query: PostgresQuery) async throws -> [PostgresRow] {
    try await callsThatMayLag { calls in try await calls.query(query, logger: self.logger).collect() }
  }

  /// `body` on the calls a read that may lag goes to (``rowsThatMayLag(_:)``).
  func callsThatMayLag<T: Sendable>(_ body: @escaping @Sendable (PostgresCalls) async throws -> T) async throws -> T {
    guard let replica else { return try await body(client) }
    return try await replica.read(body)
  }

  /// Runs `query` for its effect.
  func execute(_ query: PostgresQuery) async throws {
    _ = try await client.query(query, logger: logger).collect()
  }

  /// Runs `body` in a transaction on one connection (read committed), again from the start when PostgreSQL aborts
  /// it for a serialization failure (40001) or a deadlock (40P01); `body` must only touch the database. Each attempt
  /// ends within `timeout` (the statement deadline when nil).
  func transaction<Result: Sendable>(
    timeout: Duration? = nil, _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
  ) async throws -> Result {
    try await client.withTransaction(retries: 4, timeout: timeout, body)
  }

  /// Runs `body` in a transaction as ``transaction(timeout:_:)`` does, `COMMIT` queued right behind the statements
  /// `body` sent last without waiting (``PersistenceKitPostgres/PostgresTransactionEnd``); returns `body`'s value and
  /// those statements' results.
  func transaction<Result: Sendable>(
    timeout: Duration? = nil,
    endingWith body: @escaping @Sendable (PostgresConnection) async throws -> PostgresTransactionEnd<Result>
  ) async throws -> (value: Result, results: [PostgresQueryResult]) {
    try await client.withTransaction(retries: 4, timeout: timeout, endingWith: body)
  }
}
