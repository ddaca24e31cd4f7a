import Foundation
import PersistenceKit

/// A real WAL database file in a fresh temporary directory, for tests that need file behaviour (several
/// connections, backups, other processes) rather than ``PersistenceKit/SQLiteDatabase/inMemory(options:)``.
///
/// ```swift
/// let temporary = try TemporaryDatabase(migrator: AppSchema.migrator)
/// defer { temporary.remove() }
/// try temporary.database.write { db in … }
/// ```
public struct TemporaryDatabase: Sendable {
  /// The open database.
  public let database: SQLiteDatabase
  /// The directory holding the file; ``remove()`` deletes it.
  public let directory: URL
  /// The database file's path.
  public var path: String { directory.appendingPathComponent("database.sqlite").path }

  /// Creates the directory, opens the file and applies `migrator` when given.
  public init(migrator: Migrator? = nil, options: DatabaseOptions = DatabaseOptions()) throws {
    directory = FileManager.default.temporaryDirectory
      .appendingPathComponent("PersistenceKitTesting-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    database = try SQLiteDatabase.open(
      at: directory.appendingPathComponent("database.sqlite").path,
      options: options
    )
    if let migrator { try database.migrate(migrator) }
  }

  /// Closes the database and deletes its directory.
  public func remove() {
    try? database.close()
    try? FileManager.default.removeItem(at: directory)
  }
}
