import DomainKit
import Foundation
import GRDB
import MeridianAPI
import MeridianStore
import PersistenceKit

extension SQLiteSchema {
  /// Appends the migrations of the history's per-hour cell counts.
  static func appendHistoryCellMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-29 history cells per hour", historyCells))
  }

  /// ``HistoryCells``: the fixes per owner, geohash length, cell and UTC hour (counted from the fixes stored so far,
  /// then kept by triggers on every delete and move of a fix, and by ``SQLiteStore/countInHistoryCells(_:user:_:)``
  /// for the fixes the group commit — the one insert of fixes — stores: added up per cell and hour, as a row trigger's
  /// five upserts per fix cost three times the insert itself; a count that falls to 0 stays as a row of 0), and the
  /// `(user_id, geohash6)` index the map reads a small view's fixes through.
  static let historyCells = """
    CREATE TABLE history_cells(
      user_id TEXT NOT NULL,
      precision INTEGER NOT NULL,
      cell TEXT NOT NULL,
      hour INTEGER NOT NULL,
      fixes INTEGER NOT NULL,
      latitude_sum REAL NOT NULL,
      longitude_sum REAL NOT NULL,
      PRIMARY KEY (user_id, precision, cell, hour)
    ) WITHOUT ROWID;
    \(HistoryCells.precisions.map { precision in """
      INSERT INTO history_cells
        SELECT user_id, \(precision), geohash\(precision), timestamp / 3600000, COUNT(*), SUM(latitude), SUM(longitude)
        FROM fixes GROUP BY user_id, geohash\(precision), timestamp / 3600000;
      """ }.joined(separator: "\n"))
    CREATE TRIGGER history_cells_delete AFTER DELETE ON fixes BEGIN
      \(countOut("OLD"))
    END;
    CREATE TRIGGER history_cells_update
    AFTER UPDATE OF user_id, timestamp, latitude, longitude, geohash2, geohash3, geohash4, geohash5, geohash6 ON fixes
    BEGIN
      \(countOut("OLD"))
      \(countIn("NEW"))
    END;
    CREATE INDEX fixes_user_geohash6 ON fixes(user_id, geohash6);
    """

  /// The trigger statement counting the fix `row` (NEW) in its cells.
  private static func countIn(_ row: String) -> String {
    let cells = HistoryCells.precisions.map { precision in
      "(\(row).user_id, \(precision), \(row).geohash\(precision), \(row).timestamp / 3600000, 1, \(row).latitude, "
        + "\(row).longitude)"
    }
    return """
      INSERT INTO history_cells VALUES \(cells.joined(separator: ", "))
      ON CONFLICT(user_id, precision, cell, hour) DO UPDATE SET fixes = fixes + 1,
        latitude_sum = latitude_sum + excluded.latitude_sum, longitude_sum = longitude_sum + excluded.longitude_sum;
      """
  }

  /// The trigger statements taking the fix `row` (OLD) out of its cells: one primary-key update per length, and the
  /// cell's row deleted when that was its last fix (a deleted account or history leaves no row behind).
  private static func countOut(_ row: String) -> String {
    HistoryCells.precisions.map { precision in
      let key = """
        user_id = \(row).user_id AND precision = \(precision) AND cell = \(row).geohash\(precision)
          AND hour = \(row).timestamp / 3600000
        """
      return """
        UPDATE history_cells SET fixes = fixes - 1, latitude_sum = latitude_sum - \(row).latitude,
          longitude_sum = longitude_sum - \(row).longitude
        WHERE \(key);
        DELETE FROM history_cells WHERE \(key) AND fixes <= 0;
        """
    }.joined(separator: "\n")
  }
}

extension SQLiteStore {
  /// One cell of one hour of an owner's fixes.
  private struct CellHour: Hashable {
    var precision: Int
    var cell: String
    var hour: Int64
  }

  /// Adds `user`'s fixes just inserted to `history_cells`: one upsert per cell and hour.
  static func countInHistoryCells(_ db: Database, user: UserID, _ inserted: [FixRow]) throws {
    guard !inserted.isEmpty else { return }
    var sums: [CellHour: (fixes: Int, latitudes: Double, longitudes: Double)] = [:]
    for row in inserted {
      let hour = row.fix.timestamp / HistoryCells.hour
      for (offset, cell) in row.cells.enumerated() {
        let key = CellHour(precision: HistoryCells.precisions.lowerBound + offset, cell: cell, hour: hour)
        let sum = sums[key] ?? (0, 0, 0)
        sums[key] = (sum.fixes + 1, sum.latitudes + row.fix.latitude, sum.longitudes + row.fix.longitude)
      }
    }
    let statement = try db.cachedStatement(
      sql: """
        INSERT INTO history_cells VALUES (?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT(user_id, precision, cell, hour) DO UPDATE SET fixes = fixes + excluded.fixes,
          latitude_sum = latitude_sum + excluded.latitude_sum, longitude_sum = longitude_sum + excluded.longitude_sum
        """)
    for (key, sum) in sums {
      try statement.execute(arguments: [
        user.rawValue, key.precision, key.cell, key.hour, sum.fixes, sum.latitudes, sum.longitudes,
      ])
    }
  }

  public func hourlyClusters(
    owner: UserID, precision: Int, hours: Range<Int64>, ranges cellRanges: [(lower: String, upper: String)]
  ) async throws -> [HistoryCluster] {
    guard HistoryCells.precisions.contains(precision), !cellRanges.isEmpty, !hours.isEmpty else { return [] }
    // One primary-key range search per range (a joined list of them; an OR of them would scan the owner's rows).
    let ranges = cellRanges.map { _ in "(?, ?)" }.joined(separator: ", ")
    let sql = """
      SELECT c.cell AS cell, SUM(c.fixes) AS n, SUM(c.latitude_sum) AS latitudes, SUM(c.longitude_sum) AS longitudes
      FROM (VALUES \(ranges)) r CROSS JOIN history_cells c
      WHERE c.user_id = ? AND c.precision = ? AND c.cell >= r.column1 AND c.cell < r.column2
        AND c.hour >= ? AND c.hour < ?
      GROUP BY c.cell HAVING n > 0 ORDER BY n DESC, c.cell
      """
    var arguments: [DatabaseValue] = []
    for range in cellRanges { arguments += [range.lower.databaseValue, range.upper.databaseValue] }
    arguments += [
      owner.rawValue.databaseValue, precision.databaseValue, hours.lowerBound.databaseValue,
      hours.upperBound.databaseValue,
    ]
    let values = arguments
    return try await database.read { db in
      try Row.fetchAll(db, sql: sql, arguments: StatementArguments(values)).map { row in
        let count: Int = row["n"]
        let latitudes: Double = row["latitudes"]
        let longitudes: Double = row["longitudes"]
        return HistoryCluster(
          geohash: row["cell"], count: count, latitude: latitudes / Double(count),
          longitude: longitudes / Double(count))
      }
    }
  }
}
