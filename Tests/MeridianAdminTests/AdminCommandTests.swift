import DomainKit
import Foundation
import GRDB
import MeridianSecrets
import MeridianServer
import MeridianStore
import MeridianStoreSQLite
import PersistenceKit
import Testing

@Suite("meridian-admin against a real database")
struct AdminCommandTests {
  @Test func migratePlanStatusApply() async throws {
    let sandbox = try AdminSandbox()
    let expected = SQLiteSchema.migrator.migrations.map(\.identifier)

    let plan = try await sandbox.admin(["db", "migrate", "--plan", "--json"])
    #expect(plan.status == 0, "\(plan)")
    let planned = try #require(try plan.object()["migrations"] as? [[String: Any]])
    #expect(planned.compactMap { $0["identifier"] as? String } == expected)
    let status = try await sandbox.admin(["db", "migrate", "--status", "--json"])
    let entries = try #require(try status.object()["migrations"] as? [[String: Any]])
    #expect(entries.compactMap { $0["state"] as? String } == Array(repeating: "pending", count: expected.count))
    #expect(try status.object()["upToDate"] as? Bool == false)
    #expect(!FileManager.default.fileExists(atPath: sandbox.database), "plan and status must not create the database")

    // Every other command refuses a database that does not exist (exit 3) instead of creating an empty one.
    let missing = try await sandbox.admin(["users", "list"])
    #expect(missing.status == 3, "\(missing)")

    let apply = try await sandbox.admin(["db", "migrate", "--json"])
    #expect(apply.status == 0, "\(apply)")
    let applied = try #require(try apply.object()["migrations"] as? [[String: Any]])
    #expect(applied.compactMap { $0["identifier"] as? String } == expected)
    let after = try await sandbox.admin(["db", "migrate", "--status", "--json"])
    let states = try #require(try after.object()["migrations"] as? [[String: Any]])
    #expect(states.compactMap { $0["state"] as? String } == Array(repeating: "applied", count: expected.count))
    #expect(try after.object()["upToDate"] as? Bool == true)
    let planAfter = try await sandbox.admin(["db", "migrate", "--plan", "--json"])
    #expect((try planAfter.object()["migrations"] as? [Any])?.isEmpty == true)
    let again = try await sandbox.admin(["db", "migrate", "--json"])
    #expect((try again.object()["migrations"] as? [Any])?.isEmpty == true)

    // The server's store accepts the database the CLI migrated (same ledger, nothing pending).
    let store = try sandbox.store()
    #expect(try store.database.migrationStatus(SQLiteSchema.migrator).isUpToDate)
    let check = try await sandbox.admin(["db", "check", "--json"])
    #expect(check.status == 0, "\(check)")
    #expect(try check.object()["ok"] as? Bool == true)
  }

  @Test func anOlderSchemaCanBeBackedUpButNotChanged() async throws {
    let sandbox = try AdminSandbox()
    let database = try SQLiteDatabase.open(at: sandbox.database)
    try database.migrate(SQLiteSchema.migrator, upTo: "2026-11-22 devices and fixes")
    let pending = try database.migrationStatus(SQLiteSchema.migrator).pending.count
    try database.close()
    let backup = try await sandbox.admin(["db", "backup", sandbox.path("before-upgrade.sqlite"), "--json"])
    #expect(backup.status == 0, "\(backup)")
    let check = try await sandbox.admin(["db", "check", "--json"])
    #expect(check.status == 1, "pending migrations are a problem: \(check)")
    #expect((try check.object()["pendingMigrations"] as? [String])?.count == pending)
    let users = try await sandbox.admin(["users", "list"])
    #expect(users.status == 1, "\(users)")
    #expect(users.stderr.contains("db migrate"), "\(users.stderr)")
    let plan = try await sandbox.admin(["db", "migrate", "--plan", "--json"])
    #expect((try plan.object()["migrations"] as? [Any])?.count == pending)
  }

  @Test func backupWhileWritingHoldsEveryAcknowledgedFixAndPassesCheck() async throws {
    let sandbox = try AdminSandbox()
    let store = try sandbox.store()
    let user = try await seedUser(store, email: "writer@example.com")
    // Enough pages that the copy takes a while.
    try await seedFixes(
      store, user: user, device: "seed", fixes: try makeFixes(count: 30_000, start: 1_600_000_000_000, device: "seed"))
    let acknowledged = Acknowledged()
    _ = try await store.claimDevice("live", owner: user, now: Timestamp.milliseconds(Date()))
    let writer = Task {
      await writeContinuously(store, user: user, device: "live", start: 1_700_000_000_000, into: acknowledged)
    }
    // Until the writer has stored something (more than 200 ms on a loaded machine).
    for _ in 0..<200 where acknowledged.snapshot.isEmpty { try await Task.sleep(for: .milliseconds(50)) }
    let beforeBackup = acknowledged.snapshot
    let backupPath = sandbox.path("backup.sqlite")
    let backup = try await sandbox.admin(["db", "backup", backupPath, "--json"])
    try await Task.sleep(for: .milliseconds(100))
    writer.cancel()
    await writer.value
    #expect(acknowledged.errors.isEmpty, "\(acknowledged.errors)")
    #expect(backup.status == 0, "\(backup)")
    #expect(try backup.object()["integrity"] as? String == "ok")
    #expect(!beforeBackup.isEmpty)
    #expect(acknowledged.snapshot.count > beforeBackup.count, "the writer kept writing during the backup")

    let check = try await sandbox.admin(["db", "check", "--json"], database: backupPath)
    #expect(check.status == 0, "\(check)")
    #expect(try check.object()["ok"] as? Bool == true)
    let copy = try SQLiteDatabase.open(at: backupPath)
    defer { try? copy.close() }
    let stored = Set(
      try await copy.read { db in try Int64.fetchAll(db, sql: "SELECT timestamp FROM fixes WHERE device_id = 'live'") })
    // The copy is one snapshot: whole transactions (batches of 50) only.
    #expect(stored.count % 50 == 0, "\(stored.count) fixes: a transaction was copied in part")
    let lost = Set(beforeBackup).subtracting(stored)
    #expect(lost.isEmpty, "\(lost.count) fixes acknowledged before the backup are missing from it")
    let seeded = try await copy.read { db in
      try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM fixes WHERE device_id = 'seed'")
    }
    #expect(seeded == 30_000)

    // An existing file is only replaced with --yes.
    let refused = try await sandbox.admin(["db", "backup", backupPath])
    #expect(refused.status == 2, "\(refused)")
  }

