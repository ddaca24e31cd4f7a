import Foundation
import PersistenceKit
import PostgresNIO

/// Runs a PersistenceKit ``Migrator`` on PostgreSQL, with the same checksummed ledger as on SQLite: the same
/// status, plan, drift and newer-database checks (the comparison is ``Migrator``'s own), the same report.
///
/// `migrate` holds a PostgreSQL advisory lock (``lockKey``, derived from the ledger table's name) on a connection
/// of its own for the whole run, so several nodes starting at once migrate once: the others wait for the lock, then
/// find nothing to do. Each migration runs in its own transaction together with its ledger row. The lock goes with
/// the connection, so a migrating process that dies releases it.
///
/// Only SQL migrations run here (``Migration/sql(_:_:)``, several statements allowed); a code migration is refused
/// with ``PostgresMigrationError/codeMigration(identifier:)`` before anything runs.
///
/// ```swift
/// var migrator = Migrator()
/// migrator.append(.sql("2026-11-01 create note", "CREATE TABLE note(id bigserial PRIMARY KEY, text text NOT NULL)"))
/// let report = try await PostgresMigrator(migrator).migrate(on: database)
/// ```
public struct PostgresMigrator: Sendable {
  /// The migrations and the ledger table's name.
  public var migrator: Migrator

  /// Creates a runner for `migrator`.
  public init(_ migrator: Migrator) {
    self.migrator = migrator
  }

  /// The advisory-lock key `migrate` takes: FNV-1a (64-bit) of `persistencekit.migrations.` and the ledger table.
  public var lockKey: Int64 {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in ("persistencekit.migrations." + migrator.ledgerTable).utf8 {
      hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
    }
    return Int64(bitPattern: hash)
  }

  /// Where every migration stands on `database` (read-only; no lock).
  public func status(on database: PostgresDatabase) async throws -> MigrationStatus {
    let ledger = try await database.withConnection { connection in
      try await readLedger(on: connection, logger: database.logger)
    }
    return try migrator.checkedStatus(ledger: ledger)
  }

  /// The migrations ``migrate(upTo:on:)`` would run, without running them or writing anything.
  ///
  /// - Throws: ``MigrationError`` (drift, a newer database, a bad target) or
  ///   ``PostgresMigrationError/codeMigration(identifier:)``.
  public func plan(upTo target: String? = nil, on database: PostgresDatabase) async throws -> [Migration] {
    let ledger = try await database.withConnection { connection in
      try await readLedger(on: connection, logger: database.logger)
    }
    return try checkedPlan(upTo: target, ledger: ledger)
  }

  /// Applies every pending migration up to and including `target` (all of them when `nil`), each in its own
  /// transaction with its ledger row, under the advisory lock.
  ///
  /// - Throws: ``MigrationError``; on ``MigrationError/migrationFailed(identifier:underlying:)`` the failing
  ///   migration left nothing behind and the ones before it stay applied and recorded.
  @discardableResult
  public func migrate(upTo target: String? = nil, on database: PostgresDatabase) async throws -> MigrationReport {
    // An up-to-date database is neither locked nor written; pending migrations are re-checked inside the lock.
    let before = try await database.withConnection { connection in
      try await readLedger(on: connection, logger: database.logger)
    }
    if try checkedPlan(upTo: target, ledger: before).isEmpty {
      let applied = Set(before.map(\.identifier))
      let prefix = try migrator.targetPrefix(upTo: target, ledger: before)
      return MigrationReport(applied: [], skipped: prefix.map(\.identifier).filter(applied.contains))
    }
    let logger = database.logger
    return try await database.withDedicatedConnection { connection in
      _ = try await connection.query("SELECT pg_advisory_lock(\(lockKey))", logger: logger).collect()
      try await connection.execute(script: createLedgerSQL, logger: logger)
      let ledger = try await readLedger(on: connection, logger: logger)
      _ = try checkedPlan(upTo: target, ledger: ledger)
      let applied = Set(ledger.map(\.identifier))
      var report = MigrationReport(applied: [], skipped: [])
      for migration in try migrator.targetPrefix(upTo: target, ledger: ledger) {
        if applied.contains(migration.identifier) {
          report.skipped.append(migration.identifier)
          continue
        }
        do {
          report.applied.append(try await apply(migration, on: connection, logger: logger))
        } catch {
          throw migrator.failure(error, of: migration)
        }
      }
      _ = try await connection.query("SELECT pg_advisory_unlock(\(lockKey))", logger: logger).collect()
      return report
    }
  }

