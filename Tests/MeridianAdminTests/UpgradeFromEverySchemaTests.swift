import Foundation
import GRDB
import Logging
import MeridianStorePostgres
import MeridianStoreSQLite
import MeridianStoreTesting
import PersistenceKit
import PersistenceKitPostgres
import PostgresNIO
import Testing

/// Upgrades from every schema that was ever on `main` (issue 42 §2): for every migration of an engine, a database is
/// migrated up to it (as the release that ended there left it), every table that exists then gets a row made from the
/// schema itself (columns, types, CHECK lists, foreign keys — parents first), then today's store opens it (migrating
/// to the end, as a deployed server does), every seeded row must still be there, and the built `meridian-admin db
/// check` must find the database clean. A table that a migration fills itself (the registry of languages) keeps what
/// the migration put there. That a released migration can't be edited is the ledger's checksum:
/// `anEditedReleasedMigrationIsRefusedOnSQLite` here, `AdminPostgresTests.migrateStatusPlanApplyAndCheck` on
/// PostgreSQL, `MigrationTests.checksumDriftIsATypedErrorAndVisibleInStatus` in PersistenceKit.
@Suite(.serialized) struct UpgradeFromEverySchemaTests {
  /// Four stopping points at a time (each its own sandbox; a step mostly waits on its commits' fsyncs), the log in
  /// migration order.
  @Test func everySQLiteSchemaUpgradesWithItsData() async throws {
    let started = ContinuousClock.now
    let migrations = SQLiteSchema.migrator.migrations.map(\.identifier)
    let results = try await Self.inOrder(migrations.count, atATime: 4) { index in
      try await Self.upgradeSQLite(from: migrations[index])
    }
    for (index, result) in results.enumerated() {
      print("upgrade (sqlite) \(index + 1)/\(migrations.count) \(result.report)")
    }
    let tables = results.reduce(into: Set<String>()) { $0.formUnion($1.tables) }
    print(
      "upgrade (sqlite): \(migrations.count) stopping points, \(tables.count) tables seeded, "
        + "\(ContinuousClock.now - started)")
  }

  /// Builds a SQLite database as it was after `stop`, seeds it, upgrades it with today's store, checks the rows and
  /// `meridian-admin db check`; returns what it did and the tables it seeded.
  static func upgradeSQLite(from stop: String) async throws -> (report: String, tables: Set<String>) {
    let sandbox = try AdminSandbox()
    let database = try SQLiteDatabase.open(at: sandbox.database)
    try database.migrate(SQLiteSchema.migrator, upTo: stop)
    let schema = try await database.read { db in try SQLiteIntrospection.schema(db) }
    let seeded = try await SchemaSeeder.seed(schema, dialect: .sqlite) { sql in
      try await database.write { db in try db.execute(sql: sql) }
    } count: { table in
      try await database.read { db in
        try Int.fetchOne(db, sql: "SELECT count(*) FROM \(SchemaSeeder.quoted(table))") ?? 0
      }
    }
    try database.close()
    #expect(seeded.failures.isEmpty, "before '\(stop)': tables that took no row: \(seeded.failures)")

    _ = try SQLiteStore.open(at: sandbox.database)  // migrates to the end, as the server does when it starts

    let after = try SQLiteDatabase.open(at: sandbox.database)
    let lost = try await after.read { db in
      try SchemaSeeder.missing(seeded, tables: Set(try SQLiteIntrospection.tables(db))) { table in
        try Int.fetchOne(db, sql: "SELECT count(*) FROM \(SchemaSeeder.quoted(table))") ?? 0
      }
    }
    try after.close()
    #expect(lost.isEmpty, "upgrading from '\(stop)' lost rows: \(lost)")
    let check = try await sandbox.admin(["db", "check"])
    #expect(check.status == 0 && check.stdout.hasSuffix("OK\n"), "upgraded from '\(stop)': \(check)")
    let rows = seeded.counts.values.reduce(0, +)
    return (
      "from '\(stop)': \(seeded.counts.count) tables, \(rows) rows seeded and kept, "
        + "db check \(check.status == 0 ? "OK" : "FAILED")",
      Set(seeded.counts.keys)
    )
  }

