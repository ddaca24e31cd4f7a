import PersistenceKit

extension PostgresSchema {
  /// Appends the migration of proximity rules.
  public static func appendProximityMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-29 proximity rules, their pair state and events", proximity))
  }

  /// Proximity rules (owner and other person, the distance), each pair's versioned state (JSON, with each side's
  /// newest evaluated fix) and the events, unique by id, paged by (time, sequence) per owner.
  static let proximity = """
    CREATE TABLE proximity_rules(
      id text PRIMARY KEY,
      owner_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      other_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      radius double precision NOT NULL,
      created_at bigint NOT NULL,
      UNIQUE (owner_id, id)
    );
    CREATE INDEX proximity_rules_owner ON proximity_rules(owner_id, created_at);
    CREATE INDEX proximity_rules_other ON proximity_rules(other_id, created_at);
    CREATE TABLE proximity_states(
      rule_id text PRIMARY KEY REFERENCES proximity_rules(id) ON DELETE CASCADE,
      version bigint NOT NULL,
      state text NOT NULL,
      owner_fix_at bigint,
      other_fix_at bigint
    );
    CREATE TABLE proximity_events(
      seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      id text NOT NULL UNIQUE,
      rule_id text NOT NULL,
      owner_id text NOT NULL,
      user_id text NOT NULL,
      kind text NOT NULL CHECK (kind IN ('near', 'apart', 'dwell')),
      occurred_at bigint NOT NULL,
      radius double precision NOT NULL,
      latitude double precision,
      longitude double precision,
      accuracy double precision,
      FOREIGN KEY (owner_id, rule_id) REFERENCES proximity_rules(owner_id, id) ON DELETE CASCADE
    );
    CREATE INDEX proximity_events_owner ON proximity_events(owner_id, occurred_at, seq);
    CREATE INDEX proximity_events_rule ON proximity_events(owner_id, rule_id);
    """
}
