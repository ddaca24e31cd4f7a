import PersistenceKit

/// The server's SQLite schema as append-only, named SQL migrations (they never reference model types).
public enum SQLiteSchema {
  /// Every migration, in order. Append new ones; never edit an applied one (its checksum is recorded).
  public static let migrator: Migrator = {
    var migrator = Migrator()
    migrator.append(.sql("2026-11-22 accounts", accounts))
    migrator.append(.sql("2026-11-22 groups and sharing", groupsAndSharing))
    migrator.append(.sql("2026-11-22 devices and fixes", devicesAndFixes))
    migrator.append(.sql("2026-11-22 idempotency keys", idempotency))
    appendVenueMigrations(to: &migrator)
    migrator.append(.sql("2026-11-24 string catalog", stringCatalog))
    migrator.append(.sql("2026-11-24 promotion offers and redemptions", promotionOffersAndRedemptions))
    migrator.append(.sql("2026-11-24 idempotency keys without rowid", idempotencyWithoutRowID))
    migrator.append(.sql("2026-11-26 OsmAnd identifiers and deployment secrets", osmAndIdentifiers))
    appendPollMigrations(to: &migrator)
    appendPlaceMigrations(to: &migrator)  // SQLiteSchema+Places.swift
    appendPlaceSearchMigrations(to: &migrator)  // SQLiteSchema+Places.swift
    appendGeofenceMigrations(to: &migrator)  // SQLiteSchema+Geofences.swift
    appendGazetteerMigrations(to: &migrator)  // SQLiteSchema+Gazetteer.swift
    appendAdvertiserMigrations(to: &migrator)  // SQLiteSchema+Advertisers.swift
    appendPromotionStatsMigrations(to: &migrator)  // SQLiteSchema+PromotionStats.swift
    appendApplicantMigrations(to: &migrator)  // SQLiteSchema+Applicants.swift
    appendWebhookMigrations(to: &migrator)  // SQLiteSchema+Webhooks.swift
    appendVenuePlaceMigrations(to: &migrator)  // SQLiteSchema+Venues.swift
    appendPlaceNewsImageMigrations(to: &migrator)  // SQLiteSchema+Places.swift
    appendGeofenceAudienceMigrations(to: &migrator)  // SQLiteSchema+Geofences.swift
    appendGeofenceQueueMigrations(to: &migrator)  // SQLiteSchema+Geofences.swift
    appendPlaceAttributeMigrations(to: &migrator)  // SQLiteSchema+Places.swift
    appendShareLinkMigrations(to: &migrator)  // SQLiteSchema+ShareLinks.swift
    appendGeofenceLastPositionMigrations(to: &migrator)  // SQLiteSchema+Geofences.swift
    appendAlertChannelMigrations(to: &migrator)  // SQLiteSchema+Webhooks.swift
    appendLiveOnlyMigrations(to: &migrator)  // SQLiteStore+LiveOnly.swift
    appendImportJobMigrations(to: &migrator)  // SQLiteStore+ImportJobs.swift
    appendSingleSignOnMigrations(to: &migrator)  // SQLiteStore+SingleSignOn.swift
    appendPrivacyZoneMigrations(to: &migrator)  // SQLiteStore+PrivacyZones.swift
    appendGeofenceAlertRuleMigrations(to: &migrator)  // SQLiteSchema+Geofences.swift
    appendStayMigrations(to: &migrator)  // SQLiteStore+Stays.swift
    appendProximityMigrations(to: &migrator)  // SQLiteSchema+Proximity.swift
    appendHistoryCellMigrations(to: &migrator)  // SQLiteStore+HistoryCells.swift
    appendPlaceTitleLineMigrations(to: &migrator)  // SQLiteSchema+Places.swift
    appendPlaceSearchPrefixMigrations(to: &migrator)  // SQLiteSchema+Places.swift
    appendVenueRatingInPlaceMigrations(to: &migrator)  // SQLiteSchema+Venues.swift
    appendPlaceAttributeRankingMigrations(to: &migrator)  // SQLiteSchema+Places.swift
    appendHistoryCellDayMigrations(to: &migrator)  // SQLiteStore+HistoryCells.swift
    return migrator
  }()

  /// The product's imported String Catalog (`meridian-admin i18n import-catalog`): the document as imported (one row)
  /// and each key's localization per language as Xcode's JSON, with the plain text when it has no variations.
  static let stringCatalog = """
    CREATE TABLE string_catalog_imports(
      id INTEGER PRIMARY KEY CHECK (id = 1),
      source_language TEXT NOT NULL,
      file_name TEXT NOT NULL,
      document TEXT NOT NULL,
      imported_at INTEGER NOT NULL
    );
    CREATE TABLE string_catalog(
      key TEXT NOT NULL,
      language TEXT NOT NULL,
      value TEXT,
      value_json TEXT NOT NULL,
      PRIMARY KEY (key, language)
    ) WITHOUT ROWID;
    """

