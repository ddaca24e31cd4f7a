import PersistenceKit

extension PostgresSchema {
  /// The languages venue names and descriptions are stored in from the start (`name_en`, `name_ru`, `name_uk`, …).
  static let venueLanguages = ["en", "ru", "uk"]

  /// The localized fields, as on SQLite: `venues.name` and `venues.description`, each with one column per language;
  /// an area that localizes another table registers it here too, as in `SQLiteSchema.localization`. The languages
  /// added so far are the rows of ``languagesTable``.
  public static let localization: LocalizationRegistry = {
    var registry = venueLocalization
    registry.register(table: "places", fields: ["title", "short_title", "description"])  // PostgresSchema+Places
    registry.register(table: "geo_areas", fields: ["name"])  // PostgresSchema+Gazetteer
    registry.register(table: "geo_places", fields: ["name"])  // PostgresSchema+Gazetteer
    return registry
  }()

  /// The venues' localized fields alone: what the first language migrations add, whatever is registered later (a
  /// migration's text never changes once applied; a table localized later adds its columns for the languages there
  /// are with ``localizeFieldsSQL(table:fields:)``).
  static let venueLocalization: LocalizationRegistry = {
    var registry = LocalizationRegistry()
    registry.register(table: "venues", fields: ["name", "description"])
    return registry
  }()

  /// The table that lists the languages added to the database, in the order they were added (`position`); the same
  /// name as PersistenceKit's on SQLite.
  static var languagesTable: String { localization.languagesTable }