  @Test func userDeletionLeavesNoRowOfTheUser() async throws {
    let sandbox = try AdminSandbox()
    let store = try sandbox.store()
    let now = Timestamp.milliseconds(Date())
    let doomed = try await seedUser(store, email: "doomed@example.com")
    let friend = try await seedUser(store, email: "friend@example.com")
    let phoneUser = UserID("phone-\(UUID().uuidString.lowercased())")
    _ = try await store.createAccount(id: phoneUser, credential: .phone("+380501112233"), passwordHash: nil, now: now)
    try await store.replaceOTP(phone: "+380501112233", codeHash: "h", expiresAt: now + 60_000, maxAttempts: 5, now: now)

    try await seedFixes(
      store, user: doomed, device: "d-phone",
      fixes: try makeFixes(count: 1500, start: 1_700_000_000_000, device: "d-phone"))
    try await seedFixes(
      store, user: doomed, device: "d-car", fixes: try makeFixes(count: 20, start: 1_700_000_000_000, device: "d-car"))
    try await seedFixes(
      store, user: friend, device: "f-phone",
      fixes: try makeFixes(count: 30, start: 1_700_000_000_000, device: "f-phone"))
    try await store.insertToken(
      hash: SecretHash.sha256("t1"), userID: doomed, createdAt: now, expiresAt: now + 1_000_000)
    try await store.insertToken(
      hash: SecretHash.sha256("t2"), userID: doomed, createdAt: now, expiresAt: now + 1_000_000)
    try await store.insertToken(
      hash: SecretHash.sha256("t3"), userID: friend, createdAt: now, expiresAt: now + 1_000_000)
    try await store.saveIdempotentResponse(
      StoredResponse(requestHash: "r", status: 200, body: Data("{}".utf8)), userID: doomed, key: "k1", now: now)
    // The doomed user's family has the friend; the friend's family has the doomed user; a custom group; a grant.
    var doomedFamily = try #require(try await store.groups(owner: doomed).first { $0.kind == .family })
    doomedFamily.members = [friend]
    try await store.saveGroup(doomedFamily)
    var friendFamily = try #require(try await store.groups(owner: friend).first { $0.kind == .family })
    friendFamily.members = [doomed]
    try await store.saveGroup(friendFamily)
    try await store.saveGroup(
      try Group(
        id: GroupID("custom-\(doomed)"), ownerID: doomed, name: "Hiking", members: [friend],
        visibility: GroupVisibility(location: true, fields: [])))
    var sharing = try await store.sharing(owner: friend)
    sharing.viewerGrants[doomed] = .some(nil)
    try await store.saveSharing(sharing, owner: friend)

    let refused = try await sandbox.admin(["users", "delete", "doomed@example.com"])
    #expect(refused.status == 2, "\(refused)")
    let preview = try await sandbox.admin(["users", "delete", "doomed@example.com", "--dry-run", "--json"])
    #expect(preview.status == 0, "\(preview)")
    let result = try await sandbox.admin(["users", "delete", "doomed@example.com", "--yes", "--json"])
    #expect(result.status == 0, "\(result)")
    let tables = try #require(try result.object()["tables"] as? [[String: Any]])
    let counts = Dictionary(
      uniqueKeysWithValues: tables.compactMap { row in (row["table"] as? String).map { ($0, row["rows"] as? Int ?? -1) }
      })
    #expect(counts["fixes"] == 1520)
    #expect(counts["devices"] == 2)
    #expect(counts["tokens"] == 2)
    #expect(counts["groups"] == 4)
    #expect(counts["group_members"] == 3)
    #expect(counts["idempotency_keys"] == 1)
    #expect(counts["credentials"] == 1)
    #expect(counts["profiles"] == 1)
    #expect(counts["sharing"] == 1)
    #expect(counts["sharing (grants to the user)"] == 1)
    #expect(counts["users"] == 1)
    let previewTotal = try preview.object()["total"] as? Int
    #expect(previewTotal == (try result.object()["total"] as? Int))

    // No cell of any table mentions the user any more.
    let leftovers = try await store.database.read { db -> [String] in
      var found: [String] = []
      let tables = try String.fetchAll(
        db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
      for table in tables {
        for column in try db.columns(in: table) {
          let sql = """
            SELECT COUNT(*) FROM \(table.quotedDatabaseIdentifier)
            WHERE instr(CAST(\(column.name.quotedDatabaseIdentifier) AS TEXT), ?) > 0
            """
          let count = try Int.fetchOne(db, sql: sql, arguments: [doomed.rawValue]) ?? 0
          if count > 0 { found.append("\(table).\(column.name): \(count)") }
        }
      }
      return found
    }
    #expect(leftovers.isEmpty, "\(leftovers)")
    #expect(try store.database.foreignKeyCheck().isEmpty)

    // The friend keeps everything of their own.
    #expect(try await store.history(owner: friend, filter: HistoryFilter(), limit: 100, before: nil).count == 30)
    #expect(try await store.groups(owner: friend).count == 3)
    #expect(try await store.user(forTokenHash: SecretHash.sha256("t3"), now: now) == friend)
    #expect(try await store.sharing(owner: friend).viewerGrants.isEmpty)

    // A phone user's pending one-time code goes with the account.
    let phoneDelete = try await sandbox.admin(["users", "delete", "+380501112233", "--yes", "--json"])
    #expect(phoneDelete.status == 0, "\(phoneDelete)")
    let otpLeft = try await store.database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM otp_codes") }
    #expect(otpLeft == 0)

    let gone = try await sandbox.admin(["users", "show", doomed.rawValue])
    #expect(gone.status == 3, "\(gone)")
  }

  @Test func retentionDeletesOldFixesInBatchesWhileTheServerWrites() async throws {
    let sandbox = try AdminSandbox()
    let store = try sandbox.store()
    let user = try await seedUser(store, email: "old@example.com")
    let now = Timestamp.milliseconds(Date())
    let day: Int64 = 86_400_000
    try await seedFixes(
      store, user: user, device: "old", fixes: try makeFixes(count: 3000, start: now - 400 * day, device: "old"))
    let recent = try await seedFixes(
      store, user: user, device: "recent", fixes: try makeFixes(count: 500, start: now - 30 * day, device: "recent"))

    let refused = try await sandbox.admin(["retention", "apply", "--older-than", "365d"])
    #expect(refused.status == 2, "\(refused)")
    let badDuration = try await sandbox.admin(["retention", "apply", "--older-than", "a year", "--dry-run"])
    #expect(badDuration.status == 2, "\(badDuration)")
    let dryRun = try await sandbox.admin(["retention", "apply", "--older-than", "365d", "--dry-run", "--json"])
    #expect(dryRun.status == 0, "\(dryRun)")
    #expect(try dryRun.object()["deleted"] as? Int == 3000)
    #expect(try await store.history(owner: user, filter: HistoryFilter(), limit: 10_000, before: nil).count == 3500)

    let acknowledged = Acknowledged()
    _ = try await store.claimDevice("live", owner: user, now: now)
    let writer = Task {
      await writeContinuously(store, user: user, device: "live", start: now - day, batchSize: 20, into: acknowledged)
    }
    try await Task.sleep(for: .milliseconds(100))
    let result = try await sandbox.admin([
      "retention", "apply", "--older-than", "365d", "--batch-size", "200", "--yes", "--json",
    ])
    writer.cancel()
    await writer.value
    #expect(result.status == 0, "\(result)")
    let report = try result.object()
    #expect(report["deleted"] as? Int == 3000)
    #expect((report["batches"] as? Int ?? 0) >= 15)
    #expect(acknowledged.errors.isEmpty, "the server's writes failed during retention: \(acknowledged.errors)")
    #expect(!acknowledged.snapshot.isEmpty)

    let remaining = try await store.database.read { db in
      try Int64.fetchAll(db, sql: "SELECT timestamp FROM fixes WHERE user_id = ?", arguments: [user.rawValue])
    }
    #expect(remaining.allSatisfy { $0 >= now - 365 * day })
    #expect(Set(recent + acknowledged.snapshot).isSubset(of: Set(remaining)))
  }

  @Test func venueImportIsAllOrNothingAndNamesTheBadLine() async throws {
    let sandbox = try AdminSandbox()
    _ = try sandbox.store()
    let bad = sandbox.path("bad.csv")
    try """
    id,name_en,name_uk,type,latitude,longitude,address
    cafe-1,Blue Cup,Синя чашка,cafe,50.4501,30.5234,Khreshchatyk 1
    cafe-2,Red Cup,Червона чашка,cafe,north,30.5240,Khreshchatyk 3
    cafe-3,Green Cup,Зелена чашка,cafe,50.4510,30.5250,Khreshchatyk 5
    """.write(toFile: bad, atomically: true, encoding: .utf8)
    let failed = try await sandbox.admin(["venues", "import", bad])
    #expect(failed.status == 1, "\(failed)")
    #expect(failed.stderr.contains("line 3"), "\(failed.stderr)")
    #expect(failed.stderr.contains("latitude"), "\(failed.stderr)")
    let empty = try await sandbox.admin(["venues", "list", "--near", "50.4501,30.5234", "--radius", "5000", "--json"])
    #expect((try empty.object()["items"] as? [Any])?.isEmpty == true, "\(empty)")

    let badGeo = sandbox.path("bad.geojson")
    try """
    {"type": "FeatureCollection", "features": [
      {"type": "Feature", "geometry": {"type": "Point", "coordinates": [30.52, 50.45]},
       "properties": {"id": "g-1", "name": {"en": "Museum", "uk": "Музей"}, "type": "museum"}},
      {"type": "Feature", "geometry": {"type": "Point", "coordinates": [30.52, 95.0]},
       "properties": {"id": "g-2", "name": {"en": "Nowhere"}}}
    ]}
    """.write(toFile: badGeo, atomically: true, encoding: .utf8)
    let failedGeo = try await sandbox.admin(["venues", "import", badGeo])
    #expect(failedGeo.status == 1, "\(failedGeo)")
    #expect(failedGeo.stderr.contains("feature 2"), "\(failedGeo.stderr)")

    let german = sandbox.path("german.csv")
    try """
    id,name_en,name_de,latitude,longitude
    bar-1,Corner Bar,Eckkneipe,50.4502,30.5236
    """.write(toFile: german, atomically: true, encoding: .utf8)
    let noColumn = try await sandbox.admin(["venues", "import", german])
    #expect(noColumn.status == 1, "\(noColumn)")
    #expect(noColumn.stderr.contains("add-language"), "\(noColumn.stderr)")

    let good = sandbox.path("good.csv")
    try """
    id,name_en,name_ru,name_uk,type,latitude,longitude,address,rating_sum,rating_count
    cafe-1,Blue Cup,Синяя чашка,Синя чашка,cafe,50.4501,30.5234,Khreshchatyk 1,9,2
    "cafe-2","Red Cup, Upstairs",Красная чашка,Червона чашка,cafe,50.4505,30.5240,"Khreshchatyk 3",,
    far-1,Far Away,,,restaurant,50.5501,30.5234,,,
    """.write(toFile: good, atomically: true, encoding: .utf8)
    let imported = try await sandbox.admin(["venues", "import", good, "--json"])
    #expect(imported.status == 0, "\(imported)")
    #expect(try imported.object()["imported"] as? Int == 3)
    let list = try await sandbox.admin([
      "venues", "list", "--near", "50.4501,30.5234", "--radius", "1000", "--language", "uk", "--json",
    ])
    #expect(list.status == 0, "\(list)")
    let items = try #require(try list.object()["items"] as? [[String: Any]])
    #expect(items.compactMap { $0["id"] as? String } == ["cafe-1", "cafe-2"])
    #expect(items.first?["name"] as? String == "Синя чашка")
    let table = try await sandbox.admin(["venues", "list", "--near", "50.4501,30.5234", "--radius", "1000"])
    #expect(table.stdout.contains("Red Cup, Upstairs"), "\(table)")
    // Keyset pages: the first page names its cursor, which lists the rest; a cursor of another order is refused.
    let first = try await sandbox.admin(["venues", "list", "--near", "50.4501,30.5234", "--limit", "1", "--json"])
    let cursor = try #require(try first.object()["nextCursor"] as? String, "\(first)")
    let more = try await sandbox.admin(["venues", "list", "--near", "50.4501,30.5234", "--limit", "1"])
    #expect(more.stdout.contains("more with --cursor \(cursor)"), "\(more)")
    let rest = try await sandbox.admin([
      "venues", "list", "--near", "50.4501,30.5234", "--limit", "1", "--cursor", cursor, "--json",
    ])
    #expect(try rest.object()["nextCursor"] == nil, "\(rest)")
    let second = try #require(try rest.object()["items"] as? [[String: Any]])
    #expect(second.compactMap { $0["id"] as? String } == ["cafe-2"])
    let wrongOrder = try await sandbox.admin([
      "venues", "list", "--near", "50.4501,30.5234", "--sort", "rating", "--cursor", cursor,
    ])
    #expect(wrongOrder.status != 0 && wrongOrder.stderr.contains("cursor"), "\(wrongOrder)")

    let added = try await sandbox.admin(["i18n", "add-language", "de", "--json"])
    #expect(added.status == 0, "\(added)")
    #expect(try added.object()["added"] as? Bool == true)
    let germanImport = try await sandbox.admin(["venues", "import", german, "--json"])
    #expect(germanImport.status == 0, "\(germanImport)")
    let german1 = try await sandbox.admin([
      "venues", "list", "--near", "50.4501,30.5234", "--radius", "100", "--language", "de", "--json",
    ])
    let names = try #require(try german1.object()["items"] as? [[String: Any]]).compactMap { $0["name"] as? String }
    #expect(names.contains("Eckkneipe"), "\(german1)")
    // The server's migrations are still up to date: the language went into the admin's own ledger.
    let check = try await sandbox.admin(["db", "check", "--json"])
    #expect(check.status == 0, "\(check)")
    let i18nCheck = try await sandbox.admin(["i18n", "check", "--json"])
    #expect(i18nCheck.status == 1, "far-1 has no Russian name: \(i18nCheck)")
    let missing = try #require(try i18nCheck.object()["missing"] as? [[String: Any]])
    // Venues are places: their names are the titles of `places`.
    let russianNames = try #require(
      missing.first { $0["language"] as? String == "ru" && $0["field"] as? String == "title" })
    #expect((russianNames["examples"] as? [String])?.contains("far-1") == true, "\(i18nCheck)")
    #expect(!missing.contains { $0["field"] as? String == "description" }, "no venue has a description: \(i18nCheck)")
  }

