import PersistenceKit

extension SQLiteSchema {
  /// Appends the migration of proximity rules.
  static func appendProximityMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-29 proximity rules, their pair state and events", proximity))
  }

  /// Proximity rules (owner and other person, the distance), each pair's versioned state (JSON, with each side's
  /// newest evaluated fix) and the events, unique by id, paged by (time, sequence) per owner.
  static let proximity = """
    CREATE TABLE proximity_rules(
      id TEXT PRIMARY KEY NOT NULL,
      owner_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      other_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      radius REAL NOT NULL,
      created_at INTEGER NOT NULL,
      UNIQUE (owner_id, id)
    );
    CREATE INDEX proximity_rules_owner ON proximity_rules(owner_id, created_at);
    CREATE INDEX proximity_rules_other ON proximity_rules(other_id, created_at);
    CREATE TABLE proximity_states(
      rule_id TEXT PRIMARY KEY NOT NULL REFERENCES proximity_rules(id) ON DELETE CASCADE,
      version INTEGER NOT NULL,
      state TEXT NOT NULL,
      owner_fix_at INTEGER,
      other_fix_at INTEGER
    ) WITHOUT ROWID;
    CREATE TABLE proximity_events(
      seq INTEGER PRIMARY KEY AUTOINCREMENT,
      id TEXT NOT NULL UNIQUE,
      rule_id TEXT NOT NULL,
      owner_id TEXT NOT NULL,
      user_id TEXT NOT NULL,
      kind TEXT NOT NULL CHECK (kind IN ('near', 'apart', 'dwell')),
      occurred_at INTEGER NOT NULL,
      radius REAL NOT NULL,
      latitude REAL,
      longitude REAL,
      accuracy REAL,
      FOREIGN KEY (owner_id, rule_id) REFERENCES proximity_rules(owner_id, id) ON DELETE CASCADE
    );
    CREATE INDEX proximity_events_owner ON proximity_events(owner_id, occurred_at, seq);
    CREATE INDEX proximity_events_rule ON proximity_events(owner_id, rule_id);
    """
}
