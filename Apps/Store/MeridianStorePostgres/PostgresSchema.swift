import PersistenceKit

/// The server's PostgreSQL schema as append-only, named SQL migrations (they never reference model types).
///
/// Times are `bigint` UTC milliseconds, ids `text`, flags `boolean`, secrets and answers `bytea`, structured settings
/// `jsonb`. Two kinds of tables:
/// - **per-user tables** (users, profiles, groups, members, sharing, devices, fixes, idempotency keys): every key
///   leads with the user, so the schema can be distributed by user (Citus) without redesign;
/// - **lookup tables** keyed by what a request presents (a credential, a token hash, a phone, a device id, an OsmAnd
///   identifier hash, a secret's name): they map it to its user and stay keyed by it.
public enum PostgresSchema {
  /// Every migration, in order. Append new ones; never edit an applied one (its checksum is recorded).
  public static let migrator: Migrator = {
    var migrator = Migrator()
    migrator.append(.sql("2026-11-26 accounts", accounts))
    migrator.append(.sql("2026-11-26 groups and sharing", groupsAndSharing))
    migrator.append(.sql("2026-11-26 devices and OsmAnd identifiers", devices))
    migrator.append(.sql("2026-11-26 fixes partitioned by month", fixes))
    migrator.append(.sql("2026-11-26 idempotency keys and deployment secrets", idempotencyAndSecrets))
    appendVenueMigrations(to: &migrator)
    appendOperationsMigrations(to: &migrator)
    migrator.append(.sql("2026-11-26 live log", PostgresStore.liveLogSchema))
    migrator.append(.sql("2026-11-26 limit counters", limitCounters))  // PostgresStore+Limits.swift
    appendPollMigrations(to: &migrator)  // PostgresSchema+Polls.swift
    appendPlaceMigrations(to: &migrator)  // PostgresSchema+Places.swift
    appendPlaceSearchMigrations(to: &migrator)  // PostgresSchema+Places.swift
    appendGeofenceMigrations(to: &migrator)  // PostgresSchema+Geofences.swift
    appendGazetteerMigrations(to: &migrator)  // PostgresSchema+Gazetteer.swift
    appendAdvertiserMigrations(to: &migrator)  // PostgresSchema+Advertisers.swift
    appendPromotionStatsMigrations(to: &migrator)  // PostgresSchema+PromotionStats.swift
    appendApplicantMigrations(to: &migrator)  // PostgresSchema+Applicants.swift
    appendWebhookMigrations(to: &migrator)  // PostgresSchema+Webhooks.swift
    appendVenuePlaceMigrations(to: &migrator)  // PostgresSchema+Venues.swift
    appendPlaceNewsImageMigrations(to: &migrator)  // PostgresSchema+Places.swift
    appendGeofenceAudienceMigrations(to: &migrator)  // PostgresSchema+Geofences.swift
    appendGeofenceQueueMigrations(to: &migrator)  // PostgresSchema+Geofences.swift
    appendPlaceAttributeMigrations(to: &migrator)  // PostgresSchema+Places.swift
    appendShareLinkMigrations(to: &migrator)  // PostgresSchema+ShareLinks.swift
    appendGeofenceLastPositionMigrations(to: &migrator)  // PostgresSchema+Geofences.swift
    appendAlertChannelMigrations(to: &migrator)  // PostgresSchema+Webhooks.swift
    appendLiveOnlyMigrations(to: &migrator)  // PostgresStore+LiveOnly.swift
    appendImportJobMigrations(to: &migrator)  // PostgresStore+ImportJobs.swift
    appendSingleSignOnMigrations(to: &migrator)  // PostgresStore+SingleSignOn.swift
    appendPrivacyZoneMigrations(to: &migrator)  // PostgresStore+PrivacyZones.swift
    appendGeofenceAlertRuleMigrations(to: &migrator)  // PostgresSchema+Geofences.swift
    appendStayMigrations(to: &migrator)  // PostgresStore+Stays.swift
    appendProximityMigrations(to: &migrator)  // PostgresSchema+Proximity.swift
    appendHistoryCellMigrations(to: &migrator)  // PostgresStore+HistoryCells.swift
    appendVenueRatingMigrations(to: &migrator)  // PostgresSchema+Venues.swift
    appendPlaceTitleLineMigrations(to: &migrator)  // PostgresSchema+Places.swift
    appendPlaceTitleWordMigrations(to: &migrator)  // PostgresSchema+Places.swift
    appendPromotionSlotCoverMigrations(to: &migrator)  // PostgresSchema+PromotionStats.swift
    appendHistoryCellTransactionWriterMigrations(to: &migrator)  // PostgresStore+HistoryCells.swift
    appendHistoryCellDayMigrations(to: &migrator)  // PostgresStore+HistoryCells.swift
    return migrator
  }()

  /// Users, their credentials (lookup by credential), bearer tokens (lookup by hash), one-time codes (lookup by
  /// phone, shared by every node: the attempt count is one per phone, whichever node a guess reaches) and profiles.
  static let accounts = """
    CREATE TABLE users(
      id text PRIMARY KEY,
      created_at bigint NOT NULL,
      disabled boolean NOT NULL DEFAULT false
    );
    CREATE TABLE credentials(
      kind text NOT NULL CHECK (kind IN ('phone', 'email')),
      value text NOT NULL,
      user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      password_hash text,
      created_at bigint NOT NULL,
      PRIMARY KEY (kind, value)
    );
    CREATE INDEX credentials_user ON credentials(user_id);
    CREATE TABLE tokens(
      hash text PRIMARY KEY,
      user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      created_at bigint NOT NULL,
      expires_at bigint NOT NULL,
      revoked_at bigint
    );
    CREATE INDEX tokens_user ON tokens(user_id, created_at);
    CREATE TABLE otp_codes(
      phone text PRIMARY KEY,
      code_hash text NOT NULL,
      expires_at bigint NOT NULL,
      attempts_left integer NOT NULL,
      created_at bigint NOT NULL
    );
    CREATE TABLE profiles(
      user_id text PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
      avatar text,
      full_name text,
      phone text,
      birthday text,
      gender text,
      status text,
      audience jsonb NOT NULL DEFAULT '{}'
    );
    CREATE INDEX profiles_phone ON profiles(phone);
    """