  /// Live only (issue 39 §4): the account keeps no history, so `history import` refuses it and says why.
  @Test func historyImportIsRefusedForALiveOnlyAccount() async throws {
    let sandbox = try AdminSandbox()
    let store = try sandbox.store()
    let anna = try await seedUser(store, email: "anna@example.com")
    #expect(try await store.setLiveOnly(anna, true, deletingHistory: false, now: 1) == 0)
    let file = sandbox.path("anna.csv")
    try "timestamp,latitude,longitude\n2026-11-01T08:00:00Z,50.45,30.52\n"
      .write(toFile: file, atomically: true, encoding: .utf8)
    let refused = try await sandbox.admin(["history", "import", "--user", "anna@example.com", file])
    #expect(refused.status == 1, "\(refused)")
    #expect(refused.stderr.contains("live only") && refused.stderr.contains("Nothing was imported"), "\(refused)")
    #expect(try await store.history(owner: anna, filter: HistoryFilter(), limit: 10, before: nil).isEmpty)
  }

  /// A file's times obey the server's rule for every fix from outside: a point dated before 2000 (seconds read as
  /// milliseconds), or far ahead of the clock (past the end of what the history map counts), refuses the whole file.
  @Test func historyImportRefusesPointsDatedBefore2000OrAheadOfTheClock() async throws {
    let sandbox = try AdminSandbox()
    let store = try sandbox.store()
    let anna = try await seedUser(store, email: "anna@example.com")
    let file = sandbox.path("anna.csv")
    for (stamp, words) in [("1999-12-31T23:59:59Z", "before 2000-01-01"), ("2400-01-01T00:00:00Z", "s ahead of")] {
      try "timestamp,latitude,longitude\n2026-11-01T08:00:00Z,50.45,30.52\n\(stamp),50.45,30.52\n"
        .write(toFile: file, atomically: true, encoding: .utf8)
      let refused = try await sandbox.admin(["history", "import", "--user", "anna@example.com", file])
      #expect(refused.status == 1, "\(refused)")
      #expect(refused.stderr.contains("point 2"), "\(refused.stderr)")
      #expect(refused.stderr.contains(words) && refused.stderr.contains("Nothing was imported"), "\(refused.stderr)")
    }
    #expect(try await store.history(owner: anna, filter: HistoryFilter(), limit: 10, before: nil).isEmpty)
  }

