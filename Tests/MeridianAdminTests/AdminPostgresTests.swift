import DomainKit
import Foundation
import Logging
import MeridianSecrets
import MeridianStore
import MeridianStorePostgres
import MeridianStoreTesting
import MeridianTestSupport
import PostgresNIO
import Testing

/// `meridian-admin --database postgres://…`: the built binary against fresh databases on the cluster of
/// `Tools/postgres` (one database per test, made from `meridian_template`, dropped afterwards), seeded and checked
/// through the server's own ``PostgresStore``.
@Suite("meridian-admin against PostgreSQL")
struct AdminPostgresTests {
  /// Runs `body` with a fresh database (PostGIS, no tables yet) and a sandbox for the binary's files.
  func withDatabase(
    _ body: (PostgresTestDatabase, AdminSandbox) async throws -> Void
  ) async throws {
    try await PostgresTestDatabase.with { database in
      try await body(database, try AdminSandbox())
    }
  }

  /// The server's store on `database` (which it migrates), closed after `body`.
  func withStore(_ database: PostgresTestDatabase, _ body: (PostgresStore) async throws -> Void) async throws {
    let store = try await PostgresStore.open(url: database.url, maximumConnections: 4, timeouts: .tests)
    do {
      try await body(store)
    } catch {
      await store.close()
      throw error
    }
    await store.close()
  }

  @Test func migrateStatusPlanApplyAndCheck() async throws {
    try await withDatabase { database, sandbox in
      let expected = PostgresSchema.migrator.migrations.map(\.identifier)
      let status = try await sandbox.admin(["db", "migrate", "--status", "--json"], database: database.url)
      #expect(status.status == 0, "\(status)")
      let pending = try #require(try status.object()["migrations"] as? [[String: Any]])
      #expect(pending.compactMap { $0["identifier"] as? String } == expected)
      #expect(pending.allSatisfy { $0["state"] as? String == "pending" }, "\(status)")
      let plan = try await sandbox.admin(["db", "migrate", "--plan", "--json"], database: database.url)
      let planned = try #require(try plan.object()["migrations"] as? [[String: Any]])
      #expect(planned.compactMap { $0["identifier"] as? String } == expected)

      // Nothing but `db migrate` writes to a database whose schema is not this binary's.
      let refused = try await sandbox.admin(["users", "list"], database: database.url)
      #expect(refused.status == 1, "\(refused)")
      #expect(refused.stderr.contains("db migrate"), "\(refused.stderr)")
      let notChecked = try await sandbox.admin(["db", "check", "--json"], database: database.url)
      #expect(notChecked.status == 1, "\(notChecked)")
      #expect((try notChecked.object()["pendingMigrations"] as? [String]) == expected)

      let apply = try await sandbox.admin(["db", "migrate", "--json"], database: database.url)
      #expect(apply.status == 0, "\(apply)")
      let applied = try #require(try apply.object()["migrations"] as? [[String: Any]])
      #expect(applied.compactMap { $0["identifier"] as? String } == expected)
      #expect(applied.allSatisfy { ($0["appliedAt"] as? String)?.hasSuffix("Z") == true }, "\(apply)")
      let after = try await sandbox.admin(["db", "migrate", "--status", "--json"], database: database.url)
      let states = try #require(try after.object()["migrations"] as? [[String: Any]])
      #expect(states.compactMap { $0["state"] as? String } == Array(repeating: "applied", count: expected.count))
      #expect(try after.object()["upToDate"] as? Bool == true)
      let again = try await sandbox.admin(["db", "migrate"], database: database.url)
      #expect(again.status == 0 && again.stdout.contains("is up to date"), "\(again)")
      let check = try await sandbox.admin(["db", "check"], database: database.url)
      #expect(check.status == 0, "\(check)")
      #expect(check.stdout.contains("migrations: up to date") && check.stdout.hasSuffix("OK\n"), "\(check)")

      // The server's store finds the same ledger: every identifier with the checksum it expects.
      try await withStore(database) { store in
        // The ledger PersistenceKitPostgres's PostgresMigrator keeps for the store.
        let ledgerTable = PostgresSchema.migrator.ledgerTable
        func execute(_ sql: String, _ binds: String...) async throws -> [PostgresRow] {
          var bindings = PostgresBindings()
          for bind in binds { bindings.append(bind) }
          return try await store.client.query(
            PostgresQuery(unsafeSQL: sql, binds: bindings), logger: Logger(label: "test")
          ).collect()
        }
        let rows = try await execute("SELECT identifier, checksum FROM \(ledgerTable)")
        var ledger: [String: String] = [:]
        for row in rows {
          let (identifier, checksum) = try row.decode((String, String).self)
          ledger[identifier] = checksum
        }
        let checksums = Dictionary(
          uniqueKeysWithValues: PostgresSchema.migrator.migrations.map { ($0.identifier, $0.checksum) })
        #expect(ledger == checksums)

        // A migration edited after it ran, and one from a newer release, are refused as on SQLite.
        _ = try await execute("UPDATE \(ledgerTable) SET checksum = 'edited' WHERE identifier = $1", expected[0])
        let drifted = try await sandbox.admin(["db", "migrate", "--status", "--json"], database: database.url)
        let first = try #require((try drifted.object()["migrations"] as? [[String: Any]])?.first)
        #expect(first["state"] as? String == "drifted", "\(drifted)")
        let driftedCheck = try await sandbox.admin(["db", "check"], database: database.url)
        #expect(driftedCheck.status == 1, "\(driftedCheck)")
        let driftedUse = try await sandbox.admin(["users", "list"], database: database.url)
        #expect(driftedUse.status == 1 && driftedUse.stderr.contains("changed since they ran"), "\(driftedUse)")
        _ = try await execute(
          "UPDATE \(ledgerTable) SET checksum = $1 WHERE identifier = $2",
          PostgresSchema.migrator.migrations[0].checksum, expected[0])
        _ = try await execute(
          """
          INSERT INTO \(ledgerTable)(identifier, checksum, applied_at, duration_ms)
          VALUES ('2099-01-01 from the future', 'x', now(), 0)
          """)
        let newer = try await sandbox.admin(["users", "list"], database: database.url)
        #expect(newer.status == 1 && newer.stderr.contains("newer release"), "\(newer)")
        let newerStatus = try await sandbox.admin(["db", "migrate", "--status", "--json"], database: database.url)
        #expect((try newerStatus.object()["unknown"] as? [String]) == ["2099-01-01 from the future"])
      }
    }
  }