  /// Groups are keyed by their owner; members by the group's owner, the group and the member (the member index
  /// answers "whose groups am I in").
  static let groupsAndSharing = """
    CREATE TABLE groups(
      owner_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      id text NOT NULL,
      kind text NOT NULL CHECK (kind IN ('family', 'friends', 'blacklist', 'custom')),
      name text NOT NULL,
      visibility jsonb NOT NULL,
      created_at bigint NOT NULL,
      PRIMARY KEY (owner_id, id)
    );
    CREATE INDEX groups_id ON groups(id);
    CREATE TABLE group_members(
      owner_id text NOT NULL,
      group_id text NOT NULL,
      user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      PRIMARY KEY (owner_id, group_id, user_id),
      FOREIGN KEY (owner_id, group_id) REFERENCES groups(owner_id, id) ON DELETE CASCADE
    );
    CREATE INDEX group_members_user ON group_members(user_id);
    CREATE TABLE sharing(
      user_id text PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
      state jsonb NOT NULL
    );
    """

  /// A device is the owner's (`devices`, keyed by owner) and its id is taken (`device_owners`, the lookup a report
  /// starts from: one owner per device id). An OsmAnd identifier (its SHA-256) is a lookup too, one per device.
  static let devices = """
    CREATE TABLE devices(
      owner_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      id text NOT NULL,
      created_at bigint NOT NULL,
      PRIMARY KEY (owner_id, id)
    );
    CREATE TABLE device_owners(
      device_id text PRIMARY KEY,
      owner_id text NOT NULL,
      FOREIGN KEY (owner_id, device_id) REFERENCES devices(owner_id, id) ON DELETE CASCADE
    );
    CREATE TABLE osmand_identifiers(
      hash text PRIMARY KEY,
      owner_id text NOT NULL,
      device_id text NOT NULL,
      created_at bigint NOT NULL,
      UNIQUE (owner_id, device_id),
      FOREIGN KEY (owner_id, device_id) REFERENCES devices(owner_id, id) ON DELETE CASCADE
    );
    """

  /// Fixes, partitioned by month of their timestamp (`fixes_yYYYYmMM`, UTC months in milliseconds), created by the
  /// insert path before a batch needs them; no default partition, so retention drops whole months and a new month
  /// never has rows to move. The key is (user, device, timestamp): one fix per device and moment, and it includes
  /// the partition key as PostgreSQL requires. `id` orders fixes of one moment (history cursors).
  ///
  /// `geohash2…6` group fixes into clusters; `location` (PostGIS, generated from latitude/longitude) with its GiST
  /// index answers radius queries.
  static let fixes = """
    CREATE EXTENSION IF NOT EXISTS postgis;
    CREATE SEQUENCE fixes_id_seq AS bigint;
    CREATE TABLE fixes(
      user_id text NOT NULL,
      device_id text NOT NULL,
      timestamp bigint NOT NULL,
      id bigint NOT NULL DEFAULT nextval('fixes_id_seq'),
      latitude double precision NOT NULL,
      longitude double precision NOT NULL,
      horizontal_accuracy double precision,
      vertical_accuracy double precision,
      altitude double precision,
      speed double precision,
      speed_accuracy double precision,
      course double precision,
      floor integer,
      battery_level double precision,
      battery_state text,
      kind text NOT NULL,
      trigger text,
      refined_by_device text,
      refined_by_timestamp bigint,
      geohash2 text NOT NULL,
      geohash3 text NOT NULL,
      geohash4 text NOT NULL,
      geohash5 text NOT NULL,
      geohash6 text NOT NULL,
      received_at bigint NOT NULL,
      location geography(Point, 4326) NOT NULL
        GENERATED ALWAYS AS (ST_SetSRID(ST_MakePoint(longitude, latitude), 4326)::geography) STORED,
      PRIMARY KEY (user_id, device_id, timestamp),
      FOREIGN KEY (user_id, device_id) REFERENCES devices(owner_id, id) ON DELETE CASCADE
    ) PARTITION BY RANGE (timestamp);
    ALTER SEQUENCE fixes_id_seq OWNED BY fixes.id;
    CREATE INDEX fixes_user_timestamp ON fixes(user_id, timestamp, id);
    CREATE INDEX fixes_location ON fixes USING gist(location);
    """

  /// Idempotency keys are the user's; the answer is stored with the effect, in its transaction. Deployment secrets
  /// are shared by every node.
  static let idempotencyAndSecrets = """
    CREATE TABLE idempotency_keys(
      user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      key text NOT NULL,
      request_hash text NOT NULL,
      status integer NOT NULL,
      body bytea NOT NULL,
      created_at bigint NOT NULL,
      PRIMARY KEY (user_id, key)
    );
    CREATE TABLE deployment_secrets(
      name text PRIMARY KEY,
      value bytea NOT NULL,
      created_at bigint NOT NULL
    );
    """
}