  /// The secret identifiers OsmAnd / Traccar clients report with (their SHA-256; one per device, enabled by its
  /// owner), and the deployment's random secrets (e.g. the key of the device handles viewers see).
  static let osmAndIdentifiers = """
    CREATE TABLE osmand_identifiers(
      hash TEXT PRIMARY KEY NOT NULL,
      device_id TEXT NOT NULL UNIQUE REFERENCES devices(id) ON DELETE CASCADE,
      created_at INTEGER NOT NULL
    );
    CREATE TABLE deployment_secrets(
      name TEXT PRIMARY KEY NOT NULL,
      value BLOB NOT NULL,
      created_at INTEGER NOT NULL
    );
    """

  static let accounts = """
    CREATE TABLE users(
      id TEXT PRIMARY KEY NOT NULL,
      created_at INTEGER NOT NULL,
      disabled INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE credentials(
      kind TEXT NOT NULL CHECK (kind IN ('phone', 'email')),
      value TEXT NOT NULL,
      user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      password_hash TEXT,
      created_at INTEGER NOT NULL,
      PRIMARY KEY (kind, value)
    );
    CREATE INDEX credentials_user ON credentials(user_id);
    CREATE TABLE tokens(
      hash TEXT PRIMARY KEY NOT NULL,
      user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      created_at INTEGER NOT NULL,
      expires_at INTEGER NOT NULL,
      revoked_at INTEGER
    );
    CREATE INDEX tokens_user ON tokens(user_id);
    CREATE TABLE otp_codes(
      phone TEXT PRIMARY KEY NOT NULL,
      code_hash TEXT NOT NULL,
      expires_at INTEGER NOT NULL,
      attempts_left INTEGER NOT NULL,
      created_at INTEGER NOT NULL
    );
    CREATE TABLE profiles(
      user_id TEXT PRIMARY KEY NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      avatar TEXT,
      full_name TEXT,
      phone TEXT,
      birthday TEXT,
      gender TEXT,
      status TEXT,
      audience TEXT NOT NULL DEFAULT '{}'
    );
    CREATE INDEX profiles_phone ON profiles(phone);
    """

  static let groupsAndSharing = """
    CREATE TABLE groups(
      id TEXT PRIMARY KEY NOT NULL,
      owner_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      kind TEXT NOT NULL CHECK (kind IN ('family', 'friends', 'blacklist', 'custom')),
      name TEXT NOT NULL,
      visibility TEXT NOT NULL,
      created_at INTEGER NOT NULL
    );
    CREATE INDEX groups_owner ON groups(owner_id);
    CREATE TABLE group_members(
      group_id TEXT NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
      user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      PRIMARY KEY (group_id, user_id)
    );
    CREATE INDEX group_members_user ON group_members(user_id);
    CREATE TABLE sharing(
      user_id TEXT PRIMARY KEY NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      state TEXT NOT NULL
    );
    """

  static let devicesAndFixes = """
    CREATE TABLE devices(
      id TEXT PRIMARY KEY NOT NULL,
      owner_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      created_at INTEGER NOT NULL
    );
    CREATE INDEX devices_owner ON devices(owner_id);
    CREATE TABLE fixes(
      id INTEGER PRIMARY KEY,
      user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      device_id TEXT NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
      timestamp INTEGER NOT NULL,
      latitude REAL NOT NULL,
      longitude REAL NOT NULL,
      horizontal_accuracy REAL,
      vertical_accuracy REAL,
      altitude REAL,
      speed REAL,
      speed_accuracy REAL,
      course REAL,
      floor INTEGER,
      battery_level REAL,
      battery_state TEXT,
      kind TEXT NOT NULL,
      trigger TEXT,
      refined_by_device TEXT,
      refined_by_timestamp INTEGER,
      geohash2 TEXT NOT NULL,
      geohash3 TEXT NOT NULL,
      geohash4 TEXT NOT NULL,
      geohash5 TEXT NOT NULL,
      geohash6 TEXT NOT NULL,
      geokey INTEGER NOT NULL,
      received_at INTEGER NOT NULL
    );
    CREATE UNIQUE INDEX fixes_device_timestamp ON fixes(device_id, timestamp);
    CREATE INDEX fixes_user_timestamp ON fixes(user_id, timestamp);
    CREATE INDEX fixes_geokey ON fixes(geokey);
    """

  /// The same table clustered on its key: a fix upload's lookup and insert touch one b-tree instead of two, and its
  /// commit writes one page less.
  static let idempotencyWithoutRowID = """
    CREATE TABLE idempotency_keys_clustered(
      user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      key TEXT NOT NULL,
      request_hash TEXT NOT NULL,
      status INTEGER NOT NULL,
      body BLOB NOT NULL,
      created_at INTEGER NOT NULL,
      PRIMARY KEY (user_id, key)
    ) WITHOUT ROWID;
    INSERT INTO idempotency_keys_clustered(user_id, key, request_hash, status, body, created_at)
      SELECT user_id, key, request_hash, status, body, created_at FROM idempotency_keys;
    DROP TABLE idempotency_keys;
    ALTER TABLE idempotency_keys_clustered RENAME TO idempotency_keys;
    """

  static let idempotency = """
    CREATE TABLE idempotency_keys(
      user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      key TEXT NOT NULL,
      request_hash TEXT NOT NULL,
      status INTEGER NOT NULL,
      body BLOB NOT NULL,
      created_at INTEGER NOT NULL,
      PRIMARY KEY (user_id, key)
    );
    """
}