  /// `work(0..<count)`, at most `width` at a time; the results in index order.
  static func inOrder<Result: Sendable>(
    _ count: Int, atATime width: Int, _ work: @escaping @Sendable (Int) async throws -> Result
  ) async throws -> [Result] {
    var results: [Int: Result] = [:]
    try await withThrowingTaskGroup(of: (Int, Result).self) { group in
      var next = 0
      func start() {
        guard next < count else { return }
        let index = next
        next += 1
        group.addTask { (index, try await work(index)) }
      }
      for _ in 0..<width { start() }
      while let (index, result) = try await group.next() {
        results[index] = result
        start()
      }
    }
    return (0..<count).map { results[$0]! }
  }

  /// A released migration edited afterwards (its recorded checksum no longer matches) stops today's store and fails
  /// `db check`, rather than running a different upgrade than the one a database went through. (PostgreSQL:
  /// `AdminPostgresTests.migrateStatusPlanApplyAndCheck`.)
  @Test func anEditedReleasedMigrationIsRefusedOnSQLite() async throws {
    let sandbox = try AdminSandbox()
    _ = try sandbox.store()
    let edited = SQLiteSchema.migrator.migrations[1].identifier
    let database = try SQLiteDatabase.open(at: sandbox.database)
    try await database.write { db in
      try db.execute(
        sql: "UPDATE \(SQLiteSchema.migrator.ledgerTable) SET checksum = 'sha256:edited' WHERE identifier = ?",
        arguments: [edited])
    }
    try database.close()
    #expect {
      _ = try SQLiteStore.open(at: sandbox.database)
    } throws: { error in
      if case MigrationError.checksumMismatch(let identifier, _, _) = error { return identifier == edited }
      return false
    }
    let check = try await sandbox.admin(["db", "check"])
    #expect(check.status == 1 && check.stdout.contains("not up to date: \(edited)"), "\(check)")
  }

  /// PostgreSQL, three stopping points at a time (each its own database from `PostgresTestDatabase`, within its
  /// allowance), the log in migration order.
  ///
  /// The databases are made along one chain: a database migrated one migration further for each stopping point, of
  /// which each stopping point's database is a copy (`CREATE DATABASE … TEMPLATE`). So each migration runs once, not
  /// once for every later stopping point (41 stopping points migrated from empty ran 861 migrations, and half the
  /// test's time).
  @Test func everyPostgresSchemaUpgradesWithItsData() async throws {
    let started = ContinuousClock.now
    let migrations = PostgresSchema.migrator.migrations.map(\.identifier)
    let sandbox = try AdminSandbox()
    let chain = try await PostgresTestDatabase.create()
    var results: [Int: (String, Set<String>)] = [:]
    do {
      try await withThrowingTaskGroup(of: (Int, (String, Set<String>)).self) { group in
        for (index, stop) in migrations.enumerated() {
          // Three at a time; a slot is free before the copy is made, so a failed stop leaves no copy undropped.
          if index >= 3, let (done, result) = try await group.next() { results[done] = result }
          try await Self.migrate(chain, upTo: stop)
          let copy = try await PostgresTestDatabase.copy(of: chain)
          group.addTask { (index, try await Self.upgradePostgres(from: stop, copy: copy, sandbox: sandbox)) }
        }
        for try await (done, result) in group { results[done] = result }
      }
    } catch {
      await chain.drop()
      throw error
    }
    await chain.drop()
    for index in migrations.indices {
      print("upgrade (postgres) \(index + 1)/\(migrations.count) \(results[index]?.0 ?? "?")")
    }
    let tables = results.values.reduce(into: Set<String>()) { $0.formUnion($1.1) }
    print(
      "upgrade (postgres): \(migrations.count) stopping points, \(tables.count) tables seeded, "
        + "\(ContinuousClock.now - started)")
  }

  /// Migrates `database` up to `stop` (from where it is), with a connection closed afterwards.
  static func migrate(_ database: PostgresTestDatabase, upTo stop: String) async throws {
    let logger = Logger(label: "meridian.tests.upgrade")
    let connection = try await PostgresDatabase.open(
      url: try PostgresURL(database.url), maxConnections: 1, logger: logger)
    do {
      try await PostgresMigrator(PostgresSchema.migrator).migrate(upTo: stop, on: connection)
    } catch {
      await connection.close()
      throw error
    }
    await connection.close()
  }

  /// Seeds `copy` (a database as it was after `stop`), upgrades it with today's store, checks the rows and
  /// `meridian-admin db check`, and drops it; returns what it did and the tables it seeded.
  static func upgradePostgres(from stop: String, copy: PostgresTestDatabase, sandbox: AdminSandbox) async throws
    -> (String, Set<String>)
  {
    let logger = Logger(label: "meridian.tests.upgrade")
    var result = ("", Set<String>())
    do {
      let clock = ContinuousClock.now
      let database = try await PostgresDatabase.open(url: try PostgresURL(copy.url), maxConnections: 1, logger: logger)
      let seeded: SchemaSeeder.Outcome
      do {
        let schema = try await PostgresIntrospection.schema(database, ledger: PostgresSchema.migrator.ledgerTable)
        if schema.contains(where: { $0.name == "fixes" }) {
          // Fixes are partitioned by month; the insert path makes a month's partition before it writes there
          // (FixPartitions in PostgresStore+Ingest), so the seed makes the one its fix falls in.
          try await database.execute(
            """
            CREATE TABLE IF NOT EXISTS "fixes_y2025m11" PARTITION OF fixes
              FOR VALUES FROM (1761955200000) TO (1764547200000)
            """)
        }
        seeded = try await SchemaSeeder.seed(schema, dialect: .postgres) { sql in
          try await database.execute(sql)
        } count: { table in
          try await PostgresIntrospection.count(table, in: database)
        }
      } catch {
        await database.close()
        throw error
      }
      await database.close()
      #expect(seeded.failures.isEmpty, "before '\(stop)': tables that took no row: \(seeded.failures)")

      let seededAt = ContinuousClock.now
      let store = try await PostgresStore.open(url: copy.url, maximumConnections: 2, timeouts: .tests)
      await store.close()
      let upgradedAt = ContinuousClock.now

      let after = try await PostgresDatabase.open(url: try PostgresURL(copy.url), maxConnections: 1, logger: logger)
      do {
        var counts: [String: Int] = [:]
        let tables = try await PostgresIntrospection.tables(after, ledger: PostgresSchema.migrator.ledgerTable)
        for table in seeded.counts.keys where tables.contains(table) {
          counts[table] = try await PostgresIntrospection.count(table, in: after)
        }
        let lost = try SchemaSeeder.missing(seeded, tables: tables) { counts[$0] ?? 0 }
        #expect(lost.isEmpty, "upgrading from '\(stop)' lost rows: \(lost)")
      } catch {
        await after.close()
        throw error
      }
      await after.close()
      let checkedAt = ContinuousClock.now
      let check = try await sandbox.admin(["db", "check"], database: copy.url)
      #expect(check.status == 0 && check.stdout.hasSuffix("OK\n"), "upgraded from '\(stop)': \(check)")
      let rows = seeded.counts.values.reduce(0, +)
      result = (
        "from '\(stop)': \(seeded.counts.count) tables, \(rows) rows seeded and kept, db check "
          + "\(check.status == 0 ? "OK" : "FAILED") (seed \(Self.seconds(seededAt - clock)), upgrade "
          + "\(Self.seconds(upgradedAt - seededAt)), check \(Self.seconds(ContinuousClock.now - checkedAt)))",
        Set(seeded.counts.keys)
      )
    } catch {
      await copy.drop()
      throw error
    }
    await copy.drop()
    return result
  }

  static func seconds(_ duration: Duration) -> String {
    String(format: "%.2f s", Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
  }
}

