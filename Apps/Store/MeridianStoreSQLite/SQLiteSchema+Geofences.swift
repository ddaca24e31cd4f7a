import PersistenceKit

extension SQLiteSchema {
  /// Appends the geofence migrations.
  static func appendGeofenceMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-26 geofences, their state and events", geofences))
  }

  /// Appends the migration that records whether an event's fence owner was in its audience.
  static func appendGeofenceAudienceMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-28 geofence events seen by their fence's owner", geofenceEventOwnerAudience))
  }

  /// Appends the migration of the geofence queue.
  static func appendGeofenceQueueMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-28 geofence queue", geofenceQueue))
  }

  /// Appends the migration of geofence alert rules.
  static func appendGeofenceAlertRuleMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-29 geofence alert rules", geofenceAlertRules))
  }

  /// A fence's alert rule (DomainKit's `GeofenceAlertRule` as JSON, NULL for none) and whether an event sent alerts
  /// (events stored before did).
  static let geofenceAlertRules = """
    ALTER TABLE geofences ADD COLUMN alert_rule TEXT;
    ALTER TABLE geofence_events ADD COLUMN alerted INTEGER NOT NULL DEFAULT 1;
    """

  static func appendGeofenceLastPositionMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-29 geofence trackers keep the last position", geofenceLastPosition))
  }

  /// Where the person's newest evaluated fix was (with its accuracy): a fence that first comes near a later fix is
  /// evaluated on it first, as an observation of the person outside of it.
  static let geofenceLastPosition = """
    ALTER TABLE geofence_trackers ADD COLUMN last_latitude REAL;
    ALTER TABLE geofence_trackers ADD COLUMN last_longitude REAL;
    ALTER TABLE geofence_trackers ADD COLUMN last_accuracy REAL;
    """

  /// The fixes waiting for geofence evaluation (``GeofenceQueue``): one row per request that stored fixes, naming
  /// them by their row ids (a group commit's rows of one request are consecutive), in commit order.
  static let geofenceQueue = """
    CREATE TABLE geofence_queue(
      sequence INTEGER PRIMARY KEY AUTOINCREMENT,
      user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      first_fix INTEGER NOT NULL,
      last_fix INTEGER NOT NULL,
      queued_at INTEGER NOT NULL
    );
    """

  /// Whether the fence's owner could see the person's location when the event happened (events stored before were
  /// listed to the owner, and stay so).
  static let geofenceEventOwnerAudience = """
    ALTER TABLE geofence_events ADD COLUMN owner_sees INTEGER NOT NULL DEFAULT 1;
    """

  /// Geofences (the shape as JSON) with the geohash cells covering each one's bounding box (`1 << bits | value`,
  /// keyed by cell and owner, so the fences near a point are a few index probes), the rules' state per person
  /// (a versioned row per person, a JSON state per person and fence the person isn't plainly outside of) and the
  /// events, unique by id, paged by (time, sequence).
  static let geofences = """
    CREATE TABLE geofences(
      id TEXT PRIMARY KEY NOT NULL,
      owner_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      name TEXT NOT NULL,
      shape TEXT NOT NULL,
      sharing TEXT NOT NULL CHECK (sharing IN ('nobody', 'group', 'everyone')),
      group_id TEXT,
      source TEXT NOT NULL CHECK (source IN ('server', 'device')),
      external_id TEXT,
      created_at INTEGER NOT NULL,
      updated_at INTEGER NOT NULL
    );
    CREATE INDEX geofences_owner ON geofences(owner_id, created_at);
    CREATE UNIQUE INDEX geofences_external ON geofences(owner_id, external_id) WHERE external_id IS NOT NULL;
    CREATE TABLE geofence_cells(
      cell INTEGER NOT NULL,
      owner_id TEXT NOT NULL,
      geofence_id TEXT NOT NULL REFERENCES geofences(id) ON DELETE CASCADE,
      PRIMARY KEY (cell, owner_id, geofence_id)
    ) WITHOUT ROWID;
    CREATE INDEX geofence_cells_geofence ON geofence_cells(geofence_id);
    CREATE TABLE geofence_trackers(
      user_id TEXT PRIMARY KEY NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      version INTEGER NOT NULL,
      last_fix_at INTEGER
    ) WITHOUT ROWID;
    CREATE TABLE geofence_states(
      user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      geofence_id TEXT NOT NULL REFERENCES geofences(id) ON DELETE CASCADE,
      state TEXT NOT NULL,
      PRIMARY KEY (user_id, geofence_id)
    ) WITHOUT ROWID;
    CREATE INDEX geofence_states_geofence ON geofence_states(geofence_id);
    CREATE TABLE geofence_events(
      seq INTEGER PRIMARY KEY AUTOINCREMENT,
      id TEXT NOT NULL UNIQUE,
      geofence_id TEXT NOT NULL REFERENCES geofences(id) ON DELETE CASCADE,
      geofence_name TEXT NOT NULL,
      owner_id TEXT NOT NULL,
      user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      kind TEXT NOT NULL CHECK (kind IN ('enter', 'exit', 'dwell')),
      occurred_at INTEGER NOT NULL,
      reported_by TEXT NOT NULL CHECK (reported_by IN ('server', 'device')),
      latitude REAL,
      longitude REAL,
      accuracy REAL
    );
    CREATE INDEX geofence_events_user ON geofence_events(user_id, occurred_at, seq);
    CREATE INDEX geofence_events_owner ON geofence_events(owner_id, occurred_at, seq);
    CREATE INDEX geofence_events_geofence ON geofence_events(geofence_id, occurred_at, seq);
    """
}
