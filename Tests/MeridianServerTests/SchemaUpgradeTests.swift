import Foundation
import GRDB
import MeridianStore
import MeridianStoreSQLite
import PersistenceKit
import Testing

@testable import MeridianServer

/// Migrations that rebuild a table keep its rows and its constraints.
@Suite struct SchemaUpgradeTests {
  @Test func idempotencyKeysMoveToAClusteredTableWithTheirAnswers() async throws {
    let file = TemporaryDatabaseFile()
    defer { file.remove() }
    let database = try SQLiteDatabase.open(at: file.path)
    defer { try? database.close() }
    var before = Migrator()
    let upgrade = "2026-11-24 idempotency keys without rowid"
    before.append(contentsOf: SQLiteSchema.migrator.migrations.prefix { $0.identifier != upgrade })
    _ = try database.migrate(before)
    try await database.write { db in
      try db.execute(sql: "INSERT INTO users(id, created_at) VALUES ('u1', 1), ('u2', 1)")
      try db.execute(
        sql: """
          INSERT INTO idempotency_keys(user_id, key, request_hash, status, body, created_at)
          VALUES ('u1', 'k1', 'h1', 200, X'7B7D', 5), ('u2', 'k1', 'h2', 201, X'5B5D', 6)
          """)
    }

    let store = try SQLiteStore(migrating: database)
    let stored = try #require(try await store.idempotentResponse(userID: "u1", key: "k1"))
    #expect(stored.requestHash == "h1" && stored.status == 200 && stored.body == Data("{}".utf8))
    #expect(try await store.idempotentResponse(userID: "u2", key: "k1")?.body == Data("[]".utf8))
    let definition = try await database.read { db in
      try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE name = 'idempotency_keys'")
    }
    #expect(definition?.contains("WITHOUT ROWID") == true)
    // The key is still unique per user, and still goes with its user.
    await #expect(throws: DatabaseError.self) {
      try await database.write { db in
        try db.execute(
          sql: """
            INSERT INTO idempotency_keys(user_id, key, request_hash, status, body, created_at)
            VALUES ('u1', 'k1', 'other', 200, X'00', 7)
            """)
      }
    }
    try await database.write { db in try db.execute(sql: "DELETE FROM users WHERE id = 'u1'") }
    #expect(try await store.idempotentResponse(userID: "u1", key: "k1") == nil)
    #expect(try await store.idempotentResponse(userID: "u2", key: "k1") != nil)
  }
}
