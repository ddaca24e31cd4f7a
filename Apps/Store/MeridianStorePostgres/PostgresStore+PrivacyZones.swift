import DomainKit
import Foundation
import Logging
import MeridianStore
import PersistenceKit
import PostgresNIO

extension PostgresSchema {
  /// Appends the privacy-zone migrations.
  public static func appendPrivacyZoneMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-29 privacy zones", privacyZones))
    migrator.append(.sql("2026-11-29 share link precision", shareLinkPrecision))
  }

  /// Each person's privacy zones (``PrivacyZoneStore``), keyed by the owner first like every per-user table: a
  /// circle, how fixes inside appear to others (`display`) and whether they are stored.
  static let privacyZones = """
    CREATE TABLE privacy_zones(
      user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      id text NOT NULL,
      name text NOT NULL,
      latitude double precision NOT NULL,
      longitude double precision NOT NULL,
      radius double precision NOT NULL,
      display text NOT NULL,
      store boolean NOT NULL,
      created_at bigint NOT NULL,
      PRIMARY KEY (user_id, id)
    );
    """

  /// The precision a share link shows the position at (DomainKit's `LocationPrecision`).
  static let shareLinkPrecision = """
    ALTER TABLE share_links ADD COLUMN precision text NOT NULL DEFAULT 'exact';
    """
}

extension PostgresStore: PrivacyZoneStore {
  public func privacyZones(owner: UserID) async throws -> [PrivacyZone] {
    try await transaction { connection in try await Self.privacyZones(owner, on: connection, self.logger) }
  }

  /// The owner's zones, on `connection`.
  static func privacyZones(_ owner: UserID, on connection: PostgresConnection, _ logger: Logger) async throws
    -> [PrivacyZone]
  {
    try await connection.query(
      """
      SELECT id, name, latitude, longitude, radius, display, store FROM privacy_zones
      WHERE user_id = \(owner.rawValue) ORDER BY created_at, id COLLATE "C"
      """, logger: logger
    ).collect().map { row in
      let (id, name, latitude, longitude, radius, display, store) = try row.decode(
        (String, String, Double, Double, Double, String, Bool).self)
      return PrivacyZone(
        id: id, name: name, latitude: latitude, longitude: longitude, radius: radius,
        display: ZoneDisplay(rawValue: display) ?? .privateZone, store: store)
    }
  }

  public func savePrivacyZone(_ zone: PrivacyZone, owner: UserID, now: Int64, maximumCount: Int) async throws -> Bool {
    try await transaction { connection in
      // The owner's row, locked: two concurrent additions can't both pass the count.
      _ = try await connection.query(
        "SELECT 1 FROM users WHERE id = \(owner.rawValue) FOR UPDATE", logger: self.logger
      ).collect()
      let exists = try await !connection.query(
        "SELECT 1 FROM privacy_zones WHERE user_id = \(owner.rawValue) AND id = \(zone.id)", logger: self.logger
      ).collect().isEmpty
      if !exists {
        let count =
          try await connection.query(
            "SELECT count(*) FROM privacy_zones WHERE user_id = \(owner.rawValue)", logger: self.logger
          ).collect().first?.decode(Int.self) ?? 0
        guard count < maximumCount else { return false }
      }
      try await connection.query(
        """
        INSERT INTO privacy_zones(user_id, id, name, latitude, longitude, radius, display, store, created_at)
        VALUES (\(owner.rawValue), \(zone.id), \(zone.name), \(zone.latitude), \(zone.longitude), \(zone.radius),
          \(zone.display.rawValue), \(zone.store), \(now))
        ON CONFLICT (user_id, id) DO UPDATE SET name = excluded.name, latitude = excluded.latitude,
          longitude = excluded.longitude, radius = excluded.radius, display = excluded.display, store = excluded.store
        """, logger: self.logger)
      return true
    }
  }

  public func deletePrivacyZone(id: String, owner: UserID) async throws -> Bool {
    try await !rows(
      "DELETE FROM privacy_zones WHERE user_id = \(owner.rawValue) AND id = \(id) RETURNING id"
    ).isEmpty
  }
}
