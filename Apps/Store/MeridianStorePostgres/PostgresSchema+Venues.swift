import PersistenceKit

extension PostgresSchema {
  /// The languages venue names and descriptions are stored in from the start (`name_en`, `name_ru`, `name_uk`, …).
  static let venueLanguages = ["en", "ru", "uk"]

  /// The localized fields, as on SQLite, each with one column per language (`places.title_uk`, …);
  /// an area that localizes another table registers it here too, as in `SQLiteSchema.localization`. The languages
  /// added so far are the rows of ``languagesTable``.
  public static let localization: LocalizationRegistry = {
    // Not `venueLocalization`: venues are places since "venues are places" (their titles are `places.title_…`).
    var registry = LocalizationRegistry()
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

  /// Appends the migration that makes venues places of kind `venue`, as on SQLite (``venuesArePlaces``).
  static func appendVenuePlaceMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-26 venues are places", venuesArePlaces))
  }

  /// As on SQLite: every venue moves into `places` under its own id (kind `venue`, names as titles in every
  /// language, type, contacts, logo, keywords); `venues` keeps only the imported rating, its `id` now
  /// `REFERENCES places(id) ON DELETE CASCADE`, so promotions, advertiser grants, offers and redemptions (which
  /// refer to `venues(id)`) keep pointing at the same venue and none of their tables changes. A trigger keeps one
  /// `venues` row per place of kind `venue` and keeps a venue a venue. `places.location` (a geography generated from
  /// the position, GiST-indexed) serves radius queries over every place. A venue whose id is taken by a place of
  /// another kind stops the migration, naming the ids.
  ///
  /// PostgreSQL migrations are SQL, so the search columns of the moved venues are folded here by
  /// `pg_temp.meridian_fold` — lowercase, the accents of Latin and Cyrillic letters dropped ("ё" → "е", "ї" → "і",
  /// "é" → "e"), anything but letters and digits a space — which is ``PlaceSearch/normalized(_:)`` for these
  /// scripts; a venue's next import folds it in Swift again.
  static let venuesArePlaces = """
    ALTER TABLE places ADD COLUMN location geography(Point, 4326) GENERATED ALWAYS AS (
      CASE WHEN latitude IS NULL THEN NULL
        ELSE ST_SetSRID(ST_MakePoint(longitude, latitude), 4326)::geography END) STORED;
    CREATE INDEX places_location ON places USING gist(location);
    CREATE OR REPLACE FUNCTION pg_temp.meridian_fold(value text) RETURNS text LANGUAGE sql IMMUTABLE AS $fold$
      SELECT btrim(regexp_replace(
        translate(lower(coalesce(value, '')),
          'ÀÁÂÃÄÅÇÈÉÊËÌÍÎÏÑÒÓÔÕÖÙÚÛÜÝàáâãäåçèéêëìíîïñòóôõöùúûüýÿĀāĂăĄąĆćČčĎďĒēĖėĘęĚěĞğĪīĮįİŁŃńŇňŌōŐőŒŘřŚśŞşŠšŢţŤťŪūŮůŰűŲųŸŹźŻżŽžАБВГДЕЁЖЗИЙКЛМНОПРСТУФХЦЧШЩЪЫЬЭЮЯІЇЄҐЎёйїў',
          'aaaaaaceeeeiiiinooooouuuuyaaaaaaceeeeiiiinooooouuuuyyaaaaaaccccddeeeeeeeeggiiiiiłnnnnooooœrrssssssttttuuuuuuuuyzzzzzzабвгдеежзииклмнопрстуфхцчшщъыьэюяіієґуеиіу'),
        '[^0-9a-zß-öø-ÿĀ-ɏͰ-ϿЀ-ӿ]+', ' ', 'g'))
    $fold$;
    DO $venues$
    DECLARE
      clash text;
      code text;
      titles text := '';
      descriptions text := '';
    BEGIN
      SELECT string_agg(v.id, ', ' ORDER BY v.id) INTO clash
        FROM venues v JOIN places p ON p.id = v.id WHERE p.kind <> 'venue';
      IF clash IS NOT NULL THEN
        RAISE EXCEPTION 'Venues can''t become places: the ids % are taken by places of another kind; %', clash,
          'rename or delete those places (meridian-admin places delete), then start again.';
      END IF;
      INSERT INTO places(id, kind, title, description, venue_type, address, city, city_key, site, phone, email,
        logo_url, time_zone, keywords, latitude, longitude, created_at, updated_at)
      SELECT id, 'venue', name, description, venue_type, address, city,
        CASE WHEN city IS NULL THEN NULL ELSE pg_temp.meridian_fold(city) END, site, phone, email, logo_url,
        time_zone, keywords::jsonb, latitude, longitude, updated_at, updated_at
      FROM venues ORDER BY geohash6, id
      ON CONFLICT (id) DO NOTHING;
      INSERT INTO place_closure(place_id, ancestor_id, depth) SELECT id, id, 0 FROM venues ON CONFLICT DO NOTHING;
      FOR code IN SELECT l.code FROM persistencekit_languages l ORDER BY l.code LOOP
        IF EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema()
          AND table_name = 'venues' AND column_name = 'name_' || code)
        THEN
          EXECUTE format('UPDATE places p SET %I = v.%I, %I = v.%I FROM venues v WHERE p.id = v.id',
            'title_' || code, 'name_' || code, 'description_' || code, 'description_' || code);
        END IF;
        titles := titles || format(', NULLIF(pg_temp.meridian_fold(p.%I), '''')', 'title_' || code);
        descriptions := descriptions || format(', NULLIF(pg_temp.meridian_fold(p.%I), '''')', 'description_' || code);
      END LOOP;
      EXECUTE 'UPDATE places p SET title_key = concat_ws(E''\\n'', NULLIF(pg_temp.meridian_fold(p.title), '''')'
        || titles || ') FROM venues v WHERE p.id = v.id';
      EXECUTE 'UPDATE places p SET search = setweight(to_tsvector(''simple'', p.title_key), ''A'') || '
        || 'setweight(to_tsvector(''simple'', concat_ws(E''\\n'', (SELECT string_agg(pg_temp.meridian_fold(k), '
        || ''' '') FROM jsonb_array_elements_text(p.keywords) k), '
        || 'NULLIF(pg_temp.meridian_fold(p.description), '''')' || descriptions || ')), ''C'') '
        || 'FROM venues v WHERE p.id = v.id';
      FOR code IN SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema()
        AND table_name = 'venues' AND column_name NOT IN ('id', 'rating_sum', 'rating_count', 'updated_at')
      LOOP
        EXECUTE format('ALTER TABLE venues DROP COLUMN IF EXISTS %I CASCADE', code);
      END LOOP;
    END
    $venues$;
    DROP FUNCTION pg_temp.meridian_fold(text);
    ALTER TABLE venues ADD CONSTRAINT venues_place FOREIGN KEY (id) REFERENCES places(id) ON DELETE CASCADE;
    CREATE FUNCTION places_venue() RETURNS trigger LANGUAGE plpgsql AS $venue$
    BEGIN
      IF TG_OP = 'UPDATE' AND OLD.kind = 'venue' AND NEW.kind <> 'venue'
        AND EXISTS (SELECT 1 FROM venues WHERE id = OLD.id)
      THEN
        RAISE EXCEPTION 'place % is a venue (promotions may point at it), so its kind stays venue', OLD.id;
      END IF;
      IF NEW.kind = 'venue' THEN
        INSERT INTO venues(id, updated_at) VALUES (NEW.id, NEW.updated_at) ON CONFLICT (id) DO NOTHING;
      END IF;
      RETURN NULL;
    END
    $venue$;
    CREATE TRIGGER places_venue AFTER INSERT OR UPDATE OF kind ON places
      FOR EACH ROW EXECUTE FUNCTION places_venue();
    """

