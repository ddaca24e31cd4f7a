import Foundation
import Logging
import MeridianStore
import PersistenceKit
import PostgresNIO

extension PostgresStore: OperationsStore {
  // MARK: Retention

  /// How long a retention step waits for a lock before it gives up and tries again (dropping a partition needs the
  /// parent table for a moment; a long query on `fixes` must not make every request queue behind the drop).
  static let retentionLockTimeout = "1s"
  /// How often a retention step that could not get its lock (or was chosen as a deadlock victim) is tried.
  static let retentionAttempts = 10

  /// After a history import, the months of `fixes` it stored into (one `ANALYZE` each, so each has the statement
  /// deadline) and the history cells: autovacuum would analyze them within a minute or so, and until then a month
  /// filled from empty has no statistics, and a person's fixes near a point were read in full through the time
  /// index instead of the spatial one.
  public func refreshPlannerStatistics(after load: BulkLoad) async throws {
    switch load {
    case .places: try await execute("ANALYZE places, venues, place_closure")
    case .gazetteer: try await execute("ANALYZE geo_places, geo_areas")
    case .history(let days):
      let partitions = Set(
        try await rows(
          """
          SELECT c.relname::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
          WHERE i.inhparent = 'fixes'::regclass
          """
        ).map { try $0.decode(String.self) })
      for month in FixPartitions.Month.of(days: days).sorted() where partitions.contains(month.name) {
        try await execute(PostgresQuery(unsafeSQL: "ANALYZE \"\(month.name)\""))
      }
      try await execute("ANALYZE history_cells, history_cell_days")
    }
  }

  public func retentionPreview(olderThan cutoff: Int64) async throws -> RetentionReport {
    try await client.withConnection { connection in
      var report = RetentionReport(
        dryRun: true, cutoff: cutoff, deleted: 0, batches: 0, users: 0, oldest: nil, newest: nil)
      for try await (deleted, users, oldest, newest) in try await connection.query(
        """
        SELECT COUNT(*), COUNT(DISTINCT user_id), MIN(timestamp), MAX(timestamp) FROM fixes
        WHERE timestamp < \(cutoff)
        """, logger: self.logger
      ).decode((Int, Int, Int64?, Int64?).self) {
        report.deleted = deleted
        report.users = users
        report.oldest = oldest
        report.newest = newest
      }
      return report
    }
  }

  /// Retention by partition: a monthly partition of `fixes` that lies wholly before `cutoff` is dropped in one short
  /// transaction (its rows counted per user first, under a `SHARE` lock that keeps writers out of that month only);
  /// a partition that straddles the cutoff is trimmed in batches of `batchSize` rows, each batch one short `DELETE`
  /// by `ctid` of rows read from one sequential scan. The report counts what both ways deleted; `batches` counts
  /// their write transactions (one per dropped partition, one per batch).
  public func applyRetention(olderThan cutoff: Int64, batchSize: Int, progress: @Sendable (Int) -> Void)
    async throws -> RetentionReport
  {
    var report = RetentionReport(
      dryRun: false, cutoff: cutoff, deleted: 0, batches: 0, users: 0, oldest: nil, newest: nil)
    var users = Set<String>()
    func add(user: String, rows: Int, oldest: Int64, newest: Int64) {
      users.insert(user)
      report.deleted += rows
      report.oldest = min(report.oldest ?? oldest, oldest)
      report.newest = max(report.newest ?? newest, newest)
    }
    let limit = max(1, batchSize)
    // A month can come back (an import of old fixes creates its partition again) and a row can move while a month is
    // trimmed (an update gives it a new ctid): another pass drops the one and trims that month again; a month whose
    // trim deleted every row it read is not scanned twice.
    var trimmed = Set<String>()
    while true {
      let partitions = try await client.withConnection { connection in
        try await Self.fixPartitions(connection, logger: self.logger)
      }
      var dropped = 0
      for partition in partitions where partition.isWhollyBefore(cutoff) {
        let rows = try await retryingLocks { try await self.drop(partition) }
        for row in rows { add(user: row.user, rows: row.rows, oldest: row.oldest, newest: row.newest) }
        report.batches += 1
        dropped += 1
        progress(report.deleted)
        await Task.yield()
      }
      let straddling = partitions.filter { $0.straddles(cutoff) }
      for partition in straddling where !trimmed.contains(partition.name) {
        let complete = try await trim(partition, before: cutoff, batchSize: limit) { batch in
          for (user, timestamp) in batch { add(user: user, rows: 1, oldest: timestamp, newest: timestamp) }
          report.batches += 1
          progress(report.deleted)
        }
        if complete { trimmed.insert(partition.name) }
      }
      if dropped == 0, straddling.allSatisfy({ trimmed.contains($0.name) }) { break }
    }
    report.users = users.count
    return report
  }

