import PersistenceKit

extension SQLiteSchema {
  /// Appends the advertiser migrations.
  static func appendAdvertiserMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-26 advertisers and promotion settings", advertisersAndPromotionSettings))
  }

  /// Who advertises for which venue, and what advertisers set on promotions: the state (running, paused, ended) and
  /// the special audience's rule (passing distance, passes on `minimum_days` of the last `lookback_days` days, no
  /// visit within them). A promotion without a settings row runs with DomainKit's default rule.
  static let advertisersAndPromotionSettings = """
    CREATE TABLE advertisers(
      user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      venue_id TEXT NOT NULL REFERENCES venues(id) ON DELETE CASCADE,
      granted_at INTEGER NOT NULL,
      PRIMARY KEY (user_id, venue_id)
    ) WITHOUT ROWID;
    CREATE INDEX advertisers_venue ON advertisers(venue_id);
    CREATE TABLE promotion_settings(
      promotion_id TEXT PRIMARY KEY NOT NULL REFERENCES venue_promotions(id) ON DELETE CASCADE,
      state TEXT NOT NULL CHECK (state IN ('running', 'paused', 'ended')),
      radius REAL NOT NULL CHECK (radius > 0),
      minimum_days INTEGER NOT NULL CHECK (minimum_days > 0),
      lookback_days INTEGER NOT NULL CHECK (lookback_days >= minimum_days)
    ) WITHOUT ROWID;
    """
}
