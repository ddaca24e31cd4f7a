import DomainKit
import Foundation
import GRDB
import GeoKit
import PersistenceKit

/// Fixes of the local history grouped by geohash cell: how many, and where their centre is.
public struct LocalHistoryCluster: Sendable, Hashable, Codable {
  /// The geohash cell (2…6 characters).
  public var cell: String
  /// Fixes in the cell.
  public var count: Int
  /// Mean latitude of the cell's fixes.
  public var latitude: Double
  /// Mean longitude of the cell's fixes (a geohash cell never crosses the antimeridian, so the mean is fair).
  public var longitude: Double
  /// The oldest fix's time, UTC ms.
  public var first: Int64
  /// The newest fix's time, UTC ms.
  public var last: Int64

  /// A cluster.
  public init(cell: String, count: Int, latitude: Double, longitude: Double, first: Int64, last: Int64) {
    self.cell = cell
    self.count = count
    self.latitude = latitude
    self.longitude = longitude
    self.first = first
    self.last = last
  }
}

/// A local history query that can't be answered.
public enum LocalHistoryError: Error, Hashable, CustomStringConvertible {
  /// Clusters group by geohash cells of 2…6 characters only.
  case precision(Int)

  /// What was wrong.
  public var description: String {
    switch self {
    case .precision(let precision): "the cluster precision must be 2…6, not \(precision)"
    }
  }
}

/// What merging fixes into the history did.
public struct MergeResult: Sendable, Hashable, Codable {
  /// Fixes newly stored.
  public var new = 0
  /// Fixes skipped because the history already holds one at that timestamp.
  public var duplicates = 0
  /// Of the new fixes, those queued for upload.
  public var queued = 0

  /// A result.
  public init(new: Int = 0, duplicates: Int = 0, queued: Int = 0) {
    self.new = new
    self.duplicates = duplicates
    self.queued = queued
  }

  /// Both counts added up.
  public static func + (lhs: MergeResult, rhs: MergeResult) -> MergeResult {
    MergeResult(
      new: lhs.new + rhs.new, duplicates: lhs.duplicates + rhs.duplicates, queued: lhs.queued + rhs.queued)
  }
}

/// The history queries behind `meridian-tracker history`: filtered listing, clusters by geohash cell, fixes in
/// time order for visits and export, and merging imported fixes without duplicates.
extension TrackerStore {
  /// The indexes the history queries use: `kind` filters and the `GROUP BY` of clusters at precisions 2…5 (6 has
  /// one since the first migration; `timestamp` is unique, hence indexed).
  static var historyIndexesMigration: Migration {
    .sql(
      "2026-11-24 history query indexes",
      """
      CREATE INDEX fixes_kind_timestamp ON fixes(kind, timestamp);
      CREATE INDEX fixes_geohash2 ON fixes(geohash2);
      CREATE INDEX fixes_geohash3 ON fixes(geohash3);
      CREATE INDEX fixes_geohash4 ON fixes(geohash4);
      CREATE INDEX fixes_geohash5 ON fixes(geohash5);
      """)
  }