  /// A partition of `fixes` and its range of timestamps (`lower..<upper`; nil is `MINVALUE`/`MAXVALUE`, and both
  /// are nil for a default partition).
  struct FixPartition: Sendable, Hashable {
    var name: String
    var lower: Int64?
    var upper: Int64?
    var isDefault: Bool

    /// Whether every timestamp the partition can hold is before `cutoff`.
    func isWhollyBefore(_ cutoff: Int64) -> Bool {
      guard !isDefault, let upper else { return false }
      return upper <= cutoff
    }

    /// Whether the partition can hold timestamps on both sides of `cutoff` (a default partition always can).
    func straddles(_ cutoff: Int64) -> Bool {
      if isDefault { return true }
      return (lower.map { $0 < cutoff } ?? true) && !isWhollyBefore(cutoff)
    }

    /// Reads `FOR VALUES FROM ('1598918400000') TO ('1601510400000')` (or `MINVALUE`, `MAXVALUE`, `DEFAULT`).
    init?(name: String, bound: String) {
      self.name = name
      if bound == "DEFAULT" {
        (lower, upper, isDefault) = (nil, nil, true)
        return
      }
      func value(after keyword: String) -> Int64?? {
        guard let start = bound.range(of: keyword + " (") else { return nil }
        let rest = bound[start.upperBound...]
        guard let end = rest.firstIndex(of: ")") else { return nil }
        let text = rest[..<end].trimmingCharacters(in: CharacterSet(charactersIn: "'"))
        if text == "MINVALUE" || text == "MAXVALUE" { return .some(nil) }
        guard let number = Int64(text) else { return nil }
        return .some(number)
      }
      guard let lower = value(after: "FROM"), let upper = value(after: "TO") else { return nil }
      (self.lower, self.upper, isDefault) = (lower, upper, false)
    }
  }

  /// The partitions of `fixes`, oldest first (by lower bound; a default partition last).
  static func fixPartitions(_ connection: PostgresConnection, logger: Logger) async throws -> [FixPartition] {
    var partitions: [FixPartition] = []
    for try await (name, bound) in try await connection.query(
      """
      SELECT c.relname::text, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = to_regclass('fixes')
      """, logger: logger
    ).decode((String, String).self) {
      guard let partition = FixPartition(name: name, bound: bound) else {
        throw PostgresRetentionError.unreadablePartitionBound(partition: name, bound: bound)
      }
      partitions.append(partition)
    }
    return partitions.sorted {
      ($0.isDefault ? 1 : 0, $0.lower ?? .min, $0.name) < ($1.isDefault ? 1 : 0, $1.lower ?? .min, $1.name)
    }
  }

  /// What one user had in a dropped partition.
  struct DroppedRows: Sendable {
    var user: String
    var rows: Int
    var oldest: Int64
    var newest: Int64
  }

