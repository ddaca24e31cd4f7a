import Foundation
import GRDB
import GeoKit
import MeridianAPI
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

  /// A page of places filtered by passing score in a city, ranked by rating or by reviews, reads the attribute's
  /// index alone: the range, the attribute's type, the rating's sums and the position all come from it, and no column
  /// of the table is read (each match's row cost about 4 µs, the index about 0.5).
  @Test func attributeFilterReadsOnlyTheAttributeIndex() async throws {
    for sort in [PlaceQuery.Sort.rating, .reviews] {
      let ranking = try SQLiteStore.placeRanking(
        PlaceQuery(
          city: "City 3", attributes: [PlaceAttributeFilter(name: "passingScore", minimum: 200, maximum: 220)],
          sort: sort, limit: 10))
      let program = try await program(ranking.sql, ranking.steps[0].arguments + [11])
      #expect(
        program.plan.contains {
          $0.contains("USING INDEX places_passing_score (city_key=? AND <expr>>? AND <expr><?)")
        }, "\(program.plan)")
      // The table's cursor is the one opened on its root page; the index's rows point into it, but no column of it
      // is read.
      let table = try #require(program.bytecode.first { $0.opcode == "OpenRead" && $0.p2 == program.placesRoot }?.p1)
      #expect(!program.bytecode.contains { $0.opcode == "Column" && $0.p1 == table }, "\(program.bytecode)")
    }
  }

  /// Places within a radius, nearest first, measure each candidate once: the Swift haversine function is called in
  /// one place of the program (it was called for the radius and again for the order key).
  @Test func nearbyPlacesMeasureEachCandidateOnce() async throws {
    let ranking = try SQLiteStore.placeRanking(
      PlaceQuery(area: .circle(center: try Coordinate(latitude: 53, longitude: 36), radius: 1_000), sort: .distance))
    let nearby = try await program(ranking.sql, ranking.steps[0].arguments + [11])
    let calls = nearby.bytecode.filter {
      ["Function", "PureFunc"].contains($0.opcode) && $0.p4.contains("meridian_haversine")
    }
    #expect(calls.count == 1, "\(nearby.bytecode)")
    // A centre with another order and no radius measures nothing (the listings' distances are computed in Swift).
    let byRating = try SQLiteStore.placeRanking(
      PlaceQuery(center: try Coordinate(latitude: 53, longitude: 36), sort: .rating))
    let rated = try await program(byRating.sql, byRating.steps[0].arguments + [11])
    #expect(!rated.bytecode.contains { $0.p4.contains("meridian_haversine") }, "\(rated.bytecode)")
  }

  /// The plan of `sql`, its bytecode (`EXPLAIN`) and the root page of `places`, in a new database of the server's
  /// schema.
  func program(_ sql: String, _ arguments: StatementArguments) async throws -> (
    plan: [String], bytecode: [(opcode: String, p1: Int, p2: Int, p4: String)], placesRoot: Int
  ) {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("plan-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: directory) }
    let store = try SQLiteStore.open(at: directory.appendingPathComponent("plan.sqlite").path)
    return try await store.database.read { db in
      db.add(function: SQLiteStore.haversineFunction())
      let plan = try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql, arguments: arguments).map {
        $0["detail"] as String
      }
      let bytecode = try Row.fetchAll(db, sql: "EXPLAIN " + sql, arguments: arguments).map {
        (opcode: $0["opcode"] as String, p1: $0["p1"] as Int, p2: $0["p2"] as Int, p4: ($0["p4"] as String?) ?? "")
      }
      let root = try Int.fetchOne(db, sql: "SELECT rootpage FROM sqlite_master WHERE name = 'places'") ?? -1
      return (plan, bytecode, root)
    }
  }

  /// The geofence monitor's read finds each queue entry's fixes by row id, not by scanning the person's fixes.
  @Test func geofenceQueueReadFindsFixesByRowID() async throws {
    let plan = try await plan(SQLiteStore.geofenceQueueSQL, [512, 5_000])
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
