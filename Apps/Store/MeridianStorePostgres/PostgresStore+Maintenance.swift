import Foundation
import Logging
import PersistenceKit
import PersistenceKitPostgres
import PostgresNIO

/// What the operators' tools (`meridian-admin`) do to a PostgreSQL store without opening it as a server does: read
/// the migration ledger (nothing is migrated or created), check the schema, vacuum. Each call uses one connection of
/// its own, so a wrong URL or a missing database fails at once with PostgreSQL's own reason.
extension PostgresStore {
  /// Where each migration of ``PostgresSchema/migrator`` stands on the database at `url`, with the semantics of
  /// PersistenceKit's `Migrator` (applied, pending, drifted, unknown to this binary). Writes nothing.
  public static func migrationStatus(
    url: String, logger: Logger = Logger(label: "meridian.store.postgres")
  ) async throws -> MigrationStatus {
    try await withLedger(url: url, logger: logger) {
      try await PostgresMigrator(PostgresSchema.migrator).status(on: $0)
    }
  }

  /// The migrations ``open(url:maximumConnections:logger:)`` would apply, in order. Writes nothing.
  /// - Throws: `MigrationError` when the database can't be migrated: a drifted migration, or a newer database.
  public static func migrationPlan(
    url: String, logger: Logger = Logger(label: "meridian.store.postgres")
  ) async throws -> [Migration] {
    try await withLedger(url: url, logger: logger) { try await PostgresMigrator(PostgresSchema.migrator).plan(on: $0) }
  }

  /// Indexes PostgreSQL can't use (an interrupted `CREATE INDEX CONCURRENTLY`) and constraints added `NOT VALID`
  /// and never validated, in the database at `url`: each is a sentence naming the object. Empty when healthy.
  public static func schemaProblems(
    url: String, logger: Logger = Logger(label: "meridian.store.postgres")
  ) async throws -> [String] {
    try await withMaintenanceConnection(url: url, logger: logger) { connection in
      var problems: [String] = []
      for try await (index, table) in try await connection.query(
        """
        SELECT i.indexrelid::regclass::text, i.indrelid::regclass::text FROM pg_index i
        JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE NOT (i.indisvalid AND i.indisready) AND n.nspname = current_schema()
        ORDER BY 1
        """, logger: logger
      ).decode((String, String).self) {
        problems.append("index \(index) on \(table) is invalid (rebuild it with REINDEX)")
      }
      for try await (constraint, table) in try await connection.query(
        """
        SELECT c.conname::text, c.conrelid::regclass::text FROM pg_constraint c
        JOIN pg_namespace n ON n.oid = c.connamespace
        WHERE NOT c.convalidated AND n.nspname = current_schema()
        ORDER BY 2, 1
        """, logger: logger
      ).decode((String, String).self) {
        problems.append("constraint \(constraint) on \(table) is not validated (ALTER TABLE … VALIDATE CONSTRAINT)")
      }
      return problems
    }
  }

  /// The database's size in bytes (`pg_database_size`).
  public static func databaseSize(
    url: String, logger: Logger = Logger(label: "meridian.store.postgres")
  ) async throws -> Int64 {
    try await withMaintenanceConnection(url: url, logger: logger) { connection in
      var size: Int64 = 0
      for try await value in try await connection.query(
        "SELECT pg_database_size(current_database())", logger: logger
      ).decode(Int64.self) {
        size = value
      }
      return size
    }
  }

  /// Runs `VACUUM (ANALYZE)` on the whole database at `url`: dead rows' space is reused and the planner's
  /// statistics are fresh. Readers and writers keep running meanwhile.
  public static func vacuumAnalyze(url: String, logger: Logger = Logger(label: "meridian.store.postgres")) async throws
  {
    try await withMaintenanceConnection(url: url, logger: logger) { connection in
      _ = try await connection.query("VACUUM (ANALYZE)", logger: logger).collect()
    }
  }

  /// PostgreSQL's own words for `error` (a server error's message and SQLSTATE, or a connection failure), where
  /// postgres-nio's description hides them; nil when `error` is not postgres-nio's.
  public static func reason(_ error: any Error) -> String? {
    guard let error = error as? PSQLError else { return nil }
    if let message = error.serverInfo?[.message] {
      return message + (error.serverInfo?[.sqlState].map { " (SQLSTATE \($0))" } ?? "")
    }
    return error.underlying.map { "\(error.code): \($0)" } ?? "\(error.code)"
  }

  /// Whether `error` says the database named in the URL does not exist (SQLSTATE 3D000).
  public static func isMissingDatabase(_ error: any Error) -> Bool {
    sqlState(error) == "3D000"
  }

  /// Runs `body` on a connection of its own to the database at `url`, closed afterwards.
  private static func withMaintenanceConnection<Result: Sendable>(
    url: String, logger: Logger, _ body: (PostgresConnection) async throws -> Result
  ) async throws -> Result {
    // The URL's own connection settings (its sslmode included); with several hosts, the first its
    // target_session_attrs accepts.
    let connection = try await PostgresURL(url).connect(logger: logger)
    do {
      let result = try await body(connection)
      try? await connection.close()
      return result
    } catch {
      try? await connection.close()
      throw error
    }
  }

  /// Runs `body` with the database at `url` for reading its migration ledger (PersistenceKitPostgres's
  /// `PostgresMigrator`), after a connection of its own has checked it exists (so a missing database fails with
  /// PostgreSQL's own error, as every other call here).
  private static func withLedger<Result: Sendable>(
    url: String, logger: Logger, _ body: (PersistenceKitPostgres.PostgresDatabase) async throws -> Result
  ) async throws -> Result {
    try await withMaintenanceConnection(url: url, logger: logger) { _ in }
    let database = try await PersistenceKitPostgres.PostgresDatabase.open(
      url: try PostgresURL(url), maxConnections: 1, logger: logger)
    do {
      let result = try await body(database)
      await database.close()
      return result
    } catch {
      await database.close()
      throw error
    }
  }
}
