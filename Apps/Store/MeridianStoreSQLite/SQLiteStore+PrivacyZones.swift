import DomainKit
import Foundation
import GRDB
import MeridianStore
import PersistenceKit

extension SQLiteSchema {
  /// Appends the privacy-zone migrations.
  static func appendPrivacyZoneMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-29 privacy zones", privacyZones))
    migrator.append(.sql("2026-11-29 share link precision", shareLinkPrecision))
  }

  /// Each person's privacy zones (``PrivacyZoneStore``): a circle, how fixes inside appear to others (`display`) and
  /// whether they are stored.
  static let privacyZones = """
    CREATE TABLE privacy_zones(
      user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      id TEXT NOT NULL,
      name TEXT NOT NULL,
      latitude REAL NOT NULL,
      longitude REAL NOT NULL,
      radius REAL NOT NULL,
      display TEXT NOT NULL,
      store INTEGER NOT NULL CHECK (store IN (0, 1)),
      created_at INTEGER NOT NULL,
      PRIMARY KEY (user_id, id)
    ) WITHOUT ROWID;
    """

  /// The precision a share link shows the position at (DomainKit's `LocationPrecision`).
  static let shareLinkPrecision = """
    ALTER TABLE share_links ADD COLUMN precision TEXT NOT NULL DEFAULT 'exact';
    """
}

extension SQLiteStore {
  public func privacyZones(owner: UserID) async throws -> [PrivacyZone] {
    try await database.read { db in try Self.privacyZones(db, owner) }
  }

  /// The owner's zones, in a transaction.
  static func privacyZones(_ db: Database, _ owner: UserID) throws -> [PrivacyZone] {
    try Row.fetchAll(
      db.cachedStatement(
        sql: """
          SELECT id, name, latitude, longitude, radius, display, store FROM privacy_zones
          WHERE user_id = ? ORDER BY created_at, id
          """), arguments: [owner.rawValue]
    ).map { row in
      PrivacyZone(
        id: row[0], name: row[1], latitude: row[2], longitude: row[3], radius: row[4],
        display: ZoneDisplay(rawValue: row[5]) ?? .privateZone, store: row[6])
    }
  }

  public func savePrivacyZone(_ zone: PrivacyZone, owner: UserID, now: Int64, maximumCount: Int) async throws -> Bool {
    try await database.write { db in
      let exists =
        try Bool.fetchOne(
          db, sql: "SELECT 1 FROM privacy_zones WHERE user_id = ? AND id = ?", arguments: [owner.rawValue, zone.id])
        ?? false
      if !exists {
        let count =
          try Int.fetchOne(
            db, sql: "SELECT count(*) FROM privacy_zones WHERE user_id = ?", arguments: [owner.rawValue]) ?? 0
        guard count < maximumCount else { return false }
      }
      try db.execute(
        sql: """
          INSERT INTO privacy_zones(user_id, id, name, latitude, longitude, radius, display, store, created_at)
          VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
          ON CONFLICT(user_id, id) DO UPDATE SET name = excluded.name, latitude = excluded.latitude,
            longitude = excluded.longitude, radius = excluded.radius, display = excluded.display,
            store = excluded.store
          """,
        arguments: [
          owner.rawValue, zone.id, zone.name, zone.latitude, zone.longitude, zone.radius, zone.display.rawValue,
          zone.store, now,
        ])
      return true
    }
  }

  public func deletePrivacyZone(id: String, owner: UserID) async throws -> Bool {
    try await database.write { db in
      try db.execute(
        sql: "DELETE FROM privacy_zones WHERE user_id = ? AND id = ?", arguments: [owner.rawValue, id])
      return db.changesCount > 0
    }
  }
}
