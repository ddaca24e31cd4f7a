import DomainKit
import Foundation
import Logging
import MeridianStore
import PersistenceKit
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
  /// The connection pool.
  public let client: PostgresClient
  let logger: Logger
  private let runner: Task<Void, Never>
  /// Device → owner, for a minute: a device never changes owner; deleting an account drops its entries here, and
  /// the lifetime bounds how long another node's deletion can go unseen.
  let deviceOwners = LookupCache<DeviceID, UserID>(lifetime: 60_000)
  /// The monthly partitions of `fixes` known to exist.
  let fixPartitions = FixPartitions()
  /// The group commit of ``insertFixes(_:now:completion:)``.
  let fixCommits = FixCommitQueue()
  /// The live log's epoch (``LiveLog``).
  let liveState = Mutex(LiveLogState())

  private init(client: PostgresClient, logger: Logger) {
    self.client = client
    self.logger = logger
    self.runner = Task { await client.run() }
  }

  /// Connects to the database at `url` (`postgres://user[:password]@host[:port]/database`), migrates it to
  /// ``PostgresSchema/migrator`` (once, even when several nodes start together) and returns the store.
  ///
  /// Call ``close()`` when done: it waits for the fixes handed to ``insertFixes(_:now:completion:)`` to commit.
  public static func open(
    url: String, maximumConnections: Int = 20, logger: Logger = Logger(label: "meridian.store.postgres")
  ) async throws -> PostgresStore {
    var configuration = try configuration(url: url)
    configuration.options.maximumConnections = maximumConnections
    let store = PostgresStore(client: PostgresClient(configuration: configuration), logger: logger)
    do {
      try await store.migrate()
      try await store.loadLiveEpoch()
    } catch {
      await store.close()
      throw error
    }
    return store
  }

  /// Waits for the pending fix commits, then closes the connections. The store must not be used afterwards.
  public func close() async {
    await fixCommits.drain()
    runner.cancel()
    await runner.value
  }

  static func configuration(url: String) throws -> PostgresClient.Configuration {
    guard let components = URLComponents(string: url),
      components.scheme == "postgres" || components.scheme == "postgresql",
      let host = components.host, !host.isEmpty
    else { throw PostgresStoreError.invalidURL(url) }
    let database = String(components.path.dropFirst())
    return PostgresClient.Configuration(
      host: host, port: components.port ?? 5432, username: components.user ?? "postgres",
      password: components.password, database: database.isEmpty ? nil : database, tls: .disable)
  }
}

/// What went wrong opening or using the store.
public enum PostgresStoreError: Error, CustomStringConvertible {
  /// The database URL isn't `postgres://user[:password]@host[:port]/database`.
  case invalidURL(String)
  /// A row the store just wrote could not be read back.
  case missingRow(String)

  public var description: String {
    switch self {
    case .invalidURL(let url): "'\(url)' is not a PostgreSQL URL; expected postgres://user[:password]@host[:port]/db"
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

  /// Runs `query` for its effect.
  func execute(_ query: PostgresQuery) async throws {
    _ = try await client.query(query, logger: logger).collect()
  }

  /// Runs `body` in a transaction on one connection, again from the start when PostgreSQL aborts it for a
  /// serialization failure (40001) or a deadlock (40P01); `body` must only touch the database.
  func transaction<Result: Sendable>(_ body: (PostgresConnection) async throws -> Result) async throws -> Result {
    var attempt = 1
    while true {
      do {
        return try await client.withConnection { connection in
          try await connection.withTransaction(logger: logger) { connection in try await body(connection) }
        }
      } catch let error where attempt < 5 && Self.isTransient(error) {
        attempt += 1
        try await Task.sleep(for: .milliseconds(Int.random(in: 1...10) * attempt))
      }
    }
  }

  /// Whether `error` is PostgreSQL aborting a transaction that may succeed when run again: a serialization failure
  /// (40001) or a deadlock (40P01), also when postgres-nio wraps it in a `PostgresTransactionError`.
  static func isTransient(_ error: any Error) -> Bool {
    if let error = error as? PostgresTransactionError {
      return (error.closureError ?? error.beginError ?? error.commitError).map(isTransient) ?? false
    }
    let code = (error as? PSQLError)?.serverInfo?[.sqlState]
    return code == "40001" || code == "40P01"
  }

  /// Applies the pending migrations of ``PostgresSchema/migrator`` under an advisory lock, each in a transaction
  /// with its ledger row.
  func migrate() async throws {
    let migrations = PostgresSchema.migrator.migrations
    try await client.withConnection { connection in
      _ = try await connection.query("SELECT pg_advisory_lock(\(Self.migrationLock))", logger: logger).collect()
      do {
        _ = try await connection.query(
          """
          CREATE TABLE IF NOT EXISTS meridian_store_migrations(
            identifier text PRIMARY KEY, checksum text NOT NULL, applied_at bigint NOT NULL)
          """, logger: logger
        ).collect()
        var applied: [String: String] = [:]
        for try await (identifier, checksum) in try await connection.query(
          "SELECT identifier, checksum FROM meridian_store_migrations", logger: logger
        ).decode((String, String).self) {
          applied[identifier] = checksum
        }
        for migration in migrations {
          if let checksum = applied[migration.identifier] {
            guard checksum == migration.checksum else {
              throw MigrationError.checksumMismatch(
                identifier: migration.identifier, recorded: checksum, current: migration.checksum)
            }
            continue
          }
          guard let sql = migration.sql else { continue }
          try await connection.withTransaction(logger: logger) { connection in
            _ = try await connection.query(
              PostgresQuery(unsafeSQL: "DO $migration$ BEGIN EXECUTE \(Self.dollarQuoted(sql)); END $migration$"),
              logger: logger
            ).collect()
            _ = try await connection.query(
              """
              INSERT INTO meridian_store_migrations(identifier, checksum, applied_at)
              VALUES (\(migration.identifier), \(migration.checksum), \(Timestamp.milliseconds(Date())))
              """, logger: logger
            ).collect()
          }
        }
      } catch {
        _ = try? await connection.query("SELECT pg_advisory_unlock(\(Self.migrationLock))", logger: logger).collect()
        throw error
      }
      _ = try await connection.query("SELECT pg_advisory_unlock(\(Self.migrationLock))", logger: logger).collect()
    }
  }

  /// The advisory lock nodes take to migrate one at a time.
  private static let migrationLock: Int64 = 0x4d65_7269_6469_616e

  /// `sql` as a dollar-quoted string constant.
  private static func dollarQuoted(_ sql: String) -> String { "$sql$" + sql + "$sql$" }
}
