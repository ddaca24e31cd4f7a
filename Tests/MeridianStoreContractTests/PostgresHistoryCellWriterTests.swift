import DomainKit
import Foundation
import Logging
import MeridianAPI
import MeridianStore
import MeridianStorePostgres
import MeridianStoreTesting
import PersistenceKitPostgres
import PostgresNIO
import Testing

/// On PostgreSQL, two transactions counting one person's fixes in the same cell and hour on different connections
/// don't wait for each other: each adds to its writer's row of `history_cells`. With one row per cell and hour, the
/// second waited for the first to end, and a node's group commits of one person's uploads ran one after another.
@Suite("PostgreSQL history cells per writer")
struct PostgresHistoryCellWriterTests {
  /// 2025-09-10T00:00:00Z.
  static let start: Int64 = 1_757_462_400_000

  @Test func countingTheSameCellOnTwoConnectionsDoesNotWait() async throws {
    try await PostgresTestDatabase.with { database in
      let store = try await PostgresStore.open(url: database.url, maximumConnections: 2)
      do {
        _ = try await store.createAccount(
          id: "anna", credential: .email("anna@example.com"), passwordHash: nil, now: 0)
        _ = try await store.claimDevice("anna-phone", owner: "anna", now: 0)
        // Three fixes a minute apart within a few metres: one cell of every length, one hour.
        let fixes = try (0..<3).map { index in
          try LocationFix(
            deviceID: "anna-phone", timestamp: Self.start + Int64(index) * 60_000,
            latitude: 50.4501 + Double(index) * 0.00001, longitude: 30.5201)
        }
        _ = try await store.insertFixes(
          [FixInsertBatch(userID: "anna", deviceID: "anna-phone", fixes: fixes)], now: Self.start)

        let raw = try await PersistenceKitPostgres.PostgresDatabase.open(
          url: try PostgresURL(database.url), maxConnections: 1)
        do {
          try await Self.onTwoWriters(raw) { first, second in
            // The first holds its count of the first fix (a changed battery level: counted out, then in again)
            // in an open transaction; the second counts the second fix meanwhile, and must not wait for it.
            try await Self.run("BEGIN", on: first)
            try await Self.run(
              "UPDATE fixes SET battery_level = 0.5 WHERE timestamp = \(fixes[0].timestamp)", on: first)
            try await Self.run("SET lock_timeout = '5s'", on: second)
            try await Self.run("BEGIN", on: second)
            try await Self.run(
              "UPDATE fixes SET battery_level = 0.4 WHERE timestamp = \(fixes[1].timestamp)", on: second)
            try await Self.run("COMMIT", on: second)
            try await Self.run("COMMIT", on: first)
          }
        } catch {
          await raw.close()
          throw error
        }
        await raw.close()

        // The cell's rows still add up to its three fixes, at their mean position, at every length.
        let hours = (Self.start / HistoryCells.hour)..<(Self.start / HistoryCells.hour + 1)
        for precision in HistoryCells.precisions {
          let clusters = try await store.hourlyClusters(
            owner: "anna", precision: precision, hours: hours, ranges: [(lower: "", upper: "~")])
          #expect(clusters.map(\.count) == [3], "length \(precision)")
          let mean = fixes.map(\.latitude).reduce(0, +) / 3
          #expect(clusters.allSatisfy { abs($0.latitude - mean) < 1e-9 }, "length \(precision)")
        }
        // Deleting the history through a third connection empties every cell.
        _ = try await store.deleteHistory(owner: "anna", filter: HistoryFilter())
        let left = try await store.hourlyClusters(
          owner: "anna", precision: 6, hours: hours, ranges: [(lower: "", upper: "~")])
        #expect(left.isEmpty)
      } catch {
        await store.close()
        throw error
      }
      await store.close()
    }
  }

  /// Runs `body` with two connections of their own whose backends count in different rows (their process ids
  /// differ modulo the number of writer rows, 8).
  static func onTwoWriters(
    _ database: PersistenceKitPostgres.PostgresDatabase,
    _ body: (PostgresConnection, PostgresConnection) async throws -> Void
  ) async throws {
    try await database.withDedicatedConnection { first in
      let firstRow = try await writerRow(of: first)
      for _ in 0..<32 {
        let done = try await database.withDedicatedConnection { second in
          guard try await writerRow(of: second) != firstRow else { return false }
          try await body(first, second)
          return true
        }
        if done { return }
      }
      Issue.record("no second connection counted in another row than the first")
    }
  }

  static func writerRow(of connection: PostgresConnection) async throws -> Int32 {
    let rows = try await connection.query("SELECT pg_backend_pid() % 8", logger: logger).collect()
    return try #require(try rows.first?.decode(Int32.self))
  }

  static func run(_ sql: String, on connection: PostgresConnection) async throws {
    _ = try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger).collect()
  }

  static let logger = Logger(label: "meridian.tests.history-cells")
}