  @Test func aMissingDatabaseOrServerIsWordedNotCrashed() async throws {
    let sandbox = try AdminSandbox()
    try await PostgresTestDatabase.with { database in
      let slash = try #require(database.url.range(of: "/", options: .backwards))
      let base = database.url[..<slash.lowerBound]
      let missing = try await sandbox.admin(["users", "list"], database: "\(base)/meridian_no_such_database")
      #expect(missing.status == 3, "\(missing)")
      #expect(missing.stderr.contains("does not exist"), "\(missing.stderr)")
      let missingStatus = try await sandbox.admin(
        ["db", "migrate", "--status"], database: "\(base)/meridian_no_such_database")
      #expect(missingStatus.status == 3, "\(missingStatus)")
    }
    // Port 1 on loopback: nothing listens there.
    let noServer = try await sandbox.admin(["stats"], database: "postgres://meridian@127.0.0.1:1/meridian")
    #expect(noServer.status == 1, "\(noServer)")
    #expect(noServer.stderr.contains("PostgreSQL at postgres://meridian@127.0.0.1:1/meridian"), "\(noServer.stderr)")
  }

  @Test func usersTokensGroupsAndStatsOnPostgres() async throws {
    try await withDatabase { database, sandbox in
      try await withStore(database) { store in
        let now = Timestamp.milliseconds(Date())
        let anna = try await seedUser(store, email: "anna@example.com")
        try await store.insertToken(
          hash: SecretHash.sha256("anna-secret"), userID: anna, createdAt: now, expiresAt: now + 100_000)
        try await seedFixes(
          store, user: anna, device: "anna-phone",
          fixes: try makeFixes(count: 40, start: now - 60_000, device: "anna-phone"))

        let created = try await sandbox.admin(
          ["users", "create", "--email", "Olena@Example.com", "--name", "Olena", "--bcrypt-cost", "4", "--json"],
          database: database.url, stdin: "a long password\n")
        #expect(created.status == 0, "\(created)")
        let olena = UserID(try #require(try created.object()["id"] as? String))
        let (account, hash) = try #require(try await store.account(for: .email("olena@example.com")))
        #expect(account.id == olena && hash?.hasPrefix("$2") == true)

        let list = try await sandbox.admin(["users", "list", "--json"], database: database.url)
        #expect(list.status == 0, "\(list)")
        let users = try #require(try list.json() as? [[String: Any]])
        #expect(users.compactMap { $0["id"] as? String } == [anna.rawValue, olena.rawValue], "\(list)")
        #expect(users.first?["fixes"] as? Int == 40, "\(list)")
        let table = try await sandbox.admin(["users", "list"], database: database.url)
        #expect(table.stdout.contains("email:anna@example.com"), "\(table)")

        let show = try await sandbox.admin(["users", "show", "anna@example.com", "--json"], database: database.url)
        #expect(show.status == 0, "\(show)")
        #expect((try show.object()["user"] as? [String: Any])?["id"] as? String == anna.rawValue, "\(show)")
        let devices = try #require(try show.object()["devices"] as? [[String: Any]])
        #expect(devices.compactMap { $0["id"] as? String } == ["anna-phone"], "\(show)")

        #expect(try await store.user(forTokenHash: SecretHash.sha256("anna-secret"), now: now) == anna)
        let disabled = try await sandbox.admin(
          ["users", "disable", "anna@example.com", "--json"], database: database.url)
        #expect(try disabled.object()["changed"] as? Bool == true, "\(disabled)")
        #expect(try await store.user(forTokenHash: SecretHash.sha256("anna-secret"), now: now) == nil)
        let enabled = try await sandbox.admin(["users", "enable", anna.rawValue, "--json"], database: database.url)
        #expect(try enabled.object()["disabled"] as? Bool == false, "\(enabled)")
        #expect(try await store.user(forTokenHash: SecretHash.sha256("anna-secret"), now: now) == anna)

        let tokens = try await sandbox.admin(
          ["tokens", "list", "--user", anna.rawValue, "--json"], database: database.url)
        let tokenID = try #require((try tokens.json() as? [[String: Any]])?.first?["id"] as? String, "\(tokens)")
        #expect(SecretHash.sha256("anna-secret").hasPrefix(tokenID))
        let revoked = try await sandbox.admin(["tokens", "revoke", tokenID, "--yes", "--json"], database: database.url)
        #expect(try revoked.object()["revoked"] as? Int == 1, "\(revoked)")
        #expect(try await store.user(forTokenHash: SecretHash.sha256("anna-secret"), now: now) == nil)

        let groups = try await sandbox.admin(
          ["groups", "list", "--user", "olena@example.com", "--json"], database: database.url)
        let kinds = try #require(try groups.json() as? [[String: Any]]).compactMap { $0["kind"] as? String }
        #expect(kinds == ["family", "friends", "blacklist"], "\(groups)")

        let stats = try await sandbox.admin(["stats", "--json"], database: database.url)
        #expect(stats.status == 0, "\(stats)")
        #expect(try stats.object()["users"] as? Int == 2 && stats.object()["fixes"] as? Int == 40, "\(stats)")
        #expect((try stats.object()["databaseBytes"] as? Int ?? 0) > 0, "\(stats)")

        let deleted = try await sandbox.admin(
          ["users", "delete", olena.rawValue, "--yes", "--json"], database: database.url)
        #expect(deleted.status == 0, "\(deleted)")
        #expect(try await store.account(for: .email("olena@example.com")) == nil)
        let unknown = try await sandbox.admin(["users", "show", "nobody@example.com"], database: database.url)
        #expect(unknown.status == 3, "\(unknown)")
      }
    }
  }

  @Test func historyExportImportRoundTripOnPostgres() async throws {
    try await withDatabase { database, sandbox in
      try await withStore(database) { store in
        let anna = try await seedUser(store, email: "anna@example.com")
        let boris = try await seedUser(store, email: "boris@example.com")
        let stored = try await seedFixes(
          store, user: anna, device: "anna-phone",
          fixes: try makeFixes(count: 2500, start: 1_700_000_000_000, device: "anna-phone"))
        for format in ["csv", "gpx", "geojson"] {
          let file = sandbox.path("anna.\(format)")
          let export = try await sandbox.admin(
            ["history", "export", "--user", "anna@example.com", "--format", format, "--output", file, "--json"],
            database: database.url)
          #expect(export.status == 0, "\(export)")
          #expect(try export.object()["fixes"] as? Int == 2500)
          let imported = try await sandbox.admin(
            ["history", "import", "--user", "boris@example.com", file, "--device", "boris-\(format)", "--json"],
            database: database.url)
          #expect(imported.status == 0, "\(imported)")
          #expect(try imported.object()["accepted"] as? Int == 2500, "\(imported)")
          let again = try await sandbox.admin(
            ["history", "import", "--user", "boris@example.com", file, "--device", "boris-\(format)", "--json"],
            database: database.url)
          #expect(try again.object()["duplicates"] as? Int == 2500, "\(again)")
          let copy = try await store.history(owner: boris, filter: HistoryFilter(), limit: 10_000, before: nil)
            .filter { $0.fix.deviceID == DeviceID("boris-\(format)") }
          #expect(copy.map(\.fix.timestamp).sorted() == stored, "\(format): the copy has other times")
        }
        // A device of another user is refused, nothing stored.
        let stolen = try await sandbox.admin(
          ["history", "import", "--user", boris.rawValue, sandbox.path("anna.csv")], database: database.url)
        #expect(stolen.status == 1, "\(stolen)")
        let all = try await store.history(owner: boris, filter: HistoryFilter(), limit: 10_000, before: nil)
        #expect(all.count == 7500)
      }
    }
  }

  @Test func retentionOnPostgres() async throws {
    try await withDatabase { database, sandbox in
      try await withStore(database) { store in
        let user = try await seedUser(store, email: "old@example.com")
        let now = Timestamp.milliseconds(Date())
        let day: Int64 = 86_400_000
        try await seedFixes(
          store, user: user, device: "old", fixes: try makeFixes(count: 3000, start: now - 400 * day, device: "old"))
        let recent = try await seedFixes(
          store, user: user, device: "recent", fixes: try makeFixes(count: 500, start: now - 30 * day, device: "recent")
        )
        let dryRun = try await sandbox.admin(
          ["retention", "apply", "--older-than", "365d", "--dry-run", "--json"], database: database.url)
        #expect(dryRun.status == 0, "\(dryRun)")
        #expect(try dryRun.object()["deleted"] as? Int == 3000, "\(dryRun)")
        #expect(try await store.history(owner: user, filter: HistoryFilter(), limit: 10_000, before: nil).count == 3500)
        let refused = try await sandbox.admin(["retention", "apply", "--older-than", "365d"], database: database.url)
        #expect(refused.status == 2, "\(refused)")
        let applied = try await sandbox.admin(
          ["retention", "apply", "--older-than", "365d", "--batch-size", "200", "--yes", "--json"],
          database: database.url)
        #expect(applied.status == 0, "\(applied)")
        #expect(try applied.object()["deleted"] as? Int == 3000, "\(applied)")
        #expect(try applied.object()["users"] as? Int == 1, "\(applied)")
        let remaining = try await store.history(owner: user, filter: HistoryFilter(), limit: 10_000, before: nil)
        #expect(remaining.map(\.fix.timestamp).sorted() == recent)
      }
    }
  }

  @Test func venuesImportListAndI18nOnPostgres() async throws {
    try await withDatabase { database, sandbox in
      try await withStore(database) { _ in
        let bad = sandbox.path("bad.csv")
        try """
        id,name_en,name_uk,type,latitude,longitude
        cafe-1,Blue Cup,Синя чашка,cafe,50.4501,30.5234
        cafe-2,Red Cup,Червона чашка,cafe,north,30.5240
        """.write(toFile: bad, atomically: true, encoding: .utf8)
        let failed = try await sandbox.admin(["venues", "import", bad], database: database.url)
        #expect(failed.status == 1 && failed.stderr.contains("line 3"), "\(failed)")
        let empty = try await sandbox.admin(
          ["venues", "list", "--near", "50.4501,30.5234", "--radius", "5000", "--json"], database: database.url)
        #expect((try empty.object()["items"] as? [Any])?.isEmpty == true, "\(empty)")

        let good = sandbox.path("good.csv")
        try """
        id,name_en,name_ru,name_uk,type,latitude,longitude,address,rating_sum,rating_count
        cafe-1,Blue Cup,Синяя чашка,Синя чашка,cafe,50.4501,30.5234,Khreshchatyk 1,9,2
        "cafe-2","Red Cup, Upstairs",Красная чашка,Червона чашка,cafe,50.4505,30.5240,"Khreshchatyk 3",,
        far-1,Far Away,,,restaurant,50.5501,30.5234,,,
        """.write(toFile: good, atomically: true, encoding: .utf8)
        let imported = try await sandbox.admin(["venues", "import", good, "--json"], database: database.url)
        #expect(imported.status == 0, "\(imported)")
        #expect(try imported.object()["imported"] as? Int == 3, "\(imported)")
        let list = try await sandbox.admin(
          ["venues", "list", "--near", "50.4501,30.5234", "--radius", "1000", "--language", "uk", "--json"],
          database: database.url)
        let items = try #require(try list.object()["items"] as? [[String: Any]], "\(list)")
        #expect(items.compactMap { $0["id"] as? String } == ["cafe-1", "cafe-2"], "\(list)")
        #expect(items.first?["name"] as? String == "Синя чашка", "\(list)")

        let german = sandbox.path("german.csv")
        try "id,name_en,name_de,latitude,longitude\nbar-1,Corner Bar,Eckkneipe,50.4502,30.5236\n"
          .write(toFile: german, atomically: true, encoding: .utf8)
        let noColumn = try await sandbox.admin(["venues", "import", german], database: database.url)
        #expect(noColumn.status == 1 && noColumn.stderr.contains("add-language"), "\(noColumn)")
        let added = try await sandbox.admin(["i18n", "add-language", "de", "--json"], database: database.url)
        #expect(try added.object()["added"] as? Bool == true, "\(added)")
        let germanImport = try await sandbox.admin(["venues", "import", german], database: database.url)
        #expect(germanImport.status == 0, "\(germanImport)")
        let inGerman = try await sandbox.admin(
          ["venues", "list", "--near", "50.4501,30.5234", "--radius", "100", "--language", "de", "--json"],
          database: database.url)
        let names = try #require(try inGerman.object()["items"] as? [[String: Any]]).compactMap {
          $0["name"] as? String
        }
        #expect(names.contains("Eckkneipe"), "\(inGerman)")
        let languages = try await sandbox.admin(["i18n", "languages", "--json"], database: database.url)
        let codes = try #require(try languages.json() as? [[String: Any]]).compactMap { $0["language"] as? String }
        #expect(codes.contains("de") && codes.contains("uk"), "\(languages)")
        let promotion = try await sandbox.admin(
          ["promotions", "create", "--venue", "cafe-1", "--name", "Morning", "--code", "AM", "--json"],
          database: database.url)
        #expect(promotion.status == 0, "\(promotion)")
        let promotions = try await sandbox.admin(["promotions", "list", "--venue", "cafe-1"], database: database.url)
        #expect(promotions.status == 0 && promotions.stdout.contains("Morning"), "\(promotions)")
      }
    }
  }

