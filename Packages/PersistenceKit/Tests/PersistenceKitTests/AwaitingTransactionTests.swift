import Foundation
import GRDB
import Testing

@testable import PersistenceKit

/// `awaitingWrite`/`awaitingRead`: an async body in one GRDB transaction, committed whole or rolled back whole, even
/// when it awaits work on another executor (an actor) between its statements.
@Suite struct AwaitingTransactionTests {
  actor Counter {
    var value = 0
    func next() -> Int {
      value += 1
      return value
    }
  }

  /// Inserts `x` with a plain (non-async) GRDB call, as an engine's primitive does.
  static func insert(_ db: Database, _ x: Int) throws {
    try db.execute(sql: "INSERT INTO t(x) VALUES (?)", arguments: [x])
  }

  static func insertAwaiting(_ db: Database, _ x: Int) async throws { try insert(db, x) }

  @Test func anAwaitingWriteCommitsWholeOrRollsBackWhole() async throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let database = try SQLiteDatabase.open(at: directory.path("awaiting.sqlite"))
    defer { try? database.close() }
    try await database.write { db in try db.execute(sql: "CREATE TABLE t(x INTEGER UNIQUE)") }
    let counter = Counter()

    // Statements with an actor's answer between them: one transaction, committed.
    let sum = try await database.awaitingWrite { db in
      try await Self.insertAwaiting(db, await counter.next())
      try await Self.insertAwaiting(db, await counter.next())
      return try Int.fetchOne(db, sql: "SELECT sum(x) FROM t") ?? 0
    }
    #expect(sum == 3)

    // A failure after an await rolls back what came before it.
    await #expect(throws: DatabaseError.self) {
      try await database.awaitingWrite { db in
        try await Self.insertAwaiting(db, 10)
        _ = await counter.next()
        try await Self.insertAwaiting(db, 1)  // UNIQUE
      }
    }
    #expect(
      try await database.awaitingRead { db in try Int.fetchAll(db, sql: "SELECT x FROM t ORDER BY x") } == [1, 2])

    // Many at once: each is one transaction, none interleaves with another.
    try await withThrowingTaskGroup(of: Void.self) { group in
      for index in 0..<20 {
        group.addTask {
          try await database.awaitingWrite { db in
            let before = try Int.fetchOne(db, sql: "SELECT count(*) FROM t") ?? 0
            _ = await counter.next()
            try await Self.insertAwaiting(db, 100 + index)
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM t") == before + 1)
          }
        }
      }
      try await group.waitForAll()
    }
    #expect(try await database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM t") } == 22)
  }
}
