import PersistenceKit

extension SQLiteSchema {
  /// Appends the advertiser migrations.
  static func appendAdvertiserMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-26 advertisers and promotion settings", advertisersAndPromotionSettings))
    migrator.append(.sql("2026-11-26 venue claims", venueClaims))
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

extension SQLiteSchema {
  /// People asking to advertise for a venue, and the operators' answers. The venue is named by id alone (checked
  /// when claimed and again when approved), at most one pending claim per person and venue.
  static let venueClaims = """
    CREATE TABLE venue_claims(
      id TEXT PRIMARY KEY NOT NULL,
      user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      venue_id TEXT NOT NULL,
      note TEXT,
      state TEXT NOT NULL CHECK (state IN ('pending', 'approved', 'rejected')),
      claimed_at INTEGER NOT NULL,
      decided_at INTEGER,
      reason TEXT
    );
    CREATE UNIQUE INDEX venue_claims_pending ON venue_claims(user_id, venue_id) WHERE state = 'pending';
    CREATE INDEX venue_claims_state ON venue_claims(state, claimed_at);
    CREATE INDEX venue_claims_user ON venue_claims(user_id, claimed_at);
    """
}
