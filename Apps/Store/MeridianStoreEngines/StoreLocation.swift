import Foundation
import Logging
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
    case .postgres(let url):
      guard var components = URLComponents(string: url), components.password != nil else { return url }
      components.password = "***"
      return components.string ?? "postgres://…"
    }
  }

  /// The most connections a PostgreSQL store keeps unless told otherwise.
  public static let defaultMaximumConnections = 20

  /// Opens (creating and migrating as needed) the store here; a PostgreSQL store keeps at most
  /// `maximumConnections` connections (a SQLite store ignores it).
  public func open(maximumConnections: Int = defaultMaximumConnections, logger: Logger) async throws -> OpenStore {
    switch self {
    case .sqlite(let path):
      return OpenStore(store: try SQLiteStore.open(at: path), close: {})
    case .postgres(let url):
      let store = try await PostgresStore.open(url: url, maximumConnections: maximumConnections, logger: logger)
      return OpenStore(store: store, close: { await store.close() })
    }
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
