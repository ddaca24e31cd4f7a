import DomainKit
import Foundation
import GRDB
import PersistenceKit

/// The tracker's local history and upload outbox, in one SQLite file (PersistenceKit: WAL, migrations).
///
/// Every recorded fix is written to `fixes` (with its geohash cells 2…6) and, when the reporting policy sends it, to
/// `outbox` **in the same transaction**: a fix the agent accepted is never lost and never queued twice, whenever
/// the process dies. The uploader removes outbox rows only after the server acknowledged them.
public struct TrackerStore: Sendable {
  /// The database.
  public let database: SQLiteDatabase

  /// Opens (creating and migrating) the history file at `path`.
  public static func open(at path: String) throws -> TrackerStore {
    try TrackerStore(migrating: SQLiteDatabase.open(at: path, options: DatabaseOptions(label: "meridian-tracker")))
  }

  /// Migrates `database` and wraps it.
  public init(migrating database: SQLiteDatabase) throws {
    try database.migrate(Self.migrator)
    self.database = database
  }

  /// The schema, as append-only named migrations.
  public static let migrator: Migrator = {
    var migrator = Migrator()
    migrator.append(
      .sql(
        "2026-11-24 history and outbox",
        """
        CREATE TABLE fixes(
          id INTEGER PRIMARY KEY,
          timestamp INTEGER NOT NULL UNIQUE,
          latitude REAL NOT NULL,
          longitude REAL NOT NULL,
          horizontal_accuracy REAL,
          kind TEXT NOT NULL,
          geohash2 TEXT NOT NULL,
          geohash3 TEXT NOT NULL,
          geohash4 TEXT NOT NULL,
          geohash5 TEXT NOT NULL,
          geohash6 TEXT NOT NULL,
          fix TEXT NOT NULL,
          recorded_at INTEGER NOT NULL
        );
        CREATE INDEX fixes_geohash6 ON fixes(geohash6);
        CREATE TABLE outbox(
          fix_id INTEGER PRIMARY KEY REFERENCES fixes(id) ON DELETE CASCADE
        );
        CREATE TABLE agent_state(
          key TEXT PRIMARY KEY NOT NULL,
          value TEXT NOT NULL
        );
        """))
    migrator.append(historyIndexesMigration)
    return migrator
  }()

  /// What ``record(_:send:now:)`` did with a fix.
  public enum Recorded: Sendable, Hashable {
    /// Stored in the history, and queued for upload when it is to be sent.
    case stored(queued: Bool)
    /// A fix with the same timestamp is already in the history; nothing changed.
    case duplicate
  }

  /// The `agent_state` key of the last fix the reporting policy sent, from which it resumes after a restart.
  public static let lastSentKey = "last_sent"
  /// The `agent_state` key of the time (UTC ms) of the last acknowledged upload.
  public static let lastUploadKey = "last_upload"
  /// The `agent_state` key of the running agent's connection (``ConnectionReport`` as JSON).
  public static let connectionKey = "connection"

  /// Stores `fix` in the history and, when `send` is true, queues it for upload and remembers it as the last sent
  /// fix (``lastSentKey``) — one transaction.
  @discardableResult
  public func record(_ fix: LocationFix, send: Bool, now: Int64) async throws -> Recorded {
    let json = String(decoding: try JSONEncoder().encode(fix), as: UTF8.self)
    let cells = fix.geohashes.all
    return try await database.write { db in
      try db.execute(
        sql: """
          INSERT OR IGNORE INTO fixes(timestamp, latitude, longitude, horizontal_accuracy, kind,
            geohash2, geohash3, geohash4, geohash5, geohash6, fix, recorded_at)
          VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
          """,
        arguments: [
          fix.timestamp, fix.latitude, fix.longitude, fix.horizontalAccuracy, fix.kind.rawValue,
          cells[0], cells[1], cells[2], cells[3], cells[4], json, now,
        ])
      guard db.changesCount == 1 else { return .duplicate }
      if send {
        try db.execute(sql: "INSERT INTO outbox(fix_id) VALUES (?)", arguments: [db.lastInsertedRowID])
        try db.execute(
          sql:
            "INSERT INTO agent_state(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
          arguments: [Self.lastSentKey, json])
      }
      return .stored(queued: send)
    }
  }

  /// The oldest queued fixes, at most `limit`, with their row ids.
  public func pending(limit: Int) async throws -> [(id: Int64, fix: LocationFix)] {
    try await database.read { db in
      try Row.fetchAll(
        db,
        sql: "SELECT f.id, f.fix FROM outbox o JOIN fixes f ON f.id = o.fix_id ORDER BY f.timestamp, f.id LIMIT ?",
        arguments: [limit]
      ).map { row in
        let text: String = row["fix"]
        return (row["id"], try JSONDecoder().decode(LocationFix.self, from: Data(text.utf8)))
      }
    }
  }

  /// Removes acknowledged fixes from the outbox (they stay in the history).
  public func acknowledge(_ ids: [Int64]) async throws {
    guard !ids.isEmpty else { return }
    try await database.write { db in
      for id in ids { try db.execute(sql: "DELETE FROM outbox WHERE fix_id = ?", arguments: [id]) }
    }
  }

  /// Counts for `status`.
  public func counts() async throws -> (history: Int, queued: Int) {
    try await database.read { db in
      (
        try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM fixes") ?? 0,
        try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM outbox") ?? 0
      )
    }
  }

  /// The newest recorded fix, from which the reporting policy resumes after a restart.
  public func newestFix() async throws -> LocationFix? {
    try await database.read { db in
      try String.fetchOne(db, sql: "SELECT fix FROM fixes ORDER BY timestamp DESC LIMIT 1").map {
        try JSONDecoder().decode(LocationFix.self, from: Data($0.utf8))
      }
    }
  }

  /// A value the agent keeps between runs (last upload time, last sent fix).
  public func value(_ key: String) async throws -> String? {
    try await database.read { db in
      try String.fetchOne(db, sql: "SELECT value FROM agent_state WHERE key = ?", arguments: [key])
    }
  }

  /// Sets a value the agent keeps between runs.
  public func setValue(_ value: String, for key: String) async throws {
    try await database.write { db in
      try db.execute(
        sql: "INSERT INTO agent_state(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        arguments: [key, value])
    }
  }
}

/// What the running agent last reported about its connection to the server, kept in the store for `status`.
public struct ConnectionReport: Sendable, Hashable, Codable {
  /// The connection's state.
  public enum State: String, Sendable, Hashable, Codable {
    /// The live socket is connected: small batches go over it.
    case live
    /// The live socket is (re)connecting or off; uploads go over HTTP.
    case http
    /// The last upload failed; fixes stay queued and are retried.
    case offline
    /// The agent stopped.
    case stopped
  }

  /// The state.
  public var state: State
  /// Since when (UTC ms).
  public var since: Int64
  /// Why, for ``State/offline``.
  public var detail: String?

  /// A report.
  public init(state: State, since: Int64, detail: String? = nil) {
    self.state = state
    self.since = since
    self.detail = detail
  }

  /// Reads the stored report; nil if the agent never ran.
  public static func load(from store: TrackerStore) async throws -> ConnectionReport? {
    guard let text = try await store.value(TrackerStore.connectionKey) else { return nil }
    return try? JSONDecoder().decode(ConnectionReport.self, from: Data(text.utf8))
  }

  /// Stores this report.
  public func save(to store: TrackerStore) async throws {
    try await store.setValue(
      String(decoding: try JSONEncoder().encode(self), as: UTF8.self), for: TrackerStore.connectionKey)
  }
}
