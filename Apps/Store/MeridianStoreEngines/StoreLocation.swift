import DomainKit
import Foundation
import Logging
import MeridianBlobFiles
import MeridianStore
import MeridianStorePostgres
import MeridianStoreSQLite

/// Where a store lives, as operators write it (`--database`, `MERIDIAN_DATABASE`, `MERIDIAN_DATABASE_URL`): a
/// `postgres://` or `postgresql://` URL means the PostgreSQL engine (several server nodes on one database); anything
/// else is the path of a SQLite file (the embedded default).
public enum StoreLocation: Sendable, Hashable, CustomStringConvertible {
  /// A SQLite file.
  case sqlite(path: String)
  /// A PostgreSQL database.
  case postgres(url: String)

  /// The location `text` names.
  public init(_ text: String) {
    let lowercased = text.lowercased()
    if lowercased.hasPrefix("postgres://") || lowercased.hasPrefix("postgresql://") {
      self = .postgres(url: text)
    } else {
      self = .sqlite(path: text)
    }
  }

  /// Whether several server processes may share this store.
  public var isShared: Bool {
    if case .postgres = self { return true }
    return false
  }

  /// The location for logs and messages: a URL without its password.
  public var description: String {
    switch self {
    case .sqlite(let path): return path
    case .postgres(let url): return PostgresStore.redacted(url: url)
    }
  }

  /// The most connections a PostgreSQL store keeps unless told otherwise.
  public static let defaultMaximumConnections = 20

  /// Opens (creating and migrating as needed) the store here; a PostgreSQL store keeps at most
  /// `maximumConnections` connections and gives every call the deadlines of `timeouts` (a SQLite store ignores
  /// both). The store reads the time from `now` (UTC milliseconds). A PostgreSQL store with `replicaURL` reads what
  /// may lag from that streaming replica (`PostgresStore.open(url:replicaURL:…)`).
  public func open(
    maximumConnections: Int = defaultMaximumConnections, timeouts: DatabaseTimeouts = DatabaseTimeouts(),
    replicaURL: String? = nil, logger: Logger, now: @escaping @Sendable () -> Int64 = Timestamp.systemClock
  ) async throws -> OpenStore {
    switch self {
    case .sqlite(let path):
      return OpenStore(store: try SQLiteStore.open(at: path, now: now), close: {})
    case .postgres(let url):
      let store = try await PostgresStore.open(
        url: url, replicaURL: replicaURL, maximumConnections: maximumConnections,
        timeouts: PostgresStore.Timeouts(connectionWait: timeouts.connectionWait, statement: timeouts.statement),
        commitTimeout: timeouts.commit, healthTimeout: timeouts.health, logger: logger, now: now)
      return OpenStore(store: store, close: { await store.close() })
    }
  }
}

/// The deadlines of a shared database's calls (PostgreSQL; SQLite, in the process, has none): a call that misses
/// one throws `StoreUnavailableError`, which the server answers with 503 and `Retry-After`.
public struct DatabaseTimeouts: Sendable, Hashable {
  /// How long a call waits for a connection (all busy, or the database unreachable).
  public var connectionWait: Duration = .seconds(3)
  /// How long a call may run once it has a connection (a query, or a transaction); its connection is closed then.
  public var statement: Duration = .seconds(30)
  /// How long the group commit of uploaded fixes may take, from `BEGIN` to `COMMIT`.
  public var commit: Duration = .seconds(5)
  /// How long `GET /health` waits for the database's answer.
  public var health: Duration = .seconds(2)

  /// The defaults (a server's).
  public init() {}

  /// For batch tools (the admin CLI: imports, retention, maintenance), whose single statements and commits may
  /// rightly take long: an hour each; 30 s for a connection (nobody is kept waiting for an answer, and a busy machine
  /// may take longer than a server's 3 s to start a backend).
  public static var batch: DatabaseTimeouts {
    var timeouts = DatabaseTimeouts()
    timeouts.connectionWait = .seconds(30)
    timeouts.statement = .seconds(3600)
    timeouts.commit = .seconds(3600)
    return timeouts
  }
}

/// An open store and what closes it (waiting for its pending commits).
public struct OpenStore: Sendable {
  /// The store.
  public let store: any MeridianStore
  /// Closes it; the store must not be used afterwards.
  public let close: @Sendable () async -> Void

  /// An open store.
  public init(store: any MeridianStore, close: @escaping @Sendable () async -> Void) {
    self.store = store
    self.close = close
  }
}

extension StoreLocation {
  /// The SQLite file a server and the admin CLI use unless told otherwise (`./data/meridian.sqlite`).
  public static let defaultSQLitePath = SQLiteStore.defaultPath

  /// The store here when it is a SQLite file, opened (created and migrated as needed) without waiting on anything
  /// but the file, reading the time from `now`; nil for a PostgreSQL database
  /// (``open(maximumConnections:timeouts:logger:now:)`` opens both).
  public func openEmbedded(now: @escaping @Sendable () -> Int64 = Timestamp.systemClock) throws
    -> (any MeridianStore)?
  {
    guard case .sqlite(let path) = self else { return nil }
    return try SQLiteStore.open(at: path, now: now)
  }

  /// Where images are kept for `store`, which lives here: `directory` when given (`MERIDIAN_BLOB_DIR`); else the
  /// database's own blob table when the engine has one (PostgreSQL: every node sees it); else `blobs` next to the
  /// SQLite file (`./data/blobs` by default). The server and the admin CLI decide alike through this.
  public func blobStore(for store: any MeridianStore, directory: String?) -> any BlobStore {
    if let directory, !directory.isEmpty {
      return FileBlobStore(directory: URL(fileURLWithPath: directory, isDirectory: true))
    }
    if let inDatabase = store.databaseBlobs { return inDatabase }
    let file: String
    if case .sqlite(let path) = self { file = path } else { file = Self.defaultSQLitePath }
    return FileBlobStore(
      directory: URL(fileURLWithPath: file).deletingLastPathComponent().appendingPathComponent("blobs"))
  }
}
