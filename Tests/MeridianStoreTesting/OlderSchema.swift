import Foundation
import Logging
import MeridianStore
import MeridianStorePostgres
import MeridianStoreSQLite
import PersistenceKit
import PersistenceKitPostgres

extension StoreEngine {
  /// Runs `body` with a store whose database was migrated up to just before the migration `identifier`, then given
  /// `seed(self)` (SQL for this engine, against that older schema), then migrated to the end by opening the store
  /// as a deployed server would be; disposes of it afterwards.
  public func withDatabase(
    before identifier: String, seed: (StoreEngine) -> String, _ body: (any MeridianStore) async throws -> Void
  ) async throws {
    switch name {
    case "sqlite":
      let directory = FileManager.default.temporaryDirectory.appendingPathComponent("meridian-old-\(UUID())")
      defer { try? FileManager.default.removeItem(at: directory) }
      try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
      let path = directory.appendingPathComponent("meridian.sqlite").path
      do {
        let database = try SQLiteDatabase.open(at: path)
        try database.migrate(SQLiteSchema.migrator, upTo: try Self.previous(identifier, in: SQLiteSchema.migrator))
        let sql = seed(self)
        try await database.write { db in try db.execute(sql: sql) }
      }
      try await body(try SQLiteStore.open(at: path))
    default:
      try await PostgresTestDatabase.with { test in
        let logger = Logger(label: "meridian.tests.older-schema")
        let database = try await PostgresDatabase.open(
          url: try PostgresURL(test.url), maxConnections: 1, logger: logger)
        do {
          try await PostgresMigrator(PostgresSchema.migrator).migrate(
            upTo: try Self.previous(identifier, in: PostgresSchema.migrator), on: database)
          try await database.execute(seed(self))
        } catch {
          await database.close()
          throw error
        }
        await database.close()
        let store = try await PostgresStore.open(url: test.url, maximumConnections: 4, timeouts: .tests)
        do {
          try await body(store)
        } catch {
          await store.close()
          throw error
        }
        await store.close()
      }
    }
  }

  /// The identifier of the migration before `identifier`.
  static func previous(_ identifier: String, in migrator: Migrator) throws -> String {
    guard let index = migrator.migrations.firstIndex(where: { $0.identifier == identifier }), index > 0 else {
      throw OlderSchemaError.noMigrationBefore(identifier)
    }
    return migrator.migrations[index - 1].identifier
  }
}

/// The migration named is not in the engine's list (or is its first).
public enum OlderSchemaError: Error, CustomStringConvertible {
  /// No such migration, or nothing before it.
  case noMigrationBefore(String)

  public var description: String {
    switch self {
    case .noMigrationBefore(let identifier): "There is no migration before '\(identifier)' in the engine's list."
    }
  }
}
