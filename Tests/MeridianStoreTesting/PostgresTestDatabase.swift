import Foundation
import Logging
import MeridianTestSupport
import PersistenceKit
import PersistenceKitPostgres

/// A fresh, empty PostgreSQL database made from `meridian_template` (PostGIS, no Meridian tables) on the cluster of
/// `Tools/postgres` (``TestCluster``, as for ``StoreEngine/postgres``), for tests that hand its URL to a program under
/// test (`meridian-admin --database postgres://…`) rather than an open store.
public struct PostgresTestDatabase: Sendable {
  /// The database's name.
  public let name: String
  /// `postgres://user@host:port/name?sslmode=disable`.
  public let url: String
  /// The tablespace made for it, dropped with it (``create(migrated:tablespaceAt:)``).
  var tablespace: String? = nil

  /// Creates the database — empty, or already `migrated` to the store's current schema (a copy of
  /// ``TestCluster/migratedTemplate()``, for tests of anything but migrating) — first waiting while the process has
  /// as many open as ``DatabaseAllowance`` allows; each database made must be dropped with ``drop()``.
  ///
  /// With `tablespaceAt` (an empty directory, on a small file system for tests of a full disk), the database's files
  /// live there, in a tablespace of its own (the write-ahead log stays in the cluster's directory); the directory is
  /// given to the cluster's owner (`postgres` when the tests run as root, as `Tools/postgres` runs it).
  public static func create(migrated: Bool = false, tablespaceAt location: URL? = nil) async throws
    -> PostgresTestDatabase
  {
    try await create(template: migrated ? nil : TestCluster.emptyTemplate, tablespaceAt: location)
  }

  /// Creates a copy of `original` (`CREATE DATABASE … TEMPLATE`; sessions on `original` are ended first, so nothing
  /// may use it meanwhile),
  /// under the same allowance as ``create(migrated:tablespaceAt:)``; it must be dropped with ``drop()``.
  public static func copy(of original: PostgresTestDatabase) async throws -> PostgresTestDatabase {
    try await TestCluster.shared.endSessions(of: original.name)
    return try await create(template: original.name, tablespaceAt: nil)
  }

  /// `template` nil: ``TestCluster/migratedTemplate()``.
  private static func create(template given: String?, tablespaceAt location: URL?) async throws -> PostgresTestDatabase
  {
    StallWatchdog.start()
    await DatabaseAllowance.shared.acquire()
    do {
      let template: String
      if let given { template = given } else { template = try await TestCluster.shared.migratedTemplate() }
      let name = "meridian_test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
      var tablespace: String?
      if let location {
        if getuid() == 0 {
          try FileManager.default.setAttributes([.ownerAccountName: "postgres"], ofItemAtPath: location.path)
        }
        tablespace = "space_" + name
        try await TestCluster.shared.execute("CREATE TABLESPACE space_\(name) LOCATION '\(location.path)'")
      }
      do {
        try await TestCluster.shared.execute(
          "CREATE DATABASE \(name) TEMPLATE \(template)" + (tablespace.map { " TABLESPACE \($0)" } ?? ""))
      } catch {
        if let tablespace { try? await TestCluster.shared.execute("DROP TABLESPACE IF EXISTS \(tablespace)") }
        throw error
      }
      return PostgresTestDatabase(name: name, url: try await TestCluster.shared.url(of: name), tablespace: tablespace)
    } catch {
      await DatabaseAllowance.shared.release()
      throw error
    }
  }

  /// Runs `sql` on this database, on a connection of its own (`ANALYZE` after a load, in a test of a plan).
  public func execute(_ sql: String) async throws {
    let database = try await PostgresDatabase.open(
      url: try PostgresURL(url), maxConnections: 1, logger: Logger(label: "meridian.tests.database"))
    do {
      try await database.execute(sql)
    } catch {
      await database.close()
      throw error
    }
    await database.close()
  }

  /// Drops the database, closing any connection left to it, and gives its place back to the allowance.
  public func drop() async {
    try? await TestCluster.shared.execute("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
    if let tablespace { try? await TestCluster.shared.execute("DROP TABLESPACE IF EXISTS \(tablespace)") }
    await DatabaseAllowance.shared.release()
  }

  /// Runs `body` with a new database and drops it afterwards, whatever `body` does.
  public static func with(_ body: (PostgresTestDatabase) async throws -> Void) async throws {
    let database = try await create()
    do {
      try await body(database)
    } catch {
      await database.drop()
      throw error
    }
    await database.drop()
  }
}
