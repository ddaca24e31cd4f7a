import Foundation
import GRDB

/// Options for opening a ``SQLiteDatabase``.
public struct DatabaseOptions: Sendable {
  /// How long a connection waits for a lock held by another connection or process before failing with `SQLITE_BUSY`.
  public var busyTimeout: TimeInterval
  /// The maximum number of concurrent reader connections of a file database.
  public var maximumReaderCount: Int
  /// Whether `FOREIGN KEY` constraints are enforced.
  public var foreignKeysEnabled: Bool
  /// A label that appears in GRDB's dispatch queue names, for debugging.
  public var label: String?

  /// Creates options; the defaults suit both an app and a server.
  public init(
    busyTimeout: TimeInterval = 5,
    maximumReaderCount: Int = 5,
    foreignKeysEnabled: Bool = true,
    label: String? = nil
  ) {
    self.busyTimeout = busyTimeout
    self.maximumReaderCount = maximumReaderCount
    self.foreignKeysEnabled = foreignKeysEnabled
    self.label = label
  }

  func grdbConfiguration() -> Configuration {
    var configuration = Configuration()
    configuration.foreignKeysEnabled = foreignKeysEnabled
    configuration.busyMode = .timeout(busyTimeout.isFinite ? min(max(busyTimeout, 0), 86_400) : 86_400)
    configuration.maximumReaderCount = max(1, maximumReaderCount)
    configuration.label = label
    configuration.prepareDatabase { db in
      try db.execute(sql: "PRAGMA synchronous = NORMAL")
    }
    return configuration
  }
}

/// One SQLite database: a file opened in WAL mode through a single connection pool, or a private in-memory database
/// for tests.
///
/// Every file connection uses `journal_mode=WAL`, `synchronous=NORMAL`, `foreign_keys=ON` and a busy timeout.
/// Open each file **once** per process and share the value (it is `Sendable`): one pool per file is what keeps
/// writes serialized and reads concurrent.
///
/// ```swift
/// let database = try SQLiteDatabase.open(at: "/var/lib/meridian/main.sqlite")
/// try database.write { db in try db.execute(sql: "INSERT INTO note(text) VALUES (?)", arguments: ["hi"]) }
/// let count = try database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM note") }
/// ```
public struct SQLiteDatabase: Sendable {
  /// The underlying GRDB writer (a `DatabasePool` for files, a `DatabaseQueue` in memory), for the full GRDB API.
  public let writer: any DatabaseWriter
  /// The file path, or `nil` for an in-memory database.
  public let path: String?

  /// Opens (creating it if needed) the database file at `path` with a WAL connection pool.
  ///
  /// - Throws: A GRDB `DatabaseError` when the file can't be opened or isn't a database.
  public static func open(at path: String, options: DatabaseOptions = DatabaseOptions()) throws -> SQLiteDatabase {
    let directory = (path as NSString).deletingLastPathComponent
    if !directory.isEmpty {
      try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }
    // Switching a new file to WAL needs an exclusive lock and SQLite doesn't wait for it, so when several
    // processes create the same file at once, retry within the busy timeout.
    let wait = options.busyTimeout.isFinite ? min(max(options.busyTimeout, 0), 86_400) : 86_400
    let deadline = ContinuousClock.now + .milliseconds(Int(wait * 1000))
    while true {
      do {
        let pool = try DatabasePool(path: path, configuration: options.grdbConfiguration())
        return SQLiteDatabase(writer: pool, path: path)
      } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY && ContinuousClock.now < deadline {
        Thread.sleep(forTimeInterval: Double.random(in: 0.005...0.02))
      }
    }
  }

  /// Creates a private in-memory database (a `DatabaseQueue`), for tests and previews.
  public static func inMemory(options: DatabaseOptions = DatabaseOptions()) throws -> SQLiteDatabase {
    SQLiteDatabase(writer: try DatabaseQueue(configuration: options.grdbConfiguration()), path: nil)
  }

  /// Wraps an existing GRDB writer.
  public init(writer: any DatabaseWriter, path: String?) {
    self.writer = writer
    self.path = path
  }

  /// Runs `body` in a read-only snapshot.
  public func read<T>(_ body: (Database) throws -> T) throws -> T {
    try writer.read(body)
  }

