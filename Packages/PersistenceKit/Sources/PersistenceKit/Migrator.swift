import Foundation

/// An ordered, append-only list of migrations and the runner that applies them.
///
/// ```swift
/// var migrator = Migrator()
/// migrator.append(.sql("2026-11-01 create note", "CREATE TABLE note(id INTEGER PRIMARY KEY, text TEXT NOT NULL)"))
/// migrator.append(.sql("2026-11-02 index note", "CREATE INDEX note_text ON note(text)"))
/// try database.migrate(migrator)
/// ```
public struct Migrator: Sendable {
  /// The registered migrations, in order.
  public private(set) var migrations: [Migration]
  /// The name of the ledger table.
  public var ledgerTable: String

  /// Creates a migrator.
  public init(_ migrations: [Migration] = [], ledgerTable: String = "persistencekit_migrations") {
    self.migrations = migrations
    self.ledgerTable = ledgerTable
  }

  /// Appends a migration. Never insert or reorder: released migrations are history.
  public mutating func append(_ migration: Migration) {
    migrations.append(migration)
  }

  /// Appends several migrations.
  public mutating func append(contentsOf migrations: [Migration]) {
    self.migrations.append(contentsOf: migrations)
  }

  /// Where every migration stands on `executor`'s database (read-only).
  public func status(on executor: some MigrationExecutor) throws -> MigrationStatus {
    try checkedStatus(ledger: try executor.readLedger(table: ledgerTable))
  }

  /// The migrations `migrate(upTo:on:)` would run, without running them or writing anything.
  ///
  /// - Throws: ``MigrationError`` when the database can't be migrated (drift, a newer database, a bad target).
  public func plan(upTo target: String? = nil, on executor: some MigrationExecutor) throws -> [Migration] {
    try validateIdentifiers()
    return try plan(upTo: target, ledger: try executor.readLedger(table: ledgerTable))
  }

  /// Applies every pending migration up to and including `target` (all of them when `nil`), each in its own
  /// exclusive transaction together with its ledger row.
  ///
  /// Safe against other processes migrating the same database: the ledger is re-read inside the lock, so a migration
  /// applied meanwhile by someone else is skipped, never applied twice.
  ///
  /// - Throws: ``MigrationError``; on ``MigrationError/migrationFailed(identifier:underlying:)`` the migrations
  ///   before the failing one stay applied and recorded.
  @discardableResult
  public func migrate(upTo target: String? = nil, on executor: some MigrationExecutor) throws -> MigrationReport {
    try validateIdentifiers()
    try executor.prepareLedger(table: ledgerTable)
    let ledger = try executor.readLedger(table: ledgerTable)
    let appliedBefore = Set(ledger.map(\.identifier))
    var report = MigrationReport(applied: [], skipped: [])
    // An up-to-date database is never locked for writing; pending migrations are re-checked inside the lock.
    for migration in try targetPrefix(upTo: target, ledger: ledger) {
      if appliedBefore.contains(migration.identifier) {
        report.skipped.append(migration.identifier)
        continue
      }
      let outcome: AppliedMigration?
      do {
        outcome = try executor.withExclusiveTransaction { connection in
          let ledger = try connection.readLedger(table: ledgerTable)
          guard try isPending(migration, upTo: target, ledger: ledger) else { return nil }
          let timer = MigrationRun(migration)
          switch migration.body {
          case .sql(let sql): try connection.execute(sql: sql)
          case .code(_, let run): try run(connection)
          }
          let applied = timer.finished()
          try connection.record(applied, table: ledgerTable)
          return applied
        }
      } catch {
        throw failure(error, of: migration)
      }
      if let outcome {
        report.applied.append(outcome)
      } else {
        report.skipped.append(migration.identifier)
      }
    }
    return report
  }
}

// MARK: The ledger comparison every engine's runner shares

extension Migrator {
  /// The migrations up to and including `target` (all when `nil`), after checking the ledger against them.
  ///
  /// - Throws: ``MigrationError`` for duplicate identifiers, a newer database, drift, an unknown target or a target
  ///   below what is applied.
  package func targetPrefix(upTo target: String?, ledger: [AppliedMigration]) throws -> ArraySlice<Migration> {
    try validateIdentifiers()
    return migrations[..<(try targetEnd(target, ledger: ledger))]
  }

  /// The migrations `migrate(upTo:)` would run on a database whose ledger is `ledger`.
  package func plan(upTo target: String?, ledger: [AppliedMigration]) throws -> [Migration] {
    let applied = Set(ledger.map(\.identifier))
    return try targetPrefix(upTo: target, ledger: ledger).filter { !applied.contains($0.identifier) }
  }

  /// Whether `migration` still has to run, checked again inside the lock on a freshly read `ledger`.
  package func isPending(_ migration: Migration, upTo target: String?, ledger: [AppliedMigration]) throws -> Bool {
    _ = try targetEnd(target, ledger: ledger)
    return !ledger.contains(where: { $0.identifier == migration.identifier })
  }

  /// `error` as the runner reports it: its own refusals as they are, anything else as the failure of `migration`.
  package func failure(_ error: any Error, of migration: Migration) -> any Error {
    if error is MigrationError { return error }
    return MigrationError.migrationFailed(identifier: migration.identifier, underlying: error)
  }

  /// Where each registered migration stands, given the ledger's rows (identifiers validated first).
  package func checkedStatus(ledger: [AppliedMigration]) throws -> MigrationStatus {
    try validateIdentifiers()
    return status(ledger: ledger)
  }

