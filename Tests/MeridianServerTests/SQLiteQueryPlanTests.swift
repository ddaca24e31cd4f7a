import Foundation
import GRDB
import Testing

@testable import MeridianStoreSQLite

/// The SQLite engine's query plans where a wrong index costs seconds at real sizes (engine details, outside the
/// contract suite).
@Suite struct SQLiteQueryPlanTests {
  @Test func radiusQueryReadsOnlyTheCoveringIndex() async throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("venues-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: directory) }
    do {
      let store = try SQLiteStore.open(at: directory.appendingPathComponent("venues.sqlite").path)
      let plan = try await store.database.read { db in
        try Row.fetchAll(
          db,
          sql: """
            EXPLAIN QUERY PLAN SELECT p.seq, p.id, p.latitude, p.longitude, p.venue_type, p.own_sum, p.own_count
            FROM places p INDEXED BY places_geokey
            WHERE p.geokey BETWEEN 1 AND 2 AND p.latitude BETWEEN 0 AND 1 AND p.kind = 'venue'
              AND p.venue_type = 'cafe'
            """
        ).map { $0["detail"] as String }
      }
      #expect(plan.contains { $0.contains("USING COVERING INDEX places_geokey (geokey>? AND geokey<?)") }, "\(plan)")
    }
  }

  /// The geofence monitor's read finds each queue entry's fixes by row id, not by scanning the person's fixes.
  @Test func geofenceQueueReadFindsFixesByRowID() async throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("queue-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: directory) }
    do {
      let store = try SQLiteStore.open(at: directory.appendingPathComponent("queue.sqlite").path)
      let plan = try await store.database.read { db in
        try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + SQLiteStore.geofenceQueueSQL, arguments: [512])
          .map { $0["detail"] as String }
      }
      #expect(plan.contains { $0.contains("SEARCH f USING INTEGER PRIMARY KEY") }, "\(plan)")
      #expect(!plan.contains { $0.contains("fixes_user_timestamp") }, "\(plan)")
    }
  }
}
