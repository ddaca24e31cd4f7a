import DomainKit
import Foundation
import MeridianAPI
import MeridianStore
import PersistenceKit
import PostgresNIO

extension PostgresSchema {
  /// Appends the migrations of the history's per-hour cell counts.
  public static func appendHistoryCellMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-29 history cells per hour", historyCells))
    migrator.append(.sql("2026-12-01 history cells per writer", historyCellsPerWriter))
  }

  /// Appends the migration choosing the history cells' writer row by transaction (after the migrations released
  /// before it).
  public static func appendHistoryCellTransactionWriterMigrations(to migrator: inout Migrator) {
    migrator.append(
      .sql("2026-12-01 history cell writers by transaction", countFunction(writer: historyCellWriterByTransaction)))
  }

  /// Appends the migration adding the counts per UTC day (after the migrations released before it).
  public static func appendHistoryCellDayMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-12-02 history cells per day", historyCellDays))
  }

  /// The counts per UTC day (``HistoryCells/Span/day``) beside those per hour, as they are (rows per writer): counted
  /// from the hours' rows (into writer 0), then kept by the same statement triggers in the same statements. The
  /// count of a long period reads a day's row where it read 24 hours' (the map's "All time" of 5,000,000 fixes summed
  /// the rows of about 14,000 hours per cell). The fixes are locked against writes from the count to the
  /// commit, so that nodes still running the release before (the old trigger, hours only) add no fix the days miss.
  /// The fold of the new trigger function adds to a row that a commit under way created meanwhile (a day's row is
  /// shared by its 24 hours) instead of failing on its key.
  static let historyCellDays = """
    CREATE TABLE history_cell_days(
      user_id text NOT NULL,
      precision smallint NOT NULL,
      cell text COLLATE "C" NOT NULL,
      day bigint NOT NULL,
      writer smallint NOT NULL DEFAULT 0,
      fixes bigint NOT NULL,
      latitude_sum double precision NOT NULL,
      longitude_sum double precision NOT NULL,
      PRIMARY KEY (user_id, precision, cell, day, writer)
    );
    LOCK TABLE fixes IN SHARE MODE;
    INSERT INTO history_cell_days(user_id, precision, cell, day, fixes, latitude_sum, longitude_sum)
      SELECT user_id, precision, cell, hour / 24, sum(fixes), sum(latitude_sum), sum(longitude_sum)
      FROM history_cells GROUP BY user_id, precision, cell, hour / 24 HAVING sum(fixes) <> 0;
    \(countFunction(writer: historyCellWriterByTransaction, spans: [.hour, .day], foldAddsToNewRows: true))
    """

  /// ``HistoryCells``: the fixes per owner, geohash length, cell and UTC hour (counted from the fixes stored so far,
  /// then kept by statement triggers that add up each statement's inserted, deleted or updated fixes — one upsert per
  /// cell and hour, not per fix; a count that falls to 0 stays as a row of 0; retention's dropped partitions take
  /// their hours' rows along), and the `(user_id, geohash6)` index the map reads a small view's fixes through. Cells
  /// sort as bytes (`COLLATE "C"`), so a prefix is one index range.
  static let historyCells = """
    CREATE TABLE history_cells(
      user_id text NOT NULL,
      precision smallint NOT NULL,
      cell text COLLATE "C" NOT NULL,
      hour bigint NOT NULL,
      fixes bigint NOT NULL,
      latitude_sum double precision NOT NULL,
      longitude_sum double precision NOT NULL,
      PRIMARY KEY (user_id, precision, cell, hour)
    );
    INSERT INTO history_cells \(counted(from: "fixes", sign: ""));
    CREATE FUNCTION history_cells_count() RETURNS trigger LANGUAGE plpgsql AS $cells$
    BEGIN
      IF TG_OP IN ('DELETE', 'UPDATE') THEN
        \(counting(from: "removed", sign: "-"))
        DELETE FROM history_cells c USING (\(counted(from: "removed", sign: ""))) AS k(u, p, cell, hour, n, la, lo)
        WHERE c.user_id = k.u AND c.precision = k.p AND c.cell = k.cell AND c.hour = k.hour AND c.fixes <= 0;
      END IF;
      IF TG_OP IN ('INSERT', 'UPDATE') THEN
        \(counting(from: "added", sign: ""))
      END IF;
      RETURN NULL;
    END
    $cells$;
    CREATE TRIGGER history_cells_insert AFTER INSERT ON fixes REFERENCING NEW TABLE AS added
      FOR EACH STATEMENT EXECUTE FUNCTION history_cells_count();
    CREATE TRIGGER history_cells_delete AFTER DELETE ON fixes REFERENCING OLD TABLE AS removed
      FOR EACH STATEMENT EXECUTE FUNCTION history_cells_count();
    CREATE TRIGGER history_cells_update AFTER UPDATE ON fixes REFERENCING OLD TABLE AS removed NEW TABLE AS added
      FOR EACH STATEMENT EXECUTE FUNCTION history_cells_count();
    CREATE INDEX fixes_user_geohash6 ON fixes(user_id, (geohash6 COLLATE "C"));
    """

  /// The counts per writer (replacing the trigger function of ``historyCells``): a cell's count of an hour is kept
  /// in up to ``historyCellWriters`` rows, one per writer, so that commits running at once add to different rows.
  /// With one row per cell and hour, every group commit of one person's fixes in the same place and hour updated the
  /// same rows and waited for the one before it to end (its commit included): the commits in flight ran one after
  /// another. The map sums a cell's rows. The writer was first the connection's backend
  /// (``historyCellWriterByBackend``), then its transaction (``historyCellWriterByTransaction``).
  ///
  /// Replacing the primary key builds its index under an exclusive lock: fixes wait for it while the migration runs
  /// (about 1.8 s per million rows of `history_cells` on the 2-core build machine).
  static let historyCellsPerWriter = """
    ALTER TABLE history_cells ADD COLUMN writer smallint NOT NULL DEFAULT 0;
    ALTER TABLE history_cells DROP CONSTRAINT history_cells_pkey;
    ALTER TABLE history_cells ADD PRIMARY KEY (user_id, precision, cell, hour, writer);
    \(countFunction(writer: historyCellWriterByBackend))
    """

  /// The writer row of the first per-writer migration: the connection's backend. Two connections whose process ids
  /// are equal modulo ``historyCellWriters`` always shared their rows (of 4 commits in flight on 4 connections, some
  /// two did more often than not), so their commits of one person's fixes waited for each other again.
  static let historyCellWriterByBackend = "(pg_backend_pid() % \(historyCellWriters))::smallint"

  /// The writer row by transaction: its id modulo ``historyCellWriters``. Transactions that write at once took their
  /// ids one after another, so up to ``historyCellWriters`` of them count in different rows whatever connections
  /// they run on.
  static let historyCellWriterByTransaction =
    "(pg_current_xact_id()::text::bigint % \(historyCellWriters))::smallint"

  /// The trigger function counting fixes into the rows of `writer` (an SQL expression, the row's `writer`), in the
  /// table of each of `spans`; `foldAddsToNewRows` as in ``fold(writer:span:addsToNewRows:)``.
  ///
  /// Deleting fixes folds each cell and hour they leave into one row: its rows are locked in key order, deleted,
  /// and what they held less the deleted fixes is stored again — unless no fix is left, so that nothing of a deleted
  /// history (its counts or the sums of its positions) stays behind. The rows a commit still under way adds meanwhile
  /// are not seen, and stay as they are. The locks and the fold are two statements, not one with the locks in a
  /// `WITH`: the fold's own snapshot is then taken after the waits, so it sees the row another deletion's fold stored
  /// while this one waited for it (one statement's snapshot, taken before, would miss that row and leave these fixes
  /// counted).
  static func countFunction(writer: String, spans: [HistoryCells.Span] = [.hour], foldAddsToNewRows: Bool = false)
    -> String
  {
    """
    CREATE OR REPLACE FUNCTION history_cells_count() RETURNS trigger LANGUAGE plpgsql AS $cells$
    BEGIN
      IF TG_OP IN ('DELETE', 'UPDATE') THEN
        \(spans.map { fold(writer: writer, span: $0, addsToNewRows: foldAddsToNewRows) }.joined(separator: "\n    "))
      END IF;
      IF TG_OP IN ('INSERT', 'UPDATE') THEN
        \(spans.map { counting(from: "added", sign: "", writer: writer, span: $0) }.joined(separator: "\n    "))
      END IF;
      RETURN NULL;
    END
    $cells$;
    """
  }

  /// The trigger function's statements taking the fixes of `removed` out of the table of `span`
  /// (``countFunction(writer:spans:foldAddsToNewRows:)``). With `addsToNewRows`, the folded row is added to a row of
  /// the same key that a commit under way inserted meanwhile (the migrations before the per-day counts failed there
  /// with a duplicate key: their text is kept as it was applied).
  static func fold(writer: String, span: HistoryCells.Span, addsToNewRows: Bool = false) -> String {
    let (table, period) = (span.table, span.column)
    let conflict =
      addsToNewRows
      ? """

          ON CONFLICT (user_id, precision, cell, \(period), writer) DO UPDATE SET fixes = c.fixes + excluded.fixes,
            latitude_sum = c.latitude_sum + excluded.latitude_sum, longitude_sum = c.longitude_sum + excluded.longitude_sum
      """ : ""
    return """
      PERFORM 1 FROM \(table) c
          JOIN (\(counted(from: "removed", sign: "", writer: writer, span: span))) AS k(u, p, cell, \(period), w, n, la, lo)
            ON c.user_id = k.u AND c.precision = k.p AND c.cell = k.cell AND c.\(period) = k.\(period)
          ORDER BY c.user_id, c.precision, c.cell, c.\(period), c.writer FOR UPDATE OF c;
          WITH k AS (
            SELECT * FROM (\(counted(from: "removed", sign: "", writer: writer, span: span))) AS k(u, p, cell, \(period), w, n, la, lo)
          ), folded AS (
            DELETE FROM \(table) c USING k
            WHERE c.user_id = k.u AND c.precision = k.p AND c.cell = k.cell AND c.\(period) = k.\(period)
            RETURNING c.user_id, c.precision, c.cell, c.\(period), c.fixes, c.latitude_sum, c.longitude_sum
          )
          INSERT INTO \(table) AS c\(perWriterColumns(span))
          SELECT k.u, k.p, k.cell, k.\(period), k.w, sum(f.fixes) - k.n, sum(f.latitude_sum) - k.la,
            sum(f.longitude_sum) - k.lo
          FROM folded f JOIN k ON f.user_id = k.u AND f.precision = k.p AND f.cell = k.cell AND f.\(period) = k.\(period)
          GROUP BY k.u, k.p, k.cell, k.\(period), k.w, k.n, k.la, k.lo HAVING sum(f.fixes) <> k.n
          ORDER BY 1, 2, 3, 4\(conflict);
      """
  }

  /// The columns ``counted(from:sign:writer:span:)`` gives with a `writer` (`writer` was added last to
  /// `history_cells`).
  static func perWriterColumns(_ span: HistoryCells.Span) -> String {
    "(user_id, precision, cell, \(span.column), writer, fixes, latitude_sum, longitude_sum)"
  }

  /// How many rows a cell's count of one hour is spread over at most (``historyCellsPerWriter``).
  static let historyCellWriters = 8

  /// The statement adding the fixes of `table` to the counts of `span` (`sign` "-" takes them away), in the row of
  /// `writer` when one is given (the text without it is the first migration's, kept as it was applied).
  static func counting(from table: String, sign: String, writer: String? = nil, span: HistoryCells.Span = .hour)
    -> String
  {
    """
    INSERT INTO \(span.table) AS c\(writer == nil ? "" : Self.perWriterColumns(span)) \(counted(from: table, sign: sign, writer: writer, span: span))
    ON CONFLICT (user_id, precision, cell, \(span.column)\(writer == nil ? "" : ", writer")) DO UPDATE SET fixes = c.fixes + excluded.fixes,
      latitude_sum = c.latitude_sum + excluded.latitude_sum, longitude_sum = c.longitude_sum + excluded.longitude_sum;
    """
  }

  /// The rows of the counts of `span` counting the fixes of `table` (`sign` "-" takes them away): per owner, length,
  /// cell and period (and the row of `writer`, an SQL expression, when one is given), in key order — so that two
  /// commits counting the same cells lock their rows in the same order and one waits for the other instead of
  /// deadlocking.
  static func counted(from table: String, sign: String, writer: String? = nil, span: HistoryCells.Span = .hour)
    -> String
  {
    let cell = HistoryCells.precisions.map { "WHEN \($0) THEN geohash\($0)" }.joined(separator: " ")
    let lengths = HistoryCells.precisions.map { "(\($0))" }.joined(separator: ", ")
    let writerColumn = writer.map { " \($0)," } ?? ""
    return """
      SELECT user_id, p.precision, CASE p.precision \(cell) END, timestamp / \(span.milliseconds),\(writerColumn) \(sign)count(*),
        \(sign)sum(latitude), \(sign)sum(longitude)
      FROM \(table) CROSS JOIN (VALUES \(lengths)) AS p(precision) GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
      """
  }
}