  func status(ledger: [AppliedMigration]) -> MigrationStatus {
    let byIdentifier = Dictionary(ledger.map { ($0.identifier, $0) }, uniquingKeysWith: { first, _ in first })
    let entries = migrations.map { migration -> MigrationStatus.Entry in
      guard let applied = byIdentifier[migration.identifier] else {
        return MigrationStatus.Entry(identifier: migration.identifier, state: .pending)
      }
      if applied.checksum != migration.checksum {
        return MigrationStatus.Entry(
          identifier: migration.identifier,
          state: .drifted(applied: applied, currentChecksum: migration.checksum)
        )
      }
      return MigrationStatus.Entry(identifier: migration.identifier, state: .applied(applied))
    }
    let known = Set(migrations.map(\.identifier))
    return MigrationStatus(entries: entries, unknown: ledger.filter { !known.contains($0.identifier) })
  }

  private func validateIdentifiers() throws {
    var seen = Set<String>()
    for migration in migrations where !seen.insert(migration.identifier).inserted {
      throw MigrationError.duplicateIdentifier(migration.identifier)
    }
  }

  /// Checks the ledger against the registered migrations and returns the end index of the target prefix.
  private func targetEnd(_ target: String?, ledger: [AppliedMigration]) throws -> Int {
    let status = status(ledger: ledger)
    if !status.unknown.isEmpty {
      throw MigrationError.databaseNewerThanApp(unknownIdentifiers: status.unknown.map(\.identifier))
    }
    for entry in status.entries {
      if case .drifted(let applied, let current) = entry.state {
        throw MigrationError.checksumMismatch(
          identifier: entry.identifier,
          recorded: applied.checksum,
          current: current
        )
      }
    }
    guard let target else { return migrations.count }
    guard let index = migrations.firstIndex(where: { $0.identifier == target }) else {
      throw MigrationError.unknownTarget(target)
    }
    let appliedAfter = status.entries[(index + 1)...].filter { $0.state != .pending }.map(\.identifier)
    if !appliedAfter.isEmpty {
      throw MigrationError.targetBelowApplied(target: target, appliedAfterTarget: appliedAfter)
    }
    return index + 1
  }
}

/// Where each registered migration stands on a database.
public struct MigrationStatus: Sendable {
  /// The state of one migration.
  public enum State: Sendable, Equatable {
    /// Applied with the same checksum.
    case applied(AppliedMigration)
    /// Not applied yet.
    case pending
    /// Applied, but its text or revision changed since.
    case drifted(applied: AppliedMigration, currentChecksum: String)
  }

  /// One registered migration and its state.
  public struct Entry: Sendable, Equatable {
    /// The migration's identifier.
    public var identifier: String
    /// Its state.
    public var state: State
  }

  /// Every registered migration, in order.
  public var entries: [Entry]
  /// Ledger rows this binary doesn't know (the database is newer than the app).
  public var unknown: [AppliedMigration]

  /// Identifiers of applied migrations (drifted ones included).
  public var applied: [String] { entries.filter { $0.state != .pending }.map(\.identifier) }
  /// Identifiers of pending migrations.
  public var pending: [String] { entries.filter { $0.state == .pending }.map(\.identifier) }
  /// Identifiers of drifted migrations.
  public var drifted: [String] {
    entries.compactMap { entry in
      if case .drifted = entry.state { return entry.identifier }
      return nil
    }
  }
  /// Whether nothing is pending, drifted or unknown.
  public var isUpToDate: Bool { pending.isEmpty && drifted.isEmpty && unknown.isEmpty }
}

/// The clock of one migration being applied: when it started, and its ledger row once it has run.
package struct MigrationRun {
  private let migration: Migration
  private let appliedAt = Date()
  private let clock = ContinuousClock()
  private let start: ContinuousClock.Instant

  /// Starts timing `migration`.
  package init(_ migration: Migration) {
    self.migration = migration
    self.start = clock.now
  }

  /// The ledger row of the migration, which has just run.
  package func finished() -> AppliedMigration {
    let elapsed = clock.now - start
    return AppliedMigration(
      identifier: migration.identifier,
      checksum: migration.checksum,
      appliedAt: appliedAt,
      duration: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    )
  }
}

/// What one `migrate` call did.
public struct MigrationReport: Sendable, Equatable {
  /// The migrations this call applied, with their ledger rows.
  public var applied: [AppliedMigration]
  /// The migrations that were already applied (earlier, or meanwhile by another process).
  public var skipped: [String]

  /// Creates a report.
  public init(applied: [AppliedMigration], skipped: [String]) {
    self.applied = applied
    self.skipped = skipped
  }
}

extension SQLiteDatabase {
  /// The executor for running migrations on this database.
  public var migrationExecutor: SQLiteMigrationExecutor { SQLiteMigrationExecutor(writer: writer) }

  /// Applies `migrator`'s pending migrations up to `target` (all when `nil`).
  @discardableResult
  public func migrate(_ migrator: Migrator, upTo target: String? = nil) throws -> MigrationReport {
    try migrator.migrate(upTo: target, on: migrationExecutor)
  }

  /// Where each of `migrator`'s migrations stands on this database.
  public func migrationStatus(_ migrator: Migrator) throws -> MigrationStatus {
    try migrator.status(on: migrationExecutor)
  }

  /// What `migrate(_:upTo:)` would run.
  public func migrationPlan(_ migrator: Migrator, upTo target: String? = nil) throws -> [Migration] {
    try migrator.plan(upTo: target, on: migrationExecutor)
  }
}