  /// Runs `body` in a write transaction; the transaction is rolled back if `body` throws.
  @discardableResult
  public func write<T>(_ body: (Database) throws -> T) throws -> T {
    try writer.write(body)
  }

  /// Runs `body` in a read-only snapshot without blocking the caller's thread.
  public func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
    try await writer.read(body)
  }

  /// Runs `body` in a write transaction without blocking the caller's thread.
  @discardableResult
  public func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
    try await writer.write(body)
  }

  /// The journal mode in effect (`wal` for file databases, `memory` in memory).
  public func journalMode() throws -> String {
    try writer.read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") ?? "" }
  }

  /// Copies the database to a new file at `destinationPath` with SQLite's online backup API.
  ///
  /// Writers keep running: the copy is taken from one read snapshot, so it holds every transaction committed before
  /// the backup started and none committed after. The copy is written next to the destination and renamed into
  /// place when complete, so a crash never leaves half a backup; an existing file at the destination is replaced.
  ///
  /// - Returns: The number of pages copied.
  @discardableResult
  public func backup(to destinationPath: String) throws -> Int {
    let partialPath = destinationPath + ".partial-\(UUID().uuidString)"
    defer { try? FileManager.default.removeItem(atPath: partialPath) }
    let destination = try DatabaseQueue(path: partialPath)
    var pages = 0
    do {
      try writer.backup(to: destination) { progress in
        pages = progress.totalPageCount
      }
      try destination.close()
    } catch {
      try? destination.close()
      throw error
    }
    guard rename(partialPath, destinationPath) == 0 else {
      throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: destinationPath])
    }
    return pages
  }

  /// Runs `PRAGMA integrity_check` (or `quick_check`) and returns what SQLite found.
  public func integrityCheck(quick: Bool = false, maximumErrors: Int = 100) throws -> IntegrityCheckResult {
    let pragma = quick ? "quick_check" : "integrity_check"
    let rows = try writer.read { db in
      try String.fetchAll(db, sql: "PRAGMA \(pragma)(\(max(1, maximumErrors)))")
    }
    if rows == ["ok"] { return IntegrityCheckResult(problems: []) }
    return IntegrityCheckResult(problems: rows)
  }

  /// Runs `PRAGMA foreign_key_check` and returns every row whose parent is missing.
  public func foreignKeyCheck(table: String? = nil) throws -> [ForeignKeyViolation] {
    try writer.read { db in
      let sql =
        table.map { "PRAGMA foreign_key_check(\($0.quotedDatabaseIdentifier))" } ?? "PRAGMA foreign_key_check"
      return try Row.fetchAll(db, sql: sql).map { row in
        ForeignKeyViolation(
          table: row[0],
          rowID: row[1],
          parentTable: row[2],
          foreignKeyIndex: row[3]
        )
      }
    }
  }

  /// Closes every connection. Further use of this value throws.
  public func close() throws {
    if let pool = writer as? DatabasePool {
      try pool.close()
    } else if let queue = writer as? DatabaseQueue {
      try queue.close()
    }
  }
}

/// The outcome of `PRAGMA integrity_check`.
public struct IntegrityCheckResult: Sendable, Equatable {
  /// SQLite's messages, empty when the database is intact.
  public var problems: [String]
  /// Whether SQLite reported `ok`.
  public var isOK: Bool { problems.isEmpty }
}

/// One row reported by `PRAGMA foreign_key_check`.
public struct ForeignKeyViolation: Sendable, Equatable {
  /// The table holding the offending row.
  public var table: String
  /// The offending row's rowid, `nil` for a `WITHOUT ROWID` table.
  public var rowID: Int64?
  /// The table the foreign key refers to.
  public var parentTable: String
  /// The index of the foreign key in `PRAGMA foreign_key_list(table)`.
  public var foreignKeyIndex: Int

  /// Creates a violation record.
  public init(table: String, rowID: Int64?, parentTable: String, foreignKeyIndex: Int) {
    self.table = table
    self.rowID = rowID
    self.parentTable = parentTable
    self.foreignKeyIndex = foreignKeyIndex
  }
}
