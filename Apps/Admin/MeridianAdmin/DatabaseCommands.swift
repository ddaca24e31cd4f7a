import ArgumentParser
import DomainKit
import Foundation
import Logging
import MeridianStore
import MeridianStoreEngines
import MeridianStoreSQLite
import PersistenceKit

struct DatabaseCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "db", abstract: "Migrations, backups, integrity checks and vacuum.",
    subcommands: [Migrate.self, Backup.self, Check.self, Vacuum.self])

  /// One migration's state, as `db migrate --status` prints it.
  struct MigrationEntry: Codable {
    var identifier: String
    var state: String
    var appliedAt: String?
  }

  /// `db migrate` output.
  struct MigrationOutput: Codable {
    var database: String
    var action: String
    var migrations: [MigrationEntry]
    var unknown: [String]
    var upToDate: Bool
  }

  struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Apply the server's pending migrations (creates the database), or show the plan or status.")

    @OptionGroup var options: GlobalOptions

    @Flag(help: "List the migrations that would run; change nothing.")
    var plan = false

    @Flag(help: "List every migration with its state; change nothing.")
    var status = false

    func validate() throws {
      if plan && status { throw ValidationError("Give --plan or --status, not both.") }
    }

    func run() async throws {
      let location = try options.location
      guard case .sqlite(let path) = location else { return try await runPostgres(location) }
      let migrator = SQLiteSchema.migrator
      let exists = FileManager.default.fileExists(atPath: path)
      if plan || status {
        // Inspecting never creates the file: a missing database is an empty one.
        let database =
          exists
          ? try SQLiteDatabase.open(at: path, options: DatabaseOptions(label: "meridian-admin"))
          : try SQLiteDatabase.inMemory()
        let current = try database.migrationStatus(migrator)
        let entries: [MigrationEntry]
        if plan {
          entries = try database.migrationPlan(migrator).map {
            MigrationEntry(identifier: $0.identifier, state: "pending")
          }
        } else {
          entries = current.entries.map(Self.entry)
        }
        let output = MigrationOutput(
          database: path, action: plan ? "plan" : "status", migrations: entries,
          unknown: current.unknown.map(\.identifier), upToDate: current.isUpToDate)
        try options.emit(output) { Self.text(output, exists: exists) }
        return
      }
      let database = try SQLiteDatabase.open(at: path, options: DatabaseOptions(label: "meridian-admin"))
      let report = try database.migrate(migrator)
      let current = try database.migrationStatus(migrator)
      let output = MigrationOutput(
        database: path, action: "apply",
        migrations: report.applied.map {
          MigrationEntry(
            identifier: $0.identifier, state: "applied",
            appliedAt: AdminFormat.time(Timestamp.milliseconds($0.appliedAt)))
        },
        unknown: current.unknown.map(\.identifier), upToDate: current.isUpToDate)
      try options.emit(output) { Self.appliedText(output, applied: current.applied.count) }
    }

    /// The PostgreSQL engine's migrations (``PostgresStore``'s ledger), applied as the server applies them at start:
    /// under an advisory lock, so a node starting meanwhile migrates nothing twice.
    func runPostgres(_ location: StoreLocation) async throws {
      if plan || status {
        let current = try await AdminPostgres.migrationStatus(location)
        let entries =
          plan
          ? try await AdminPostgres.migrationPlan(location).map {
            MigrationEntry(identifier: $0.identifier, state: "pending")
          }
          : current.entries.map(Self.entry)
        let output = MigrationOutput(
          database: location.description, action: plan ? "plan" : "status", migrations: entries,
          unknown: current.unknown.map(\.identifier), upToDate: current.isUpToDate)
        try options.emit(output) { Self.text(output, exists: true) }
        return
      }
      // Refuses a drifted or newer database as PersistenceKit's migrator does, before changing anything.
      let pending = Set(try await AdminPostgres.migrationPlan(location).map(\.identifier))
      if !pending.isEmpty {
        let store = try await AdminPostgres.wording(location) {
          try await location.open(
            maximumConnections: AdminDatabase.connections, logger: Logger(label: "meridian-admin"))
        }
        await store.close()
      }
      let current = try await AdminPostgres.migrationStatus(location)
      let applied = current.entries.filter { pending.contains($0.identifier) && $0.state != .pending }
      let output = MigrationOutput(
        database: location.description, action: "apply", migrations: applied.map(Self.entry),
        unknown: current.unknown.map(\.identifier), upToDate: current.isUpToDate)
      try options.emit(output) { Self.appliedText(output, applied: current.applied.count) }
    }

    /// What `db migrate` says it did, given the number of migrations now applied.
    static func appliedText(_ output: MigrationOutput, applied: Int) -> String {
      output.migrations.isEmpty
        ? "\(output.database) is up to date (\(applied) migrations applied)."
        : "Applied \(output.migrations.count) migrations to \(output.database):\n"
          + output.migrations.map { "  \($0.identifier)" }.joined(separator: "\n")
    }

    static func entry(_ entry: MigrationStatus.Entry) -> MigrationEntry {
      switch entry.state {
      case .pending:
        MigrationEntry(identifier: entry.identifier, state: "pending")
      case .applied(let applied):
        MigrationEntry(
          identifier: entry.identifier, state: "applied",
          appliedAt: AdminFormat.time(Timestamp.milliseconds(applied.appliedAt)))
      case .drifted(let applied, _):
        MigrationEntry(
          identifier: entry.identifier, state: "drifted",
          appliedAt: AdminFormat.time(Timestamp.milliseconds(applied.appliedAt)))
      }
    }

    static func text(_ output: MigrationOutput, exists: Bool) -> String {
      var lines: [String] = []
      if !exists { lines.append("\(output.database) does not exist yet; `db migrate` creates it.") }
      if output.action == "plan" {
        lines.append(
          output.migrations.isEmpty
            ? "Nothing to apply." : "\(output.migrations.count) migrations would be applied, in this order:")
        lines += output.migrations.map { "  \($0.identifier)" }
      } else {
        var table = TextTable(["state", "applied at (UTC)", "migration"])
        for entry in output.migrations { table.add([entry.state, entry.appliedAt ?? "-", entry.identifier]) }
        lines.append(table.text)
      }
      if !output.unknown.isEmpty {
        lines.append("Unknown to this binary (the database is newer): " + output.unknown.joined(separator: ", "))
      }
      return lines.joined(separator: "\n")
    }
  }

  struct BackupOutput: Codable {
    var database: String
    var backup: String
    /// `sqlite` (a database file) or `pg_dump` (a custom-format archive for `pg_restore`).
    var format: String
    /// SQLite: the pages copied.
    var pages: Int?
    /// PostgreSQL: the archive's entries (`pg_restore --list`).
    var entries: Int?
    var bytes: Int64
    var integrity: String
  }

  struct Backup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Copy the database to FILE, consistent while the server writes.",
      discussion: """
        SQLite: the online backup API, then an integrity check of the copy. PostgreSQL: pg_dump --format=custom \
        (from PATH or /usr/lib/postgresql/*/bin; restore with pg_restore), then pg_restore --list of the archive.
        """)

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The backup file.")
    var file: String

    @Flag(help: "Replace FILE if it exists.")
    var yes = false

    func run() async throws {
      if FileManager.default.fileExists(atPath: file), !yes {
        throw AdminError.usage("\(file) exists; pass --yes to replace it.")
      }
      let location = try options.location
      guard case .sqlite(let path) = location else {
        let (bytes, entries) = try await AdminPostgres.backup(location, to: file)
        let output = BackupOutput(
          database: location.description, backup: file, format: "pg_dump", entries: entries, bytes: bytes,
          integrity: "ok")
        try options.emit(output) {
          "Backed up \(location) to \(file) (pg_dump custom format, \(entries) entries, "
            + "\(AdminFormat.bytes(bytes))); pg_restore reads it."
        }
        return
      }
      // Any schema: a backup is what you take before migrating to a new release.
      let database = try AdminDatabase.openFile(path: path)
      let pages = try database.backup(to: file)
      // Check the copy before calling it a backup.
      let copy = try SQLiteDatabase.open(at: file, options: DatabaseOptions(label: "meridian-admin-backup"))
      let integrity = try copy.integrityCheck()
      try copy.close()
      guard integrity.isOK else {
        throw AdminError.failure(
          "The backup at \(file) fails its integrity check: \(integrity.problems.joined(separator: "; "))")
      }
      let output = BackupOutput(
        database: path, backup: file, format: "sqlite", pages: pages, bytes: SQLiteStore.fileSize(file),
        integrity: "ok")
      try options.emit(output) {
        "Backed up \(output.database) to \(file) (\(pages) pages, \(AdminFormat.bytes(output.bytes))); integrity ok."
      }
    }
  }

  struct CheckOutput: Codable {
    struct Violation: Codable {
      var table: String
      var rowID: Int64?
      var parentTable: String
    }
    var database: String
    var ok: Bool
    var integrity: [String]
    var foreignKeyViolations: [Violation]
    var pendingMigrations: [String]
  }

  struct Check: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Check integrity, foreign keys and migrations; exit 1 when something is wrong.",
      discussion: """
        SQLite: integrity_check (or quick_check), foreign_key_check and the migrations. PostgreSQL (which enforces \
        foreign keys itself): invalid indexes, constraints never validated, and the migrations.
        """)

    @OptionGroup var options: GlobalOptions

    @Flag(help: "Run quick_check instead of the full integrity_check (SQLite only).")
    var quick = false

    func run() async throws {
      let location = try options.location
      guard case .sqlite(let path) = location else { return try await runPostgres(location) }
      let database = try AdminDatabase.openFile(path: path)
      let integrity = try database.integrityCheck(quick: quick)
      let violations = try database.foreignKeyCheck()
      let status = try database.migrationStatus(SQLiteSchema.migrator)
      let output = CheckOutput(
        database: path, ok: integrity.isOK && violations.isEmpty && status.isUpToDate, integrity: integrity.problems,
        foreignKeyViolations: violations.map { .init(table: $0.table, rowID: $0.rowID, parentTable: $0.parentTable) },
        pendingMigrations: status.pending + status.drifted + status.unknown.map(\.identifier))
      try options.emit(output) {
        let orphans = violations.prefix(20).map { violation -> String in
          let row = violation.rowID.map { String($0) } ?? "?"
          return "\(violation.table) row \(row) → \(violation.parentTable)"
        }
        let foreignKeys =
          violations.isEmpty
          ? "ok" : "\(violations.count) rows refer to missing parents: " + orphans.joined(separator: ", ")
        let migrations =
          status.isUpToDate
          ? "up to date" : "not up to date: " + output.pendingMigrations.joined(separator: ", ")
        let problems = integrity.problems.joined(separator: "\n  ")
        var lines: [String] = []
        lines.append("integrity: " + (integrity.isOK ? "ok" : problems))
        lines.append("foreign keys: " + foreignKeys)
        lines.append("migrations: " + migrations)
        lines.append(output.ok ? "OK" : "PROBLEMS FOUND")
        return lines.joined(separator: "\n")
      }
      if !output.ok { throw ExitCode(ExitStatus.failure) }
    }

    func runPostgres(_ location: StoreLocation) async throws {
      if quick {
        throw AdminError.usage(
          "--quick is SQLite's quick_check, SQLite-file work; on PostgreSQL run `db check` without it.")
      }
      let status = try await AdminPostgres.migrationStatus(location)
      let problems = try await AdminPostgres.schemaProblems(location)
      let output = CheckOutput(
        database: location.description, ok: problems.isEmpty && status.isUpToDate, integrity: problems,
        foreignKeyViolations: [], pendingMigrations: status.pending + status.drifted + status.unknown.map(\.identifier))
      try options.emit(output) {
        [
          "integrity: " + (problems.isEmpty ? "ok" : problems.joined(separator: "\n  ")),
          "foreign keys: ok (enforced by PostgreSQL)",
          "migrations: "
            + (status.isUpToDate
              ? "up to date" : "not up to date: " + output.pendingMigrations.joined(separator: ", ")),
          output.ok ? "OK" : "PROBLEMS FOUND",
        ].joined(separator: "\n")
      }
      if !output.ok { throw ExitCode(ExitStatus.failure) }
    }
  }

  struct VacuumOutput: Codable {
    var database: String
    var bytesBefore: Int64
    var bytesAfter: Int64
  }

  struct Vacuum: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Give free space back: SQLite's VACUUM (blocks writers), PostgreSQL's VACUUM (ANALYZE) (does not).")

    @OptionGroup var options: GlobalOptions

    func run() async throws {
      let location = try options.location
      guard case .sqlite(let path) = location else {
        let (before, after) = try await AdminPostgres.vacuum(location)
        let output = VacuumOutput(database: location.description, bytesBefore: before, bytesAfter: after)
        try options.emit(output) {
          "Vacuumed and analyzed \(location): \(AdminFormat.bytes(before)) → \(AdminFormat.bytes(after))."
        }
        return
      }
      let database = try AdminDatabase.openFile(path: path)
      try AdminDatabase.requireUpToDate(try database.migrationStatus(SQLiteSchema.migrator))
      let before = SQLiteStore.fileSize(path)
      try await database.vacuum()
      // The vacuumed pages are in the log until a checkpoint copies them; a running server's background checkpoints
      // can hold the checkpoint lock for a moment, so this retries.
      if try !database.checkpointAndTruncateLog() {
        Console.error(
          "The log could not be truncated now (other connections are busy); it shrinks on the next restart.")
      }
      let output = VacuumOutput(database: path, bytesBefore: before, bytesAfter: SQLiteStore.fileSize(path))
      try options.emit(output) {
        "Vacuumed \(output.database): \(AdminFormat.bytes(before)) → \(AdminFormat.bytes(output.bytesAfter))."
      }
    }
  }
}
