import Foundation

/// A fresh, empty PostgreSQL database made from `meridian_template` (PostGIS, no Meridian tables) on the cluster of
/// `Tools/postgres` (``TestCluster``, as for ``StoreEngine/postgres``), for tests that hand its URL to a program under
/// test (`meridian-admin --database postgres://…`) rather than an open store.
public struct PostgresTestDatabase: Sendable {
  /// The database's name.
  public let name: String
  /// `postgres://user@host:port/name`.
  public let url: String

  /// Creates the database — empty, or already `migrated` to the store's current schema (a copy of
  /// ``TestCluster/migratedTemplate()``, for tests of anything but migrating) — first waiting while the process has
  /// as many open as ``DatabaseAllowance`` allows; each database made must be dropped with ``drop()``.
  public static func create(migrated: Bool = false) async throws -> PostgresTestDatabase {
    await DatabaseAllowance.shared.acquire()
    do {
      let server = try await TestCluster.shared.url()
      let template = migrated ? try await TestCluster.shared.migratedTemplate() : TestCluster.emptyTemplate
      let name = "meridian_test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
      try await TestCluster.shared.execute("CREATE DATABASE \(name) TEMPLATE \(template)")
      return PostgresTestDatabase(name: name, url: "\(server)/\(name)")
    } catch {
      await DatabaseAllowance.shared.release()
      throw error
    }
  }

  /// Drops the database, closing any connection left to it, and gives its place back to the allowance.
  public func drop() async {
    try? await TestCluster.shared.execute("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
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
