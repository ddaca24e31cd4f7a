import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import MeridianStore
import MeridianStoreTesting
import Testing

/// The per-hour and per-day cell counts read through geohash ranges (`FixStore.countedClusters`) on every engine: the
/// cells inside the ranges and no others, each with its fixes' count and mean position, as counted here from the
/// fixes.
@Suite("Store contract: history cells read through ranges")
struct HistoryCellsContractTests {
  /// 2025-09-10T00:00:00Z.
  static let start: Int64 = 1_757_462_400_000

  @Test(arguments: StoreEngine.all)
  func onlyTheCellsInTheRangesAreCounted(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      _ = try await store.createAccount(id: "anna", credential: .email("anna@example.com"), passwordHash: nil, now: 0)
      _ = try await store.claimDevice("anna-phone", owner: "anna", now: 0)
      // Two fixes in one Kyiv cell (u8vxn), one in each of two others (u8vxp, the second of the run u8vxn–u8vxp the
      // view's ranges hold, and u8vz0), one in each of two Lviv cells (u8c5d, u8c5e), over a few hours.
      let places = [
        (50.4501, 30.5201), (50.4503, 30.5203), (50.46, 30.56), (50.46, 30.60), (49.84, 24.03), (49.84, 24.05),
      ]
      let fixes = try places.enumerated().map { index, place in
        try LocationFix(
          deviceID: "anna-phone", timestamp: Self.start + Int64(index) * 1_200_000, latitude: place.0,
          longitude: place.1)
      }
      _ = try await store.insertFixes(
        [FixInsertBatch(userID: "anna", deviceID: "anna-phone", fixes: fixes)], now: Self.start + 10_000_000)
      // Read from the counts per hour and per day: the same answer.
      func read(_ ranges: [(lower: String, upper: String)]) async throws -> [String: HistoryCluster] {
        Dictionary(
          uniqueKeysWithValues: try await store.cellsOfAllTime(owner: "anna", precision: 5, ranges: ranges).map {
            ($0.geohash, $0)
          })
      }
      func expected(_ ranges: [(lower: String, upper: String)]) throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for fix in fixes {
          let cell = try Geohash.encode(fix.coordinate, precision: 5)
          if ranges.contains(where: { $0.lower <= cell && cell < $0.upper }) { counts[cell, default: 0] += 1 }
        }
        return counts
      }
      let kyiv = HistoryCells.ranges(
        covering: BoundingBox(south: 50.44, west: 30.50, north: 50.47, east: 30.62), maxLength: 5)
      let inKyiv = try await read(kyiv)
      #expect(inKyiv.mapValues(\.count) == (try expected(kyiv)))
      #expect(inKyiv.values.map(\.count).sorted() == [1, 1, 2])
      let shared = try #require(inKyiv.values.first { $0.count == 2 })
      #expect(abs(shared.latitude - 50.4502) < 1e-9 && abs(shared.longitude - 30.5202) < 1e-9)
      let lviv = HistoryCells.ranges(
        covering: BoundingBox(south: 49.83, west: 24.02, north: 49.85, east: 24.04), maxLength: 5)
      #expect(try await read(kyiv + lviv).mapValues(\.count) == (try expected(kyiv + lviv)))
      #expect(try await read(lviv).values.map(\.count) == [1, 1])
      // A range holding none of her cells, and the one holding every cell.
      #expect(try await read([HistoryCells.range("gc")]).isEmpty)
      #expect(try await read([HistoryCells.range("")]).values.map(\.count).reduce(0, +) == 6)
    }
  }

  /// A database from before the counts per day: the migration counts each cell's days from its hours' rows (every
  /// writer's, on PostgreSQL), a day holding the hours from its midnight to the next; a cell whose hours count no fix
  /// counts none.
  @Test(arguments: StoreEngine.all)
  func theMigrationCountsTheDaysFromTheHours(_ engine: StoreEngine) async throws {
    // Day 20,000 (2024-10-04 UTC): hours 480,000 and 480,023 (its first and last); day 20,001: hour 480,024.
    let rows = [
      ("u8vxn", 480_000, 2, 100.9, 61.04, 0), ("u8vxn", 480_023, 1, 50.45, 30.52, 3),
      ("u8vxn", 480_024, 4, 200, 120, 1),
      ("u8vxp", 480_001, 0, 0.0, 0.0, 0),
    ]
    let seed: (StoreEngine) -> String = { engine in
      let writer = engine.name == "sqlite" ? "" : ", writer"
      let values = rows.map { row in
        "('anna', 5, '\(row.0)', \(row.1), \(row.2), \(row.3), \(row.4)\(engine.name == "sqlite" ? "" : ", \(row.5)"))"
      }
      return """
        INSERT INTO history_cells(user_id, precision, cell, hour, fixes, latitude_sum, longitude_sum\(writer))
        VALUES \(values.joined(separator: ", "));
        """
    }
    try await engine.withDatabase(before: "2026-12-02 history cells per day", seed: seed) { store in
      func days(_ periods: Range<Int64>) async throws -> [HistoryCluster] {
        try await store.countedClusters(
          owner: "anna", precision: 5, span: .day, periods: periods, ranges: [HistoryCells.range("")])
      }
      let first = try await days(20_000..<20_001)
      #expect(first.map(\.geohash) == ["u8vxn"] && first.map(\.count) == [3])
      #expect(abs((first.first?.latitude ?? 0) - 151.35 / 3) < 1e-9)
      #expect(try await days(20_001..<20_002).map(\.count) == [4])
      #expect(try await days(0..<30_000).map(\.count) == [7])
      // The hours' rows are as they were.
      let hours = try await store.countedClusters(
        owner: "anna", precision: 5, span: .hour, periods: 480_000..<480_024, ranges: [HistoryCells.range("")])
      #expect(hours.map(\.count) == [3])
    }
  }
}
