import PersistenceKit

extension SQLiteSchema {
  /// Appends the gazetteer migrations: the tables, then the localized `name` columns of areas and places for every
  /// language the database has.
  static func appendGazetteerMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-26 gazetteer", gazetteer))
    migrator.append(localization.addFieldsMigration(table: "geo_areas", fields: ["name"]))
    migrator.append(localization.addFieldsMigration(table: "geo_places", fields: ["name"]))
  }

  /// `geo_areas` holds countries (`RU`), admin1 (`RU.75`) and admin2 (`RU.75.123`) areas; `geo_places` the
  /// populated places by GeoNames id. `geo_imports` records each dump file's import (digest, last staged line,
  /// completion) and `geo_staging` holds the rows of files being imported until their commit.
  static let gazetteer = """
    CREATE TABLE geo_areas(
      code TEXT PRIMARY KEY NOT NULL,
      level INTEGER NOT NULL CHECK (level BETWEEN 0 AND 2),
      country TEXT NOT NULL,
      geoname_id INTEGER,
      name TEXT NOT NULL,
      updated_at INTEGER NOT NULL
    );
    CREATE INDEX geo_areas_geoname ON geo_areas(geoname_id) WHERE geoname_id IS NOT NULL;
    CREATE TABLE geo_places(
      geoname_id INTEGER PRIMARY KEY,
      name TEXT NOT NULL,
      country TEXT NOT NULL,
      admin1 TEXT,
      admin2 TEXT,
      latitude REAL NOT NULL CHECK (latitude BETWEEN -90 AND 90),
      longitude REAL NOT NULL CHECK (longitude BETWEEN -180 AND 180),
      population INTEGER NOT NULL DEFAULT 0,
      feature_code TEXT NOT NULL DEFAULT '',
      time_zone TEXT,
      updated_at INTEGER NOT NULL
    );
    CREATE TABLE geo_imports(
      file TEXT PRIMARY KEY NOT NULL,
      digest TEXT NOT NULL,
      staged_through INTEGER NOT NULL DEFAULT 0,
      rows INTEGER NOT NULL DEFAULT 0,
      started_at INTEGER NOT NULL,
      completed_at INTEGER
    );
    CREATE TABLE geo_staging(
      file TEXT NOT NULL,
      line INTEGER NOT NULL,
      kind TEXT NOT NULL CHECK (kind IN ('area', 'locality', 'name')),
      code TEXT,
      level INTEGER,
      country TEXT,
      geoname_id INTEGER,
      name TEXT NOT NULL,
      names TEXT NOT NULL DEFAULT '{}',
      admin1 TEXT,
      admin2 TEXT,
      latitude REAL,
      longitude REAL,
      population INTEGER,
      feature_code TEXT,
      time_zone TEXT,
      language TEXT,
      rank INTEGER,
      PRIMARY KEY (file, line)
    ) WITHOUT ROWID;
    CREATE INDEX geo_staging_names ON geo_staging(file, language, geoname_id) WHERE kind = 'name';
    """
}
