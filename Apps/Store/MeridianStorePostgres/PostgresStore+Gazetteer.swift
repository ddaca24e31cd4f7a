import Foundation
import MeridianStore
import PersistenceKit
import PostgresNIO

extension PostgresStore {
  // MARK: Gazetteer

  public func beginGazetteerFile(_ file: String, digest: String, restart: Bool, now: Int64) async throws
    -> GazetteerFileProgress
  {
    try await transaction { connection in
      let found = try await connection.query(
        "SELECT digest, staged_through, completed_at FROM geo_imports WHERE file = \(file) FOR UPDATE",
        logger: self.logger
      ).collect().first
      if let found, !restart {
        let (stored, through, completed) = try found.decode((String, Int64, Int64?).self)
        if stored == digest { return completed != nil ? .completed : .staged(through: Int(through)) }
      }
      _ = try await connection.query("DELETE FROM geo_staging WHERE file = \(file)", logger: self.logger).collect()
      _ = try await connection.query(
        """
        INSERT INTO geo_imports(file, digest, staged_through, rows, started_at, completed_at)
        VALUES (\(file), \(digest), 0, 0, \(now), NULL)
        ON CONFLICT (file) DO UPDATE SET digest = excluded.digest, staged_through = 0, rows = 0,
          started_at = excluded.started_at, completed_at = NULL
        """, logger: self.logger
      ).collect()
      return .staged(through: 0)
    }
  }

  public func stageGazetteerRows(_ rows: [GazetteerStagedRow], file: String, through line: Int) async throws {
    let columns = rows.map(\.stagingColumns)
    var binds = PostgresBindings(capacity: 18)
    binds.append(file)
    binds.append(rows.map { Int64($0.line) })
    binds.append(columns.map(\.kind))
    try binds.appendNullable(columns.map(\.code))
    try binds.appendNullable(columns.map { $0.level.map(Int64.init) })
    try binds.appendNullable(columns.map(\.country))
    try binds.appendNullable(columns.map(\.geonameID))
    binds.append(columns.map(\.name))
    binds.append(columns.map(\.names))
    try binds.appendNullable(columns.map(\.admin1))
    try binds.appendNullable(columns.map(\.admin2))
    try binds.appendNullable(columns.map(\.latitude))
    try binds.appendNullable(columns.map(\.longitude))
    try binds.appendNullable(columns.map(\.population))
    try binds.appendNullable(columns.map(\.featureCode))
    try binds.appendNullable(columns.map(\.timeZone))
    try binds.appendNullable(columns.map(\.language))
    try binds.appendNullable(columns.map { $0.rank.map(Int64.init) })
    let insert = PostgresQuery(
      unsafeSQL: """
        INSERT INTO geo_staging(file, line, kind, code, level, country, geoname_id, name, names, admin1, admin2,
          latitude, longitude, population, feature_code, time_zone, language, rank)
        SELECT $1, r.line, r.kind, r.code, r.level, r.country, r.geoname_id, r.name, r.names::jsonb, r.admin1,
          r.admin2, r.latitude, r.longitude, r.population, r.feature_code, r.time_zone, r.language, r.rank
        FROM unnest($2::bigint[], $3::text[], $4::text[], $5::bigint[], $6::text[], $7::bigint[], $8::text[],
          $9::text[], $10::text[], $11::text[], $12::float8[], $13::float8[], $14::bigint[], $15::text[],
          $16::text[], $17::text[], $18::bigint[])
          AS r(line, kind, code, level, country, geoname_id, name, names, admin1, admin2, latitude, longitude,
            population, feature_code, time_zone, language, rank)
        ON CONFLICT (file, line) DO UPDATE SET kind = excluded.kind, code = excluded.code, level = excluded.level,
          country = excluded.country, geoname_id = excluded.geoname_id, name = excluded.name, names = excluded.names,
          admin1 = excluded.admin1, admin2 = excluded.admin2, latitude = excluded.latitude,
          longitude = excluded.longitude, population = excluded.population, feature_code = excluded.feature_code,
          time_zone = excluded.time_zone, language = excluded.language, rank = excluded.rank
        """, binds: binds)
    try await transaction { connection in
      let updated = try await connection.query(
        """
        UPDATE geo_imports SET staged_through = \(Int64(line)) WHERE file = \(file) AND completed_at IS NULL
        RETURNING file
        """, logger: self.logger
      ).collect()
      guard !updated.isEmpty else { throw GazetteerStoreError.notStarted(file) }
      if !rows.isEmpty { _ = try await connection.query(insert, logger: self.logger).collect() }
    }
  }

