import PersistenceKit

extension PostgresSchema {
  /// Appends the advertiser migrations.
  static func appendAdvertiserMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-26 advertisers and promotion settings", advertisersAndPromotionSettings))
  }

  /// Who advertises for which venue (a per-user table: the key leads with the user), and what advertisers set on
  /// promotions: the state and the special audience's rule, as on SQLite.
  static let advertisersAndPromotionSettings = """
    CREATE TABLE advertisers(
      user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      venue_id text NOT NULL REFERENCES venues(id) ON DELETE CASCADE,
      granted_at bigint NOT NULL,
      PRIMARY KEY (user_id, venue_id)
    );
    CREATE INDEX advertisers_venue ON advertisers(venue_id);
    CREATE TABLE promotion_settings(
      promotion_id text PRIMARY KEY REFERENCES venue_promotions(id) ON DELETE CASCADE,
      state text NOT NULL CHECK (state IN ('running', 'paused', 'ended')),
      radius double precision NOT NULL CHECK (radius > 0),
      minimum_days integer NOT NULL CHECK (minimum_days > 0),
      lookback_days integer NOT NULL CHECK (lookback_days >= minimum_days)
    );
    """
}
