import Foundation
import PersistenceKit
import PersistenceKitPostgres
import Testing

/// The migrator on a real PostgreSQL database (a fresh one per test, from `Tools/postgres`'s template).
@Suite struct PostgresMigratorTests {
  static let createNote = Migration.sql(
    "2026-11-01 create note",
    """
    CREATE TABLE note(id bigserial PRIMARY KEY, text text NOT NULL);
    CREATE FUNCTION note_length(n note) RETURNS int LANGUAGE plpgsql AS $$ BEGIN RETURN length(n.text); END $$;
    """)
  static let indexNote = Migration.sql("2026-11-02 index note", "CREATE INDEX note_text ON note(text)")
  static let place = Migration.sql(
    "2026-11-03 place", "CREATE TABLE place(id bigserial PRIMARY KEY, location geography(Point, 4326) NOT NULL)")

  static var migrator: Migrator { Migrator([createNote, indexNote, place]) }

  @Test func migratesRecordsAndThenHasNothingToDo() async throws {
    try await TestCluster.withFreshDatabase { database in
      let first = try await database.migrate(Self.migrator)
      #expect(first.applied.map(\.identifier) == Self.migrator.migrations.map(\.identifier))
      #expect(first.applied.map(\.checksum) == Self.migrator.migrations.map(\.checksum))
      #expect(first.skipped.isEmpty)

      let second = try await database.migrate(Self.migrator)
      #expect(second.applied.isEmpty)
      #expect(second.skipped == Self.migrator.migrations.map(\.identifier))

      let status = try await database.migrationStatus(Self.migrator)
      #expect(status.isUpToDate)
      #expect(status.applied == Self.migrator.migrations.map(\.identifier))
      // The schema is there, PostGIS included, and the ledger has one row per migration.
      _ = try await database.query("INSERT INTO place(location) VALUES ('SRID=4326;POINT(2.35 48.85)')")
      #expect(try await database.integer("SELECT count(*) FROM persistencekit_migrations") == 3)
    }
  }