  /// Drops a partition wholly before the cutoff, counting its rows per user under a `SHARE` lock first (nothing can
  /// be written to it between the count and the drop).
  private func drop(_ partition: FixPartition) async throws -> [DroppedRows] {
    let name = PostgresSchema.quoted(partition.name)
    return try await transaction { connection in
      try await connection.query(
        PostgresQuery(unsafeSQL: "SET LOCAL lock_timeout = '\(Self.retentionLockTimeout)'"), logger: self.logger)
      try await connection.query(PostgresQuery(unsafeSQL: "LOCK TABLE \(name) IN SHARE MODE"), logger: self.logger)
      var dropped: [DroppedRows] = []
      for try await (user, rows, oldest, newest) in try await connection.query(
        PostgresQuery(
          unsafeSQL: "SELECT user_id, COUNT(*), MIN(timestamp), MAX(timestamp) FROM \(name) GROUP BY user_id"),
        logger: self.logger
      ).decode((String, Int, Int64, Int64).self) {
        dropped.append(DroppedRows(user: user, rows: rows, oldest: oldest, newest: newest))
      }
      try await connection.query(PostgresQuery(unsafeSQL: "DROP TABLE \(name)"), logger: self.logger)
      // A dropped table fires no delete trigger: its cell counts go with it (a UTC month is whole hours and days).
      for span in HistoryCells.Span.allCases {
        let (table, column) = (span.table, span.column)
        let length = span.milliseconds
        let periods = (partition.lower ?? 0) / length..<(partition.upper ?? Int64.max) / length
        try await connection.query(
          """
          DELETE FROM \(unescaped: table)
          WHERE \(unescaped: column) >= \(periods.lowerBound) AND \(unescaped: column) < \(periods.upperBound)
          """, logger: self.logger)
      }
      return dropped
    }
  }

  /// Deletes the rows before `cutoff` of one partition in batches: one sequential scan (its own snapshot, on one
  /// connection) reads their `ctid`s, and each `batchSize` of them are deleted on another connection in their own
  /// short transaction. `deleted` gets each batch's deleted rows (user, timestamp).
  /// - Returns: Whether every row read was deleted (else some moved meanwhile and the month needs another pass).
  private func trim(
    _ partition: FixPartition, before cutoff: Int64, batchSize: Int,
    deleted: ([(String, Int64)]) async throws -> Void
  ) async throws -> Bool {
    let name = PostgresSchema.quoted(partition.name)
    var pending: [String] = []
    var complete = true
    func flush() async throws {
      guard !pending.isEmpty else { return }
      let ctids = pending
      pending.removeAll(keepingCapacity: true)
      var bindings = Self.bindings(ctids, cutoff)
      bindings.append(name)
      bindings.append(partition.lower ?? Int64.min)
      let binds = bindings
      let rows = try await retryingLocks {
        try await self.client.withConnection { connection in
          var rows: [(String, Int64)] = []
          // Through the parent table (pruned to the partition), so that its statement triggers count the fixes out
          // of `history_cells` (a statement on a partition fires none of the parent's).
          for try await row in try await connection.query(
            PostgresQuery(
              unsafeSQL: """
                DELETE FROM fixes WHERE tableoid = $3::regclass AND ctid = ANY($1::text[]::tid[])
                  AND timestamp >= $4 AND timestamp < $2
                RETURNING user_id, timestamp
                """, binds: binds), logger: self.logger
          ).decode((String, Int64).self) {
            rows.append(row)
          }
          return rows
        }
      }
      if rows.count < ctids.count { complete = false }
      if !rows.isEmpty { try await deleted(rows) }
    }
    // The sequence holds its connection until the scan ends; the deletes take others from the pool.
    for try await ctid in try await client.query(
      PostgresQuery(unsafeSQL: "SELECT ctid::text FROM \(name) WHERE timestamp < $1", binds: Self.bindings(cutoff)),
      logger: logger
    ).decode(String.self) {
      pending.append(ctid)
      if pending.count >= batchSize { try await flush() }
    }
    try await flush()
    return complete
  }

  /// Runs `step`, again after a pause when PostgreSQL refused a lock in time (`55P03`) or chose it as a deadlock's
  /// victim (`40P01`), up to ``retentionAttempts`` times.
  private func retryingLocks<T>(_ step: () async throws -> T) async throws -> T {
    var attempt = 1
    while true {
      do {
        return try await step()
      } catch  where attempt < Self.retentionAttempts && ["55P03", "40P01"].contains(Self.sqlState(error) ?? "") {
        attempt += 1
        try await Task.sleep(for: .milliseconds(100 * attempt))
      }
    }
  }

