import GRDB
import PersistenceKit
import Testing

@Suite struct ForeignKeyReferenceTests {
  /// users ← devices ← fixes (a key of two columns), users ← groups ← members (also → users), notes (→ itself), and
  /// a table that refers to nothing of the user's.
  static let keys = [
    ForeignKeyReference(table: "devices", columns: ["owner_id"], parent: "users", parentColumns: ["id"]),
    ForeignKeyReference(
      table: "fixes", columns: ["user_id", "device_id"], parent: "devices", parentColumns: ["owner_id", "id"]),
    ForeignKeyReference(table: "groups", columns: ["owner_id"], parent: "users", parentColumns: ["id"]),
    ForeignKeyReference(table: "members", columns: ["group_id"], parent: "groups", parentColumns: ["id"]),
    ForeignKeyReference(table: "members", columns: ["user_id"], parent: "users", parentColumns: ["id"]),
    ForeignKeyReference(table: "notes", columns: ["owner_id"], parent: "users", parentColumns: ["id"]),
    ForeignKeyReference(table: "notes", columns: ["reply_to"], parent: "notes", parentColumns: ["id"]),
    ForeignKeyReference(table: "tags", columns: ["place_id"], parent: "places", parentColumns: ["id"]),
  ]

  @Test func childrenComeBeforeTheirParentsAndTheRootLast() {
    let plan = ForeignKeyReference.deletionPlan(root: "users", key: "id", parameter: ":user", keys: Self.keys)
    #expect(plan.map(\.table) == ["fixes", "members", "devices", "groups", "notes", "users"])
    let conditions = Dictionary(uniqueKeysWithValues: plan.map { ($0.table, $0.condition) })
    #expect(conditions["users"] == #""id" = :user"#)
    #expect(conditions["devices"] == #""owner_id" = :user"#)
    #expect(
      conditions["fixes"]
        == #"("user_id", "device_id") IN (SELECT "owner_id", "id" FROM "devices" WHERE "owner_id" = :user)"#)
    #expect(
      conditions["members"]
        == #""group_id" IN (SELECT "id" FROM "groups" WHERE "owner_id" = :user) OR "user_id" = :user"#)
    #expect(conditions["notes"] == #""owner_id" = :user"#)
  }

  /// The plan deletes exactly the user's rows on a real database, keys of two columns included.
  @Test func thePlanDeletesExactlyOneUsersRows() throws {
    let queue = try DatabaseQueue()
    try queue.write { db in
      try db.execute(
        sql: """
          CREATE TABLE users(id TEXT PRIMARY KEY);
          CREATE TABLE devices(owner_id TEXT REFERENCES users(id), id TEXT, PRIMARY KEY (owner_id, id));
          CREATE TABLE fixes(user_id TEXT, device_id TEXT, t INTEGER,
            FOREIGN KEY (user_id, device_id) REFERENCES devices(owner_id, id));
          INSERT INTO users VALUES ('anna'), ('bob');
          INSERT INTO devices VALUES ('anna', 'phone'), ('bob', 'phone');
          INSERT INTO fixes VALUES ('anna', 'phone', 1), ('anna', 'phone', 2), ('bob', 'phone', 3);
          """)
      let plan = ForeignKeyReference.deletionPlan(
        root: "users", key: "id", parameter: ":user", keys: Array(Self.keys.prefix(2)))
      var deleted: [String: Int] = [:]
      for step in plan {
        try db.execute(sql: "DELETE FROM \(step.table) WHERE \(step.condition)", arguments: ["user": "anna"])
        deleted[step.table] = db.changesCount
      }
      #expect(deleted == ["fixes": 2, "devices": 1, "users": 1])
      #expect(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM fixes") == 1)
    }
  }
}