/// A table as the seeder needs it: its columns in order and its foreign keys.
struct SeedTable {
  struct Column {
    var name: String
    /// The declared type, lowercased (`integer`, `text`, `geography(point,4326)`, …).
    var type: String
    var notNull: Bool
    /// The default's SQL text, if any.
    var defaultSQL: String?
    /// Generated or identity-always: not written.
    var generated: Bool = false
    /// The first value a `CHECK (column IN (…))` allows, as SQL.
    var allowed: String?
  }

  /// One foreign key: these columns refer to those of `parent`.
  struct ForeignKey {
    var columns: [String]
    var parent: String
    var parentColumns: [String]
  }

  var name: String
  var columns: [Column]
  var foreignKeys: [ForeignKey]
}

/// Fills every table of a schema with a row made from its declarations, parents before children.
enum SchemaSeeder {
  enum Dialect { case sqlite, postgres }

  /// What seeding did: the row count of every table seeded, and the tables that took no row, with the reason.
  struct Outcome: Sendable {
    var counts: [String: Int] = [:]
    var failures: [String: String] = [:]
  }

  /// The first capture group of `pattern` in `text`, trimmed.
  static func firstCapture(_ pattern: String, in text: String) -> String? {
    guard let expression = try? NSRegularExpression(pattern: pattern),
      let match = expression.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)),
      let range = Range(match.range(at: 1), in: text)
    else { return nil }
    return text[range].trimmingCharacters(in: .whitespaces)
  }

  static func quoted(_ name: String) -> String { "\"\(name.replacingOccurrences(of: "\"", with: "\"\""))\"" }

  /// The tables in an order where every parent comes before its children (self-references aside).
  static func ordered(_ tables: [SeedTable]) -> [SeedTable] {
    var done = Set<String>()
    var result: [SeedTable] = []
    var remaining = tables.sorted { $0.name < $1.name }
    let names = Set(tables.map(\.name))
    while !remaining.isEmpty {
      let ready = remaining.firstIndex { table in
        table.foreignKeys.allSatisfy {
          $0.parent == table.name || done.contains($0.parent) || !names.contains($0.parent)
        }
      }
      let table = remaining.remove(at: ready ?? 0)
      done.insert(table.name)
      result.append(table)
    }
    return result
  }

  /// A value for `column` of `table` as SQL: its parent's key, the first value its CHECK allows, or one of its type.
  static func value(_ column: SeedTable.Column, of table: SeedTable, dialect: Dialect) -> String {
    if let key = table.foreignKeys.first(where: { $0.columns.contains(column.name) }) {
      guard key.parent != table.name, let index = key.columns.firstIndex(of: column.name) else { return "NULL" }
      let order = key.parentColumns.map(quoted).joined(separator: ", ")
      return "(SELECT \(quoted(key.parentColumns[index])) FROM \(quoted(key.parent)) ORDER BY \(order) LIMIT 1)"
    }
    if let allowed = column.allowed { return allowed }
    let name = column.name
    let type = column.type
    if name.contains("latitude") { return "50.45" }
    if name.contains("longitude") { return "30.52" }
    if name.hasPrefix("geohash"), let length = Int(name.dropFirst("geohash".count)) {
      return "'\("u8vxn8".prefix(length))'"
    }
    if name == "geokey" { return "3458764513820540928" }
    if type.hasPrefix("geography") || type.hasPrefix("geometry") {
      return type.contains("multipolygon")
        ? "ST_GeomFromText('MULTIPOLYGON(((30.5 50.4, 30.6 50.4, 30.6 50.5, 30.5 50.4)))', 4326)"
        : "ST_GeogFromText('SRID=4326;POINT(30.52 50.45)')"
    }
    if type == "tsvector" { return "to_tsvector('simple', 'seed')" }
    if type.hasSuffix("[]") { return "'{}'" }
    if type == "jsonb" || type == "json" { return column.defaultSQL ?? "'{}'" }
    if type == "boolean" { return "true" }
    if type.hasPrefix("timestamp") { return "now()" }
    if type.contains("blob") || type == "bytea" { return dialect == .sqlite ? "X'01'" : "'\\x01'::bytea" }
    if type.contains("int") || type == "bigint" {
      let time = name.hasSuffix("_at") || name.hasSuffix("_from") || name.hasSuffix("_until") || name == "timestamp"
      return time ? "1764000000000" : "1"
    }
    if type.contains("real") || type.contains("double") || type.contains("numeric") || type.contains("float") {
      return "1.5"
    }
    // Text: a JSON column's default is the form it takes ('[]', '{}'); otherwise something recognisable.
    if let literal = column.defaultSQL, literal.hasPrefix("'[") || literal.hasPrefix("'{") {
      return literal.components(separatedBy: "::").first ?? literal
    }
    if name == "language" || name.hasSuffix("_language") { return "'en'" }
    if name.contains("email") { return "'seed@example.com'" }
    if name.contains("phone") { return "'+380501234567'" }
    if name == "time_zone" { return "'Europe/Kyiv'" }
    return "'seed-\(table.name)-\(name)'"
  }

  /// The INSERTs to try for `table`, richest first: every column; then without those that have a default; then
  /// only what must be given (NOT NULL without a default, and foreign keys).
  static func inserts(_ table: SeedTable, dialect: Dialect) -> [String] {
    let writable = table.columns.filter { !$0.generated }
    let keyColumns = Set(table.foreignKeys.flatMap(\.columns))
    let attempts: [[SeedTable.Column]] = [
      writable,
      writable.filter { $0.defaultSQL == nil || keyColumns.contains($0.name) },
      writable.filter { ($0.notNull && $0.defaultSQL == nil) || keyColumns.contains($0.name) },
    ]
    return attempts.map { columns in
      guard !columns.isEmpty else { return "INSERT INTO \(quoted(table.name)) DEFAULT VALUES" }
      let names = columns.map { quoted($0.name) }.joined(separator: ", ")
      let values = columns.map { value($0, of: table, dialect: dialect) }.joined(separator: ", ")
      return "INSERT INTO \(quoted(table.name))(\(names)) VALUES (\(values))"
    }
  }

  /// Seeds every table, each INSERT its own statement. A table that holds rows already was filled by its migration
  /// (e.g. the registry of languages) and is left as it is.
  static func seed(
    _ tables: [SeedTable], dialect: Dialect, execute: (String) async throws -> Void,
    count: (String) async throws -> Int
  ) async throws -> Outcome {
    var outcome = Outcome()
    for table in ordered(tables) {
      var lastError = ""
      let before = try await count(table.name)
      for sql in inserts(table, dialect: dialect) where before == 0 {
        do {
          try await execute(sql)
          lastError = ""
          break
        } catch {
          lastError = String(reflecting: error)
        }
      }
      let rows = try await count(table.name)
      if rows > 0 { outcome.counts[table.name] = rows } else { outcome.failures[table.name] = lastError }
    }
    return outcome
  }

  /// The seeded tables that are gone or hold fewer rows than were seeded.
  static func missing(_ seeded: Outcome, tables: Set<String>, count: (String) throws -> Int) throws -> [String] {
    var lost: [String] = []
    for (table, rows) in seeded.counts.sorted(by: { $0.key < $1.key }) {
      guard tables.contains(table) else {
        lost.append("\(table): gone")
        continue
      }
      let now = try count(table)
      if now < rows { lost.append("\(table): \(rows) → \(now)") }
    }
    return lost
  }

}

