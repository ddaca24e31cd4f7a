import DomainKit
import Foundation
import Logging
import MeridianAPI
import MeridianStore
import MeridianStoreEngines
import MeridianStoreSQLite
import PersistenceKit

/// The server's database as the operators' CLI sees it: the server's own store on it (``SQLiteStore`` on a file, or
/// ``PostgresStore`` on a `postgres://` URL, with the operators' queries the admin API shares: listings, counts,
/// deletion of a whole user, retention in batches).
public struct AdminDatabase: Sendable {
  /// Where the database is.
  public let location: StoreLocation
  /// The server's store on it.
  public let store: any MeridianStore
  /// Closes the store (PostgreSQL's connections; nothing for SQLite).
  private let closeStore: @Sendable () async -> Void

  /// The most connections one command keeps to a PostgreSQL database: commands run their queries one after
  /// another, and a server's nodes on the same database need the rest of its `max_connections`.
  static let connections = 4

  /// The location as messages print it (a URL without its password).
  public var path: String { location.description }

  /// Opens an existing database whose schema is up to date with this binary's migrations.
  /// - Throws: ``AdminError`` (not found when there is no file or PostgreSQL database; a failure when migrations are
  ///   pending, changed or unknown, or PostgreSQL can't be reached).
  public static func open(_ location: StoreLocation) async throws -> AdminDatabase {
    switch location {
    case .sqlite(let path):
      let database = try openFile(path: path)
      try requireUpToDate(try database.migrationStatus(SQLiteSchema.migrator))
      // Up to date: this only reads the ledger.
      return AdminDatabase(location: location, store: try SQLiteStore(migrating: database), closeStore: {})
    case .postgres:
      try requireUpToDate(try await AdminPostgres.migrationStatus(location))
      // Up to date: opening takes the migration lock and finds nothing to apply.
      let open = try await AdminPostgres.wording(location) {
        try await location.open(
          maximumConnections: AdminDatabase.connections, timeouts: .batch, logger: Logger(label: "meridian-admin"))
      }
      return AdminDatabase(location: location, store: open.store, closeStore: open.close)
    }
  }

  /// Refuses a schema this binary must not write to.
  static func requireUpToDate(_ status: MigrationStatus) throws(AdminError) {
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
  }

  /// Opens an existing database file whatever its schema (for backups, checks and vacuum, which must work before
  /// a new release's migrations run).
  /// - Throws: ``AdminError`` (not found) when there is no file.
  public static func openFile(path: String) throws -> SQLiteDatabase {
    guard FileManager.default.fileExists(atPath: path) else {
      throw AdminError.notFound(
        "There is no database at \(path). Pass --database PATH or a postgres:// URL (or set MERIDIAN_DATABASE_URL or "
          + "MERIDIAN_DATABASE), or create it with `meridian-admin db migrate`.")
    }
    return try SQLiteDatabase.open(at: path, options: DatabaseOptions(label: "meridian-admin"))
  }

  /// Closes the store; it must not be used afterwards.
  public func close() async { await closeStore() }

  // MARK: Users

  /// The operations shared with the admin API, on this database.
  public var administration: Administration {
    // The server's grace period for images nothing refers to (a malformed value: the default; `polls delete` and
    // `blobs sweep` refuse it).
    Administration(
      store: store, blobs: adminBlobStore(self),
      blobGracePeriod: (try? adminBlobGracePeriod(seconds: nil)) ?? BlobGracePeriod.default)
  }

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