  static func appendVenueRatingMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-12-01 venue ratings in places", venueRatingsInPlaces))
    migrator.append(.sql("2026-12-01 a new venue row takes its place's rating", newVenueRowsTakeTheRating))
  }

  /// `places_venue` (the trigger that makes a venue's `venues` row) gives the new row the rating its places row
  /// holds, where it gave 0: an import writes the rating into the places rows, and the `venues_rating` trigger then
  /// set them back to 0 before the import's `venues` upsert set them again (two rewrites of every imported venue).
  static let newVenueRowsTakeTheRating = """
    CREATE OR REPLACE FUNCTION places_venue() RETURNS trigger LANGUAGE plpgsql AS $venue$
    BEGIN
      IF TG_OP = 'UPDATE' AND OLD.kind = 'venue' AND NEW.kind <> 'venue'
        AND EXISTS (SELECT 1 FROM venues WHERE id = OLD.id)
      THEN
        RAISE EXCEPTION 'place % is a venue (promotions may point at it), so its kind stays venue', OLD.id;
      END IF;
      IF NEW.kind = 'venue' THEN
        INSERT INTO venues(id, rating_sum, rating_count, updated_at)
        VALUES (NEW.id, NEW.venue_rating_sum, NEW.venue_rating_count, NEW.updated_at) ON CONFLICT (id) DO NOTHING;
      END IF;
      RETURN NULL;
    END
    $venue$;
    """

  /// As on SQLite: `places.venue_rating_sum` and `venue_rating_count` hold the venue's imported rating (`venues`),
  /// kept by two statement triggers on `venues`, so that a radius query reads `places` alone. Joining `venues` by
  /// its text key for each candidate took 1.6 ms of a 1 km query's 2.3 over a million venues (pgbench, warm).
  static let venueRatingsInPlaces = """
    ALTER TABLE places ADD COLUMN venue_rating_sum bigint NOT NULL DEFAULT 0;
    ALTER TABLE places ADD COLUMN venue_rating_count bigint NOT NULL DEFAULT 0;
    UPDATE places p SET venue_rating_sum = v.rating_sum, venue_rating_count = v.rating_count
      FROM venues v WHERE v.id = p.id AND (v.rating_sum <> 0 OR v.rating_count <> 0);
    CREATE FUNCTION venues_rating() RETURNS trigger LANGUAGE plpgsql AS $rating$
    BEGIN
      UPDATE places p SET venue_rating_sum = given.rating_sum, venue_rating_count = given.rating_count
        FROM given WHERE p.id = given.id
          AND (p.venue_rating_sum, p.venue_rating_count) IS DISTINCT FROM (given.rating_sum, given.rating_count);
      RETURN NULL;
    END
    $rating$;
    CREATE TRIGGER venues_rating_inserted AFTER INSERT ON venues REFERENCING NEW TABLE AS given
      FOR EACH STATEMENT EXECUTE FUNCTION venues_rating();
    CREATE TRIGGER venues_rating_updated AFTER UPDATE ON venues REFERENCING NEW TABLE AS given
      FOR EACH STATEMENT EXECUTE FUNCTION venues_rating();
    """
}