  /// Bindings of a text array and an integer.
  static func bindings(_ texts: [String], _ value: Int64) -> PostgresBindings {
    var binds = PostgresBindings()
    binds.append(texts)
    binds.append(value)
    return binds
  }

  /// Bindings of one integer.
  static func bindings(_ value: Int64) -> PostgresBindings {
    var binds = PostgresBindings()
    binds.append(value)
    return binds
  }

  // MARK: Languages

  public func dataLanguages() async throws -> [String] {
    try await client.withConnection { connection in try await Self.dataLanguages(connection, logger: self.logger) }
  }

  public func dataLanguageCompleteness() async throws -> [DataLanguageCompleteness] {
    try await client.withConnection { connection in
      let registry = PostgresSchema.localization
      let languages = try await Self.dataLanguages(connection, logger: self.logger)
      let columns = try await Self.localizedColumns(connection, logger: self.logger)
      var result: [DataLanguageCompleteness] = []
      for language in languages {
        var fields: [DataLanguageCompleteness.Field] = []
        for table in registry.tables {
          guard let existing = columns[table] else { continue }
          for field in registry.fieldsByTable[table] ?? [] {
            let column = "\(field)_\(language)"
            let translated =
              existing.contains(column)
              ? "COUNT(*) FILTER (WHERE COALESCE(\(PostgresSchema.quoted(column)), '') <> '')" : "0"
            var counts: (Int, Int) = (0, 0)
            for try await row in try await connection.query(
              PostgresQuery(
                unsafeSQL: "SELECT \(translated)::bigint, COUNT(*) FROM \(PostgresSchema.quoted(table))"),
              logger: self.logger
            ).decode((Int, Int).self) {
              counts = row
            }
            fields.append(.init(table: table, field: field, translated: counts.0, total: counts.1))
          }
        }
        result.append(DataLanguageCompleteness(language: language, fields: fields))
      }
      return result
    }
  }

  /// Adds the language's columns and its row in one transaction, under an advisory lock so that two operators (or
  /// nodes) adding languages at once take turns; a language that is there already changes nothing.
  public func addDataLanguage(_ code: String) async throws -> Bool {
    let language = try LocalizationRegistry.normalizedLanguage(code)
    let statements = try PostgresSchema.addLanguageStatements(language, ifExists: true)
    return try await transaction { connection in
      try await connection.query(
        "SELECT pg_advisory_xact_lock(hashtext(\(PostgresSchema.languagesTable)))", logger: self.logger)
      guard try await !Self.dataLanguages(connection, logger: self.logger).contains(language) else { return false }
      for statement in statements {
        try await connection.query(PostgresQuery(unsafeSQL: statement), logger: self.logger)
      }
      return true
    }
  }

  public func missingTranslations() async throws -> [MissingTranslation] {
    try await client.withConnection { connection in
      let registry = PostgresSchema.localization
      let columns = try await Self.localizedColumns(connection, logger: self.logger)
      var missing: [MissingTranslation] = []
      for language in try await Self.dataLanguages(connection, logger: self.logger) {
        for table in registry.tables {
          guard let existing = columns[table] else { continue }
          for field in registry.fieldsByTable[table] ?? [] {
            let column = "\(field)_\(language)"
            guard existing.contains(column) else { continue }
            // The base column holds English, else any translation: non-empty means the value exists.
            let condition = """
              COALESCE(\(PostgresSchema.quoted(field)), '') <> '' AND COALESCE(\(PostgresSchema.quoted(column)), '') = ''
              """
            let name = PostgresSchema.quoted(table)
            var rows = 0
            for try await count in try await connection.query(
              PostgresQuery(unsafeSQL: "SELECT COUNT(*) FROM \(name) WHERE \(condition)"), logger: self.logger
            ).decode(Int.self) {
              rows = count
            }
            guard rows > 0 else { continue }
            var examples: [String] = []
            if existing.contains("id") {
              for try await id in try await connection.query(
                PostgresQuery(
                  unsafeSQL: "SELECT id FROM \(name) WHERE \(condition) ORDER BY id COLLATE \"C\" LIMIT 10"),
                logger: self.logger
              ).decode(String.self) {
                examples.append(id)
              }
            }
            missing.append(
              MissingTranslation(language: language, table: table, field: field, rows: rows, examples: examples))
          }
        }
      }
      return missing
    }
  }

