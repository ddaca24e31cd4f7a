import DomainKit
import Foundation
import Logging
import MeridianStore
import PersistenceKit
import PostgresNIO

extension PostgresSchema {
  /// Appends the live-only migrations.
  public static func appendLiveOnlyMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-29 live only accounts", liveOnlyAccounts))
  }

  /// Since when (server time, UTC ms) an account keeps only its last position; NULL while it keeps its history
  /// (``AccountStore/isLiveOnly(_:)``).
  static let liveOnlyAccounts = """
    ALTER TABLE users ADD COLUMN live_only_since bigint;
    """
}

extension PostgresStore {
  public func isLiveOnly(_ user: UserID) async throws -> Bool {
    try await rows("SELECT live_only_since IS NOT NULL FROM users WHERE id = \(user.rawValue)").first?
      .decode(Bool.self) ?? false
  }

  public func setLiveOnly(_ user: UserID, _ liveOnly: Bool, deletingHistory: Bool, now: Int64) async throws -> Int? {
    try await transaction { connection in
      let since: Int64? = liveOnly ? now : nil
      let updated = try await connection.query(
        """
        UPDATE users SET live_only_since = CASE WHEN \(liveOnly) THEN coalesce(live_only_since, \(since)) END
        WHERE id = \(user.rawValue) RETURNING id
        """, logger: self.logger
      ).collect()
      guard !updated.isEmpty else { return nil }
      guard liveOnly, deletingHistory else { return 0 }
      let deleted = try await Self.keepLastPosition(
        of: [user.rawValue], wholeHistory: true, on: connection, logger: self.logger)
      // What is left (the last position, fixes dated ahead, those the geofences wait for) is under the rule now.
      _ = try await connection.query(
        """
        UPDATE users SET live_only_since = least(live_only_since,
          (SELECT min(received_at) FROM fixes WHERE user_id = \(user.rawValue)))
        WHERE id = \(user.rawValue)
        """, logger: self.logger
      ).collect()
      return deleted
    }
  }

  /// Those of `users` that are live only, their rows locked to the end of the transaction in id order: two
  /// transactions storing or evaluating the same person's fixes take turns, so the later one's
  /// ``keepLastPosition(of:wholeHistory:on:logger:)`` sees the earlier one's fixes. Taken before the live log's lock.
  static func lockLiveOnly(_ users: some Sequence<String>, on connection: PostgresConnection, logger: Logger)
    async throws -> [String]
  {
    let ids = Set(users).sorted()
    guard !ids.isEmpty else { return [] }
    return try await column(
      String.self,
      """
      SELECT id FROM users WHERE id = ANY(\(ids)::text[]) AND live_only_since IS NOT NULL ORDER BY id FOR UPDATE
      """,
      on: connection, logger: logger)
  }

  /// The live-only rule (``AccountStore/isLiveOnly(_:)``) for `users`, in a transaction: deletes each one's fixes
  /// stored since the account turned live only on (all of them with `wholeHistory`) that are older than the last
  /// position (the newest fix not dated after its receipt) and that no geofence queue entry waits for; returns how
  /// many. Deletes nothing of an account that keeps its history.
  static func keepLastPosition(
    of users: [String], wholeHistory: Bool = false, on connection: PostgresConnection, logger: Logger
  ) async throws -> Int {
    guard !users.isEmpty else { return 0 }
    return try await count(keepLastPositionQuery(of: users, wholeHistory: wholeHistory), on: connection, logger: logger)
  }

  /// The statement of ``keepLastPosition(of:wholeHistory:on:logger:)``: one row, the count of fixes deleted.
  static func keepLastPositionQuery(of users: [String], wholeHistory: Bool = false) -> PostgresQuery {
    """
    WITH last AS (
      SELECT DISTINCT ON (user_id) user_id, timestamp, id FROM fixes
      WHERE user_id = ANY(\(users)::text[]) AND timestamp <= received_at
      ORDER BY user_id, timestamp DESC, id DESC
    ), deleted AS (
      DELETE FROM fixes f USING last, users u
      WHERE f.user_id = last.user_id AND u.id = f.user_id AND u.live_only_since IS NOT NULL
        AND (\(wholeHistory) OR f.received_at >= u.live_only_since)
        AND (f.timestamp, f.id) < (last.timestamp, last.id)
        AND NOT EXISTS (
          SELECT 1 FROM geofence_queue q
          WHERE q.user_id = f.user_id AND q.device_id = f.device_id AND f.timestamp = ANY(q.timestamps))
      RETURNING 1
    )
    SELECT count(*) FROM deleted
    """
  }
}
