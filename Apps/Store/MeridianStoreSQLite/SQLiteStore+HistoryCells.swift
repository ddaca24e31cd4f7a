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

  /// Appends the migration adding the counts per UTC day (after the migrations released before it).
  static func appendHistoryCellDayMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-12-02 history cells per day", historyCellDays))
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

  /// The counts per UTC day (``HistoryCells/Span/day``) beside those per hour, counted from them, then kept as they
  /// are: by triggers on every delete and move of a fix, and by ``SQLiteStore/countInHistoryCells(_:user:_:)``.
  static let historyCellDays = """
    CREATE TABLE history_cell_days(
      user_id TEXT NOT NULL,
      precision INTEGER NOT NULL,
      cell TEXT NOT NULL,
      day INTEGER NOT NULL,
      fixes INTEGER NOT NULL,
      latitude_sum REAL NOT NULL,
      longitude_sum REAL NOT NULL,
      PRIMARY KEY (user_id, precision, cell, day)
    ) WITHOUT ROWID;
    INSERT INTO history_cell_days
      SELECT user_id, precision, cell, hour / 24, SUM(fixes), SUM(latitude_sum), SUM(longitude_sum)
      FROM history_cells GROUP BY user_id, precision, cell, hour / 24 HAVING SUM(fixes) > 0;
    CREATE TRIGGER history_cell_days_delete AFTER DELETE ON fixes BEGIN
      \(countOut("OLD", span: .day))
    END;
    CREATE TRIGGER history_cell_days_update
    AFTER UPDATE OF user_id, timestamp, latitude, longitude, geohash2, geohash3, geohash4, geohash5, geohash6 ON fixes
    BEGIN
      \(countOut("OLD", span: .day))
      \(countIn("NEW", span: .day))
    END;
    """

  /// The trigger statement counting the fix `row` (NEW) in its cells of `span`.
  private static func countIn(_ row: String, span: HistoryCells.Span = .hour) -> String {
    let cells = HistoryCells.precisions.map { precision in
      "(\(row).user_id, \(precision), \(row).geohash\(precision), \(row).timestamp / \(span.milliseconds), 1, "
        + "\(row).latitude, \(row).longitude)"
    }
    return """
      INSERT INTO \(span.table) VALUES \(cells.joined(separator: ", "))
      ON CONFLICT(user_id, precision, cell, \(span.column)) DO UPDATE SET fixes = fixes + 1,
        latitude_sum = latitude_sum + excluded.latitude_sum, longitude_sum = longitude_sum + excluded.longitude_sum;
      """
  }

  /// The trigger statements taking the fix `row` (OLD) out of its cells of `span`: one primary-key update per length,
  /// and the cell's row deleted when that was its last fix (a deleted account or history leaves no row behind).
  private static func countOut(_ row: String, span: HistoryCells.Span = .hour) -> String {
    HistoryCells.precisions.map { precision in
      let key = """
        user_id = \(row).user_id AND precision = \(precision) AND cell = \(row).geohash\(precision)
          AND \(span.column) = \(row).timestamp / \(span.milliseconds)
        """
      return """
        UPDATE \(span.table) SET fixes = fixes - 1, latitude_sum = latitude_sum - \(row).latitude,
          longitude_sum = longitude_sum - \(row).longitude
        WHERE \(key);
        DELETE FROM \(span.table) WHERE \(key) AND fixes <= 0;
        """
    }.joined(separator: "\n")
  }
}

extension SQLiteStore {
  /// One cell of one period of an owner's fixes.
  private struct CellPeriod: Hashable {
    var precision: Int
    var cell: String
    var period: Int64
  }

  /// Adds `user`'s fixes just inserted to the counts of every ``HistoryCells/Span``: one upsert per cell and period
  /// (the days added up from the hours' sums, not from the fixes again).
  static func countInHistoryCells(_ db: Database, user: UserID, _ inserted: [FixRow]) throws {
    guard !inserted.isEmpty else { return }
    typealias Sum = (fixes: Int, latitudes: Double, longitudes: Double)
    var hours: [CellPeriod: Sum] = [:]
    for row in inserted {
      let hour = row.fix.timestamp / HistoryCells.hour
      for (offset, cell) in row.cells.enumerated() {
        let key = CellPeriod(precision: HistoryCells.precisions.lowerBound + offset, cell: cell, period: hour)
        let sum = hours[key] ?? (0, 0, 0)
        hours[key] = (sum.fixes + 1, sum.latitudes + row.fix.latitude, sum.longitudes + row.fix.longitude)
      }
    }
    var days: [CellPeriod: Sum] = [:]
    let hoursPerDay = HistoryCells.day / HistoryCells.hour
    for (key, sum) in hours {
      let day = CellPeriod(precision: key.precision, cell: key.cell, period: key.period / hoursPerDay)
      let total = days[day] ?? (0, 0, 0)
      days[day] = (total.fixes + sum.fixes, total.latitudes + sum.latitudes, total.longitudes + sum.longitudes)
    }
    for (span, sums) in [(HistoryCells.Span.hour, hours), (.day, days)] {
      let statement = try db.cachedStatement(
        sql: """
          INSERT INTO \(span.table) VALUES (?, ?, ?, ?, ?, ?, ?)
          ON CONFLICT(user_id, precision, cell, \(span.column)) DO UPDATE SET fixes = fixes + excluded.fixes,
            latitude_sum = latitude_sum + excluded.latitude_sum, longitude_sum = longitude_sum + excluded.longitude_sum
          """)
      for (key, sum) in sums {
        try statement.execute(arguments: [
          user.rawValue, key.precision, key.cell, key.period, sum.fixes, sum.latitudes, sum.longitudes,
        ])
      }
    }
  }

  public func countedClusters(
    owner: UserID, precision: Int, span: HistoryCells.Span, periods: Range<Int64>,
    ranges cellRanges: [(lower: String, upper: String)]
  ) async throws -> [HistoryCluster] {
    guard HistoryCells.precisions.contains(precision), !cellRanges.isEmpty, !periods.isEmpty else { return [] }
    // One primary-key range search per range (a joined list of them; an OR of them would scan the owner's rows).
    let ranges = cellRanges.map { _ in "(?, ?)" }.joined(separator: ", ")
    let sql = """
      SELECT c.cell AS cell, SUM(c.fixes) AS n, SUM(c.latitude_sum) AS latitudes, SUM(c.longitude_sum) AS longitudes
      FROM (VALUES \(ranges)) r CROSS JOIN \(span.table) c
      WHERE c.user_id = ? AND c.precision = ? AND c.cell >= r.column1 AND c.cell < r.column2
        AND c.\(span.column) >= ? AND c.\(span.column) < ?
      GROUP BY c.cell HAVING n > 0 ORDER BY n DESC, c.cell
      """
    var arguments: [DatabaseValue] = []
    for range in cellRanges { arguments += [range.lower.databaseValue, range.upper.databaseValue] }
    arguments += [
      owner.rawValue.databaseValue, precision.databaseValue, periods.lowerBound.databaseValue,
      periods.upperBound.databaseValue,
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