/// The tables of a SQLite database as the seeder needs them.
enum SQLiteIntrospection {
  /// Ordinary tables: not SQLite's own, not the migration ledger, not a virtual table nor one of its shadow tables.
  static func tables(_ db: Database) throws -> [String] {
    let rows = try Row.fetchAll(
      db, sql: "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
    let virtual = rows.filter { (($0["sql"] as String?) ?? "").uppercased().hasPrefix("CREATE VIRTUAL TABLE") }
      .map { $0["name"] as String }
    return rows.map { $0["name"] as String }.filter { name in
      name != SQLiteSchema.migrator.ledgerTable && !virtual.contains { name == $0 || name.hasPrefix($0 + "_") }
    }
  }

  static func schema(_ db: Database) throws -> [SeedTable] {
    try tables(db).map { name in
      let sql = try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE name = ?", arguments: [name]) ?? ""
      let columns = try Row.fetchAll(db, sql: "PRAGMA table_xinfo(\(SchemaSeeder.quoted(name)))").map { row in
        let column: String = row["name"]
        return SeedTable.Column(
          name: column, type: (row["type"] as String).lowercased(), notNull: (row["notnull"] as Int) != 0,
          defaultSQL: row["dflt_value"], generated: (row["hidden"] as Int) != 0,
          allowed: firstAllowed(column, in: sql))
      }
      var keys: [Int: SeedTable.ForeignKey] = [:]
      for row in try Row.fetchAll(db, sql: "PRAGMA foreign_key_list(\(SchemaSeeder.quoted(name)))") {
        let id: Int = row["id"]
        let parent: String = row["table"]
        let to: String? = row["to"]
        var key = keys[id] ?? SeedTable.ForeignKey(columns: [], parent: parent, parentColumns: [])
        key.columns.append(row["from"])
        key.parentColumns.append(to ?? "rowid")
        keys[id] = key
      }
      return SeedTable(name: name, columns: columns, foreignKeys: keys.sorted { $0.key < $1.key }.map(\.value))
    }
  }

  /// The first value of `CHECK (column IN (…))` in a table's SQL.
  static func firstAllowed(_ column: String, in sql: String) -> String? {
    SchemaSeeder.firstCapture("CHECK \\(\(NSRegularExpression.escapedPattern(for: column)) IN \\(([^,)]+)", in: sql)
  }
}

/// The tables of a PostgreSQL database as the seeder needs them.
enum PostgresIntrospection {
  static func tables(_ database: PersistenceKitPostgres.PostgresDatabase, ledger: String) async throws -> Set<String> {
    let rows = try await database.query(
      PostgresQuery(
        unsafeSQL: """
          SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition
          """))
    var names = Set<String>()
    for row in rows { names.insert(try row.decode(String.self)) }
    return names.subtracting([ledger, "spatial_ref_sys"])
  }

