import PersistenceKit

/// The server's PostgreSQL schema as append-only, named SQL migrations (they never reference model types).
///
/// Every key of a per-user table leads with the user, so the schema can be distributed by user (Citus) later.
public enum PostgresSchema {
  /// Every migration, in order. Append new ones; never edit an applied one (its checksum is recorded).
  public static var migrator: Migrator {
    var migrator = Migrator()
    migrator.append(.sql("2026-11-26 accounts", accounts))
    // The other areas' migrations are appended here, by their own files:
    // appendVenueMigrations(to: &migrator)       (PostgresSchema+Venues.swift)
    // appendOperationsMigrations(to: &migrator)  (PostgresSchema+Operations.swift)
    migrator.append(.sql("2026-11-26 limit counters", limitCounters))  // PostgresStore+Limits.swift
    return migrator
  }

  /// Users, their credentials and tokens, one-time codes and profiles.
  static let accounts = """
    CREATE TABLE users(
      id text PRIMARY KEY,
      created_at bigint NOT NULL,
      disabled boolean NOT NULL DEFAULT false
    );
    """
}