  @Test func backupIsAPgDumpCustomArchiveThatRestores() async throws {
    try await withDatabase { database, sandbox in
      try await withStore(database) { store in
        let anna = try await seedUser(store, email: "anna@example.com")
        try await seedFixes(
          store, user: anna, device: "anna-phone",
          fixes: try makeFixes(count: 300, start: 1_700_000_000_000, device: "anna-phone"))
      }
      let file = sandbox.path("meridian.dump")
      let backup = try await sandbox.admin(["db", "backup", file, "--json"], database: database.url)
      #expect(backup.status == 0, "\(backup)")
      let data = try Data(contentsOf: URL(fileURLWithPath: file))
      #expect(data.prefix(5) == Data("PGDMP".utf8), "not a pg_dump custom-format archive")
      #expect(try backup.object()["bytes"] as? Int == data.count, "\(backup)")
      #expect(try backup.object()["format"] as? String == "pg_dump", "\(backup)")
      #expect((try backup.object()["entries"] as? Int ?? 0) > 10, "\(backup)")
      let over = try await sandbox.admin(["db", "backup", file], database: database.url)
      #expect(over.status == 2, "an existing file needs --yes: \(over)")
      let replaced = try await sandbox.admin(["db", "backup", file, "--yes"], database: database.url)
      #expect(replaced.status == 0 && replaced.stdout.contains("pg_dump custom format"), "\(replaced)")

      // The archive restores into an empty database, which then answers like the original.
      try await PostgresTestDatabase.with { restored in
        let restore = try await ChildProcess.run(
          URL(fileURLWithPath: try pgRestore()), ["--no-owner", "--exit-on-error", "--dbname=\(restored.url)", file])
        #expect(restore.status == 0, "pg_restore failed: \(restore.output)")
        let original = try await sandbox.admin(["users", "list", "--json"], database: database.url)
        let copy = try await sandbox.admin(["users", "list", "--json"], database: restored.url)
        #expect(copy.status == 0, "\(copy)")
        #expect(copy.stdout == original.stdout)
        #expect((try copy.json() as? [[String: Any]])?.first?["fixes"] as? Int == 300, "\(copy)")
      }
    }
  }

