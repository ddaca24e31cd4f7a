import DomainKit
import Foundation
import Logging
import MeridianAPI
import MeridianStore
import MeridianStorePostgres
import MeridianStoreTesting
import MeridianTestSupport
import PersistenceKitPostgres
import PostgresNIO
import Testing

/// On PostgreSQL, two transactions counting one person's new fixes in the same cell and hour on different connections
/// don't wait for each other: each adds to its writer's row of `history_cells` — even on connections whose backends'
/// process ids are equal modulo the writer rows, which shared their row while the writer was the backend. With one
/// row per cell and hour, the second waited for the first to end, and a node's group commits of one person's uploads
/// ran one after another. Deleting the fixes leaves none of their rows.
@Suite("PostgreSQL history cells per writer")
struct PostgresHistoryCellWriterTests {
  /// 2025-09-10T00:00:00Z.
  static let start: Int64 = 1_757_462_400_000

  @Test func countingTheSameCellOnTwoConnectionsDoesNotWait() async throws {
    try await Self.withAnnasThreeFixes { store, raw, fixes in
      try await Self.onTwoConnectionsOfOneBackendRow(raw) { first, second in
        // The first holds its count of a copy of the first fix (a second later) in an open transaction; the
        // second counts a copy of the second fix meanwhile, and must not wait for it.
        try await Self.run("BEGIN", on: first)
        try await Self.run(Self.copy(fixes[0].timestamp), on: first)
        let firstRow = try await Self.transactionRow(of: first)
        try await Self.run("SET lock_timeout = '5s'", on: second)
        // Transaction ids are the cluster's: other tests' writes between the two can make them equal modulo 8
        // (then they share a row, as the writer rule allows); the second starts again with the next id.
        for _ in 0..<8 {
          try await Self.run("BEGIN", on: second)
          if try await Self.transactionRow(of: second) != firstRow { break }
          try await Self.run("ROLLBACK", on: second)
        }
        try await Self.run(Self.copy(fixes[1].timestamp), on: second)
        try await Self.run("COMMIT", on: second)
        try await Self.run("COMMIT", on: first)
      }

      // The cell's rows add up to its five fixes, at their mean position, at every length, per hour and per day.
      let latitudes = fixes.map(\.latitude) + [fixes[0].latitude, fixes[1].latitude]
      for (counted, clusters) in try await Self.countsOfTheFirstHourAndDay(store) {
        #expect(clusters.map(\.count) == [5], "\(counted)")
        let mean = latitudes.reduce(0, +) / 5
        #expect(clusters.allSatisfy { abs($0.latitude - mean) < 1e-9 }, "\(counted)")
      }
      // Deleting the history (on another connection) leaves no row of it: no count, no sum of positions.
      #expect(try await Self.cellRows(raw, "history_cells") >= 5)
      #expect(try await Self.cellRows(raw, "history_cell_days") >= 5)
      #expect(try await store.deleteHistory(owner: "anna", filter: HistoryFilter()) == 5)
      #expect(try await Self.cellRows(raw, "history_cells") == 0)
      #expect(try await Self.cellRows(raw, "history_cell_days") == 0)
    }
  }

  /// A deletion whose fold stores a cell's row under the writer of a commit still under way that created that row
  /// (its transaction's id equal modulo 8): the fold waits for the commit, then adds to its row. (The fold failed
  /// there with a duplicate key, and the deletion with it; a day's row, shared by 24 hours, made it likelier.)
  @Test func aDeletionAddsToTheRowACommitUnderWayCreated() async throws {
    try await Self.withAnnasThreeFixes { store, raw, fixes in
      try await raw.withDedicatedConnection { first in
        try await raw.withDedicatedConnection { second in
          // The first stores a copy of a fix under a writer that has no row of the cell yet.
          let taken = try await Self.writers(on: first)
          var firstRow: Int64 = -1
          for _ in 0..<64 {
            try await Self.run("BEGIN", on: first)
            firstRow = try await Self.transactionRow(of: first)
            if !taken.contains(firstRow) { break }
            try await Self.run("ROLLBACK", on: first)
          }
          try #require(!taken.contains(firstRow))
          try await Self.run(Self.copy(fixes[0].timestamp), on: first)
          // The second deletes another fix of the cell under the same writer: its fold waits for the first.
          var secondRow: Int64 = -1
          for _ in 0..<64 {
            try await Self.run("BEGIN", on: second)
            secondRow = try await Self.transactionRow(of: second)
            if secondRow == firstRow { break }
            try await Self.run("ROLLBACK", on: second)
          }
          try #require(secondRow == firstRow)
          try await Self.run("SET LOCAL lock_timeout = '10s'", on: second)
          let secondBackend = try await Self.backendID(of: second)
          let deleting = Task {
            try await Self.run("DELETE FROM fixes WHERE timestamp = \(fixes[1].timestamp)", on: second)
          }
          // The first commits only once the deletion waits for it (on the row its fold would store; PostgreSQL
          // announces no lock waiter).
          try await waitUntil("the deletion to wait for the commit under way", timeout: .seconds(15)) {
            let rows = try await first.query(
              "SELECT count(*) FROM pg_locks WHERE pid = \(secondBackend) AND NOT granted", logger: Self.logger
            ).collect()
            return try (rows.first?.decode(Int64.self) ?? 0) > 0
          }
          try await Self.run("COMMIT", on: first)
          try await deleting.value
          try await Self.run("COMMIT", on: second)
        }
      }
      // Three fixes, one copy added, one deleted: three, in the hour's and the day's counts, at every length.
      for (counted, clusters) in try await Self.countsOfTheFirstHourAndDay(store) {
        #expect(clusters.map(\.count) == [3], "\(counted)")
      }
    }
  }