extension PostgresStore {
  public func countedClusters(
    owner: UserID, precision: Int, span: HistoryCells.Span, periods: Range<Int64>,
    ranges: [(lower: String, upper: String)]
  ) async throws -> [HistoryCluster] {
    guard HistoryCells.precisions.contains(precision), !ranges.isEmpty, !periods.isEmpty else { return [] }
    let (table, column) = (span.table, span.column)
    return try await rowsThatMayLag(
      """
      SELECT c.cell, sum(c.fixes)::bigint AS n, sum(c.latitude_sum), sum(c.longitude_sum)
      FROM unnest(\(ranges.map(\.lower))::text[], \(ranges.map(\.upper))::text[]) AS r(lower, upper)
      JOIN \(unescaped: table) c ON c.user_id = \(owner.rawValue) AND c.precision = \(precision)
        AND c.cell >= r.lower AND c.cell < r.upper
      WHERE c.\(unescaped: column) >= \(periods.lowerBound) AND c.\(unescaped: column) < \(periods.upperBound)
      GROUP BY c.cell HAVING sum(c.fixes) > 0 ORDER BY n DESC, c.cell
      """
    ).map { row in
      let (cell, count, latitudes, longitudes) = try row.decode((String, Int64, Double, Double).self)
      return HistoryCluster(
        geohash: cell, count: Int(count), latitude: latitudes / Double(count), longitude: longitudes / Double(count))
    }
  }
}
