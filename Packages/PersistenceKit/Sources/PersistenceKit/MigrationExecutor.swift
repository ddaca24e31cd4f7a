import Foundation
import GRDB

/// What the migration runner needs from a database engine. SQLite implements it with ``SQLiteMigrationExecutor``;
/// a PostgreSQL implementation takes a table lock or an advisory lock in ``withExclusiveTransaction(_:)``.
public protocol MigrationExecutor: Sendable {
  /// Creates the ledger table `table` if it doesn't exist.
  func prepareLedger(table: String) throws
  /// The ledger's rows in the order they were applied; empty when the ledger table doesn't exist yet.
  func readLedger(table: String) throws -> [AppliedMigration]
  /// Runs `body` in one transaction that excludes every other migrator (in this or another process) until it
  /// commits. The transaction is rolled back if `body` throws.
  func withExclusiveTransaction<T>(_ body: (any MigrationConnection) throws -> T) throws -> T
}

/// A connection inside the runner's exclusive transaction.
public protocol MigrationConnection {
  /// Executes one or more SQL statements.
  func execute(sql: String) throws
  /// The ledger's rows, read inside the transaction.
  func readLedger(table: String) throws -> [AppliedMigration]
  /// Adds a row to the ledger.
  func record(_ migration: AppliedMigration, table: String) throws
}

extension MigrationConnection {
  /// The GRDB connection when the engine is SQLite, for code migrations that need more than `execute(sql:)`.
  public var sqlite: Database? { (self as? SQLiteMigrationConnection)?.database }
}

/// Runs migrations on SQLite: `BEGIN IMMEDIATE` takes the write lock, so a second process waits (up to the busy
/// timeout) and then re-reads the ledger before doing anything.
public struct SQLiteMigrationExecutor: MigrationExecutor {
  /// The database the migrations run on.
  public let writer: any DatabaseWriter

  /// Creates an executor on a GRDB writer.
  public init(writer: any DatabaseWriter) {
    self.writer = writer
  }

  /// Creates the ledger table if needed; takes the write lock only when it is missing.
  public func prepareLedger(table: String) throws {
    if try writer.read({ db in try db.tableExists(table) }) { return }
    // BEGIN IMMEDIATE waits for the write lock; a plain statement could fail at once with SQLITE_BUSY_SNAPSHOT
    // when another process wrote since it started reading.
    try withExclusiveTransaction { connection in
      try connection.execute(
        sql: """
          CREATE TABLE IF NOT EXISTS \(table.quotedDatabaseIdentifier) (
            identifier TEXT NOT NULL PRIMARY KEY,
            checksum TEXT NOT NULL,
            applied_at TEXT NOT NULL,
            duration_ms REAL NOT NULL
          )
          """
      )
    }
  }

  /// Reads the ledger in the order migrations were applied.
  public func readLedger(table: String) throws -> [AppliedMigration] {
    try writer.read { db in try SQLiteMigrationConnection(database: db).readLedger(table: table) }
  }

  /// Runs `body` in a `BEGIN IMMEDIATE` transaction.
  ///
  /// Like GRDB's own migrator, foreign keys are switched off while `body` runs, so a migration may rebuild a table
  /// that others refer to (SQLite's 12-step `ALTER TABLE`), and `PRAGMA foreign_key_check` runs before the commit:
  /// a migration that leaves a dangling reference fails with ``ForeignKeyCheckError`` and is rolled back.
  public func withExclusiveTransaction<T>(_ body: (any MigrationConnection) throws -> T) throws -> T {
    try writer.writeWithoutTransaction { db in
      let enforced = try Bool.fetchOne(db, sql: "PRAGMA foreign_keys") ?? false
      if enforced { try db.execute(sql: "PRAGMA foreign_keys = OFF") }
      defer { if enforced { try? db.execute(sql: "PRAGMA foreign_keys = ON") } }
      var result: T?
      try db.inTransaction(.immediate) {
        result = try body(SQLiteMigrationConnection(database: db))
        if enforced {
          let violations = try Row.fetchAll(db, sql: "PRAGMA foreign_key_check").map { row in
            ForeignKeyViolation(table: row[0], rowID: row[1], parentTable: row[2], foreignKeyIndex: row[3])
          }
          if !violations.isEmpty { throw ForeignKeyCheckError(violations: violations) }
        }
        return .commit
      }
      guard let result else { preconditionFailure("transaction committed without a result") }
      return result
    }
  }
}

/// A migration left rows whose parent is missing; it was rolled back.
public struct ForeignKeyCheckError: Error, CustomStringConvertible {
  /// The dangling references, as `PRAGMA foreign_key_check` reported them.
  public var violations: [ForeignKeyViolation]

  /// A summary naming the first offending rows.
  public var description: String {
    let sample = violations.prefix(5).map {
      "\($0.table) rowid \($0.rowID.map(String.init) ?? "?") → \($0.parentTable)"
    }
    return "foreign key check failed for \(violations.count) row(s): \(sample.joined(separator: ", "))"
  }
}

/// The SQLite connection handed to migrations.
public struct SQLiteMigrationConnection: MigrationConnection {
  /// The GRDB connection, inside the migration's transaction.
  public let database: Database

  /// Executes one or more SQL statements.
  public func execute(sql: String) throws {
    try database.execute(sql: sql)
  }

  /// Reads the ledger; empty when the ledger table doesn't exist.
  public func readLedger(table: String) throws -> [AppliedMigration] {
    guard try database.tableExists(table) else { return [] }
    let rows = try Row.fetchAll(
      database,
      sql: "SELECT identifier, checksum, applied_at, duration_ms FROM \(table.quotedDatabaseIdentifier) ORDER BY rowid"
    )
    return try rows.map { row in
      let identifier: String = row[0]
      let text: String? = row[2]
      guard let text, let appliedAt = LedgerDate.parse(text) else {
        throw MigrationError.unreadableLedgerDate(identifier: identifier, appliedAt: text)
      }
      let milliseconds: Double? = row[3]
      return AppliedMigration(
        identifier: identifier,
        checksum: row[1],
        appliedAt: appliedAt,
        duration: (milliseconds ?? 0) / 1000
      )
    }
  }

  /// Inserts a ledger row.
  public func record(_ migration: AppliedMigration, table: String) throws {
    try database.execute(
      sql: """
        INSERT INTO \(table.quotedDatabaseIdentifier) (identifier, checksum, applied_at, duration_ms)
        VALUES (?, ?, ?, ?)
        """,
      arguments: [
        migration.identifier, migration.checksum, LedgerDate.format(migration.appliedAt), migration.duration * 1000,
      ]
    )
  }
}

enum LedgerDate {
  static let style = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

  static func format(_ date: Date) -> String { style.format(date) }

  /// The date of an ISO 8601 timestamp, with or without fractional seconds; `nil` for anything else.
  static func parse(_ text: String) -> Date? {
    (try? style.parse(text)) ?? (try? Date.ISO8601FormatStyle().parse(text))
  }
}
