import DomainKit
import Foundation
import Logging
import MeridianStore
import PostgresNIO

extension PostgresStore {
  /// Each entry's fixes are looked up by their key (``entryFixes(_:)``).
  public func geofenceQueue(limit: Int, fixes: Int) async throws -> [GeofenceQueueEntry] {
    let rows = try await rows(Self.geofenceQueueQuery(limit: limit, fixes: fixes))
    var entries: [GeofenceQueueEntry] = []
    let entryColumn = Self.fixColumnCount
    for row in rows {
      let columns = row.makeRandomAccess()
      let sequence = UInt64(try columns[entryColumn].decode(Int64.self))
      if entries.last?.sequence != sequence {
        entries.append(
          GeofenceQueueEntry(
            sequence: sequence, userID: UserID(try columns[entryColumn + 1].decode(String.self)), fixes: [],
            queuedAt: try columns[entryColumn + 2].decode(Int64.self)))
      }
      // A fix deleted since (its history was deleted) leaves NULLs: the entry stays, without it.
      if try columns[0].decode(String?.self) != nil {
        entries[entries.count - 1].fixes.append(try FixColumns.fix(row).fix)
      }
    }
    return entries
  }

  /// The statement of ``geofenceQueue(limit:fixes:)``.
  static func geofenceQueueQuery(limit: Int, fixes: Int) -> PostgresQuery {
    """
    WITH q AS (
      \(unescaped: Self.entriesUpToFixes(
        "sequence, user_id, device_id, timestamps, committed_at", from: "geofence_queue", limit: limit, fixes: fixes))
    )
    SELECT \(unescaped: Self.qualifiedFixColumns), q.sequence, q.user_id, q.committed_at
    FROM q \(unescaped: Self.entryFixes("q"))
    ORDER BY q.sequence, f.timestamp
    """
  }

  public func geofenceQueueBacklog() async throws -> GeofenceQueueBacklog {
    let row = try await rows("SELECT count(*), min(committed_at) FROM geofence_queue").first
    guard let (count, oldest) = try row?.decode((Int64, Int64?).self) else {
      return GeofenceQueueBacklog(entries: 0, oldestQueuedAt: nil)
    }
    return GeofenceQueueBacklog(entries: Int(count), oldestQueuedAt: oldest)
  }
}