  public func commitGazetteerFile(_ file: String, now: Int64) async throws -> Int {
    try await transaction { connection in
      guard
        try await !connection.query("SELECT 1 FROM geo_imports WHERE file = \(file) FOR UPDATE", logger: self.logger)
          .collect().isEmpty
      else { throw GazetteerStoreError.notStarted(file) }
      let languages = try await Self.dataLanguages(connection, logger: self.logger)
      let localized = languages.map { PostgresSchema.quoted("name_\($0)") }
      let extracts = languages.map { "names ->> '\($0)'" }
      func kept(_ table: String) -> String {
        localized.map { ", \($0) = COALESCE(NULLIF(excluded.\($0), ''), \(table).\($0))" }.joined()
      }
      func list(_ items: [String]) -> String { items.map { ", " + $0 }.joined() }
      var applied = 0
      func run(_ sql: String, _ values: [(any PostgresEncodable & Sendable)?]) async throws {
        var binds = PostgresBindings(capacity: values.count)
        for value in values {
          if let value { try binds.append(value) } else { binds.appendNull() }
        }
        let rows = try await connection.query(
          PostgresQuery(unsafeSQL: "WITH changed AS (\(sql) RETURNING 1) SELECT count(*) FROM changed", binds: binds),
          logger: self.logger
        ).collect()
        applied += try Int(rows.first?.decode(Int64.self) ?? 0)
      }
      try await run(
        """
        INSERT INTO geo_areas(code, level, country, geoname_id, name, updated_at\(list(localized)))
        SELECT code, level, country, geoname_id, name, $1\(list(extracts))
        FROM geo_staging WHERE file = $2 AND kind = 'area' ORDER BY line
        ON CONFLICT (code) DO UPDATE SET level = excluded.level, country = excluded.country,
          geoname_id = excluded.geoname_id, name = excluded.name, updated_at = excluded.updated_at\(kept("geo_areas"))
        """, [now, file])
      try await run(
        """
        INSERT INTO geo_places(geoname_id, name, country, admin1, admin2, latitude, longitude, population,
          feature_code, time_zone, updated_at\(list(localized)))
        SELECT geoname_id, name, country, admin1, admin2, latitude, longitude, COALESCE(population, 0),
          COALESCE(feature_code, ''), time_zone, $1\(list(extracts))
        FROM geo_staging WHERE file = $2 AND kind = 'locality' ORDER BY line
        ON CONFLICT (geoname_id) DO UPDATE SET name = excluded.name, country = excluded.country,
          admin1 = excluded.admin1, admin2 = excluded.admin2, latitude = excluded.latitude,
          longitude = excluded.longitude, population = excluded.population, feature_code = excluded.feature_code,
          time_zone = excluded.time_zone, updated_at = excluded.updated_at\(kept("geo_places"))
        """, [now, file])
      for (language, column) in zip(languages, localized) {
        for table in ["geo_places", "geo_areas"] {
          try await run(
            """
            UPDATE \(table) t SET \(column) = n.name, updated_at = $3
            FROM (
              SELECT DISTINCT ON (geoname_id) geoname_id, name, rank FROM geo_staging
              WHERE file = $1 AND kind = 'name' AND language = $2 ORDER BY geoname_id, rank DESC, line
            ) n
            WHERE t.geoname_id = n.geoname_id AND (n.rank >= 0 OR COALESCE(t.\(column), '') = '')
            """, [file, language, now])
        }
      }
      _ = try await connection.query("DELETE FROM geo_staging WHERE file = \(file)", logger: self.logger).collect()
      _ = try await connection.query(
        "UPDATE geo_imports SET rows = \(Int64(applied)), completed_at = \(now) WHERE file = \(file)",
        logger: self.logger
      ).collect()
      return applied
    }
  }

  public func gazetteerFiles() async throws -> [GazetteerFileState] {
    try await rows(
      "SELECT file, digest, staged_through, rows, completed_at FROM geo_imports ORDER BY started_at, file"
    ).map { row in
      let (file, digest, through, count, completed) = try row.decode((String, String, Int64, Int64, Int64?).self)
      return GazetteerFileState(
        file: file, digest: digest, stagedThrough: Int(through), rows: Int(count), completedAt: completed)
    }
  }