  static func count(_ table: String, in database: PersistenceKitPostgres.PostgresDatabase) async throws -> Int {
    let rows = try await database.query(PostgresQuery(unsafeSQL: "SELECT count(*) FROM \(SchemaSeeder.quoted(table))"))
    return Int(try rows.first?.decode(Int64.self) ?? 0)
  }

  static func schema(_ database: PersistenceKitPostgres.PostgresDatabase, ledger: String) async throws -> [SeedTable] {
    let names = try await tables(database, ledger: ledger)
    var tables: [String: SeedTable] = [:]
    for name in names { tables[name] = SeedTable(name: name, columns: [], foreignKeys: []) }
    let columns = try await database.query(
      PostgresQuery(
        unsafeSQL: """
          SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
            coalesce(pg_get_expr(d.adbin, d.adrelid), ''), a.attgenerated::text <> '' OR a.attidentity::text = 'a'
          FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
          JOIN pg_namespace n ON n.oid = c.relnamespace
          LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
          WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT a.attisdropped
          ORDER BY c.relname, a.attnum
          """))
    for row in columns {
      let (table, column, type, notNull, defaultSQL, generated) = try row.decode(
        (String, String, String, Bool, String, Bool).self)
      tables[table]?.columns.append(
        SeedTable.Column(
          name: column, type: type.lowercased(), notNull: notNull, defaultSQL: defaultSQL.isEmpty ? nil : defaultSQL,
          generated: generated || defaultSQL.hasPrefix("nextval(")))
    }
    let checks = try await database.query(
      PostgresQuery(
        unsafeSQL: """
          SELECT conrelid::regclass::text, pg_get_constraintdef(oid) FROM pg_constraint
          WHERE contype = 'c' AND connamespace = 'public'::regnamespace
          """))
    for row in checks {
      let (table, definition) = try row.decode((String, String).self)
      guard var seedTable = tables[table] else { continue }
      for index in seedTable.columns.indices {
        if let allowed = firstAllowed(seedTable.columns[index].name, in: definition) {
          seedTable.columns[index].allowed = allowed
        }
      }
      tables[table] = seedTable
    }
    let keys = try await database.query(
      PostgresQuery(
        unsafeSQL: """
          SELECT c.conrelid::regclass::text, c.conname, c.confrelid::regclass::text, a.attname, af.attname
          FROM pg_constraint c
          CROSS JOIN LATERAL unnest(c.conkey, c.confkey) WITH ORDINALITY AS k(attnum, fattnum, ord)
          JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum
          JOIN pg_attribute af ON af.attrelid = c.confrelid AND af.attnum = k.fattnum
          WHERE c.contype = 'f' AND c.connamespace = 'public'::regnamespace
          ORDER BY 1, 2, k.ord
          """))
    var grouped: [String: SeedTable.ForeignKey] = [:]
    var order: [String] = []
    for row in keys {
      let (table, constraint, parent, column, parentColumn) = try row.decode(
        (String, String, String, String, String).self)
      let id = table + "\u{0}" + constraint
      if grouped[id] == nil {
        grouped[id] = SeedTable.ForeignKey(columns: [], parent: parent, parentColumns: [])
        order.append(id)
      }
      grouped[id]?.columns.append(column)
      grouped[id]?.parentColumns.append(parentColumn)
    }
    for id in order {
      let table = String(id.split(separator: "\u{0}")[0])
      if let key = grouped[id] { tables[table]?.foreignKeys.append(key) }
    }
    return tables.values.sorted { $0.name < $1.name }
  }

  /// The first value of `CHECK ((column = ANY (ARRAY[…])))` (how PostgreSQL shows `column IN (…)`).
  static func firstAllowed(_ column: String, in definition: String) -> String? {
    SchemaSeeder.firstCapture(
      "\\(\(NSRegularExpression.escapedPattern(for: column)) = ANY \\(\\(?ARRAY\\[([^,\\]]+)", in: definition)
  }
}