  private func apply(_ migration: Migration, on connection: PostgresConnection, logger: Logger) async throws
    -> AppliedMigration
  {
    guard let sql = migration.sql else { throw PostgresMigrationError.codeMigration(identifier: migration.identifier) }
    let script = try PostgresSQLScript(sql)
    return try await PostgresDatabase.transaction(on: connection, isolation: .readCommitted, logger: logger) {
      connection in
      let timer = MigrationRun(migration)
      try await connection.execute(script, logger: logger)
      let row = timer.finished()
      _ = try await connection.query(
        PostgresQuery(
          unsafeSQL: """
            INSERT INTO \(quotedTable) (identifier, checksum, applied_at, duration_ms) VALUES ($1, $2, $3, $4)
            """,
          binds: try bindings(row)
        ),
        logger: logger
      ).collect()
      return row
    }
  }

  private func bindings(_ row: AppliedMigration) throws -> PostgresBindings {
    var bindings = PostgresBindings(capacity: 4)
    bindings.append(row.identifier)
    bindings.append(row.checksum)
    bindings.append(row.appliedAt)
    bindings.append(row.duration * 1000)
    return bindings
  }

  /// The plan, refusing code migrations in it.
  private func checkedPlan(upTo target: String?, ledger: [AppliedMigration]) throws -> [Migration] {
    let plan = try migrator.plan(upTo: target, ledger: ledger)
    if let code = plan.first(where: { $0.sql == nil }) {
      throw PostgresMigrationError.codeMigration(identifier: code.identifier)
    }
    return plan
  }

  /// The ledger's rows in the order they were applied; empty when the table doesn't exist yet.
  private func readLedger(on connection: PostgresConnection, logger: Logger) async throws -> [AppliedMigration] {
    let exists = try await connection.query(
      "SELECT to_regclass(\(quotedTable)) IS NOT NULL", logger: logger
    ).decode(Bool.self).reduce(false) { $0 || $1 }
    guard exists else { return [] }
    var rows: [AppliedMigration] = []
    let query = PostgresQuery(
      unsafeSQL: "SELECT identifier, checksum, applied_at, duration_ms FROM \(quotedTable) ORDER BY position")
    for try await (identifier, checksum, appliedAt, milliseconds) in try await connection.query(query, logger: logger)
      .decode((String, String, Date, Double).self)
    {
      rows.append(
        AppliedMigration(
          identifier: identifier, checksum: checksum, appliedAt: appliedAt, duration: milliseconds / 1000)
      )
    }
    return rows
  }

  private var createLedgerSQL: String {
    """
    CREATE TABLE IF NOT EXISTS \(quotedTable) (
      position bigint GENERATED ALWAYS AS IDENTITY,
      identifier text PRIMARY KEY,
      checksum text NOT NULL,
      applied_at timestamptz NOT NULL,
      duration_ms double precision NOT NULL
    )
    """
  }

  /// The ledger table's name as a quoted identifier.
  private var quotedTable: String {
    "\"" + migrator.ledgerTable.replacingOccurrences(of: "\"", with: "\"\"") + "\""
  }
}

/// Why ``PostgresMigrator`` refused to run.
public enum PostgresMigrationError: Error, CustomStringConvertible {
  /// The plan contains a code migration, which runs on SQLite only.
  case codeMigration(identifier: String)

  /// A message that says what went wrong and what to do.
  public var description: String {
    switch self {
    case .codeMigration(let identifier):
      return "Migration '\(identifier)' is code, which runs on SQLite only; PostgreSQL runs SQL migrations. "
        + "Nothing was applied. Write it as SQL (Migration.sql)."
    }
  }
}

extension PostgresDatabase {
  /// Applies `migrator`'s pending migrations up to `target` (all when `nil`), once across nodes
  /// (``PostgresMigrator``).
  @discardableResult
  public func migrate(_ migrator: Migrator, upTo target: String? = nil) async throws -> MigrationReport {
    try await PostgresMigrator(migrator).migrate(upTo: target, on: self)
  }

  /// Where each of `migrator`'s migrations stands on this database.
  public func migrationStatus(_ migrator: Migrator) async throws -> MigrationStatus {
    try await PostgresMigrator(migrator).status(on: self)
  }

  /// What ``migrate(_:upTo:)`` would run.
  public func migrationPlan(_ migrator: Migrator, upTo target: String? = nil) async throws -> [Migration] {
    try await PostgresMigrator(migrator).plan(upTo: target, on: self)
  }
}
