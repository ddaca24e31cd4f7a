import Foundation
import GRDB
import MeridianStore
import PersistenceKit

extension SQLiteStore {
  // MARK: Gazetteer

  public func beginGazetteerFile(_ file: String, digest: String, restart: Bool, now: Int64) async throws
    -> GazetteerFileProgress
  {
    try await database.write { db in
      if let row = try Row.fetchOne(
        db, sql: "SELECT digest, staged_through, completed_at FROM geo_imports WHERE file = ?", arguments: [file]),
        (row["digest"] as String) == digest, !restart
      {
        if (row["completed_at"] as Int64?) != nil { return .completed }
        return .staged(through: row["staged_through"])
      }
      try db.execute(sql: "DELETE FROM geo_staging WHERE file = ?", arguments: [file])
      try db.execute(
        sql: """
          INSERT INTO geo_imports(file, digest, staged_through, rows, started_at, completed_at) VALUES (?, ?, 0, 0, ?, NULL)
          ON CONFLICT(file) DO UPDATE SET digest = excluded.digest, staged_through = 0, rows = 0,
            started_at = excluded.started_at, completed_at = NULL
          """,
        arguments: [file, digest, now])
      return .staged(through: 0)
    }
  }

  public func stageGazetteerRows(_ rows: [GazetteerStagedRow], file: String, through line: Int) async throws {
    try await database.write { db in
      try db.execute(
        sql: "UPDATE geo_imports SET staged_through = ? WHERE file = ? AND completed_at IS NULL",
        arguments: [line, file])
      guard db.changesCount == 1 else { throw GazetteerStoreError.notStarted(file) }
      let insert = try db.cachedStatement(
        sql: """
          INSERT OR REPLACE INTO geo_staging(file, line, kind, code, level, country, geoname_id, name, names, admin1,
            admin2, latitude, longitude, population, feature_code, time_zone, language, rank)
          VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
          """)
      for row in rows {
        let c = row.stagingColumns
        let values: [(any DatabaseValueConvertible)?] = [
          file, row.line, c.kind, c.code, c.level, c.country, c.geonameID, c.name, c.names, c.admin1, c.admin2,
          c.latitude, c.longitude, c.population, c.featureCode, c.timeZone, c.language, c.rank,
        ]
        try insert.execute(arguments: StatementArguments(values))
      }
    }
  }

  public func commitGazetteerFile(_ file: String, now: Int64) async throws -> Int {
    try await database.write { db in
      guard
        try Bool.fetchOne(
          db, sql: "SELECT EXISTS(SELECT 1 FROM geo_imports WHERE file = ?)", arguments: [file]) == true
      else { throw GazetteerStoreError.notStarted(file) }
      let languages = try SQLiteSchema.localization.languages(db)
      let localized = languages.map { "name_\($0)" }
      let extracts = languages.map { "json_extract(names, '$.\($0)')" }
      func kept(_ table: String) -> String {
        localized.map { "\($0) = COALESCE(NULLIF(excluded.\($0), ''), \(table).\($0))" }.joined(separator: ", ")
      }
      var applied = 0
      try db.execute(
        sql: """
          INSERT INTO geo_areas(code, level, country, geoname_id, name, updated_at\(Self.list(localized)))
          SELECT code, level, country, geoname_id, name, ?\(Self.list(extracts))
          FROM geo_staging WHERE file = ? AND kind = 'area' ORDER BY line
          ON CONFLICT(code) DO UPDATE SET level = excluded.level, country = excluded.country,
            geoname_id = excluded.geoname_id, name = excluded.name, updated_at = excluded.updated_at\(
              localized.isEmpty ? "" : ", " + kept("geo_areas"))
          """,
        arguments: [now, file])
      applied += db.changesCount
      try db.execute(
        sql: """
          INSERT INTO geo_places(geoname_id, name, country, admin1, admin2, latitude, longitude, population,
            feature_code, time_zone, updated_at\(Self.list(localized)))
          SELECT geoname_id, name, country, admin1, admin2, latitude, longitude, COALESCE(population, 0),
            COALESCE(feature_code, ''), time_zone, ?\(Self.list(extracts))
          FROM geo_staging WHERE file = ? AND kind = 'locality' ORDER BY line
          ON CONFLICT(geoname_id) DO UPDATE SET name = excluded.name, country = excluded.country,
            admin1 = excluded.admin1, admin2 = excluded.admin2, latitude = excluded.latitude,
            longitude = excluded.longitude, population = excluded.population, feature_code = excluded.feature_code,
            time_zone = excluded.time_zone, updated_at = excluded.updated_at\(
              localized.isEmpty ? "" : ", " + kept("geo_places"))
          """,
        arguments: [now, file])
      applied += db.changesCount
      for language in languages {
        let column = "name_\(language)"
        for (table, key) in [("geo_places", "geoname_id"), ("geo_areas", "geoname_id")] {
          try db.execute(
            sql: """
              UPDATE \(table) SET \(column) = (
                SELECT s.name FROM geo_staging s
                WHERE s.file = ?1 AND s.kind = 'name' AND s.language = ?2 AND s.geoname_id = \(table).\(key)
                ORDER BY s.rank DESC, s.line LIMIT 1), updated_at = ?3
              WHERE \(key) IN (
                SELECT geoname_id FROM geo_staging WHERE file = ?1 AND kind = 'name' AND language = ?2
                  AND (rank >= 0 OR COALESCE(\(table).\(column), '') = ''))
              """,
            arguments: [file, language, now])
          applied += db.changesCount
        }
      }
      try db.execute(sql: "DELETE FROM geo_staging WHERE file = ?", arguments: [file])
      try db.execute(
        sql: "UPDATE geo_imports SET rows = ?, completed_at = ? WHERE file = ?", arguments: [applied, now, file])
      return applied
    }
  }

