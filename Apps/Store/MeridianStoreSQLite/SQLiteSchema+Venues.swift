import MeridianStore
import PersistenceKit

extension SQLiteSchema {
  /// The languages venue names and descriptions are stored in (`name_en`, `name_ru`, `name_uk`, …).
  static let venueLanguages = ["en", "ru", "uk"]

  /// The localized fields: `venues.name` and `venues.description`, each with one column per language.
  public static let localization: LocalizationRegistry = {
    var registry = LocalizationRegistry()
    registry.register(table: "venues", fields: ["name", "description"])
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
}
