import DomainKit
import DomainKitTesting
import Foundation
import GeoKit
import Logging
import MeridianStore
import MeridianStorePostgres
import MeridianStoreSQLite
import MeridianTestSupport
import PostgresNIO

/// A storage engine under test: how to make a fresh, empty, migrated store and how to dispose of it. The contract
/// suite (`MeridianStoreContractTests`) runs every test against every engine in ``all``; an engine joins by adding
/// itself there.
public struct StoreEngine: Sendable, CustomStringConvertible {
  /// A store made for one test, and what removes it afterwards.
  public struct Instance: Sendable {
    /// The store.
    public let store: any MeridianStore
    /// Removes the store's data.
    public let dispose: @Sendable () async -> Void
    /// Opens another store on the same data, as another server node would, and what closes it.
    public let openNode: @Sendable () async throws -> (store: any MeridianStore, close: @Sendable () async -> Void)
  }

  /// The engine's name (in test names).
  public let name: String
  /// Makes a fresh store that reads the time from the clock given (UTC ms).
  public let make: @Sendable (_ now: @escaping @Sendable () -> Int64) async throws -> Instance

  public var description: String { name }

  /// SQLite on a file in a new temporary directory, a copy of ``MigratedSQLiteFile`` (opening it checks the
  /// migrations and runs none).
  public static let sqlite = StoreEngine(name: "sqlite") { now in
    StallWatchdog.start()
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("meridian-store-\(UUID().uuidString)")
    let path = directory.appendingPathComponent("meridian.sqlite").path
    try MigratedSQLiteFile.copy(to: path)
    let store = try SQLiteStore.open(at: path, now: now)
    return Instance(store: store, dispose: { try? FileManager.default.removeItem(at: directory) }) {
      (store: try SQLiteStore.open(at: path, now: now), close: {})
    }
  }

  /// PostgreSQL: a new database copied from the migrated template (``TestCluster/migratedTemplate()``: PostGIS and
  /// the store's schema) on the cluster `Tools/postgres start` runs (its directory from `MERIDIAN_POSTGRES_DIR` as
  /// for the script), dropped afterwards. Opening it checks the migrations and runs none.
  public static let postgres = StoreEngine(name: "postgres") { now in
    let database = try await PostgresTestDatabase.create(migrated: true)
    let store: PostgresStore
    do {
      store = try await PostgresStore.open(url: database.url, maximumConnections: 4, timeouts: .tests, now: now)
    } catch {
      await database.drop()
      throw error
    }
    return Instance(
      store: store,
      dispose: {
        await store.close()
        await database.drop()
      },
      openNode: {
        let node = try await PostgresStore.open(
          url: database.url, maximumConnections: 4, timeouts: .tests, now: now)
        return (store: node, close: { await node.close() })
      })
  }

  /// Every engine the contract suite runs against.
  public static let all: [StoreEngine] = [.sqlite, .postgres]

  /// Runs `body` with a fresh store of this engine, reading the time from `now` (the system clock unless a test
  /// moves its own), and disposes of it, whatever `body` does.
  public func with(
    now: @escaping @Sendable () -> Int64 = Timestamp.systemClock, _ body: (any MeridianStore) async throws -> Void
  ) async throws {
    let instance = try await make(now)
    do {
      try await body(instance.store)
    } catch {
      await instance.dispose()
      throw error
    }
    await instance.dispose()
  }

  /// Runs `body` with two stores on the same fresh data (two server nodes on one database) and disposes of them.
  public func withTwoNodes(
    now: @escaping @Sendable () -> Int64 = Timestamp.systemClock,
    _ body: (any MeridianStore, any MeridianStore) async throws -> Void
  ) async throws {
    let instance = try await make(now)
    do {
      let other = try await instance.openNode()
      do {
        try await body(instance.store, other.store)
      } catch {
        await other.close()
        throw error
      }
      await other.close()
    } catch {
      await instance.dispose()
      throw error
    }
    await instance.dispose()
  }
}

