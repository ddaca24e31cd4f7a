import Foundation
import GRDB
import PersistenceKit
import PersistenceKitTesting
import Testing

@Suite struct DatabaseTests {
  @Test func fileDatabaseUsesWALAndSafeSettings() throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let database = try SQLiteDatabase.open(at: directory.path("nested/app.sqlite"))
    #expect(try database.journalMode() == "wal")
    try database.write { db throws in
      #expect(try Int.fetchOne(db, sql: "PRAGMA synchronous") == 1)  // NORMAL
      #expect(try Int.fetchOne(db, sql: "PRAGMA foreign_keys") == 1)
      #expect(try Int.fetchOne(db, sql: "PRAGMA busy_timeout") == 5000)
    }
    try database.read { db throws in
      #expect(try Int.fetchOne(db, sql: "PRAGMA synchronous") == 1)
      #expect(try Int.fetchOne(db, sql: "PRAGMA foreign_keys") == 1)
    }
    #expect(database.path == directory.path("nested/app.sqlite"))
    try database.close()
  }

  @Test func inMemoryDatabaseIsPrivateAndWorks() async throws {
    let first = try SQLiteDatabase.inMemory()
    let second = try SQLiteDatabase.inMemory()
    try await first.write { db in try db.execute(sql: "CREATE TABLE t(x INTEGER)") }
    #expect(try await second.read { db in try db.tableExists("t") } == false)
    try await first.write { db in try db.execute(sql: "INSERT INTO t VALUES (1), (2)") }
    #expect(try await first.read { db in try Int.fetchOne(db, sql: "SELECT SUM(x) FROM t") } == 3)
    #expect(first.path == nil)
  }

  @Test func integrityAndForeignKeyChecks() throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let database = try SQLiteDatabase.open(at: directory.path("fk.sqlite"))
    try database.write { db throws in
      try db.execute(
        sql: """
          CREATE TABLE owner(id INTEGER PRIMARY KEY);
          CREATE TABLE pet(id INTEGER PRIMARY KEY, owner_id INTEGER REFERENCES owner(id));
          INSERT INTO owner(id) VALUES (1);
          INSERT INTO pet(id, owner_id) VALUES (10, 1);
          """
      )
    }
    #expect(try database.integrityCheck().isOK)
    #expect(try database.integrityCheck(quick: true).isOK)
    #expect(try database.foreignKeyCheck().isEmpty)

    // Enforcement is on: an orphan is refused.
    #expect(throws: DatabaseError.self) {
      try database.write { db in try db.execute(sql: "INSERT INTO pet(id, owner_id) VALUES (11, 99)") }
    }
    // Data written with enforcement off (an old import, say) is found by the check.
    try database.writer.writeWithoutTransaction { db in
      try db.execute(sql: "PRAGMA foreign_keys = OFF")
      try db.execute(sql: "INSERT INTO pet(id, owner_id) VALUES (12, 42)")
      try db.execute(sql: "PRAGMA foreign_keys = ON")
    }
    let violations = try database.foreignKeyCheck()
    #expect(violations == [ForeignKeyViolation(table: "pet", rowID: 12, parentTable: "owner", foreignKeyIndex: 0)])
    #expect(try database.foreignKeyCheck(table: "owner").isEmpty)
  }

  @Test func integrityCheckReportsCorruption() throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.path("corrupt.sqlite")
    do {
      let database = try SQLiteDatabase.open(at: path)
      try database.write { db throws in
        try db.execute(sql: "CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT); CREATE INDEX t_v ON t(v)")
        for i in 0..<2000 { try db.execute(sql: "INSERT INTO t(v) VALUES (?)", arguments: ["value \(i)"]) }
      }
      try database.writer.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
      try database.close()
    }
    // Overwrite part of a page in the middle of the file.
    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
    let size = try handle.seekToEnd()
    try handle.seek(toOffset: size / 2)
    try handle.write(contentsOf: Data(repeating: 0x5A, count: 3000))
    try handle.close()
    let reopened = try SQLiteDatabase.open(at: path)
    let result: IntegrityCheckResult
    do {
      result = try reopened.integrityCheck()
    } catch {
      // SQLite may refuse the damaged page outright, which is also a detection.
      return
    }
    #expect(!result.isOK)
  }

  @Test func backupWhileWritersRun() async throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let database = try SQLiteDatabase.open(at: directory.path("live.sqlite"))
    // Every transaction writes one row in each table, so a consistent copy has equal counts.
    try await database.write { db in
      try db.execute(sql: "CREATE TABLE debit(id INTEGER PRIMARY KEY, amount INTEGER, pad BLOB)")
      try db.execute(sql: "CREATE TABLE credit(id INTEGER PRIMARY KEY, amount INTEGER, pad BLOB)")
    }
    let writer = Task.detached {
      var transactions = 0
      while !Task.isCancelled && transactions < 3000 {
        try await database.write { db in
          try db.execute(sql: "INSERT INTO debit(amount, pad) VALUES (1, zeroblob(512))")
          try db.execute(sql: "INSERT INTO credit(amount, pad) VALUES (1, zeroblob(512))")
        }
        transactions += 1
      }
      return transactions
    }
    try await Task.sleep(for: .milliseconds(50))
    var backups: [Int] = []
    for round in 0..<3 {
      let path = directory.path("backup-\(round).sqlite")
      let pages = try database.backup(to: path)
      #expect(pages > 0)
      let copy = try SQLiteDatabase.open(at: path)
      #expect(try copy.integrityCheck().isOK)
      let (debits, credits) = try await copy.read { db in
        (
          try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM debit") ?? -1,
          try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM credit") ?? -2
        )
      }
      #expect(debits == credits)
      backups.append(debits)
      try copy.close()
      try await Task.sleep(for: .milliseconds(20))
    }
    let total = try await writer.value
    #expect(total == 3000)
    #expect(backups == backups.sorted())
    #expect(backups.last ?? 0 <= total)
    #expect(try await database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM debit") } == 3000)
  }

  @Test func temporaryDatabaseForOtherKitsTests() throws {
    let temporary = try TemporaryDatabase(
      migrator: Migrator([.sql("001", "CREATE TABLE t(id INTEGER PRIMARY KEY)")])
    )
    #expect(try temporary.database.journalMode() == "wal")
    #expect(try temporary.database.read { db in try db.tableExists("t") })
    #expect(FileManager.default.fileExists(atPath: temporary.path))
    temporary.remove()
    #expect(!FileManager.default.fileExists(atPath: temporary.directory.path))
  }
}
