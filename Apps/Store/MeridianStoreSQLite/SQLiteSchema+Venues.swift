import Foundation
import GRDB
import GeoKit
import PersistenceKit

extension SQLiteSchema {
  /// The languages venue names and descriptions are stored in (`name_en`, `name_ru`, `name_uk`, …).
  static let venueLanguages = ["en", "ru", "uk"]

  /// The localized fields, each with one column per language. (Venues, localized as `venues.name` and
  /// `venues.description` until "venues are places", are places now: their titles are `places.title_…`.)
  public static let localization: LocalizationRegistry = {
    var registry = LocalizationRegistry()
    registry.register(table: "places", fields: ["title", "short_title", "description"])  // SQLiteSchema+Places
    registry.register(table: "geo_areas", fields: ["name"])  // SQLiteSchema+Gazetteer
    registry.register(table: "geo_places", fields: ["name"])  // SQLiteSchema+Gazetteer
    return registry
  }()

  /// Appends the venue migrations: the tables, then one generated migration per language.
  static func appendVenueMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-24 venues and promotions", venuesAndPromotions))
    for language in venueLanguages {
      // The codes are constants that `normalizedLanguage` accepts, so this never fails.
      guard let migration = try? localization.addLanguageMigration(language) else {
        preconditionFailure("'\(language)' is not a valid language code")
      }
      migrator.append(migration)
    }
  }

  /// Venues carry `geohash2…6` and `geokey` (62-bit integer geohash, like `fixes`). `venues_geokey` covers
  /// everything a radius query filters and sorts on (position, type, rating, id), so the scan over the geokey
  /// ranges of a covering never reads the table; only the rows of the page shown are read.
  static let venuesAndPromotions = """
    CREATE TABLE venues(
      id TEXT PRIMARY KEY NOT NULL,
      name TEXT NOT NULL,
      description TEXT,
      venue_type TEXT,
      address TEXT,
      city TEXT,
      site TEXT,
      phone TEXT,
      email TEXT,
      logo_url TEXT,
      time_zone TEXT,
      keywords TEXT NOT NULL DEFAULT '[]',
      latitude REAL NOT NULL,
      longitude REAL NOT NULL,
      geohash2 TEXT NOT NULL,
      geohash3 TEXT NOT NULL,
      geohash4 TEXT NOT NULL,
      geohash5 TEXT NOT NULL,
      geohash6 TEXT NOT NULL,
      geokey INTEGER NOT NULL,
      rating_sum INTEGER NOT NULL DEFAULT 0,
      rating_count INTEGER NOT NULL DEFAULT 0,
      updated_at INTEGER NOT NULL
    );
    CREATE INDEX venues_geokey ON venues(geokey, latitude, longitude, venue_type, rating_sum, rating_count, id);
    CREATE TABLE venue_promotions(
      id TEXT PRIMARY KEY NOT NULL,
      venue_id TEXT NOT NULL REFERENCES venues(id) ON DELETE CASCADE,
      name TEXT NOT NULL,
      promo_code TEXT NOT NULL,
      image_url TEXT,
      old_price_amount INTEGER,
      old_price_currency TEXT,
      new_price_amount INTEGER,
      new_price_currency TEXT,
      audience TEXT NOT NULL CHECK (audience IN ('general', 'special')),
      valid_from INTEGER,
      valid_until INTEGER,
      window_start INTEGER,
      window_end INTEGER
    );
    CREATE INDEX venue_promotions_venue ON venue_promotions(venue_id);
    """

  /// Who was offered which promotion (by `GET /v1/venues/{id}/promotions`: first and last time, how often) and who
  /// redeemed it (once per user): the "shown" and "redeemed" of `meridian-admin promotions stats`.
  static let promotionOffersAndRedemptions = """
    CREATE TABLE promotion_offers(
      promotion_id TEXT NOT NULL REFERENCES venue_promotions(id) ON DELETE CASCADE,
      user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      first_at INTEGER NOT NULL,
      last_at INTEGER NOT NULL,
      times INTEGER NOT NULL CHECK (times > 0),
      PRIMARY KEY (promotion_id, user_id)
    ) WITHOUT ROWID;
    CREATE INDEX promotion_offers_user ON promotion_offers(user_id);
    CREATE TABLE promotion_redemptions(
      promotion_id TEXT NOT NULL REFERENCES venue_promotions(id) ON DELETE CASCADE,
      user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      redeemed_at INTEGER NOT NULL,
      PRIMARY KEY (promotion_id, user_id)
    ) WITHOUT ROWID;
    CREATE INDEX promotion_redemptions_user ON promotion_redemptions(user_id);
    """

  /// Appends the migration that makes venues places of kind `venue` (ids kept), see ``venuesArePlaces(_:)``.
  static func appendVenuePlaceMigrations(to migrator: inout Migrator) {
    migrator.append(
      .code("2026-11-26 venues are places", revision: "1: places.geokey, thin venues, kind triggers") { connection in
        guard let db = connection.sqlite else { return }
        try venuesArePlaces(db)
      })
  }

  /// Moves every venue into `places` under its own id (kind `venue`, its names as titles in every language, its
  /// type, contacts, logo and keywords; search columns folded as the store folds them), so that promotions,
  /// advertiser grants, offers and redemptions — which refer to `venues(id)` — still point at the same venue.
  /// `venues` keeps only what is a venue's alone: the imported rating, keyed by the place's id
  /// (`REFERENCES places(id) ON DELETE CASCADE`); the tables that refer to `venues(id)` are untouched (their
  /// references name the rebuilt table). Triggers keep one `venues` row per place of kind `venue`, and a venue can't
  /// change its kind. `places.geokey` (62-bit integer geohash, as for fixes) indexes every located place for radius
  /// queries. A venue whose id is taken by a place of another kind stops the migration, naming the ids.
  static func venuesArePlaces(_ db: Database) throws {
    try db.execute(sql: "ALTER TABLE places ADD COLUMN geokey INTEGER")
    for row in try Row.fetchAll(db, sql: "SELECT seq, latitude, longitude FROM places WHERE latitude IS NOT NULL") {
      let point = Coordinate(uncheckedLatitude: row[1], longitude: row[2])
      try db.execute(
        sql: "UPDATE places SET geokey = ? WHERE seq = ?",
        arguments: [Int64(bitPattern: try GeohashCell(point, bits: 62).value), row[0] as Int64])
    }
    let clashes = try String.fetchAll(
      db, sql: "SELECT v.id FROM venues v JOIN places p ON p.id = v.id WHERE p.kind <> 'venue' ORDER BY v.id")
    if !clashes.isEmpty {
      throw VenueMigrationError.idsTaken(clashes)
    }
    let venues = try Row.fetchAll(db, sql: "SELECT * FROM venues ORDER BY geokey, id")
    let languages = try localization.languages(db)
    let venueColumns = Set(try db.columns(in: "venues").map(\.name))
    try db.execute(
      sql: """
        CREATE TABLE venues_new(
          id TEXT PRIMARY KEY NOT NULL REFERENCES places(id) ON DELETE CASCADE,
          rating_sum INTEGER NOT NULL DEFAULT 0,
          rating_count INTEGER NOT NULL DEFAULT 0,
          updated_at INTEGER NOT NULL
        );
        INSERT INTO venues_new(id, rating_sum, rating_count, updated_at)
          SELECT id, rating_sum, rating_count, updated_at FROM venues;
        DROP TABLE venues;
        ALTER TABLE venues_new RENAME TO venues;
        """)
    let localized = languages.flatMap { ["title_\($0)", "description_\($0)"] }
    let columns =
      [
        "id", "kind", "title", "description", "address", "city", "city_key", "site", "phone", "email", "venue_type",
        "logo_url", "time_zone", "keywords", "latitude", "longitude", "geokey", "title_key", "search_title",
        "search_text", "created_at", "updated_at",
      ] + localized
    let insert = try db.makeStatement(
      sql: """
        INSERT OR IGNORE INTO places(\(columns.joined(separator: ", ")))
        VALUES (\(Array(repeating: "?", count: columns.count).joined(separator: ", ")))
        """)
    let closure = try db.makeStatement(
      sql: "INSERT OR IGNORE INTO place_closure(place_id, ancestor_id, depth) VALUES (?, ?, 0)")
    for row in venues {
      var names: [String: String] = [:]
      var descriptions: [String: String] = [:]
      for language in languages {
        if venueColumns.contains("name_\(language)"), let name: String = row["name_\(language)"], !name.isEmpty {
          names[language] = name
        }
        if venueColumns.contains("description_\(language)"), let text: String = row["description_\(language)"],
          !text.isEmpty
        {
          descriptions[language] = text
        }
      }
      if names.isEmpty { names["en"] = row["name"] as String }
      if descriptions.isEmpty, let text: String = row["description"], !text.isEmpty { descriptions["en"] = text }
      let keywords = (try? JSONColumn.decode([String].self, from: row["keywords"] as String)) ?? []
      // A place's title key and search text as the store wrote them when venues became places (frozen).
      let titleKey = FrozenMigrationText.lines(FrozenMigrationText.byLanguage(names))
      let searchText = FrozenMigrationText.lines(keywords + FrozenMigrationText.byLanguage(descriptions))
      let city: String? = row["city"]
      var values: [(any DatabaseValueConvertible)?] = [
        row["id"] as String, "venue", row["name"] as String, row["description"] as String?,
        row["address"] as String?, city, city.map(FrozenMigrationText.fold), row["site"] as String?,
        row["phone"] as String?,
        row["email"] as String?, row["venue_type"] as String?, row["logo_url"] as String?,
        row["time_zone"] as String?, row["keywords"] as String, row["latitude"] as Double,
        row["longitude"] as Double, row["geokey"] as Int64, titleKey, titleKey, searchText,
        row["updated_at"] as Int64, row["updated_at"] as Int64,
      ]
      for language in languages {
        values.append(venueColumns.contains("name_\(language)") ? row["name_\(language)"] as String? : nil)
        values.append(
          venueColumns.contains("description_\(language)") ? row["description_\(language)"] as String? : nil)
      }
      try insert.execute(arguments: StatementArguments(values))
      try closure.execute(arguments: [row["id"] as String, row["id"] as String])
    }
    try db.execute(sql: venuePlaceIndexAndTriggers)
  }

  /// The radius index over every located place, and the triggers that keep a `venues` row for every place of kind
  /// `venue` and keep a venue a venue. (No `INSERT OR IGNORE` in them: an upsert's conflict policy would override it.)
  static let venuePlaceIndexAndTriggers = """
    CREATE INDEX places_geokey ON places(geokey, latitude, longitude, kind, venue_type, own_sum, own_count, id);
    CREATE TRIGGER places_venue_insert AFTER INSERT ON places WHEN NEW.kind = 'venue' BEGIN
      INSERT INTO venues(id, updated_at) SELECT NEW.id, NEW.updated_at
        WHERE NOT EXISTS (SELECT 1 FROM venues WHERE id = NEW.id);
    END;
    CREATE TRIGGER places_venue_kind AFTER UPDATE OF kind ON places WHEN NEW.kind = 'venue' BEGIN
      INSERT INTO venues(id, updated_at) SELECT NEW.id, NEW.updated_at
        WHERE NOT EXISTS (SELECT 1 FROM venues WHERE id = NEW.id);
    END;
    CREATE TRIGGER places_venue_stays BEFORE UPDATE OF kind ON places
    WHEN OLD.kind = 'venue' AND NEW.kind <> 'venue' AND EXISTS (SELECT 1 FROM venues WHERE id = OLD.id) BEGIN
      SELECT RAISE(ABORT, 'a venue keeps its kind');
    END;
    """
}

