import Foundation
import GRDB
import MeridianStore
import Testing

@testable import MeridianStoreSQLite

/// The SQLite engine's query plans where a wrong index costs seconds at real sizes (engine details, outside the
/// contract suite), asked of the engine's own SQL.
@Suite struct SQLiteQueryPlanTests {
  /// The lines of SQLite's plan for `sql` with `arguments`, in a new database of the server's schema.
  func plan(_ sql: String, _ arguments: StatementArguments) async throws -> [String] {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("plan-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: directory) }
    let store = try SQLiteStore.open(at: directory.appendingPathComponent("plan.sqlite").path)
    return try await store.database.read { db in
      try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql, arguments: arguments).map { $0["detail"] as String }
    }
  }

  /// A radius query reads the places' covering index alone, each venue's imported rating included.
  @Test func radiusQueryReadsOnlyTheCoveringIndex() async throws {
    for ofType in [false, true] {
      let plan = try await plan(
        SQLiteStore.venuesInRangeSQL(ofType: ofType), ofType ? [1, 2, 0, 1, "cafe"] : [1, 2, 0, 1])
      #expect(plan.contains { $0.contains("USING COVERING INDEX places_geokey (geokey>? AND geokey<?)") }, "\(plan)")
      #expect(plan.count == 1, "\(plan)")
    }
  }

  /// The geofence monitor's read finds each queue entry's fixes by row id, not by scanning the person's fixes.
  @Test func geofenceQueueReadFindsFixesByRowID() async throws {
    let plan = try await plan(SQLiteStore.geofenceQueueSQL, [512])
    #expect(plan.contains { $0.contains("SEARCH f USING INTEGER PRIMARY KEY") }, "\(plan)")
    #expect(!plan.contains { $0.contains("fixes_user_timestamp") }, "\(plan)")
  }

  /// Search by relevance reads each tier's candidates in sequence order and stops at the page: no step sorts (a
  /// sort would read every match of a 3-letter prefix, tens of thousands among a million places), the exact titles
  /// come from their index, the other tiers from the full-text index.
  @Test func relevanceStepsWalkTheirIndexesInOrder() async throws {
    let ranking = try SQLiteStore.placeRanking(PlaceQuery(kinds: [.programme], text: "phy", limit: 10))
    #expect(ranking.steps.count == 3)
    for (level, step) in ranking.steps.enumerated() {
      let plan = try await plan(step.sql, step.arguments + [11])
      #expect(!plan.contains { $0.contains("TEMP B-TREE") }, "tier \(level): \(plan)")
      let index = level == 0 ? "SEARCH t USING PRIMARY KEY (line=?)" : "SCAN places_fts VIRTUAL TABLE"
      #expect(plan.first?.contains(index) == true, "tier \(level): \(plan)")
    }
  }
}
