import Foundation
import GRDB
import PersistenceKit
import Testing

@Suite struct BatchInsertTests {
  @Test func insertsEveryKindOfValue() throws {
    let database = try SQLiteDatabase.inMemory()
    try database.write { db throws in
      try db.execute(
        sql: "CREATE TABLE fix(id INTEGER PRIMARY KEY, device INTEGER, lat REAL, note TEXT, raw BLOB, ok INTEGER)")
      let count = try db.batchInsert(into: "fix", columns: ["device", "lat", "note", "raw", "ok"]) { rows in
        for index in 0..<1000 {
          rows.bind(index, at: 1)
          rows.bind(Double(index) / 8, at: 2)
          rows.bind(index % 2 == 0 ? "пункт \(index) — a long enough string to be heap allocated" : nil, at: 3)
          rows.bind(blob: Data([UInt8(index % 256), 1, 2]), at: 4)
          rows.bind(index % 3 == 0, at: 5)
          try rows.insert()
        }
      }
      #expect(count == 1000)
    }
    try database.read { db throws in
      #expect(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM fix") == 1000)
      let row = try #require(try Row.fetchOne(db, sql: "SELECT * FROM fix WHERE device = 10"))
      #expect(row["lat"] as Double == 1.25)
      #expect(row["note"] as String == "пункт 10 — a long enough string to be heap allocated")
      #expect(row["raw"] as Data == Data([10, 1, 2]))
      #expect(row["ok"] as Bool == false)
      #expect(try String.fetchOne(db, sql: "SELECT note FROM fix WHERE device = 11") == nil)
    }
  }

  @Test func constraintViolationThrowsAndConflictPoliciesWork() throws {
    let database = try SQLiteDatabase.inMemory()
    try database.write { db in try db.execute(sql: "CREATE TABLE point(key TEXT PRIMARY KEY, value INTEGER)") }
    #expect(throws: DatabaseError.self) {
      try database.write { db throws in
        try db.batchInsert(into: "point", columns: ["key", "value"]) { rows in
          for key in ["a", "b", "a"] {
            rows.bind(key, at: 1)
            rows.bind(1, at: 2)
            try rows.insert()
          }
        }
      }
    }
    // The failed transaction rolled back as a whole.
    #expect(try database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM point") } == 0)

    try database.write { db throws in
      try db.batchInsert(into: "point", columns: ["key", "value"], onConflict: .ignore) { rows in
        for (key, value) in [("a", 1), ("b", 2), ("a", 3)] {
          rows.bind(key, at: 1)
          rows.bind(value, at: 2)
          try rows.insert()
        }
      }
    }
    #expect(try database.read { db in try Int.fetchOne(db, sql: "SELECT value FROM point WHERE key = 'a'") } == 1)
    try database.write { db throws in
      try db.batchInsert(into: "point", columns: ["key", "value"], onConflict: .replace) { rows in
        rows.bind("a", at: 1)
        rows.bind(9, at: 2)
        try rows.insert()
      }
    }
    #expect(try database.read { db in try Int.fetchOne(db, sql: "SELECT value FROM point WHERE key = 'a'") } == 9)
  }
}
