import DomainKit
import Foundation
import GRDB
import MeridianStore

extension SQLiteStore {
  /// Queues the request's `count` fixes just inserted (row ids up to `lastFix`) for geofence evaluation, in the
  /// group commit's transaction.
  static func queueForGeofences(_ db: Database, user: UserID, lastFix: Int64, count: Int, now: Int64) throws {
    try db.execute(
      sql: "INSERT INTO geofence_queue(user_id, first_fix, last_fix, queued_at) VALUES (?, ?, ?, ?)",
      arguments: [user.rawValue, lastFix - Int64(count) + 1, lastFix, now])
  }

  /// The queue's oldest entries (at most the first argument, and none whose entries before it in the read stored
  /// the second argument's fixes or more) with their fixes, found by row id. The `+` keeps SQLite off
  /// `fixes_user_timestamp`: through that index, each entry would scan every fix of its person (32 s per read of 512
  /// entries for a person with 450,000 fixes, against 5 ms by row id).
  static let geofenceQueueSQL = """
    SELECT q.sequence AS queue_sequence, q.user_id AS queue_user, q.queued_at AS queue_queued_at, f.*
    FROM (
      SELECT * FROM (
        SELECT *, sum(last_fix - first_fix + 1) OVER (ORDER BY sequence) - (last_fix - first_fix + 1) AS fixes_before
        FROM geofence_queue ORDER BY sequence LIMIT ?
      ) WHERE fixes_before < ?
    ) AS q
    LEFT JOIN fixes f ON f.id BETWEEN q.first_fix AND q.last_fix AND +f.user_id = q.user_id
    ORDER BY q.sequence, f.timestamp
    """

  public func geofenceQueue(limit: Int, fixes: Int) async throws -> [GeofenceQueueEntry] {
    try await database.read { db in
      let rows = try Row.fetchAll(db, sql: Self.geofenceQueueSQL, arguments: [max(1, limit), max(1, fixes)])
      var entries: [GeofenceQueueEntry] = []
      for row in rows {
        let sequence: Int64 = row["queue_sequence"]
        if entries.last?.sequence != UInt64(sequence) {
          entries.append(
            GeofenceQueueEntry(
              sequence: UInt64(sequence), userID: UserID(row["queue_user"] as String), fixes: [],
              queuedAt: row["queue_queued_at"]))
        }
        // A fix deleted since (its history was deleted) leaves NULLs: the entry stays, without it.
        if (row["timestamp"] as Int64?) != nil { entries[entries.count - 1].fixes.append(try FixRow.fix(row)) }
      }
      return entries
    }
  }

  public func geofenceQueueBacklog() async throws -> GeofenceQueueBacklog {
    try await database.read { db in
      let row = try Row.fetchOne(db, sql: "SELECT count(*) AS n, min(queued_at) AS oldest FROM geofence_queue")
      return GeofenceQueueBacklog(entries: row?["n"] ?? 0, oldestQueuedAt: row?["oldest"])
    }
  }
}
