import PersistenceKit

extension PostgresSchema {
  /// Appends the gazetteer migration: the tables with the localized `name` columns of every language there is.
  static func appendGazetteerMigrations(to migrator: inout Migrator) {
    migrator.append(
      .sql(
        "2026-11-26 gazetteer",
        gazetteer + localizeFieldsSQL(table: "geo_areas", fields: ["name"])
          + localizeFieldsSQL(table: "geo_places", fields: ["name"])))
  }

  /// As on SQLite: `geo_areas` holds countries (`RU`), admin1 (`RU.75`) and admin2 (`RU.75.123`) areas;
  /// `geo_places` the populated places by GeoNames id; `geo_imports` each dump file's import (digest, last staged
  /// line, completion); `geo_staging` the rows of files being imported until their commit.
  static let gazetteer = """
    CREATE TABLE geo_areas(
      code text PRIMARY KEY,
      level integer NOT NULL CHECK (level BETWEEN 0 AND 2),
      country text NOT NULL,
      geoname_id bigint,
      name text NOT NULL,
      updated_at bigint NOT NULL
    );
    CREATE INDEX geo_areas_geoname ON geo_areas(geoname_id) WHERE geoname_id IS NOT NULL;
    CREATE TABLE geo_places(
      geoname_id bigint PRIMARY KEY,
      name text NOT NULL,
      country text NOT NULL,
      admin1 text,
      admin2 text,
      latitude double precision NOT NULL CHECK (latitude BETWEEN -90 AND 90),
      longitude double precision NOT NULL CHECK (longitude BETWEEN -180 AND 180),
      population bigint NOT NULL DEFAULT 0,
      feature_code text NOT NULL DEFAULT '',
      time_zone text,
      updated_at bigint NOT NULL
    );
    CREATE TABLE geo_imports(
      file text PRIMARY KEY,
      digest text NOT NULL,
      staged_through bigint NOT NULL DEFAULT 0,
      rows bigint NOT NULL DEFAULT 0,
      started_at bigint NOT NULL,
      completed_at bigint
    );
    CREATE TABLE geo_staging(
      file text NOT NULL,
      line bigint NOT NULL,
      kind text NOT NULL CHECK (kind IN ('area', 'locality', 'name')),
      code text,
      level integer,
      country text,
      geoname_id bigint,
      name text NOT NULL,
      names jsonb NOT NULL DEFAULT '{}',
      admin1 text,
      admin2 text,
      latitude double precision,
      longitude double precision,
      population bigint,
      feature_code text,
      time_zone text,
      language text,
      rank integer,
      PRIMARY KEY (file, line)
    );
    CREATE INDEX geo_staging_names ON geo_staging(file, language, geoname_id) WHERE kind = 'name';

    """
}
