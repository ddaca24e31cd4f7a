import DomainKit
import Foundation
import GRDB
import GeoKit
import MeridianAPI
import MeridianStore
import PersistenceKit

extension SQLiteSchema {
  /// Appends the stay migrations (``StayStore``).
  static func appendStayMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-29 stay places and corrections", stayTables))
  }

  /// The home and work each person set (`role` `home` or `work`), and their corrections of detected stays (DomainKit's
  /// `StayCorrection` as JSON), in the order made.
  static let stayTables = """
    CREATE TABLE stay_places(
      user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      role TEXT NOT NULL CHECK (role IN ('home', 'work')),
      latitude REAL NOT NULL,
      longitude REAL NOT NULL,
      updated_at INTEGER NOT NULL,
      PRIMARY KEY (user_id, role)
    ) WITHOUT ROWID;
    CREATE TABLE stay_corrections(
      user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      id TEXT NOT NULL,
      correction TEXT NOT NULL,
      created_at INTEGER NOT NULL,
      PRIMARY KEY (user_id, id)
    ) WITHOUT ROWID;
    """
}

extension SQLiteStore {
  public func homeWork(owner: UserID) async throws -> HomeWorkChoice {
    try await database.read { db in
      var choice = HomeWorkChoice()
      for row in try Row.fetchAll(
        db, sql: "SELECT role, latitude, longitude FROM stay_places WHERE user_id = ?", arguments: [owner.rawValue])
      {
        let place = Coordinate(uncheckedLatitude: row[1], longitude: row[2])
        if row[0] as String == "home" { choice.home = place } else { choice.work = place }
      }
      return choice
    }
  }

  public func setHomeWork(_ choice: HomeWorkChoice, owner: UserID, now: Int64) async throws {
    try await database.write { db in
      try db.execute(sql: "DELETE FROM stay_places WHERE user_id = ?", arguments: [owner.rawValue])
      for (role, place) in [("home", choice.home), ("work", choice.work)] {
        guard let place else { continue }
        try db.execute(
          sql: "INSERT INTO stay_places(user_id, role, latitude, longitude, updated_at) VALUES (?, ?, ?, ?, ?)",
          arguments: [owner.rawValue, role, place.latitude, place.longitude, now])
      }
    }
  }

  public func stayCorrections(owner: UserID) async throws -> [StoredStayCorrection] {
    try await database.read { db in
      try Row.fetchAll(
        db,
        sql: "SELECT id, created_at, correction FROM stay_corrections WHERE user_id = ? ORDER BY created_at, id",
        arguments: [owner.rawValue]
      ).compactMap { row in StoredStayCorrection(id: row[0], createdAt: row[1], json: row[2]) }
    }
  }

  public func addStayCorrection(_ correction: StoredStayCorrection, owner: UserID, maximumCount: Int) async throws
    -> Bool
  {
    try await database.write { db in
      let count =
        try Int.fetchOne(
          db, sql: "SELECT count(*) FROM stay_corrections WHERE user_id = ?", arguments: [owner.rawValue])
        ?? 0
      guard count < maximumCount else { return false }
      try db.execute(
        sql: "INSERT INTO stay_corrections(user_id, id, correction, created_at) VALUES (?, ?, ?, ?)",
        arguments: [owner.rawValue, correction.id, correction.json, correction.createdAt])
      return true
    }
  }

  public func deleteStayCorrection(id: String, owner: UserID) async throws -> Bool {
    try await database.write { db in
      try db.execute(sql: "DELETE FROM stay_corrections WHERE user_id = ? AND id = ?", arguments: [owner.rawValue, id])
      return db.changesCount > 0
    }
  }
}