  @Test func plansAndMigratesUpToATarget() async throws {
    try await TestCluster.withFreshDatabase { database in
      let migrator = Self.migrator
      #expect(try await database.migrationPlan(migrator).map(\.identifier) == migrator.migrations.map(\.identifier))
      let planned = try await database.migrationPlan(migrator, upTo: Self.indexNote.identifier)
      #expect(planned.map(\.identifier) == [Self.createNote.identifier, Self.indexNote.identifier])
      // Planning writes nothing: not even the ledger table.
      #expect(
        try await database.integer("SELECT count(*) FROM pg_tables WHERE tablename = 'persistencekit_migrations'") == 0)

      let report = try await database.migrate(migrator, upTo: Self.createNote.identifier)
      #expect(report.applied.map(\.identifier) == [Self.createNote.identifier])
      let status = try await database.migrationStatus(migrator)
      #expect(status.applied == [Self.createNote.identifier])
      #expect(status.pending == [Self.indexNote.identifier, Self.place.identifier])
      #expect(try await database.migrationPlan(migrator).map(\.identifier) == status.pending)

      await #expect {
        try await database.migrate(migrator, upTo: "2026-12-31 nothing")
      } throws: { error in
        if case MigrationError.unknownTarget("2026-12-31 nothing") = error { return true }
        return false
      }
    }
  }

  @Test func detectsAnEditedAppliedMigration() async throws {
    try await TestCluster.withFreshDatabase { database in
      try await database.migrate(Migrator([Self.createNote, Self.indexNote]))
      let edited = Migrator([
        Self.createNote, .sql(Self.indexNote.identifier, "CREATE INDEX note_text ON note(text DESC)"), Self.place,
      ])
      let status = try await database.migrationStatus(edited)
      #expect(status.drifted == [Self.indexNote.identifier])
      #expect(!status.isUpToDate)
      let isDrift: @Sendable (any Error) -> Bool = { error in
        guard case MigrationError.checksumMismatch(let identifier, let recorded, let current) = error else {
          return false
        }
        return identifier == Self.indexNote.identifier && recorded == Self.indexNote.checksum
          && current == edited.migrations[1].checksum
      }
      await #expect { try await database.migrate(edited) } throws: { isDrift($0) }
      await #expect { try await database.migrationPlan(edited) } throws: { isDrift($0) }
      // Nothing ran: the third migration's table doesn't exist.
      #expect(try await database.integer("SELECT count(*) FROM pg_tables WHERE tablename = 'place'") == 0)
    }
  }

  @Test func detectsADatabaseMigratedByANewerApp() async throws {
    try await TestCluster.withFreshDatabase { database in
      try await database.migrate(Self.migrator)
      let older = Migrator([Self.createNote, Self.indexNote])
      let status = try await database.migrationStatus(older)
      #expect(status.unknown.map(\.identifier) == [Self.place.identifier])
      await #expect {
        try await database.migrate(older)
      } throws: { error in
        guard case MigrationError.databaseNewerThanApp(let unknown) = error else { return false }
        return unknown == [Self.place.identifier] && "\(error)".contains("upgrade the app")
      }
    }
  }

  @Test func aFailingMigrationRollsBackAndRecordsNothing() async throws {
    try await TestCluster.withFreshDatabase { database in
      let broken = Migration.sql(
        "2026-11-02 broken",
        """
        CREATE TABLE half(id int);
        INSERT INTO half VALUES (1);
        CREATE INDEX nowhere ON missing_table(x);
        """)
      let migrator = Migrator([Self.createNote, broken, Self.place])
      await #expect {
        try await database.migrate(migrator)
      } throws: { error in
        guard case MigrationError.migrationFailed(let identifier, let underlying) = error else { return false }
        let message = "\(error)"
        return identifier == broken.identifier && PostgresDatabase.sqlState(of: underlying) == "42P01"
          && message.contains("line 3") && message.contains("missing_table")
      }
      let status = try await database.migrationStatus(migrator)
      #expect(status.applied == [Self.createNote.identifier])
      #expect(status.pending == [broken.identifier, Self.place.identifier])
      #expect(try await database.integer("SELECT count(*) FROM pg_tables WHERE tablename IN ('half', 'place')") == 0)
      #expect(try await database.integer("SELECT count(*) FROM persistencekit_migrations") == 1)
    }
  }

  @Test func refusesCodeMigrationsBeforeRunningAnything() async throws {
    try await TestCluster.withFreshDatabase { database in
      let code = Migration.code("2026-11-02 backfill", revision: "1") { _ in }
      let migrator = Migrator([Self.createNote, code])
      await #expect {
        try await database.migrate(migrator)
      } throws: { error in
        guard case PostgresMigrationError.codeMigration(let identifier) = error else { return false }
        return identifier == code.identifier && "\(error)".contains("Nothing was applied")
      }
      let status = try await database.migrationStatus(migrator)
      #expect(status.applied.isEmpty)
    }
  }

  @Test func twoNodesMigratingAtOnceApplyEachMigrationOnce() async throws {
    try await TestCluster.withFreshDatabase { database in
      // Slow enough that the two runs overlap; CREATE TABLE (without IF NOT EXISTS) would fail if run twice.
      let migrator = Migrator([
        .sql("2026-11-01 slow", "SELECT pg_sleep(0.4); CREATE TABLE slow(id int)"),
        .sql("2026-11-02 second", "CREATE TABLE second(id int)"),
      ])
      let url = database.url
      let reports = try await withThrowingTaskGroup(of: MigrationReport.self) { group in
        for _ in 0..<2 {
          group.addTask {
            let node = try await PostgresDatabase.open(url: url, maxConnections: 2, logger: TestCluster.logger)
            do {
              let report = try await node.migrate(migrator)
              await node.close()
              return report
            } catch {
              await node.close()
              throw error
            }
          }
        }
        return try await group.reduce(into: []) { $0.append($1) }
      }
      let applied = reports.flatMap { $0.applied.map(\.identifier) }
      #expect(applied.sorted() == migrator.migrations.map(\.identifier).sorted())
      #expect(reports.contains { $0.applied.isEmpty && $0.skipped == migrator.migrations.map(\.identifier) })
      #expect(try await database.integer("SELECT count(*) FROM persistencekit_migrations") == 2)
      // Both nodes released the lock: a third run takes it at once and finds nothing to do.
      #expect(try await database.migrate(migrator).applied.isEmpty)
      // This database's advisory locks only: other tests on the cluster hold their own meanwhile.
      let leftLocks = try await database.integer(
        """
        SELECT count(*) FROM pg_locks
        WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
        """)
      #expect(leftLocks == 0)
    }
  }

  @Test func theLockKeyFollowsTheLedgerTable() {
    // Every node derives the same key from the same table name; another ledger gets another lock.
    #expect(PostgresMigrator(Self.migrator).lockKey == PostgresMigrator(Migrator()).lockKey)
    #expect(
      PostgresMigrator(Self.migrator).lockKey != PostgresMigrator(Migrator(ledgerTable: "other_migrations")).lockKey)
  }
}