  /// Appends the venue migrations: the tables, then one migration per language.
  public static func appendVenueMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-26 venues and promotions", venuesAndPromotions))
    migrator.append(.sql("2026-11-26 data languages", dataLanguages))
    for language in venueLanguages {
      // The codes are constants that `normalizedLanguage` accepts, so this never fails.
      guard let statements = try? addLanguageStatements(language, registry: venueLocalization) else {
        preconditionFailure("'\(language)' is not a valid language code")
      }
      migrator.append(
        .sql("localization: add language \(language)", statements.map { $0 + ";" }.joined(separator: "\n")))
    }
  }

  /// The statements that add `language` to the localized data, one by one: a `text` column per localized field of
  /// every table of `registry` (existing values are kept; with `ifExists`, a registered table not created yet is
  /// skipped) and a row in ``languagesTable``. Idempotent (`IF NOT EXISTS`, `ON CONFLICT DO NOTHING`).
  /// - Throws: `LocalizationError.invalidLanguageCode` for anything but a language code (`uk`, `pt-BR`).
  static func addLanguageStatements(
    _ language: String, registry: LocalizationRegistry = localization, ifExists: Bool = false
  ) throws -> [String] {
    let code = try LocalizationRegistry.normalizedLanguage(language)
    var statements: [String] = []
    for table in registry.tables {
      let columns = (registry.fieldsByTable[table] ?? []).map {
        "ADD COLUMN IF NOT EXISTS \(quoted("\($0)_\(code)")) text"
      }
      statements.append(
        "ALTER TABLE \(ifExists ? "IF EXISTS " : "")\(quoted(table)) \(columns.joined(separator: ", "))")
    }
    // The code passed `normalizedLanguage`: letters, digits and `_` only, so it is safe as a literal.
    statements.append("INSERT INTO \(quoted(languagesTable))(code) VALUES ('\(code)') ON CONFLICT (code) DO NOTHING")
    return statements
  }

  /// The SQL of a migration that localizes `fields` of `table` (its own migration creates the base columns): a
  /// `text` column per field for every language the database has, like PersistenceKit's `addFieldsMigration` on
  /// SQLite. Register the table in ``localization`` too, so that languages added later cover it.
  public static func localizeFieldsSQL(table: String, fields: [String]) -> String {
    func literal(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "''") + "'" }
    let columns = fields.map { "format('ADD COLUMN IF NOT EXISTS %I text', \(literal($0 + "_")) || code)" }
    return """
      DO $localize$
      DECLARE code text;
      BEGIN
        FOR code IN SELECT l.code FROM \(quoted(languagesTable)) l ORDER BY l.position LOOP
          EXECUTE format('ALTER TABLE %I ', \(literal(table))) || concat_ws(', ', \(columns.joined(separator: ", ")));
        END LOOP;
      END
      $localize$;
      """
  }

  /// `name` as a PostgreSQL identifier.
  static func quoted(_ name: String) -> String {
    "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
  }

  /// The languages of the localized data, in the order they were added.
  static let dataLanguages = """
    CREATE TABLE persistencekit_languages(
      code text PRIMARY KEY,
      position bigint GENERATED ALWAYS AS IDENTITY,
      added_at timestamptz NOT NULL DEFAULT now()
    );
    """

  /// Venues carry their position twice: `latitude`/`longitude` (what the exact haversine distance is computed
  /// from, as on SQLite) and the `geography(Point, 4326)` generated from them, indexed by GiST for `ST_DWithin`.
  /// `geohash2…6` group venues into clusters; `row_id` is the stable integer a radius match is read back by.
  ///
  /// Offers and redemptions are per-user tables: their keys lead with the user (distribution by user).
  static let venuesAndPromotions = """
    CREATE EXTENSION IF NOT EXISTS postgis;
    CREATE TABLE venues(
      id text PRIMARY KEY,
      row_id bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
      name text NOT NULL,
      description text,
      venue_type text,
      address text,
      city text,
      site text,
      phone text,
      email text,
      logo_url text,
      time_zone text,
      keywords text NOT NULL DEFAULT '[]',
      latitude double precision NOT NULL CHECK (latitude BETWEEN -90 AND 90),
      longitude double precision NOT NULL CHECK (longitude BETWEEN -180 AND 180),
      location geography(Point, 4326) NOT NULL
        GENERATED ALWAYS AS (ST_SetSRID(ST_MakePoint(longitude, latitude), 4326)::geography) STORED,
      geohash2 text NOT NULL,
      geohash3 text NOT NULL,
      geohash4 text NOT NULL,
      geohash5 text NOT NULL,
      geohash6 text NOT NULL,
      rating_sum bigint NOT NULL DEFAULT 0,
      rating_count bigint NOT NULL DEFAULT 0,
      updated_at bigint NOT NULL
    );
    CREATE INDEX venues_location ON venues USING gist(location);
    CREATE INDEX venues_geohash6 ON venues(geohash6);
    CREATE TABLE venue_promotions(
      id text PRIMARY KEY,
      venue_id text NOT NULL REFERENCES venues(id) ON DELETE CASCADE,
      name text NOT NULL,
      promo_code text NOT NULL,
      image_url text,
      old_price_amount bigint,
      old_price_currency text,
      new_price_amount bigint,
      new_price_currency text,
      audience text NOT NULL CHECK (audience IN ('general', 'special')),
      valid_from bigint,
      valid_until bigint,
      window_start integer,
      window_end integer
    );
    CREATE INDEX venue_promotions_venue ON venue_promotions(venue_id);
    CREATE TABLE promotion_offers(
      user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      promotion_id text NOT NULL REFERENCES venue_promotions(id) ON DELETE CASCADE,
      first_at bigint NOT NULL,
      last_at bigint NOT NULL,
      times bigint NOT NULL CHECK (times > 0),
      PRIMARY KEY (user_id, promotion_id)
    );
    CREATE INDEX promotion_offers_promotion ON promotion_offers(promotion_id);
    CREATE TABLE promotion_redemptions(
      user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      promotion_id text NOT NULL REFERENCES venue_promotions(id) ON DELETE CASCADE,
      redeemed_at bigint NOT NULL,
      PRIMARY KEY (user_id, promotion_id)
    );
    CREATE INDEX promotion_redemptions_promotion ON promotion_redemptions(promotion_id);
    """
}