  /// Runs `body` with a store of a database of its own in which Anna's phone stored three fixes a minute apart within
  /// a few metres (one cell of every length, one hour), and a database client of its own for raw statements.
  static func withAnnasThreeFixes(
    _ body: (PostgresStore, PersistenceKitPostgres.PostgresDatabase, [LocationFix]) async throws -> Void
  ) async throws {
    try await PostgresTestDatabase.with { database in
      let store = try await PostgresStore.open(url: database.url, maximumConnections: 2)
      do {
        _ = try await store.createAccount(
          id: "anna", credential: .email("anna@example.com"), passwordHash: nil, now: 0)
        _ = try await store.claimDevice("anna-phone", owner: "anna", now: 0)
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
          try await body(store, raw, fixes)
        } catch {
          await raw.close()
          throw error
        }
        await raw.close()
      } catch {
        await store.close()
        throw error
      }
      await store.close()
    }
  }

  /// Anna's cells of every length counted in the hour and in the day of ``start``, each with what it is.
  static func countsOfTheFirstHourAndDay(_ store: PostgresStore) async throws
    -> [(counted: String, clusters: [HistoryCluster])]
  {
    var counts: [(counted: String, clusters: [HistoryCluster])] = []
    for span in HistoryCells.Span.allCases {
      let period = start / span.milliseconds
      for precision in HistoryCells.precisions {
        let clusters = try await store.countedClusters(
          owner: "anna", precision: precision, span: span, periods: period..<period + 1,
          ranges: [(lower: "", upper: "~")])
        counts.append(("length \(precision), \(span)", clusters))
      }
    }
    return counts
  }

  /// The writers that have rows of counts (per hour or per day).
  static func writers(on connection: PostgresConnection) async throws -> Set<Int64> {
    let rows = try await connection.query(
      "SELECT writer::bigint FROM history_cells UNION SELECT writer::bigint FROM history_cell_days", logger: logger
    ).collect()
    return Set(try rows.map { try $0.decode(Int64.self) })
  }

  /// Runs `body` with two connections of their own whose backends' process ids are equal modulo the number of writer
  /// rows (8): the connections whose transactions waited for each other when the writer was the backend.
  static func onTwoConnectionsOfOneBackendRow(
    _ database: PersistenceKitPostgres.PostgresDatabase,
    _ body: (PostgresConnection, PostgresConnection) async throws -> Void
  ) async throws {
    try await database.withDedicatedConnection { first in
      let firstRow = try await backendRow(of: first)
      for _ in 0..<128 {
        let done = try await database.withDedicatedConnection { second in
          guard try await backendRow(of: second) == firstRow else { return false }
          try await body(first, second)
          return true
        }
        if done { return }
      }
      Issue.record("no second connection's backend had the first's process id modulo 8")
    }
  }

  /// Stores a copy of the fix at `timestamp`, a second later.
  static func copy(_ timestamp: Int64) -> String {
    let columns = """
      user_id, device_id, latitude, longitude, kind, geohash2, geohash3, geohash4, geohash5, geohash6, received_at
      """
    return
      "INSERT INTO fixes(timestamp, \(columns)) SELECT timestamp + 1000, \(columns) FROM fixes WHERE timestamp = \(timestamp)"
  }

  /// How many rows of counts `table` (per hour or per day) holds.
  static func cellRows(_ database: PersistenceKitPostgres.PostgresDatabase, _ table: String) async throws -> Int64 {
    try await database.withDedicatedConnection { connection in
      let rows = try await connection.query(PostgresQuery(unsafeSQL: "SELECT count(*) FROM \(table)"), logger: logger)
        .collect()
      return try #require(try rows.first?.decode(Int64.self))
    }
  }

  /// The connection's backend's process id.
  static func backendID(of connection: PostgresConnection) async throws -> Int32 {
    let rows = try await connection.query("SELECT pg_backend_pid()", logger: logger).collect()
    return try #require(try rows.first?.decode(Int32.self))
  }

  /// The connection's backend's process id modulo the writer rows.
  static func backendRow(of connection: PostgresConnection) async throws -> Int32 {
    try await backendID(of: connection) % 8
  }

  /// The writer row of the connection's transaction (its id modulo 8; taking the id if it had none).
  static func transactionRow(of connection: PostgresConnection) async throws -> Int64 {
    let rows = try await connection.query("SELECT pg_current_xact_id()::text::bigint % 8", logger: logger).collect()
    return try #require(try rows.first?.decode(Int64.self))
  }

  static func run(_ sql: String, on connection: PostgresConnection) async throws {
    _ = try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger).collect()
  }

  static let logger = Logger(label: "meridian.tests.history-cells")
}