  public func gazetteerCounts() async throws -> GazetteerCounts {
    var counts = GazetteerCounts()
    for row in try await rows("SELECT level, count(*) FROM geo_areas GROUP BY level") {
      let (level, count) = try row.decode((Int32, Int64).self)
      switch GazetteerLevel(rawValue: Int(level)) {
      case .country: counts.countries = Int(count)
      case .admin1: counts.admin1 = Int(count)
      case .admin2: counts.admin2 = Int(count)
      default: break
      }
    }
    counts.localities = try await Int(rows("SELECT count(*) FROM geo_places").first?.decode(Int64.self) ?? 0)
    return counts
  }

  public func gazetteerLocalities() async throws -> [GazetteerLocality] {
    try await rows(
      """
      SELECT geoname_id, name, country, admin1, admin2, latitude, longitude, population, feature_code, time_zone
      FROM geo_places ORDER BY geoname_id
      """
    ).map { row in
      let (id, name, country, admin1, admin2, latitude, longitude, population, feature, zone) = try row.decode(
        (Int64, String, String, String?, String?, Double, Double, Int64, String, String?).self)
      return GazetteerLocality(
        geonameID: id, name: name, country: country, admin1: admin1, admin2: admin2, latitude: latitude,
        longitude: longitude, population: population, featureCode: feature, timeZone: zone)
    }
  }

  public func gazetteerNames(areas: [String], localities: [Int64], languages: [String]) async throws
    -> GazetteerNames
  {
    try await client.withConnection { connection in
      let available = try await Self.dataLanguages(connection, logger: self.logger)
      let chain = languages.compactMap { try? LocalizationRegistry.normalizedLanguage($0) }.filter {
        available.contains($0)
      }
      let name = Self.resolvedName(chain)
      var names = GazetteerNames()
      if !areas.isEmpty {
        var binds = PostgresBindings(capacity: 1)
        binds.append(areas)
        for row in try await connection.query(
          PostgresQuery(unsafeSQL: "SELECT code, \(name) FROM geo_areas WHERE code = ANY($1)", binds: binds),
          logger: self.logger
        ).collect() {
          let (code, value) = try row.decode((String, String).self)
          names.areas[code] = value
        }
      }
      if !localities.isEmpty {
        var binds = PostgresBindings(capacity: 1)
        binds.append(localities)
        for row in try await connection.query(
          PostgresQuery(
            unsafeSQL: "SELECT geoname_id, \(name) FROM geo_places WHERE geoname_id = ANY($1)", binds: binds),
          logger: self.logger
        ).collect() {
          let (id, value) = try row.decode((Int64, String).self)
          names.localities[id] = value
        }
      }
      return names
    }
  }

  public func gazetteerTranslations(area: String?, locality: Int64?) async throws -> [String: String] {
    try await client.withConnection { connection in
      let languages = try await Self.dataLanguages(connection, logger: self.logger)
      let columns = (["name"] + languages.map { "name_\($0)" }).map(PostgresSchema.quoted).joined(separator: ", ")
      let found: PostgresRow?
      if let area {
        var binds = PostgresBindings(capacity: 1)
        binds.append(area)
        found = try await connection.query(
          PostgresQuery(unsafeSQL: "SELECT \(columns) FROM geo_areas WHERE code = $1", binds: binds),
          logger: self.logger
        ).collect().first
      } else if let locality {
        var binds = PostgresBindings(capacity: 1)
        binds.append(locality)
        found = try await connection.query(
          PostgresQuery(unsafeSQL: "SELECT \(columns) FROM geo_places WHERE geoname_id = $1", binds: binds),
          logger: self.logger
        ).collect().first
      } else {
        found = nil
      }
      guard let found else { return [:] }
      var result: [String: String] = [:]
      for (cell, language) in zip(found.makeRandomAccess(), [""] + languages) {
        if let value = try cell.decode(String?.self), !value.isEmpty { result[language] = value }
      }
      return result
    }
  }

  /// `COALESCE(NULLIF("name_uk", ''), …, name)`: the first non-empty name of `languages`, else the base name.
  private static func resolvedName(_ languages: [String]) -> String {
    let parts = languages.map { "NULLIF(\(PostgresSchema.quoted("name_\($0)")), '')" } + ["name"]
    return parts.count == 1 ? "name" : "COALESCE(\(parts.joined(separator: ", ")))"
  }
}
