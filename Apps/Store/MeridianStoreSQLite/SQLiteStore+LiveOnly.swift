import DomainKit
import Foundation
import GRDB
import MeridianStore
import PersistenceKit

extension SQLiteSchema {
  /// Appends the live-only migrations.
  static func appendLiveOnlyMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-29 live only accounts", liveOnlyAccounts))
  }

  /// Since when (server time, UTC ms) an account keeps only its last position; NULL while it keeps its history
  /// (``AccountStore/isLiveOnly(_:)``).
  static let liveOnlyAccounts = """
    ALTER TABLE users ADD COLUMN live_only_since INTEGER;
    """
}

extension SQLiteStore {
  public func isLiveOnly(_ user: UserID) async throws -> Bool {
    try await database.read { db in try Self.isLiveOnly(db, user) }
  }

  public func setLiveOnly(_ user: UserID, _ liveOnly: Bool, deletingHistory: Bool, now: Int64) async throws -> Int? {
    try await database.write { db in
      try db.execute(
        sql: liveOnly
          ? "UPDATE users SET live_only_since = coalesce(live_only_since, ?) WHERE id = ?"
          : "UPDATE users SET live_only_since = NULL WHERE id = ?",
        arguments: liveOnly ? [now, user.rawValue] : [user.rawValue])
      guard db.changesCount > 0 else { return nil }
      guard liveOnly, deletingHistory else { return 0 }
      let deleted = try Self.keepLastPosition(db, of: user, wholeHistory: true)
      // What is left (the last position, fixes dated ahead, those the geofences wait for) is under the rule now.
      try db.execute(
        sql: """
          UPDATE users SET live_only_since = min(live_only_since,
            coalesce((SELECT min(received_at) FROM fixes WHERE user_id = :user), live_only_since))
          WHERE id = :user
          """, arguments: ["user": user.rawValue])
      return deleted
    }
  }

  /// Whether `user` keeps only the last position, in a transaction.
  static func isLiveOnly(_ db: Database, _ user: UserID) throws -> Bool {
    try Bool.fetchOne(
      db.cachedStatement(sql: "SELECT live_only_since IS NOT NULL FROM users WHERE id = ?"),
      arguments: [user.rawValue]) ?? false
  }

  /// The live-only rule (``AccountStore/isLiveOnly(_:)``) for `user`, in a write transaction: deletes the fixes
  /// stored since the account turned live only on (all of them with `wholeHistory`) that are older than the last
  /// position (the newest fix not dated after its receipt) and that no geofence queue entry waits for; returns how
  /// many. Deletes nothing while the account keeps its history.
  static func keepLastPosition(_ db: Database, of user: UserID, wholeHistory: Bool = false) throws -> Int {
    try db.execute(
      sql: """
        DELETE FROM fixes WHERE id IN (
          SELECT f.id FROM fixes f
          JOIN users u ON u.id = f.user_id AND u.live_only_since IS NOT NULL
          JOIN (
            SELECT timestamp, id FROM fixes WHERE user_id = :user AND timestamp <= received_at
            ORDER BY timestamp DESC, id DESC LIMIT 1
          ) AS last ON f.timestamp < last.timestamp OR (f.timestamp = last.timestamp AND f.id < last.id)
          WHERE f.user_id = :user AND (:whole OR f.received_at >= u.live_only_since)
            AND NOT EXISTS (
              SELECT 1 FROM geofence_queue q WHERE q.user_id = :user AND f.id BETWEEN q.first_fix AND q.last_fix)
        )
        """, arguments: ["user": user.rawValue, "whole": wholeHistory])
    return db.changesCount
  }
}