  /// The `WHERE` clause and its arguments for `filter` (the same rule as `HistoryFilter.matches`: fixes without an
  /// accuracy pass the accuracy limit).
  static func whereClause(_ filter: HistoryFilter) -> (sql: String, arguments: StatementArguments) {
    var conditions: [String] = []
    var arguments: StatementArguments = []
    if let start = filter.range.start {
      conditions.append("timestamp >= ?")
      arguments += [start]
    }
    if let end = filter.range.end {
      conditions.append("timestamp < ?")
      arguments += [end]
    }
    if let limit = filter.minimumAccuracy {
      conditions.append("(horizontal_accuracy IS NULL OR horizontal_accuracy <= ?)")
      arguments += [limit]
    }
    if !filter.kinds.isEmpty {
      let kinds = filter.kinds.map(\.rawValue).sorted()
      conditions.append("kind IN (" + kinds.map { _ in "?" }.joined(separator: ", ") + ")")
      for kind in kinds { arguments += [kind] }
    }
    return (conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND "), arguments)
  }

  private static func decode(_ text: String) throws -> LocationFix {
    try JSONDecoder().decode(LocationFix.self, from: Data(text.utf8))
  }

  /// The fixes that pass `filter`, newest first (or oldest first), at most `limit`.
  public func fixes(matching filter: HistoryFilter, newestFirst: Bool = true, limit: Int? = nil) throws
    -> [LocationFix]
  {
    let (clause, arguments) = Self.whereClause(filter)
    var sql = "SELECT fix FROM fixes \(clause) ORDER BY timestamp \(newestFirst ? "DESC" : "ASC")"
    var allArguments = arguments
    if let limit {
      sql += " LIMIT ?"
      allArguments += [max(0, limit)]
    }
    return try database.read { db in
      try String.fetchAll(db, sql: sql, arguments: allArguments).map(Self.decode)
    }
  }

  /// How many fixes pass `filter`.
  public func count(matching filter: HistoryFilter) throws -> Int {
    let (clause, arguments) = Self.whereClause(filter)
    return try database.read { db in
      try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM fixes \(clause)", arguments: arguments) ?? 0
    }
  }

  /// Calls `body` with the fixes that pass `filter` in time order, `pageSize` at a time (keyset pages on the
  /// timestamp, each page its own read), so an export of millions of fixes never holds them all in memory.
  public func forEachPage(
    matching filter: HistoryFilter, pageSize: Int = 5_000, _ body: ([LocationFix]) throws -> Void
  ) throws {
    var after: Int64?
    while true {
      var page = filter
      if let after { page.range.start = max(page.range.start ?? .min, after + 1) }
      let fixes = try self.fixes(matching: page, newestFirst: false, limit: pageSize)
      guard let last = fixes.last else { return }
      try body(fixes)
      if fixes.count < pageSize || last.timestamp == .max { return }
      after = last.timestamp
    }
  }

  /// Fixes that pass `filter` grouped by their geohash cell of `precision` characters (2…6, from the geohash
  /// columns), most populated cell first (ties by cell).
  public func clusters(precision: Int, matching filter: HistoryFilter) throws -> [LocalHistoryCluster] {
    guard GeohashPrefixes.precisions.contains(precision) else {
      throw LocalHistoryError.precision(precision)
    }
    let column = "geohash\(precision)"  // from the validated range only, never from text
    let (clause, arguments) = Self.whereClause(filter)
    let sql = """
      SELECT \(column) AS cell, COUNT(*) AS count, AVG(latitude) AS latitude, AVG(longitude) AS longitude,
        MIN(timestamp) AS first, MAX(timestamp) AS last
      FROM fixes \(clause) GROUP BY \(column) ORDER BY count DESC, cell
      """
    return try database.read { db in
      try Row.fetchAll(db, sql: sql, arguments: arguments).map { row in
        LocalHistoryCluster(
          cell: row["cell"], count: row["count"], latitude: row["latitude"], longitude: row["longitude"],
          first: row["first"], last: row["last"])
      }
    }
  }

  /// The visits (DomainKit `VisitDetector`) among the fixes that pass `filter`.
  public func visits(matching filter: HistoryFilter, detector: VisitDetector = VisitDetector()) throws -> [Visit] {
    detector.visits(in: try fixes(matching: filter, newestFirst: false))
  }

  /// Merges `fixes` into the history in one transaction: a fix whose timestamp the history already holds (or that
  /// came earlier in `fixes`) is a duplicate and changes nothing; new fixes are queued for upload only when
  /// `upload` is true.
  @discardableResult
  public func merge(_ fixes: [LocationFix], upload: Bool, now: Int64) throws -> MergeResult {
    guard !fixes.isEmpty else { return MergeResult() }
    let encoder = JSONEncoder()
    let rows = try fixes.map { fix in (fix, String(decoding: try encoder.encode(fix), as: UTF8.self)) }
    return try database.write { db in
      var result = MergeResult()
      let insert = try db.makeStatement(
        sql: """
          INSERT OR IGNORE INTO fixes(timestamp, latitude, longitude, horizontal_accuracy, kind,
            geohash2, geohash3, geohash4, geohash5, geohash6, fix, recorded_at)
          VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
          """)
      let queue = try db.makeStatement(sql: "INSERT INTO outbox(fix_id) VALUES (?)")
      for (fix, json) in rows {
        let cells = fix.geohashes.all
        try insert.execute(arguments: [
          fix.timestamp, fix.latitude, fix.longitude, fix.horizontalAccuracy, fix.kind.rawValue,
          cells[0], cells[1], cells[2], cells[3], cells[4], json, now,
        ])
        guard db.changesCount == 1 else {
          result.duplicates += 1
          continue
        }
        result.new += 1
        if upload {
          try queue.execute(arguments: [db.lastInsertedRowID])
          result.queued += 1
        }
      }
      return result
    }
  }
}