  /// A zone that stores nothing holds for a file the admin imports as for every fix that arrives: the points inside it
  /// are not stored, those outside it and inside a zone that only hides are.
  @Test func historyImportLeavesOutPointsInAZoneThatStoresNothing() async throws {
    let sandbox = try AdminSandbox()
    let store = try sandbox.store()
    let anna = try await seedUser(store, email: "anna@example.com")
    let kims = PrivacyZone(id: "kims", name: "Kim's", latitude: 50.40, longitude: 30.40, radius: 200, store: false)
    let home = PrivacyZone(id: "home", name: "Home", latitude: 50.45, longitude: 30.52, radius: 200)
    for zone in [kims, home] { #expect(try await store.savePrivacyZone(zone, owner: anna, now: 1, maximumCount: 10)) }
    let file = sandbox.path("anna.csv")
    try """
    timestamp,latitude,longitude
    2026-11-01T08:00:00Z,50.45,30.52
    2026-11-01T08:01:00Z,50.4001,30.4001
    2026-11-01T08:02:00Z,50.30,30.30
    2026-11-01T08:03:00Z,50.3999,30.3999

    """.write(toFile: file, atomically: true, encoding: .utf8)
    let imported = try await sandbox.admin(["history", "import", "--user", "anna@example.com", file, "--json"])
    #expect(imported.status == 0, "\(imported)")
    let summary = try imported.object()
    #expect(summary["read"] as? Int == 4 && summary["accepted"] as? Int == 2, "\(imported)")
    #expect(summary["withheld"] as? Int == 2, "\(imported)")
    let stored = try await store.history(owner: anna, filter: HistoryFilter(), limit: 10, before: nil)
    #expect(stored.map(\.fix.latitude).sorted() == [50.30, 50.45])
    let text = try await sandbox.admin(["history", "import", "--user", "anna@example.com", file])
    #expect(text.stdout.contains("2 in privacy zones that store nothing were not stored"), "\(text)")
  }

  @Test func historyExportAndImportMergeWithoutDuplicates() async throws {
    let sandbox = try AdminSandbox()
    let store = try sandbox.store()
    let anna = try await seedUser(store, email: "anna@example.com")
    let boris = try await seedUser(store, email: "boris@example.com")
    try await seedFixes(
      store, user: anna, device: "anna-phone",
      fixes: try makeFixes(count: 2500, start: 1_700_000_000_000, device: "anna-phone"))

    for format in ["csv", "gpx", "geojson"] {
      let file = sandbox.path("anna.\(format)")
      let export = try await sandbox.admin([
        "history", "export", "--user", "anna@example.com", "--format", format, "--output", file, "--json",
      ])
      #expect(export.status == 0, "\(export)")
      #expect(try export.object()["fixes"] as? Int == 2500)
      let imported = try await sandbox.admin([
        "history", "import", "--user", "boris@example.com", file, "--device", "boris-\(format)", "--json",
      ])
      #expect(imported.status == 0, "\(imported)")
      #expect(try imported.object()["accepted"] as? Int == 2500, "\(imported)")
      let again = try await sandbox.admin([
        "history", "import", "--user", "boris@example.com", file, "--device", "boris-\(format)", "--json",
      ])
      #expect(try again.object()["accepted"] as? Int == 0)
      #expect(try again.object()["duplicates"] as? Int == 2500)
    }
    // A time range; the document to standard output.
    let ranged = try await sandbox.admin([
      "history", "export", "--user", anna.rawValue, "--format", "geojson", "--from", "1700000000000", "--to",
      "1700000010000",
    ])
    #expect(ranged.status == 0, "\(ranged)")
    let features = try #require(try ranged.object()["features"] as? [Any])
    #expect(features.count == 10)

    // The CSV keeps Anna's device ids, which Anna owns: importing it into Boris is refused, nothing stored.
    let stolen = try await sandbox.admin(["history", "import", "--user", boris.rawValue, sandbox.path("anna.csv")])
    #expect(stolen.status == 1, "\(stolen)")
    let broken = sandbox.path("broken.csv")
    try "timestamp,latitude,longitude\n2026-11-01T08:00:00Z,50.45,30.52\n2026-11-01T08:01:00Z,50.45,300\n"
      .write(toFile: broken, atomically: true, encoding: .utf8)
    let rejected = try await sandbox.admin(["history", "import", "--user", boris.rawValue, broken])
    #expect(rejected.status == 1, "\(rejected)")
    #expect(rejected.stderr.contains("line 3"), "\(rejected.stderr)")
    let borisFixes = try await store.history(owner: boris, filter: HistoryFilter(), limit: 10_000, before: nil)
    #expect(borisFixes.count == 7500)
  }

  @Test func usersTokensGroupsAndExitCodes() async throws {
    let sandbox = try AdminSandbox()
    let store = try sandbox.store()
    let now = Timestamp.milliseconds(Date())

    let created = try await sandbox.admin(
      ["users", "create", "--email", "Olena@Example.com", "--name", "Olena", "--bcrypt-cost", "4", "--json"],
      stdin: "a long password\n")
    #expect(created.status == 0, "\(created)")
    let id = UserID(try #require(try created.object()["id"] as? String))
    let (account, hash) = try #require(try await store.account(for: .email("olena@example.com")))
    #expect(account.id == id)
    #expect(hash?.hasPrefix("$2") == true)
    let duplicate = try await sandbox.admin(
      ["users", "create", "--email", "olena@example.com", "--bcrypt-cost", "4"], stdin: "a long password\n")
    #expect(duplicate.status == 1, "\(duplicate)")
    let shortPassword = try await sandbox.admin(
      ["users", "create", "--email", "x@example.com", "--bcrypt-cost", "4"], stdin: "short\n")
    #expect(shortPassword.status == 2, "\(shortPassword)")
    let phone = try await sandbox.admin(["users", "create", "--phone", "+380 50 123 45 67", "--json"])
    #expect(phone.status == 0, "\(phone)")

    try await store.insertToken(
      hash: SecretHash.sha256("secret-1"), userID: id, createdAt: now, expiresAt: now + 100_000)
    try await store.insertToken(
      hash: SecretHash.sha256("secret-2"), userID: id, createdAt: now, expiresAt: now + 100_000)
    let tokens = try await sandbox.admin(["tokens", "list", "--user", "olena@example.com", "--json"])
    let list = try #require(try tokens.json() as? [[String: Any]])
    #expect(list.count == 2)
    let tokenID = try #require(list.first?["id"] as? String)
    let noYes = try await sandbox.admin(["tokens", "revoke", tokenID])
    #expect(noYes.status == 2, "\(noYes)")
    let revoked = try await sandbox.admin(["tokens", "revoke", tokenID, "--yes", "--json"])
    #expect(try revoked.object()["revoked"] as? Int == 1, "\(revoked)")
    let unknownToken = try await sandbox.admin(["tokens", "revoke", "00000000ffff", "--yes"])
    #expect(unknownToken.status == 3, "\(unknownToken)")
    let notHex = try await sandbox.admin(["tokens", "revoke", "zzzzzzzzzz", "--yes"])
    #expect(notHex.status == 2, "\(notHex)")
    let all = try await sandbox.admin(["tokens", "revoke", "--user", id.rawValue, "--yes", "--json"])
    #expect(try all.object()["revoked"] as? Int == 1)
    #expect(try await store.user(forTokenHash: SecretHash.sha256("secret-1"), now: now) == nil)
    #expect(try await store.user(forTokenHash: SecretHash.sha256("secret-2"), now: now) == nil)

    try await store.insertToken(
      hash: SecretHash.sha256("secret-3"), userID: id, createdAt: now, expiresAt: now + 100_000)
    let disabled = try await sandbox.admin(["users", "disable", "olena@example.com", "--json"])
    #expect(try disabled.object()["changed"] as? Bool == true)
    #expect(try await store.user(forTokenHash: SecretHash.sha256("secret-3"), now: now) == nil)
    let enabled = try await sandbox.admin(["users", "enable", "olena@example.com", "--json"])
    #expect(try enabled.object()["disabled"] as? Bool == false)
    #expect(try await store.user(forTokenHash: SecretHash.sha256("secret-3"), now: now) == id)

    let groups = try await sandbox.admin(["groups", "list", "--user", "olena@example.com", "--json"])
    let kinds = try #require(try groups.json() as? [[String: Any]]).compactMap { $0["kind"] as? String }
    #expect(kinds == ["family", "friends", "blacklist"])

    let unknown = try await sandbox.admin(["users", "show", "nobody@example.com"])
    #expect(unknown.status == 3, "\(unknown)")
    let badOption = try await sandbox.admin(["users", "list", "--frobnicate"])
    #expect(badOption.status == 2, "\(badOption)")
    let noCommand = try await sandbox.admin(["frobnicate"], database: nil)
    #expect(noCommand.status == 2, "\(noCommand)")
    let help = try await sandbox.admin(["--help"], database: nil)
    #expect(help.status == 0 && help.stdout.contains("Exit codes"), "\(help)")
  }

  @Test func everyJSONOutputParses() async throws {
    let sandbox = try AdminSandbox()
    let store = try sandbox.store()
    let user = try await seedUser(store, email: "json@example.com")
    let now = Timestamp.milliseconds(Date())
    try await seedFixes(
      store, user: user, device: "json-phone",
      fixes: try makeFixes(count: 100, start: now - 3_600_000, device: "json-phone"))
    try await store.insertToken(hash: SecretHash.sha256("json"), userID: user, createdAt: now, expiresAt: now + 100_000)
    let venues = sandbox.path("venues.geojson")
    try """
    {"type": "FeatureCollection", "features": [
      {"type": "Feature", "id": "m-1", "geometry": {"type": "Point", "coordinates": [30.5234, 50.4501]},
       "properties": {"name": {"en": "Museum", "ru": "Музей", "uk": "Музей"}, "venueType": "museum",
                      "rating": {"sum": 14, "count": 3}, "keywords": ["art", "history"], "timeZone": "Europe/Kyiv"}}
    ]}
    """.write(toFile: venues, atomically: true, encoding: .utf8)
    let catalog = sandbox.path("Localizable.xcstrings")
    try exampleCatalog.write(toFile: catalog, atomically: true, encoding: .utf8)
    let broken = sandbox.path("Broken.xcstrings")
    try brokenCatalog.write(toFile: broken, atomically: true, encoding: .utf8)

    let commands: [[String]] = [
      ["db", "migrate", "--plan"], ["db", "migrate", "--status"], ["db", "migrate"], ["db", "check"],
      ["db", "backup", sandbox.path("copy.sqlite")], ["db", "vacuum"], ["users", "list"],
      ["users", "show", user.rawValue],
      ["users", "disable", user.rawValue], ["users", "enable", user.rawValue],
      ["users", "delete", user.rawValue, "--dry-run"], ["tokens", "list"], ["tokens", "list", "--all"],
      ["groups", "list", "--user", user.rawValue],
      ["history", "export", "--user", user.rawValue, "--format", "csv", "--output", sandbox.path("h.csv")],
      ["history", "import", "--user", user.rawValue, sandbox.path("h.csv")],
      ["retention", "apply", "--older-than", "365d", "--dry-run"],
      ["retention", "apply", "--older-than", "365d", "--yes"], ["venues", "import", venues],
      ["promotions", "create", "--venue", "m-1", "--name", "Free entry", "--code", "FREE", "--audience", "special"],
      ["promotions", "list", "--venue", "m-1"], ["promotions", "stats", "--venue", "m-1"],
      ["venues", "list", "--near", "50.45,30.52", "--radius", "2000"], ["stats"], ["i18n", "languages"],
      ["i18n", "add-language", "pt-BR"], ["i18n", "check"], ["i18n", "import-catalog", catalog],
      ["i18n", "import-catalog", broken], ["i18n", "languages"], ["i18n", "check"],
      ["tokens", "revoke", "--user", user.rawValue, "--yes"],
      ["users", "delete", user.rawValue, "--yes"],
    ]
    for command in commands {
      let run = try await sandbox.admin(command + ["--json"])
      #expect([0, 1].contains(run.status), "\(run)")
      #expect(throws: Never.self, "\(run)") { _ = try run.json() }
    }
    let stats = try await sandbox.admin(["stats", "--json"])
    let perDay = try #require(try stats.object()["fixesPerDay"] as? [[String: Any]])
    #expect(perDay.count == 7)
  }
}

@Suite("meridian-admin promotions")
struct AdminPromotionTests {
  @Test func createListAndEligibleAudience() async throws {
    let sandbox = try AdminSandbox()
    let store = try sandbox.store()
    let venues = sandbox.path("venues.csv")
    try """
    id,name_en,type,latitude,longitude,time_zone
    cafe-1,Blue Cup,cafe,50.4500,30.5200,Europe/Kyiv
    """.write(toFile: venues, atomically: true, encoding: .utf8)
    #expect(try await sandbox.admin(["venues", "import", venues]).status == 0)

    let now = Timestamp.milliseconds(Date())
    let day: Int64 = 86_400_000
    // Passes by on three days without stopping: eligible. Stays 20 minutes once: a visit, not eligible.
    let passer = try await seedUser(store, email: "passer@example.com")
    let visitor = try await seedUser(store, email: "visitor@example.com")
    let faraway = try await seedUser(store, email: "far@example.com")
    var passes: [LocationFix] = []
    var stays: [LocationFix] = []
    for daysAgo in 1...3 {
      let start = now - Int64(daysAgo) * day
      passes += try makeFixes(count: 2, start: start, device: "passer-phone", step: 30_000)
      // Then on elsewhere, so each pass is a run of its own.
      passes.append(
        try LocationFix(deviceID: "passer-phone", timestamp: start + 600_000, latitude: 50.46, longitude: 30.52))
      stays += try makeFixes(count: 2, start: start, device: "visitor-phone", step: 30_000)
    }
    stays += try makeFixes(count: 21, start: now - 5 * day, device: "visitor-phone", step: 60_000)
    try await seedFixes(store, user: passer, device: "passer-phone", fixes: passes)
    try await seedFixes(store, user: visitor, device: "visitor-phone", fixes: stays)
    try await seedFixes(
      store, user: faraway, device: "far-phone",
      fixes: try (0..<3).map { index in
        try LocationFix(
          deviceID: "far-phone", timestamp: now - Int64(index + 1) * day, latitude: 49.84, longitude: 24.03)
      })

    let created = try await sandbox.admin([
      "promotions", "create", "--venue", "cafe-1", "--name", "Morning coffee", "--code", "COFFEE", "--audience",
      "special", "--old-price", "450", "--new-price", "300", "--id", "p-1", "--json",
    ])  // no daily window: the eligible count below is of promotions running now, whatever the hour of the run
    #expect(created.status == 0, "\(created)")
    let general = try await sandbox.admin([
      "promotions", "create", "--venue", "cafe-1", "--name", "Cake", "--code", "CAKE", "--json",
    ])
    #expect(general.status == 0, "\(general)")
    let unknownVenue = try await sandbox.admin([
      "promotions", "create", "--venue", "nowhere", "--name", "X", "--code", "X",
    ])
    #expect(unknownVenue.status == 3, "\(unknownVenue)")
    let badWindow = try await sandbox.admin([
      "promotions", "create", "--venue", "cafe-1", "--name", "X", "--code", "X", "--window", "7-11",
    ])
    #expect(badWindow.status == 2, "\(badWindow)")

    let list = try await sandbox.admin(["promotions", "list", "--venue", "cafe-1", "--json"])
    let promotions = try #require(try list.json() as? [[String: Any]])
    #expect(promotions.count == 2)
    // Each entry is the promotion with its advertiser's state and audience rule.
    #expect(
      promotions.compactMap { $0["promotion"] as? [String: Any] }
        .contains { $0["id"] as? String == "p-1" && $0["audience"] as? String == "special" }, "\(list)")
    let stats = try await sandbox.admin(["promotions", "stats", "--venue", "cafe-1", "--json"])
    #expect(stats.status == 0, "\(stats)")
    #expect(try stats.object()["eligible"] as? Int == 1, "\(stats)")
    #expect(try stats.object()["promotions"] as? Int == 2)
    #expect(try stats.object()["shown"] as? Int == 0 && stats.object()["redeemed"] as? Int == 0)

    // What the server records: offers when it lists a venue's promotions to someone, and redemptions.
    let cake = PromotionID(try #require(try general.object()["id"] as? String))
    try await store.recordOffers(["p-1", cake], to: passer, at: now)
    try await store.recordOffers([cake], to: visitor, at: now)
    try await store.recordOffers([cake], to: visitor, at: now + 1000)
    #expect(try await store.redeem(cake, by: visitor, at: now + 2000) == .redeemed)
    #expect(try await store.redeem(cake, by: visitor, at: now + 3000) == .alreadyRedeemed(at: now + 2000))
    #expect(try await store.redeem(cake, by: faraway, at: now) == .notOffered)
    let after = try await sandbox.admin(["promotions", "stats", "--venue", "cafe-1", "--json"])
    #expect(try after.object()["shown"] as? Int == 3 && after.object()["redeemed"] as? Int == 1, "\(after)")
    let rows = try #require(try after.object()["byPromotion"] as? [[String: Any]])
    let cakeRow = try #require(rows.first { $0["id"] as? String == cake.rawValue })
    #expect(
      cakeRow["shownUsers"] as? Int == 2 && cakeRow["shownTimes"] as? Int == 3 && cakeRow["redeemed"] as? Int == 1)
    let table = try await sandbox.admin(["promotions", "stats", "--venue", "cafe-1"])
    #expect(table.stdout.contains("redeemed") && table.stdout.contains("Morning coffee"), "\(table)")
  }
}
