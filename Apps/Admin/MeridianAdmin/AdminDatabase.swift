import DomainKit
import Foundation
import GRDB
import MeridianAPI
import MeridianServer
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
    try await database.read { db in
      let row = try Row.fetchOne(
        db,
        sql: "SELECT COUNT(*) AS n, MIN(timestamp) AS oldest, MAX(timestamp) AS newest FROM fixes WHERE timestamp < ?",
        arguments: [cutoff])
      let users =
        try Int.fetchOne(db, sql: "SELECT COUNT(DISTINCT user_id) FROM fixes WHERE timestamp < ?", arguments: [cutoff])
        ?? 0
      return RetentionReport(
        dryRun: true, cutoff: cutoff, deleted: row?["n"] ?? 0, batches: 0, users: users, oldest: row?["oldest"],
        newest: row?["newest"])
    }
  }

  /// Deletes every fix older than `cutoff` in batches of `batchSize` rows, one short write transaction each.
  ///
  /// Each batch's rows are found in a read snapshot (readers never block the server's writers in WAL mode) by rowid
  /// after the previous batch, then deleted by rowid range in their own transaction, so the write lock is held for
  /// one batch at a time and the server's group commits interleave with the batches.
  public func applyRetention(
    olderThan cutoff: Int64, batchSize: Int, progress: @Sendable (Int) -> Void = { _ in }
  ) async throws -> RetentionReport {
    var report = RetentionReport(
      dryRun: false, cutoff: cutoff, deleted: 0, batches: 0, users: 0, oldest: nil, newest: nil)
    var users = Set<String>()
    var after: Int64 = 0
    let limit = max(1, batchSize)
    while true {
      let start = after
      let rows = try await database.read { db in
        try Row.fetchAll(
          db, sql: "SELECT id, timestamp, user_id FROM fixes WHERE id > ? AND timestamp < ? ORDER BY id LIMIT ?",
          arguments: [start, cutoff, limit]
        ).map { row in (id: row["id"] as Int64, timestamp: row["timestamp"] as Int64, user: row["user_id"] as String) }
      }
      guard let first = rows.first, let last = rows.last else { break }
      let deleted = try await database.write { db in
        try db.execute(
          sql: "DELETE FROM fixes WHERE id BETWEEN ? AND ? AND timestamp < ?", arguments: [first.id, last.id, cutoff])
        return db.changesCount
      }
      report.deleted += deleted
      report.batches += 1
      for row in rows {
        users.insert(row.user)
        report.oldest = min(report.oldest ?? row.timestamp, row.timestamp)
        report.newest = max(report.newest ?? row.timestamp, row.timestamp)
      }
      progress(report.deleted)
      after = last.id
      await Task.yield()
    }
    report.users = users.count
    return report
  }
}

/// What `retention apply` deleted (or would delete).
public struct RetentionReport: Sendable, Hashable, Codable {
  /// Whether nothing was deleted.
  public var dryRun: Bool
  /// Fixes older than this (UTC ms) are deleted.
  public var cutoff: Int64
  /// Fixes deleted (or that would be).
  public var deleted: Int
  /// Write transactions used.
  public var batches: Int
  /// Users whose fixes were deleted.
  public var users: Int
  /// The oldest deleted fix, UTC ms.
  public var oldest: Int64?
  /// The newest deleted fix, UTC ms.
  public var newest: Int64?
}
