import Foundation
import GRDB
import PersistenceKitTesting
import Synchronization
import Testing

@testable import PersistenceKit

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

  @Test func chainedWritesRunInOrderAndAFailureRollsBackOnlyItself() async throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let database = try SQLiteDatabase.open(at: directory.path("chain.sqlite"))
    defer { try? database.close() }
    try await database.write { db in try db.execute(sql: "CREATE TABLE t(x INTEGER UNIQUE)") }
    // Each completion queues the next write, as a group commit does; the third write fails on the UNIQUE column.
    let results = await withCheckedContinuation { (done: CheckedContinuation<[String], Never>) in
      let values: [Int64] = [1, 2, 2, 3]
      let log = Mutex<[String]>([])
      @Sendable func write(_ index: Int) {
        guard index < values.count else { return done.resume(returning: log.withLock { $0 }) }
        database.write({ db in
          try db.execute(sql: "INSERT INTO t(x) VALUES (?)", arguments: [values[index]])
          return try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM t") ?? 0
        }) { result in
          log.withLock { $0.append((try? result.get()).map { "rows \($0)" } ?? "failed") }
          write(index + 1)
        }
      }
      write(0)
    }
    #expect(results == ["rows 1", "rows 2", "failed", "rows 3"])
    #expect(try await database.read { db in try Int64.fetchAll(db, sql: "SELECT x FROM t ORDER BY x") } == [1, 2, 3])
  }

  @Test func backgroundCheckpointsFoldTheLogIntoTheFileWithoutTheWriter() async throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    // 300 commits of a 4 KB row stay under both writers' own thresholds (1,000 and 10,000 pages): only a background
    // checkpoint moves their pages into the database file before it is closed.
    func mainFileBytes(after policy: CheckpointPolicy, name: String) async throws -> Int {
      let path = directory.path(name)
      let database = try SQLiteDatabase.open(at: path, options: DatabaseOptions(checkpoints: policy))
      defer { try? database.close() }
      try await database.write { db in try db.execute(sql: "CREATE TABLE page(data BLOB)") }
      for _ in 0..<300 {
        try await database.write { db in
          try db.execute(sql: "INSERT INTO page(data) VALUES (?)", arguments: [Data(repeating: 7, count: 4000)])
        }
      }
      #expect(try await database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM page") } == 300)
      let expected = try await database.write { db in try Int.fetchOne(db, sql: "PRAGMA wal_autocheckpoint") }
      #expect(expected == (policy == .automatic ? 1000 : 10_000))
      for _ in 0..<200 {
        let size = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        if size > 1_000_000 || policy == .automatic { return size }
        try await Task.sleep(for: .milliseconds(10))
      }
      return (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    }
    #expect(try await mainFileBytes(after: .automatic, name: "automatic.sqlite") < 100_000)
    #expect(
      try await mainFileBytes(after: .background(interval: .milliseconds(5)), name: "background.sqlite") > 1_000_000)
    // A truncating checkpoint gets through the background one's lock.
    let busy = try SQLiteDatabase.open(
      at: directory.path("background.sqlite"),
      options: DatabaseOptions(checkpoints: .background(interval: .milliseconds(1))))
    #expect(try await busy.write { db in try Int.fetchOne(db, sql: "PRAGMA journal_size_limit") } == 64 << 20)
    for _ in 0..<50 {
      try await busy.write { db in try db.execute(sql: "INSERT INTO page(data) VALUES (zeroblob(4000))") }
      #expect(try busy.checkpointAndTruncateLog())
      let log = try FileManager.default.attributesOfItem(atPath: directory.path("background.sqlite-wal"))[.size] as? Int
      #expect(log == 0)
    }
    try busy.close()
    // Closed and opened again, everything is there.
    let reopened = try SQLiteDatabase.open(at: directory.path("background.sqlite"))
    #expect(try await reopened.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM page") } == 350)
    try reopened.close()
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

  /// The number of transactions in `database`'s `debit` table.
  static func transactionCount(_ database: SQLiteDatabase) throws -> Int {
    try database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM debit") ?? -1 }
  }

  /// Polls `condition` every 5 ms for up to 30 s; returns whether it became true.
  static func eventually(_ condition: () throws -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + .seconds(30)
    while ContinuousClock.now < deadline {
      if try condition() { return true }
      try await Task.sleep(for: .milliseconds(5))
    }
    return try condition()
  }

  /// A flag one task raises and another polls.
  final class StopFlag: Sendable {
    private let raised = Mutex(false)
    var isRaised: Bool { raised.withLock { $0 } }
    func raise() { raised.withLock { $0 = true } }
  }

  @Test func backupWhileWritersRun() async throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let database = try SQLiteDatabase.open(at: directory.path("live.sqlite"))
    defer { try? database.close() }
    // Transaction n writes (n, n) into both tables, so a consistent copy holds the same rows 1…count in each.
    try await database.write { db in
      try db.execute(sql: "CREATE TABLE debit(tx INTEGER PRIMARY KEY, amount INTEGER NOT NULL, pad BLOB)")
      try db.execute(sql: "CREATE TABLE credit(tx INTEGER PRIMARY KEY, amount INTEGER NOT NULL, pad BLOB)")
    }
    // The writer runs until the backups are done. It is stopped with a flag, not by cancelling its task: a
    // cancelled `write` throws `CancellationError` instead of committing.
    let stop = StopFlag()
    let writer = Task.detached {
      var transactions = 0
      while !stop.isRaised && transactions < 1_000_000 {
        let tx = transactions + 1
        try await database.write { db in
          try db.execute(sql: "INSERT INTO debit VALUES (?, ?, zeroblob(512))", arguments: [tx, tx])
          try db.execute(sql: "INSERT INTO credit VALUES (?, ?, zeroblob(512))", arguments: [tx, tx])
        }
        transactions = tx
      }
      return transactions
    }
    #expect(try await Self.eventually { try Self.transactionCount(database) >= 200 })
    let start = try Self.transactionCount(database)

    var copied: [Int] = []
    for round in 0..<40 {
      let before = try Self.transactionCount(database)
      let path = directory.path("backup-\(round).sqlite")
      #expect(try database.backup(to: path) > 0)
      let after = try Self.transactionCount(database)

      let copy = try SQLiteDatabase.open(at: path)
      #expect(try copy.integrityCheck().isOK)
      let (debits, credits, unmatched, maxDebit, maxCredit, debitSum, creditSum) = try await copy.read { db in
        (
          try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM debit") ?? -1,
          try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM credit") ?? -2,
          try Int.fetchOne(
            db,
            sql: """
              SELECT (SELECT COUNT(*) FROM debit d WHERE NOT EXISTS
                        (SELECT 1 FROM credit c WHERE c.tx = d.tx AND c.amount = d.amount))
                   + (SELECT COUNT(*) FROM credit c WHERE NOT EXISTS (SELECT 1 FROM debit d WHERE d.tx = c.tx))
              """
          ) ?? -3,
          try Int.fetchOne(db, sql: "SELECT IFNULL(MAX(tx), 0) FROM debit") ?? -4,
          try Int.fetchOne(db, sql: "SELECT IFNULL(MAX(tx), 0) FROM credit") ?? -5,
          try Int.fetchOne(db, sql: "SELECT TOTAL(amount) FROM debit") ?? -6,
          try Int.fetchOne(db, sql: "SELECT TOTAL(amount) FROM credit") ?? -7
        )
      }
      try copy.close()
      // Consistent: every transaction is in both tables or in neither, and the transactions are exactly 1…count.
      #expect(debits == credits)
      #expect(unmatched == 0)
      #expect(maxDebit == debits && maxCredit == credits)
      #expect(debitSum == creditSum && debitSum == debits * (debits + 1) / 2)
      // A snapshot taken during the call: no older than before it, no newer than after it.
      #expect(before <= debits && debits <= after, "copy \(debits) outside \(before)…\(after)")
      copied.append(debits)
      if round >= 2 && copied.contains(where: { $0 > start }) { break }
      try await Task.sleep(for: .milliseconds(10))
    }
    // Let the writer commit past the last copy, then stop it.
    let newest = copied.max() ?? 0
    #expect(try await Self.eventually { try Self.transactionCount(database) > newest })
    stop.raise()
    let total = try await writer.value
    let final = try Self.transactionCount(database)
    #expect(final == total)
    #expect(copied == copied.sorted())
    // At least one backup overlapped the writer: it saw some of its transactions but not all.
    #expect(copied.contains { start < $0 && $0 < final }, "start \(start), copies \(copied), final \(final)")
  }

  @Test func oneSharedPoolPerFile() throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.path("data/shared.sqlite")
    let first = try SQLiteDatabase.open(at: path)
    let again = try SQLiteDatabase.open(at: path)
    #expect(first.writer === again.writer)

    // The same file through `.` and `..`, a path relative to the working directory, a symlinked directory and a
    // symlink to the file itself.
    let dotted = try SQLiteDatabase.open(at: directory.path("data/../data/./shared.sqlite"))
    let workingDirectoryDepth = FileManager.default.currentDirectoryPath.split(separator: "/").count
    let relativePath = String(repeating: "../", count: workingDirectoryDepth) + path.dropFirst()
    #expect(!relativePath.hasPrefix("/"))
    let relative = try SQLiteDatabase.open(at: relativePath)
    try FileManager.default.createSymbolicLink(
      atPath: directory.path("link"), withDestinationPath: directory.path("data"))
    let linkedDirectory = try SQLiteDatabase.open(at: directory.path("link/shared.sqlite"))
    try FileManager.default.createSymbolicLink(atPath: directory.path("file-link.sqlite"), withDestinationPath: path)
    let linkedFile = try SQLiteDatabase.open(at: directory.path("file-link.sqlite"))
    for other in [dotted, relative, linkedDirectory, linkedFile] {
      #expect(other.writer === first.writer, "\(other.path ?? "")")
    }
    #expect(PoolRegistry.shared.leaseCount(forPath: path) == 6)
    #expect(PoolRegistry.shared.leaseCount(forPath: directory.path("link/shared.sqlite")) == 6)

    // A different file has its own pool.
    let different = try SQLiteDatabase.open(at: directory.path("data/other.sqlite"))
    #expect(different.writer !== first.writer)
    #expect(PoolRegistry.shared.leaseCount(forPath: directory.path("data/other.sqlite")) == 1)

    try first.write { db in try db.execute(sql: "CREATE TABLE t(x INTEGER); INSERT INTO t VALUES (1)") }
    #expect(try linkedFile.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM t") } == 1)

    // Each open is released by its own close (twice is harmless); the pool closes with the last one.
    try first.close()
    try first.close()
    #expect(PoolRegistry.shared.leaseCount(forPath: path) == 5)
    #expect(try again.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM t") } == 1)
    for database in [again, dotted, relative, linkedDirectory] { try database.close() }
    #expect(try linkedFile.read { db in try Int.fetchOne(db, sql: "SELECT x FROM t") } == 1)
    try linkedFile.close()
    #expect(PoolRegistry.shared.leaseCount(forPath: path) == 0)
    #expect(throws: (any Error).self) { try first.read { db in try Int.fetchOne(db, sql: "SELECT 1") } }

    // After the last close, an open makes a fresh pool.
    let reopened = try SQLiteDatabase.open(at: path)
    #expect(reopened.writer !== first.writer)
    #expect(try reopened.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM t") } == 1)
    try reopened.close()
    try different.close()

    // An open dropped without close gives its hold back too.
    do {
      let dropped = try SQLiteDatabase.open(at: path)
      #expect(PoolRegistry.shared.leaseCount(forPath: path) == 1)
      _ = dropped
    }
    #expect(PoolRegistry.shared.leaseCount(forPath: path) == 0)
  }

  @Test func concurrentOpensOfANewFileShareOnePool() throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.path("race.sqlite")
    let results = Mutex<[Result<SQLiteDatabase, any Error>]>([])
    DispatchQueue.concurrentPerform(iterations: 8) { index in
      let spelling = index.isMultiple(of: 2) ? path : directory.path("./race.sqlite")
      let result = Result { try SQLiteDatabase.open(at: spelling) }
      results.withLock { $0.append(result) }
    }
    let opened = results.withLock { $0 }
    let databases = opened.compactMap { try? $0.get() }
    let errors = opened.compactMap { result -> (any Error)? in
      if case .failure(let error) = result { return error } else { return nil }
    }
    #expect(errors.isEmpty, "\(errors)")
    #expect(Set(databases.map { ObjectIdentifier($0.writer) }).count == 1)
    #expect(PoolRegistry.shared.leaseCount(forPath: path) == 8)
    for database in databases { try database.close() }
    #expect(PoolRegistry.shared.leaseCount(forPath: path) == 0)
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
