import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import MeridianStore
import PersistenceKit
import PostgresNIO

extension PostgresSchema {
  /// Appends the stay migrations (``StayStore``).
  public static func appendStayMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-29 stay places and corrections", stayTables))
  }

  /// The home and work each person set (`role` `home` or `work`), and their corrections of detected stays (DomainKit's
  /// `StayCorrection` as JSON), in the order made.
  static let stayTables = """
    CREATE TABLE stay_places(
      user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      role text NOT NULL CHECK (role IN ('home', 'work')),
      latitude double precision NOT NULL,
      longitude double precision NOT NULL,
      updated_at bigint NOT NULL,
      PRIMARY KEY (user_id, role)
    );
    CREATE TABLE stay_corrections(
      user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      id text NOT NULL,
      correction text NOT NULL,
      created_at bigint NOT NULL,
      PRIMARY KEY (user_id, id)
    );
    """
}

extension PostgresStore: StayStore {
  public func homeWork(owner: UserID) async throws -> HomeWorkChoice {
    var choice = HomeWorkChoice()
    for row in try await rows(
      "SELECT role, latitude, longitude FROM stay_places WHERE user_id = \(owner.rawValue)")
    {
      let (role, latitude, longitude) = try row.decode((String, Double, Double).self)
      let place = Coordinate(uncheckedLatitude: latitude, longitude: longitude)
      if role == "home" { choice.home = place } else { choice.work = place }
    }
    return choice
  }

  public func setHomeWork(_ choice: HomeWorkChoice, owner: UserID, now: Int64) async throws {
    try await transaction { connection in
      try await connection.query("DELETE FROM stay_places WHERE user_id = \(owner.rawValue)", logger: self.logger)
      for (role, place) in [("home", choice.home), ("work", choice.work)] {
        guard let place else { continue }
        try await connection.query(
          """
          INSERT INTO stay_places(user_id, role, latitude, longitude, updated_at)
          VALUES (\(owner.rawValue), \(role), \(place.latitude), \(place.longitude), \(now))
          """, logger: self.logger)
      }
    }
  }

  public func stayCorrections(owner: UserID) async throws -> [StoredStayCorrection] {
    try await rows(
      """
      SELECT id, created_at, correction FROM stay_corrections WHERE user_id = \(owner.rawValue)
      ORDER BY created_at, id COLLATE "C"
      """
    ).compactMap { row in
      let (id, createdAt, json) = try row.decode((String, Int64, String).self)
      return StoredStayCorrection(id: id, createdAt: createdAt, json: json)
    }
  }

  public func addStayCorrection(_ correction: StoredStayCorrection, owner: UserID, maximumCount: Int) async throws
    -> Bool
  {
    try await transaction { connection in
      // The owner's row, locked: two concurrent additions can't both pass the count.
      _ = try await connection.query(
        "SELECT 1 FROM users WHERE id = \(owner.rawValue) FOR UPDATE", logger: self.logger
      ).collect()
      let count =
        try await connection.query(
          "SELECT count(*) FROM stay_corrections WHERE user_id = \(owner.rawValue)", logger: self.logger
        ).collect().first?.decode(Int.self) ?? 0
      guard count < maximumCount else { return false }
      try await connection.query(
        """
        INSERT INTO stay_corrections(user_id, id, correction, created_at)
        VALUES (\(owner.rawValue), \(correction.id), \(correction.json), \(correction.createdAt))
        """, logger: self.logger)
      return true
    }
  }

  public func deleteStayCorrection(id: String, owner: UserID) async throws -> Bool {
    try await !rows(
      "DELETE FROM stay_corrections WHERE user_id = \(owner.rawValue) AND id = \(id) RETURNING id"
    ).isEmpty
  }
}
