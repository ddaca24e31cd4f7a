import PersistenceKit

extension PostgresSchema {
  /// Appends the geofence migrations.
  public static func appendGeofenceMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-26 geofences, their state and events", geofences))
  }

  /// Appends the migration that records whether an event's fence owner was in its audience.
  public static func appendGeofenceAudienceMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-28 geofence events seen by their fence's owner", geofenceEventOwnerAudience))
  }

  /// Appends the migration of the geofence queue.
  public static func appendGeofenceQueueMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-28 geofence queue", geofenceQueue))
  }

  /// Appends the migration of geofence alert rules.
  public static func appendGeofenceAlertRuleMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-29 geofence alert rules", geofenceAlertRules))
  }

  /// A fence's alert rule (DomainKit's `GeofenceAlertRule` as JSON, NULL for none) and whether an event sent alerts
  /// (events stored before did).
  static let geofenceAlertRules = """
    ALTER TABLE geofences ADD COLUMN alert_rule text;
    ALTER TABLE geofence_events ADD COLUMN alerted boolean NOT NULL DEFAULT true;
    """

  public static func appendGeofenceLastPositionMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-29 geofence trackers keep the last position", geofenceLastPosition))
  }

  /// Where the person's newest evaluated fix was (with its accuracy): a fence that first comes near a later fix is
  /// evaluated on it first, as an observation of the person outside of it.
  static let geofenceLastPosition = """
    ALTER TABLE geofence_trackers ADD COLUMN last_latitude double precision,
      ADD COLUMN last_longitude double precision, ADD COLUMN last_accuracy double precision;
    """

  /// The fixes waiting for geofence evaluation (``GeofenceQueue``): one row per request that stored fixes, naming
  /// them by device and timestamps, numbered in commit order (appended under the live log's lock).
  static let geofenceQueue = """
    CREATE SEQUENCE geofence_queue_sequence AS bigint;
    CREATE TABLE geofence_queue(
      sequence bigint PRIMARY KEY,
      user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      device_id text NOT NULL,
      timestamps bigint[] NOT NULL,
      committed_at bigint NOT NULL
    );
    CREATE INDEX geofence_queue_user ON geofence_queue(user_id);
    """

  /// Whether the fence's owner could see the person's location when the event happened (events stored before were
  /// listed to the owner, and stay so).
  static let geofenceEventOwnerAudience = """
    ALTER TABLE geofence_events ADD COLUMN owner_sees boolean NOT NULL DEFAULT true;
    """

  /// Geofences (the shape as JSON) with their bounding box as a PostGIS geometry (two boxes across the
  /// antimeridian) indexed by GiST, so the fences near a point are an index lookup; the rules' state per person (a
  /// versioned row per person, a JSON state per person and fence the person isn't plainly outside of) and the
  /// events, unique by id, paged by (time, sequence).
  static let geofences = """
    CREATE EXTENSION IF NOT EXISTS postgis;
    CREATE TABLE geofences(
      id text PRIMARY KEY,
      owner_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      name text NOT NULL,
      shape text NOT NULL,
      sharing text NOT NULL CHECK (sharing IN ('nobody', 'group', 'everyone')),
      group_id text,
      source text NOT NULL CHECK (source IN ('server', 'device')),
      external_id text,
      area geometry(MultiPolygon, 4326) NOT NULL,
      created_at bigint NOT NULL,
      updated_at bigint NOT NULL
    );
    CREATE INDEX geofences_owner ON geofences(owner_id, created_at);
    CREATE UNIQUE INDEX geofences_external ON geofences(owner_id, external_id) WHERE external_id IS NOT NULL;
    CREATE INDEX geofences_area ON geofences USING gist(area);
    CREATE TABLE geofence_trackers(
      user_id text PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
      version bigint NOT NULL,
      last_fix_at bigint
    );
    CREATE TABLE geofence_states(
      user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      geofence_id text NOT NULL REFERENCES geofences(id) ON DELETE CASCADE,
      state text NOT NULL,
      PRIMARY KEY (user_id, geofence_id)
    );
    CREATE INDEX geofence_states_geofence ON geofence_states(geofence_id);
    CREATE TABLE geofence_events(
      seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      id text NOT NULL UNIQUE,
      geofence_id text NOT NULL REFERENCES geofences(id) ON DELETE CASCADE,
      geofence_name text NOT NULL,
      owner_id text NOT NULL,
      user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      kind text NOT NULL CHECK (kind IN ('enter', 'exit', 'dwell')),
      occurred_at bigint NOT NULL,
      reported_by text NOT NULL CHECK (reported_by IN ('server', 'device')),
      latitude double precision,
      longitude double precision,
      accuracy double precision
    );
    CREATE INDEX geofence_events_user ON geofence_events(user_id, occurred_at, seq);
    CREATE INDEX geofence_events_owner ON geofence_events(owner_id, occurred_at, seq);
    CREATE INDEX geofence_events_geofence ON geofence_events(geofence_id, occurred_at, seq);
    """
}
