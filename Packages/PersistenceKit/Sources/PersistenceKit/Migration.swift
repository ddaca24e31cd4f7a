import Foundation

/// One step of a database schema's history, named by a string that never changes once released.
///
/// Prefer SQL text: its checksum is computed from the text (line endings normalized), so an edited migration is
/// detected. When code is unavoidable, give it an explicit `revision` and change the revision only if the code's
/// effect changes. Migrations never reference model types: they describe the schema as it was at that point.
public struct Migration: Sendable {
  /// What a migration runs.
  public enum Body: Sendable {
    /// One or more SQL statements separated by semicolons.
    case sql(String)
    /// Code, with the revision string that stands for it in the ledger.
    case code(revision: String, @Sendable (any MigrationConnection) throws -> Void)
  }

  /// The stable identifier, e.g. `"2026-11-01 create fix"`.
  public let identifier: String
  /// What runs.
  public let body: Body

  /// A migration made of SQL text.
  public static func sql(_ identifier: String, _ sql: String) -> Migration {
    Migration(identifier: identifier, body: .sql(sql))
  }

  /// A migration made of code, recorded under `revision`.
  public static func code(
    _ identifier: String,
    revision: String,
    _ run: @escaping @Sendable (any MigrationConnection) throws -> Void
  ) -> Migration {
    Migration(identifier: identifier, body: .code(revision: revision, run))
  }

  /// The checksum recorded in the ledger: SHA-256 of the SQL with `\r\n` and `\r` turned into `\n`, or of the
  /// revision string, prefixed so the two kinds never collide. Computed once, when the migration is made: the
  /// migrator compares it with the ledger before every step.
  public let checksum: String

  /// Creates a migration.
  public init(identifier: String, body: Body) {
    self.identifier = identifier
    self.body = body
    switch body {
    case .sql(let sql):
      let normalized = sql.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\r", with: "\n")
      checksum = "sha256:" + SHA256.hex(Array(("sql\n" + normalized).utf8))
    case .code(let revision, _):
      checksum = "sha256:" + SHA256.hex(Array(("revision\n" + revision).utf8))
    }
  }

  /// The SQL text, or `nil` for a code migration.
  public var sql: String? {
    if case .sql(let sql) = body { return sql }
    return nil
  }
}

/// A row of the migration ledger.
public struct AppliedMigration: Sendable, Equatable {
  /// The migration's identifier.
  public var identifier: String
  /// The checksum recorded when it was applied.
  public var checksum: String
  /// When it was applied.
  public var appliedAt: Date
  /// How long it took, in seconds.
  public var duration: TimeInterval

  /// Creates a ledger row.
  public init(identifier: String, checksum: String, appliedAt: Date, duration: TimeInterval) {
    self.identifier = identifier
    self.checksum = checksum
    self.appliedAt = appliedAt
    self.duration = duration
  }
}

/// Why migrating was refused or failed. Nothing is left half-applied in any case.
public enum MigrationError: Error, CustomStringConvertible {
  /// Two registered migrations share an identifier.
  case duplicateIdentifier(String)
  /// `migrate(upTo:)` named a migration this binary doesn't know.
  case unknownTarget(String)
  /// An applied migration was edited after it ran: its checksum differs from the ledger's.
  case checksumMismatch(identifier: String, recorded: String, current: String)
  /// The ledger lists migrations this binary doesn't know: the database was migrated by a newer version of the app.
  case databaseNewerThanApp(unknownIdentifiers: [String])
  /// `migrate(upTo:)` asked for a state below what is applied; migrations are never undone.
  case targetBelowApplied(target: String, appliedAfterTarget: [String])
  /// A migration threw; its own transaction was rolled back and the earlier migrations stay applied.
  case migrationFailed(identifier: String, underlying: any Error)
  /// A ledger row's `applied_at` is missing or isn't an ISO 8601 timestamp: the ledger was edited by hand or damaged.
  case unreadableLedgerDate(identifier: String, appliedAt: String?)

  /// A message that says what went wrong and what to do.
  public var description: String {
    switch self {
    case .duplicateIdentifier(let identifier):
      return "Two migrations are named '\(identifier)'. Give each migration a unique identifier."
    case .unknownTarget(let identifier):
      return "No migration is named '\(identifier)'. Check the target identifier."
    case .checksumMismatch(let identifier, let recorded, let current):
      return
        "Migration '\(identifier)' changed after it was applied (ledger \(recorded), code \(current)). "
        + "Restore its original text and add a new migration for the change."
    case .databaseNewerThanApp(let identifiers):
      return
        "The database has migrations this app doesn't know (\(identifiers.joined(separator: ", "))). "
        + "It was migrated by a newer version; upgrade the app."
    case .targetBelowApplied(let target, let applied):
      return
        "Can't migrate up to '\(target)': later migrations are already applied (\(applied.joined(separator: ", "))). "
        + "Migrations are never undone."
    case .migrationFailed(let identifier, let underlying):
      return "Migration '\(identifier)' failed and was rolled back: \(underlying)"
    case .unreadableLedgerDate(let identifier, let appliedAt):
      return
        "The ledger row of migration '\(identifier)' has an unreadable applied_at (\(appliedAt.map { "'\($0)'" } ?? "NULL")). "
        + "Restore an ISO 8601 timestamp such as 2026-11-22T09:00:00.000Z."
    }
  }
}
