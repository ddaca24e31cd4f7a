import DomainKit
import Foundation
import MeridianAPI
import MeridianStore
import MeridianStoreSQLite
import PersistenceKit

/// The server's database as the operators' CLI sees it: the server's own store (``SQLiteStore``, with the
/// operators' queries the admin API shares: listings, counts, deletion of a whole user), plus retention in batches.
public struct AdminDatabase: Sendable {
  /// The database file.
  public let path: String
  /// The database.
  public let database: SQLiteDatabase
  /// The server's store on the same pool.
  public let store: SQLiteStore

  /// Opens an existing database whose schema is up to date with this binary's migrations.
  /// - Throws: ``AdminError`` (not found when there is no file; a failure when migrations are pending or unknown).
  public static func open(path: String) throws -> AdminDatabase {
    guard FileManager.default.fileExists(atPath: path) else {
      throw AdminError.notFound(
        "There is no database at \(path). Pass --database PATH (or set MERIDIAN_DATABASE), "
          + "or create it with `meridian-admin db migrate`.")
    }
    let database = try SQLiteDatabase.open(at: path, options: DatabaseOptions(label: "meridian-admin"))
    let status = try database.migrationStatus(SQLiteSchema.migrator)
    if !status.unknown.isEmpty {
      throw AdminError.failure(
        "The database has migrations this meridian-admin doesn't know "
          + "(\(status.unknown.map(\.identifier).joined(separator: ", "))); use the admin CLI of the newer release.")
    }
    if !status.drifted.isEmpty {
      throw AdminError.failure(
        "Applied migrations changed since they ran (\(status.drifted.joined(separator: ", "))); see `db migrate --status`."
      )
    }
    if !status.pending.isEmpty {
      throw AdminError.failure(
        "\(status.pending.count) migration(s) are pending; run `meridian-admin db migrate` (or start the server) first."
      )
    }
    // Up to date: this only reads the ledger.
    return AdminDatabase(path: path, database: database, store: try SQLiteStore(migrating: database))
  }

  /// Opens an existing database file whatever its schema (for backups, checks and vacuum, which must work before
  /// a new release's migrations run).
  /// - Throws: ``AdminError`` (not found) when there is no file.
  public static func openFile(path: String) throws -> SQLiteDatabase {
    guard FileManager.default.fileExists(atPath: path) else {
      throw AdminError.notFound("There is no database at \(path). Pass --database PATH (or set MERIDIAN_DATABASE).")
    }
    return try SQLiteDatabase.open(at: path, options: DatabaseOptions(label: "meridian-admin"))
  }

  // MARK: Users

  /// The operations shared with the admin API, on this database.
  public var administration: Administration { Administration(store: store) }

  /// Finds a user by id, email address or phone number.
  /// - Throws: ``APIError`` (404 not found).
  public func resolveUser(_ text: String) async throws -> UserID {
    try await administration.user(named: text)
  }

  // MARK: Retention

  /// What ``applyRetention(olderThan:batchSize:progress:)`` would delete.
  public func retentionPreview(olderThan cutoff: Int64) async throws -> RetentionReport {
    try await store.retentionPreview(olderThan: cutoff)
  }

  /// Deletes every fix older than `cutoff` in batches of `batchSize` rows, one short write transaction each, so the
  /// server's group commits interleave with the batches.
  public func applyRetention(
    olderThan cutoff: Int64, batchSize: Int, progress: @Sendable (Int) -> Void = { _ in }
  ) async throws -> RetentionReport {
    try await store.applyRetention(olderThan: cutoff, batchSize: batchSize, progress: progress)
  }
}
