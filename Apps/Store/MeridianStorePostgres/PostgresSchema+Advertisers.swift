import PersistenceKit

extension PostgresSchema {
  /// Appends the advertiser migrations.
  static func appendAdvertiserMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-26 advertisers and promotion settings", advertisersAndPromotionSettings))
    migrator.append(.sql("2026-11-26 venue claims", venueClaims))
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

extension PostgresSchema {
  /// People asking to advertise for a venue, and the operators' answers. The venue is named by id alone (checked
  /// when claimed and again when approved), at most one pending claim per person and venue.
  static let venueClaims = """
    CREATE TABLE venue_claims(
      id text PRIMARY KEY NOT NULL,
      user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      venue_id text NOT NULL,
      note text,
      state text NOT NULL CHECK (state IN ('pending', 'approved', 'rejected')),
      claimed_at bigint NOT NULL,
      decided_at bigint,
      reason text
    );
    CREATE UNIQUE INDEX venue_claims_pending ON venue_claims(user_id, venue_id) WHERE state = 'pending';
    CREATE INDEX venue_claims_state ON venue_claims(state, claimed_at);
    CREATE INDEX venue_claims_user ON venue_claims(user_id, claimed_at);
    """
}