  /// Counts each id of `ids` that is a stored venue (an id given twice counts twice, as on SQLite).
  public func existingVenueCount(ids: [String]) async throws -> Int {
    guard !ids.isEmpty else { return 0 }
    var count = 0
    for try await value in try await client.query(
      "SELECT COUNT(*) FROM unnest(\(ids)::text[]) AS given(id) JOIN venues v ON v.id = given.id", logger: logger
    ).decode(Int.self) {
      count = value
    }
    return count
  }

  /// The columns of the registered localized tables that exist, by table (a table that doesn't exist is absent).
  static func localizedColumns(_ connection: PostgresConnection, logger: Logger) async throws -> [String: Set<String>] {
    var columns: [String: Set<String>] = [:]
    for try await (table, column) in try await connection.query(
      """
      SELECT table_name::text, column_name::text FROM information_schema.columns
      WHERE table_schema = current_schema() AND table_name = ANY(\(PostgresSchema.localization.tables)::text[])
      """, logger: logger
    ).decode((String, String).self) {
      columns[table, default: []].insert(column)
    }
    return columns
  }

  // MARK: String catalog

  public func replaceStringCatalog(
    _ rows: [StringCatalogRow], document: Data, sourceLanguage: String, fileName: String, now: Int64
  ) async throws {
    try await transaction { connection in
      try await connection.query("DELETE FROM string_catalog", logger: self.logger)
      try await connection.query("DELETE FROM string_catalog_imports", logger: self.logger)
      try await connection.query(
        """
        INSERT INTO string_catalog_imports(id, source_language, file_name, document, imported_at)
        VALUES (1, \(sourceLanguage), \(fileName), \(String(decoding: document, as: UTF8.self)), \(now))
        """, logger: self.logger)
      guard !rows.isEmpty else { return }
      // Arrays bind no NULL elements here, so a value's absence travels as a flag beside it.
      try await connection.query(
        """
        INSERT INTO string_catalog(key, language, value, value_json)
        SELECT key, language, CASE WHEN has_value THEN value END, value_json
        FROM unnest(\(rows.map(\.key))::text[], \(rows.map(\.language))::text[], \(rows.map { $0.value ?? "" })::text[],
          \(rows.map { $0.value != nil })::boolean[], \(rows.map(\.valueJSON))::text[])
          AS given(key, language, value, has_value, value_json)
        """, logger: self.logger)
    }
  }

  public func storedStringCatalog() async throws -> StoredStringCatalogDocument? {
    for try await (fileName, document, importedAt) in try await client.query(
      "SELECT file_name, document, imported_at FROM string_catalog_imports WHERE id = 1", logger: logger
    ).decode((String, String, Int64).self) {
      return StoredStringCatalogDocument(document: Data(document.utf8), fileName: fileName, importedAt: importedAt)
    }
    return nil
  }
}

/// Why retention could not run.
public enum PostgresRetentionError: Error, CustomStringConvertible {
  /// A partition of `fixes` has a bound that is not a range of integer timestamps.
  case unreadablePartitionBound(partition: String, bound: String)

  /// What was wrong and what to do.
  public var description: String {
    switch self {
    case .unreadablePartitionBound(let partition, let bound):
      "Partition '\(partition)' of fixes has the bound '\(bound)', not a range of millisecond timestamps; "
        + "detach it (ALTER TABLE fixes DETACH PARTITION …) and run retention again."
    }
  }
}