  @Test func vacuumAnalyzesEveryTable() async throws {
    try await withDatabase { database, sandbox in
      let migrated = try await sandbox.admin(["db", "migrate"], database: database.url)
      #expect(migrated.status == 0, "\(migrated)")
      try await withStore(database) { store in
        _ = try await seedUser(store, email: "anna@example.com")
        let logger = Logger(label: "test")
        func vacuumed() async throws -> Int {
          try await store.client.query(
            """
            SELECT COUNT(*)::int FROM pg_stat_user_tables
            WHERE relname = 'users' AND last_vacuum IS NOT NULL AND last_analyze IS NOT NULL
            """, logger: logger
          ).collect().first?.decode(Int.self) ?? 0
        }
        #expect(try await vacuumed() == 0)
        let vacuum = try await sandbox.admin(["db", "vacuum", "--json"], database: database.url)
        #expect(vacuum.status == 0, "\(vacuum)")
        #expect((try vacuum.object()["bytesBefore"] as? Int ?? 0) > 0, "\(vacuum)")
        #expect((try vacuum.object()["bytesAfter"] as? Int ?? 0) > 0, "\(vacuum)")
        // The statistics arrive when the admin's backend has reported them; wait a little for them.
        var seen = 0
        for _ in 0..<50 where seen == 0 {
          _ = try await store.client.query("SELECT pg_stat_clear_snapshot()", logger: logger).collect()
          seen = try await vacuumed()
          if seen == 0 { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(seen == 1, "users was not vacuumed and analyzed")
      }
    }
  }

  @Test func sqliteFileWorkAndEnvironmentOnPostgres() async throws {
    try await withDatabase { database, sandbox in
      let migrated = try await sandbox.admin(["db", "migrate"], database: database.url)
      #expect(migrated.status == 0, "\(migrated)")
      let quick = try await sandbox.admin(["db", "check", "--quick"], database: database.url)
      #expect(quick.status == 2, "\(quick)")
      #expect(quick.stderr.contains("SQLite") && quick.stderr.contains("PostgreSQL"), "\(quick.stderr)")
      let both = try await sandbox.admin(
        ["users", "list", "--server", "http://127.0.0.1:1", "--token", "t"], database: database.url)
      #expect(both.status == 2, "\(both)")

      // MERIDIAN_DATABASE_URL is the database without --database, and wins over MERIDIAN_DATABASE.
      let fromEnvironment = try await sandbox.admin(
        ["db", "check", "--json"], database: nil,
        environment: ["MERIDIAN_DATABASE_URL": database.url, "MERIDIAN_DATABASE": sandbox.path("missing.sqlite")])
      #expect(fromEnvironment.status == 0, "\(fromEnvironment)")
      #expect(try fromEnvironment.object()["database"] as? String == database.url)
      // --database wins over both.
      let flag = try await sandbox.admin(
        ["users", "list"], database: sandbox.path("missing.sqlite"),
        environment: ["MERIDIAN_DATABASE_URL": database.url])
      #expect(flag.status == 3, "\(flag)")
    }
  }
}

/// `pg_restore`, where `meridian-admin db backup` finds `pg_dump`.
private func pgRestore() throws -> String {
  let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
  let candidates = path.split(separator: ":").map { "\($0)/pg_restore" } + ["/usr/lib/postgresql/15/bin/pg_restore"]
  return try #require(candidates.first { FileManager.default.isExecutableFile(atPath: $0) }, "no pg_restore")
}
