import Foundation
import GRDB
import Testing

@testable import PersistenceKit

@Suite struct MigrationTests {
  static let createPlace = Migration.sql(
    "001 create place",
    """
    CREATE TABLE place (
      id INTEGER PRIMARY KEY,
      name TEXT NOT NULL
    );
    """
  )
  static let addRating = Migration.sql("002 add rating", "ALTER TABLE place ADD COLUMN rating REAL")
  static let seed = Migration.sql("003 seed", "INSERT INTO place(name, rating) VALUES ('Kyiv', 4.5)")

  func migrator(_ migrations: Migration...) -> Migrator { Migrator(migrations) }

  @Test func appliesInOrderAndRecordsTheLedger() throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let database = try SQLiteDatabase.open(at: directory.path("m.sqlite"))
    let migrator = migrator(Self.createPlace, Self.addRating, Self.seed)

    #expect(
      try database.migrationPlan(migrator).map(\.identifier) == ["001 create place", "002 add rating", "003 seed"])
    // Planning and status run and write nothing, not even the ledger table.
    #expect(try database.migrationStatus(migrator).pending.count == 3)
    #expect(try database.read { db in try db.tableExists("place") } == false)
    #expect(try database.read { db in try db.tableExists(migrator.ledgerTable) } == false)

    let before = Date()
    let report = try database.migrate(migrator)
    #expect(report.applied.map(\.identifier) == ["001 create place", "002 add rating", "003 seed"])
    #expect(report.skipped.isEmpty)
    let ledger = try database.migrationExecutor.readLedger(table: migrator.ledgerTable)
    #expect(ledger.map(\.identifier) == ["001 create place", "002 add rating", "003 seed"])
    #expect(ledger.map(\.checksum) == [Self.createPlace.checksum, Self.addRating.checksum, Self.seed.checksum])
    for entry in ledger {
      #expect(entry.checksum.hasPrefix("sha256:") && entry.checksum.count == 71)
      #expect(entry.appliedAt.timeIntervalSince(before) > -1 && entry.appliedAt.timeIntervalSinceNow < 1)
      #expect(entry.duration >= 0 && entry.duration < 10)
    }
    #expect(try database.read { db in try String.fetchOne(db, sql: "SELECT name FROM place") } == "Kyiv")

    // A second run applies nothing.
    let again = try database.migrate(migrator)
    #expect(again.applied.isEmpty)
    #expect(again.skipped.count == 3)
    let status = try database.migrationStatus(migrator)
    #expect(status.isUpToDate)
    #expect(status.applied.count == 3)
  }

  @Test func checksumIgnoresLineEndingStyleButNotContent() {
    let unix = Migration.sql("x", "CREATE TABLE a(\n  id INTEGER\n);\n")
    let windows = Migration.sql("x", "CREATE TABLE a(\r\n  id INTEGER\r\n);\r\n")
    let oldMac = Migration.sql("x", "CREATE TABLE a(\r  id INTEGER\r);\r")
    let edited = Migration.sql("x", "CREATE TABLE a(\n  id INTEGER NOT NULL\n);\n")
    #expect(unix.checksum == windows.checksum)
    #expect(unix.checksum == oldMac.checksum)
    #expect(unix.checksum != edited.checksum)
    let code = Migration.code("x", revision: "1") { _ in }
    let codeAgain = Migration.code("x", revision: "1") { _ in }
    let codeRevised = Migration.code("x", revision: "2") { _ in }
    #expect(code.checksum == codeAgain.checksum)
    #expect(code.checksum != codeRevised.checksum)
    // The hash behind every checksum is SHA-256: it gives FIPS 180-2's published vector for "abc"…
    #expect(SHA256.hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    // …and the checksums are SHA-256 of the prefixed text, as computed independently by coreutils:
    // `printf 'revision\nabc' | sha256sum` and `printf 'sql\nCREATE TABLE a(\n  id INTEGER\n);\n' | sha256sum`.
    #expect(
      Migration.code("x", revision: "abc") { _ in }.checksum
        == "sha256:8f3a434eb8f8bd4eb98c8f6cb5ec2e91608fdfef6cbfbba2de131826e7d14d32")
    #expect(windows.checksum == "sha256:6d41541661d3121eed2d4caab38a224ce5e49070a4c42f83ea122094d6133e82")
  }

  @Test func failingMigrationRollsBackItselfOnlyAndSaysWhich() throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let database = try SQLiteDatabase.open(at: directory.path("fail.sqlite"))
    let broken = Migration.sql(
      "002 broken",
      """
      CREATE TABLE review(id INTEGER PRIMARY KEY, place_id INTEGER REFERENCES place(id));
      INSERT INTO review(place_id) VALUES (NULL);
      INSERT INTO no_such_table VALUES (1);
      """
    )
    let seed = Migration.sql("003 seed", "INSERT INTO place(name) VALUES ('Odesa')")
    let migrator = migrator(Self.createPlace, broken, seed)
    do {
      try database.migrate(migrator)
      Issue.record("expected a failure")
    } catch MigrationError.migrationFailed(let identifier, let underlying) {
      #expect(identifier == "002 broken")
      #expect(String(describing: underlying).contains("no_such_table"))
      #expect(
        MigrationError.migrationFailed(identifier: identifier, underlying: underlying).description.contains(
          "002 broken"))
    }
    let status = try database.migrationStatus(migrator)
    #expect(status.applied == ["001 create place"])
    #expect(status.pending == ["002 broken", "003 seed"])
    try database.read { db throws in
      #expect(try db.tableExists("place"))
      #expect(try db.tableExists("review") == false)  // the failing migration's own work is gone
    }
    #expect(try database.integrityCheck().isOK)

    // Fixed in the code (it was never applied, so editing it is allowed) the run continues where it stopped.
    let fixed = Migration.sql(
      "002 broken",
      "CREATE TABLE review(id INTEGER PRIMARY KEY, place_id INTEGER REFERENCES place(id))"
    )
    let report = try database.migrate(Migrator([Self.createPlace, fixed, seed]))
    #expect(report.applied.map(\.identifier) == ["002 broken", "003 seed"])
  }

  @Test func codeMigrationsRunInTheirTransaction() throws {
    let database = try SQLiteDatabase.inMemory()
    let backfill = Migration.code("002 backfill", revision: "2026-11-22") { connection in
      let db = try #require(connection.sqlite)
      let names = try String.fetchAll(db, sql: "SELECT name FROM place")
      for name in names {
        try db.execute(sql: "UPDATE place SET name = ? WHERE name = ?", arguments: [name.uppercased(), name])
      }
    }
    try database.write { db throws in
      try db.execute(sql: "CREATE TABLE place(id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
      try db.execute(sql: "INSERT INTO place(name) VALUES ('lviv')")
    }
    try database.migrate(Migrator([backfill]))
    #expect(try database.read { db in try String.fetchOne(db, sql: "SELECT name FROM place") } == "LVIV")

    struct Boom: Error {}
    let failing = Migration.code("003 failing", revision: "1") { connection in
      try connection.execute(sql: "DELETE FROM place")
      throw Boom()
    }
    #expect(throws: MigrationError.self) { try database.migrate(Migrator([backfill, failing])) }
    #expect(try database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM place") } == 1)
  }

  @Test func checksumDriftIsATypedErrorAndVisibleInStatus() throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.path("drift.sqlite")
    try SQLiteDatabase.open(at: path).migrate(migrator(Self.createPlace, Self.addRating))

    let edited = Migration.sql("002 add rating", "ALTER TABLE place ADD COLUMN rating INTEGER")
    let database = try SQLiteDatabase.open(at: path)
    let drifted = migrator(Self.createPlace, edited, Self.seed)
    let status = try database.migrationStatus(drifted)
    #expect(status.drifted == ["002 add rating"])
    #expect(status.pending == ["003 seed"])
    #expect(!status.isUpToDate)
    do {
      try database.migrate(drifted)
      Issue.record("expected drift")
    } catch MigrationError.checksumMismatch(let identifier, let recorded, let current) {
      #expect(identifier == "002 add rating")
      #expect(recorded == Self.addRating.checksum)
      #expect(current == edited.checksum)
    }
    #expect(throws: MigrationError.self) { try database.migrationPlan(drifted) }
    // Nothing ran.
    #expect(try database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM place") } == 0)

    // Only line endings differ: not drift. "001" was applied with LF line endings; its CRLF copy matches.
    let lf = try #require(Self.createPlace.sql)
    let crlfText = lf.replacingOccurrences(of: "\n", with: "\r\n")
    #expect(lf.contains("\n") && !lf.contains("\r") && crlfText.contains("\r\n") && crlfText != lf)
    let crlf = Migration.sql("001 create place", crlfText)
    #expect(crlf.checksum == Self.createPlace.checksum)
    let crlfStatus = try database.migrationStatus(migrator(crlf, Self.addRating))
    #expect(crlfStatus.drifted.isEmpty)
    #expect(crlfStatus.isUpToDate)
  }

  @Test func unreadableAppliedAtIsATypedError() throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let database = try SQLiteDatabase.open(at: directory.path("ledger.sqlite"))
    let migrator = migrator(Self.createPlace)
    try database.migrate(migrator)
    let ledger = migrator.ledgerTable.quotedDatabaseIdentifier
    try database.write { db in try db.execute(sql: "UPDATE \(ledger) SET applied_at = 'yesterday'") }
    do {
      _ = try database.migrationStatus(migrator)
      Issue.record("expected an unreadable ledger date")
    } catch MigrationError.unreadableLedgerDate(let identifier, let appliedAt) {
      #expect(identifier == "001 create place")
      #expect(appliedAt == "yesterday")
    }
    #expect(throws: MigrationError.self) { try database.migrate(migrator) }

    // ISO 8601 without fractional seconds is read, not mistaken for 1970.
    try database.write { db in try db.execute(sql: "UPDATE \(ledger) SET applied_at = '2026-11-22T09:00:00Z'") }
    let entry = try #require(try database.migrationExecutor.readLedger(table: migrator.ledgerTable).first)
    #expect(entry.appliedAt == Date(timeIntervalSince1970: 1_795_338_000))
  }

  @Test func databaseNewerThanTheAppIsRefused() throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.path("newer.sqlite")
    try SQLiteDatabase.open(at: path).migrate(migrator(Self.createPlace, Self.addRating, Self.seed))

    let oldApp = migrator(Self.createPlace, Self.addRating)
    let database = try SQLiteDatabase.open(at: path)
    do {
      try database.migrate(oldApp)
      Issue.record("expected a refusal")
    } catch MigrationError.databaseNewerThanApp(let unknown) {
      #expect(unknown == ["003 seed"])
    }
    let status = try database.migrationStatus(oldApp)
    #expect(status.unknown.map(\.identifier) == ["003 seed"])
    #expect(!status.isUpToDate)
  }

  @Test func migrateUpToATarget() throws {
    let database = try SQLiteDatabase.inMemory()
    let migrator = migrator(Self.createPlace, Self.addRating, Self.seed)
    #expect(
      try database.migrationPlan(migrator, upTo: "002 add rating").map(\.identifier) == [
        "001 create place", "002 add rating",
      ])
    let report = try database.migrate(migrator, upTo: "002 add rating")
    #expect(report.applied.map(\.identifier) == ["001 create place", "002 add rating"])
    #expect(try database.migrationStatus(migrator).pending == ["003 seed"])

    // Same target again: nothing to do.
    #expect(try database.migrate(migrator, upTo: "002 add rating").applied.isEmpty)

    // Below what is applied: refused.
    do {
      try database.migrate(migrator, upTo: "001 create place")
      Issue.record("expected a refusal")
    } catch MigrationError.targetBelowApplied(let target, let after) {
      #expect(target == "001 create place")
      #expect(after == ["002 add rating"])
    }
    #expect(throws: MigrationError.self) { try database.migrate(migrator, upTo: "999 nope") }
    #expect(try database.migrate(migrator).applied.map(\.identifier) == ["003 seed"])
  }

  @Test func duplicateIdentifiersAreRefused() throws {
    let database = try SQLiteDatabase.inMemory()
    do {
      try database.migrate(migrator(Self.createPlace, Migration.sql("001 create place", "SELECT 1")))
      Issue.record("expected a refusal")
    } catch MigrationError.duplicateIdentifier(let identifier) {
      #expect(identifier == "001 create place")
    }
  }

  @Test func ledgerSurvivesReopening() throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.path("reopen.sqlite")
    do {
      let database = try SQLiteDatabase.open(at: path)
      try database.migrate(migrator(Self.createPlace))
      try database.close()
    }
    let database = try SQLiteDatabase.open(at: path)
    let report = try database.migrate(migrator(Self.createPlace, Self.addRating))
    #expect(report.applied.map(\.identifier) == ["002 add rating"])
    #expect(report.skipped == ["001 create place"])
  }

  @Test func tableRebuildsWorkAndDanglingReferencesFail() throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let database = try SQLiteDatabase.open(at: directory.path("fk.sqlite"))
    let schema = Migration.sql(
      "001 schema",
      """
      CREATE TABLE place(id INTEGER PRIMARY KEY, name TEXT);
      CREATE TABLE review(id INTEGER PRIMARY KEY, place_id INTEGER NOT NULL REFERENCES place(id));
      INSERT INTO place(id, name) VALUES (1, 'Kyiv');
      INSERT INTO review(place_id) VALUES (1);
      """
    )
    // SQLite's 12-step ALTER TABLE: rebuild `place` with NOT NULL while `review` refers to it.
    let rebuild = Migration.sql(
      "002 place.name not null",
      """
      CREATE TABLE new_place(id INTEGER PRIMARY KEY, name TEXT NOT NULL);
      INSERT INTO new_place(id, name) SELECT id, name FROM place;
      DROP TABLE place;
      ALTER TABLE new_place RENAME TO place;
      """
    )
    try database.migrate(Migrator([schema, rebuild]))
    #expect(try database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM review") } == 1)
    #expect(try database.foreignKeyCheck().isEmpty)

    let orphan = Migration.sql("003 orphan", "INSERT INTO review(place_id) VALUES (42)")
    do {
      try database.migrate(Migrator([schema, rebuild, orphan]))
      Issue.record("expected a failure")
    } catch MigrationError.migrationFailed(let identifier, let underlying) {
      #expect(identifier == "003 orphan")
      let check = try #require(underlying as? ForeignKeyCheckError)
      #expect(check.violations.map(\.table) == ["review"])
    }
    #expect(try database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM review") } == 1)
    // Enforcement is back on after the migrations.
    #expect(try database.read { db in try Int.fetchOne(db, sql: "PRAGMA foreign_keys") } == 1)
    #expect(throws: DatabaseError.self) {
      try database.write { db in try db.execute(sql: "INSERT INTO review(place_id) VALUES (43)") }
    }
  }
}