/// The PostgreSQL cluster of `Tools/postgres` (started once per test process) and a connection to its `postgres`
/// database for creating and dropping the tests' databases.
actor TestCluster {
  static let shared = TestCluster()

  /// Started once: concurrent callers share the one start and the one connection.
  private var server: Task<String, any Error>?
  private var connection: Task<PostgresConnection, any Error>?
  private var migrated: Task<String, any Error>?

  /// The database `Tools/postgres` makes: PostGIS and nothing of Meridian's.
  static let emptyTemplate = "meridian_template"
  private let logger = Logger(label: "meridian.tests.postgres")

  /// `postgres://user@host:port`, without a database.
  func url() async throws -> String {
    if let server { return try await server.value }
    let task = Task.detached { try await Self.start() }
    server = task
    return try await task.value
  }

  /// The URL of `database` on the cluster. Without TLS: the cluster serves none, and `sslmode=prefer` would make
  /// every pool parse the system's trust store first, on the concurrency pool.
  func url(of database: String) async throws -> String {
    "\(try await url())/\(database)?sslmode=disable"
  }

  /// Runs `sql` on the cluster's `postgres` database.
  func execute(_ sql: String) async throws {
    _ = try await maintenanceConnection().query(PostgresQuery(unsafeSQL: sql), logger: logger).collect()
  }

  /// The name of a database that is ``emptyTemplate`` migrated to `PostgresSchema.migrator`, made once per schema
  /// and cluster: its name carries a digest of the migrations' identifiers and checksums, so a changed or added
  /// migration makes a new one, and later test processes on the same cluster reuse it. A test database copied from
  /// it skips the migrations every test would otherwise run (seconds each on two busy cores).
  func migratedTemplate() async throws -> String {
    if let migrated { return try await migrated.value }
    let task = Task { try await makeMigratedTemplate() }
    migrated = task
    return try await task.value
  }

  private func makeMigratedTemplate() async throws -> String {
    var digest: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a, 64 bits: a name, not a secret
    for migration in PostgresSchema.migrator.migrations {
      for byte in (migration.identifier + "\n" + migration.checksum + "\n").utf8 {
        digest = (digest ^ UInt64(byte)) &* 0x100_0000_01b3
      }
    }
    let name = "meridian_schema_" + String(digest, radix: 16)
    if try await databaseExists(name) { return name }
    // Built under a name of its own and renamed when done, so a process that sees the name sees it whole; a
    // process that lost the race to another drops its copy.
    let building = "meridian_building_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
    try await execute("CREATE DATABASE \(building) TEMPLATE \(Self.emptyTemplate)")
    do {
      let store = try await PostgresStore.open(
        url: try await url(of: building), maximumConnections: 1, timeouts: .tests)
      await store.close()
      try await renameWhenClosed(building, to: name)
    } catch {
      try? await execute("DROP DATABASE IF EXISTS \(building) WITH (FORCE)")
      if try await databaseExists(name) { return name }
      throw error
    }
    return name
  }

  /// Renames `database` once its last connection has gone: a closed connection's backend may end a moment later, so
  /// any still there is ended and waited for (`pg_terminate_backend`'s timeout, PostgreSQL 14+) before the rename.
  private func renameWhenClosed(_ database: String, to name: String) async throws {
    try await endSessions(of: database)
    try await execute("ALTER DATABASE \(database) RENAME TO \(name)")
  }

  /// Ends every session still on `database` and waits for their backends to go (at most 5 s each): a closed
  /// connection's backend may end a moment later, and `CREATE DATABASE … TEMPLATE` or a rename refuses a database
  /// with a session (`CREATE DATABASE` itself polls every 100 ms for up to 5 s first).
  func endSessions(of database: String) async throws {
    try await execute(
      "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE datname = '\(database)'")
  }

  /// Whether the cluster has a database called `name`.
  private func databaseExists(_ name: String) async throws -> Bool {
    let rows = try await maintenanceConnection().query(
      "SELECT 1 FROM pg_database WHERE datname = \(name)", logger: logger
    ).collect()
    return !rows.isEmpty
  }

  private func maintenanceConnection() async throws -> PostgresConnection {
    if let connection { return try await connection.value }
    let url = try await url()
    // Again after the await: another caller may have started the connection meanwhile, and a second one would be
    // dropped unclosed (PostgresNIO traps in the deinit of a connection that was never closed).
    if let connection { return try await connection.value }
    let logger = logger
    let task = Task<PostgresConnection, any Error> {
      guard let components = URLComponents(string: url), let host = components.host else {
        throw TestClusterError(message: "Tools/postgres printed an unreadable URL: \(url)")
      }
      return try await PostgresConnection.connect(
        configuration: PostgresConnection.Configuration(
          host: host, port: components.port ?? 5432, username: components.user ?? "postgres", password: nil,
          database: "postgres", tls: .disable),
        id: 1, logger: logger)
    }
    connection = task
    return try await task.value
  }

  /// Runs `Tools/postgres start` (found from this file's path) and returns the URL it prints, without its database.
  private static func start() async throws -> String {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent()
    let child = try ChildProcess(root.appendingPathComponent("Tools/postgres"), ["start"])
    let status = await child.wait()
    guard status == 0,
      let line = child.standardOutput.value.split(separator: "\n").last, line.hasPrefix("postgres://"),
      let slash = line.range(of: "/", options: .backwards)
    else { throw TestClusterError(message: "Tools/postgres start failed (status \(status)): \(child.output.value)") }
    return String(line[..<slash.lowerBound])
  }
}

/// The test cluster could not be started or reached.
struct TestClusterError: Error, CustomStringConvertible {
  let message: String
  var description: String { message }
}

/// `count` venues scattered uniformly in a box, with random types and ratings.
public func randomVenues(
  count: Int, prefix: String, latitudes: ClosedRange<Double>, longitudes: ClosedRange<Double>,
  random: inout SplitMix64
) throws -> [VenueRecord] {
  let types = ["cafe", "restaurant", "shop"]
  return try (0..<count).map { index in
    let location = try Coordinate(
      latitude: Double.random(in: latitudes, using: &random), longitude: Double.random(in: longitudes, using: &random))
    let reviews = Int.random(in: 0...20, using: &random)
    let place = try Place(
      id: PlaceID(String(format: "%@-%05d", prefix, index)), kind: .venue,
      name: LocalizedText(["en": "Venue \(index)"]), location: location,
      venueType: types[Int.random(in: 0..<types.count, using: &random)])
    return try VenueRecord(
      place: place, rating: RatingAggregate(sum: reviews * Int.random(in: 1...5, using: &random), count: reviews))
  }
}

/// `distance` metres east of `point` (small distances).
public func east(of point: Coordinate, _ distance: Double) -> Coordinate {
  Coordinate(
    uncheckedLatitude: point.latitude,
    longitude: point.longitude + distance / (meanEarthRadius * cos(point.latitude * .pi / 180)) * 180 / .pi)
}