/// Why venues could not be moved into the places table.
public enum VenueMigrationError: Error, Sendable, Hashable, CustomStringConvertible {
  /// These venue ids are taken by places of another kind: a venue keeps its id (promotions point at it).
  case idsTaken([String])

  /// What was wrong and what to do.
  public var description: String {
    switch self {
    case .idsTaken(let ids):
      "Venues can't become places: the ids \(ids.joined(separator: ", ")) are taken by places of another kind; "
        + "rename or delete those places (meridian-admin places delete), then start again."
    }
  }
}

extension SQLiteSchema {
  /// Appends the migration that copies each venue's imported rating into its place row, for the radius index.
  static func appendVenueRatingInPlaceMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-30 venue ratings in the radius index", venueRatingsInPlaces))
  }

  /// `places.venue_rating_sum` and `venue_rating_count`: the venue's imported rating (`venues`), kept by triggers on
  /// `venues`, and the radius index again with them, so that a radius query reads that index alone. Looking each
  /// candidate's rating up in `venues` by its text key cost about 2.5 µs a candidate, 1 ms of a 1 km query's 1.1 over
  /// a million venues.
  static let venueRatingsInPlaces = """
    ALTER TABLE places ADD COLUMN venue_rating_sum INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE places ADD COLUMN venue_rating_count INTEGER NOT NULL DEFAULT 0;
    UPDATE places SET (venue_rating_sum, venue_rating_count) = (
      SELECT v.rating_sum, v.rating_count FROM venues v WHERE v.id = places.id
    ) WHERE kind = 'venue' AND id IN (SELECT id FROM venues);
    DROP INDEX places_geokey;
    CREATE INDEX places_geokey ON places(
      geokey, latitude, longitude, kind, venue_type, own_sum, own_count, venue_rating_sum, venue_rating_count, id
    );
    CREATE TRIGGER venues_rating_insert AFTER INSERT ON venues BEGIN
      UPDATE places SET venue_rating_sum = NEW.rating_sum, venue_rating_count = NEW.rating_count WHERE id = NEW.id;
    END;
    CREATE TRIGGER venues_rating_update AFTER UPDATE OF rating_sum, rating_count ON venues BEGIN
      UPDATE places SET venue_rating_sum = NEW.rating_sum, venue_rating_count = NEW.rating_count WHERE id = NEW.id;
    END;
    """
}