  public func gazetteerFiles() async throws -> [GazetteerFileState] {
    try await database.read { db in
      try Row.fetchAll(
        db, sql: "SELECT file, digest, staged_through, rows, completed_at FROM geo_imports ORDER BY started_at, file"
      ).map {
        GazetteerFileState(
          file: $0["file"], digest: $0["digest"], stagedThrough: $0["staged_through"], rows: $0["rows"],
          completedAt: $0["completed_at"])
      }
    }
  }

  public func gazetteerCounts() async throws -> GazetteerCounts {
    try await database.read { db in
      var counts = GazetteerCounts()
      for row in try Row.fetchAll(db, sql: "SELECT level, COUNT(*) AS n FROM geo_areas GROUP BY level") {
        switch GazetteerLevel(rawValue: row["level"]) {
        case .country: counts.countries = row["n"]
        case .admin1: counts.admin1 = row["n"]
        case .admin2: counts.admin2 = row["n"]
        default: break
        }
      }
      counts.localities = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM geo_places") ?? 0
      return counts
    }
  }

  public func gazetteerLocalities() async throws -> [GazetteerLocality] {
    try await database.read { db in
      try Row.fetchAll(
        db,
        sql: """
          SELECT geoname_id, name, country, admin1, admin2, latitude, longitude, population, feature_code, time_zone
          FROM geo_places ORDER BY geoname_id
          """
      ).map {
        GazetteerLocality(
          geonameID: $0["geoname_id"], name: $0["name"], country: $0["country"], admin1: $0["admin1"],
          admin2: $0["admin2"], latitude: $0["latitude"], longitude: $0["longitude"], population: $0["population"],
          featureCode: $0["feature_code"], timeZone: $0["time_zone"])
      }
    }
  }

  public func gazetteerNames(areas: [String], localities: [Int64], languages: [String]) async throws
    -> GazetteerNames
  {
    try await database.read { db in
      let available = try SQLiteSchema.localization.languages(db)
      let chain = languages.compactMap { try? LocalizationRegistry.normalizedLanguage($0) }.filter {
        available.contains($0)
      }
      let name = try LocalizationRegistry.resolvedExpression(field: "name", languages: chain)
      var names = GazetteerNames()
      for chunk in areas.chunks(of: 500) {
        let codes = Array(chunk)
        let marks = Array(repeating: "?", count: codes.count).joined(separator: ", ")
        for row in try Row.fetchAll(
          db, sql: "SELECT code, \(name) FROM geo_areas WHERE code IN (\(marks))", arguments: StatementArguments(codes))
        {
          names.areas[row["code"]] = row["name"]
        }
      }
      for chunk in localities.chunks(of: 500) {
        let ids = Array(chunk)
        let marks = Array(repeating: "?", count: ids.count).joined(separator: ", ")
        for row in try Row.fetchAll(
          db, sql: "SELECT geoname_id, \(name) FROM geo_places WHERE geoname_id IN (\(marks))",
          arguments: StatementArguments(ids))
        {
          names.localities[row["geoname_id"]] = row["name"]
        }
      }
      return names
    }
  }

  public func gazetteerTranslations(area: String?, locality: Int64?) async throws -> [String: String] {
    try await database.read { db in
      let languages = try SQLiteSchema.localization.languages(db)
      let columns = ["name"] + languages.map { "name_\($0)" }
      let row: Row?
      if let area {
        row = try Row.fetchOne(
          db, sql: "SELECT \(columns.joined(separator: ", ")) FROM geo_areas WHERE code = ?", arguments: [area])
      } else if let locality {
        row = try Row.fetchOne(
          db, sql: "SELECT \(columns.joined(separator: ", ")) FROM geo_places WHERE geoname_id = ?",
          arguments: [locality])
      } else {
        row = nil
      }
      guard let row else { return [:] }
      var result: [String: String] = [:]
      for (index, language) in ([""] + languages).enumerated() {
        if let value = row[index] as String?, !value.isEmpty { result[language] = value }
      }
      return result
    }
  }

  /// `, a, b` for a non-empty list, else nothing.
  static func list(_ items: [String]) -> String { items.isEmpty ? "" : ", " + items.joined(separator: ", ") }
}
