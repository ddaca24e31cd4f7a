import Foundation
import GRDB
import Synchronization

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
  /// When the write-ahead log is copied back into the database file (a checkpoint).
  public var checkpoints: CheckpointPolicy

  /// Creates options; the defaults suit both an app and a server.
  public init(
    busyTimeout: TimeInterval = 5,
    maximumReaderCount: Int = 5,
    foreignKeysEnabled: Bool = true,
    label: String? = nil,
    checkpoints: CheckpointPolicy = .automatic
  ) {
    self.busyTimeout = busyTimeout
    self.maximumReaderCount = maximumReaderCount
    self.foreignKeysEnabled = foreignKeysEnabled
    self.label = label
    self.checkpoints = checkpoints
  }

  func grdbConfiguration() -> Configuration {
    var configuration = Configuration()
    configuration.foreignKeysEnabled = foreignKeysEnabled
    configuration.busyMode = .timeout(busyTimeout.isFinite ? min(max(busyTimeout, 0), 86_400) : 86_400)
    configuration.maximumReaderCount = max(1, maximumReaderCount)
    configuration.label = label
    let checkpoints = checkpoints
    configuration.prepareDatabase { db in
      try db.execute(sql: "PRAGMA synchronous = NORMAL")
      if case .background = checkpoints {
        // The writer checkpoints only as a safety net, if the background connection falls far behind; a log that
        // grew past the limit (a vacuum's) is cut back when it restarts.
        try db.execute(sql: "PRAGMA wal_autocheckpoint = \(CheckpointPolicy.writerFallbackPages)")
        try db.execute(sql: "PRAGMA journal_size_limit = \(CheckpointPolicy.logSizeLimit)")
      }
    }
    return configuration
  }
}

/// When a file database copies its write-ahead log back into the database file.
public enum CheckpointPolicy: Sendable, Hashable {
  /// SQLite's default: the commit that takes the log past 1,000 pages checkpoints, on the writer, before it returns.
  case automatic
  /// A connection of its own checkpoints every `interval`, in passive mode (it never waits for readers or the
  /// writer), so no commit waits for a checkpoint's copying and syncing. For write-heavy servers.
  ///
  /// The log starts over from its beginning only after a checkpoint that caught up with the writer, which continuous
  /// writes may never allow; so the writer still checkpoints once the log passes 10,000 pages (about 40 MB), by then
  /// mostly copying nothing, and the log restarts. That bounds the log file.
  case background(interval: Duration)

  /// The log size at which the writer checkpoints itself under ``background(interval:)``.
  static let writerFallbackPages = 10_000
  /// The size, in bytes, a restarting log is cut back to under ``background(interval:)`` (64 MiB).
  static let logSizeLimit = 64 << 20
}

/// One SQLite database: a file opened in WAL mode through a single connection pool, or a private in-memory database
/// for tests.
///
/// Every file connection uses `journal_mode=WAL`, `synchronous=NORMAL`, `foreign_keys=ON` and a busy timeout.
/// A process has **one pool per file** (what keeps writes serialized and reads concurrent): ``open(at:options:)``
/// returns the pool already open for the same file, however the path is spelled (relative, `..`, symlinks). Sharing
/// one value (it is `Sendable`) is still the simplest; each open is released by its own ``close()``.
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
  /// This open's share of a registered pool; `nil` for in-memory databases and wrapped writers.
  private let lease: PoolLease?
  /// What ``read(_:)`` and ``write(_:)`` throw instead of an error (``translatingErrors(_:)``); nil: the error.
  private var translation: (@Sendable (any Error) -> any Error)?

  /// Opens (creating it if needed) the database file at `path` with a WAL connection pool.
  ///
  /// If the file is already open in this process — by this path or any other that resolves to it — the existing pool
  /// is returned and `options` are ignored: the first open's options apply until its last ``close()``.
  ///
  /// - Throws: A GRDB `DatabaseError` when the file can't be opened or isn't a database.
  public static func open(at path: String, options: DatabaseOptions = DatabaseOptions()) throws -> SQLiteDatabase {
    let directory = (path as NSString).deletingLastPathComponent
    if !directory.isEmpty {
      try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }
    let key = PoolRegistry.canonicalPath(path)
    if let lease = PoolRegistry.shared.acquire(key) {
      return SQLiteDatabase(writer: lease.pool, path: path, lease: lease)
    }
    // Switching a new file to WAL needs an exclusive lock and SQLite doesn't wait for it, so when several
    // processes create the same file at once, retry within the busy timeout.
    let wait = options.busyTimeout.isFinite ? min(max(options.busyTimeout, 0), 86_400) : 86_400
    let pool = try retryingWhileBusy(for: .milliseconds(Int(wait * 1000))) {
      try DatabasePool(path: path, configuration: options.grdbConfiguration())
    }
    let checkpointer: BackgroundCheckpointer?
    do {
      switch options.checkpoints {
      case .automatic: checkpointer = nil
      case .background(let interval): checkpointer = try BackgroundCheckpointer(path: path, interval: interval)
      }
    } catch {
      try? pool.close()
      throw error
    }
    // The pool was created outside the registry's lock; if another thread registered one meanwhile, use that.
    let lease = PoolRegistry.shared.register(pool, checkpointer: checkpointer, for: key)
    if lease.pool !== pool {
      checkpointer?.stop()
      try? pool.close()
    }
    return SQLiteDatabase(writer: lease.pool, path: path, lease: lease)
  }

  /// Runs `attempt` again after a few milliseconds while it fails with `SQLITE_BUSY`, until `timeout` has passed
  /// (then its error is thrown): for the locks SQLite doesn't wait for even with a busy timeout (switching a file to
  /// WAL, the checkpoint lock).
  private static func retryingWhileBusy<T>(for timeout: Duration, _ attempt: () throws -> T) throws -> T {
    let deadline = ContinuousClock.now + timeout
    while true {
      do {
        return try attempt()
      } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY && ContinuousClock.now < deadline {
        Thread.sleep(forTimeInterval: Double.random(in: 0.005...0.02))
      }
    }
  }

  /// Creates a private in-memory database (a `DatabaseQueue`), for tests and previews.
  public static func inMemory(options: DatabaseOptions = DatabaseOptions()) throws -> SQLiteDatabase {
    SQLiteDatabase(writer: try DatabaseQueue(configuration: options.grdbConfiguration()), path: nil)
  }

  /// Wraps an existing GRDB writer (not registered: ``close()`` closes it).
  public init(writer: any DatabaseWriter, path: String?) {
    self.init(writer: writer, path: path, lease: nil)
  }

  private init(writer: any DatabaseWriter, path: String?, lease: PoolLease?) {
    self.writer = writer
    self.path = path
    self.lease = lease
  }

  /// This database, whose ``read(_:)`` and ``write(_:)`` calls (every form) throw `translate(error)` instead of an
  /// error: for a store that says in its own terms what a failure means (the disk is full: try again later).
  public func translatingErrors(_ translate: @escaping @Sendable (any Error) -> any Error) -> SQLiteDatabase {
    var database = self
    database.translation = translate
    return database
  }

  /// Whether `error` says the storage under the database failed rather than the statement: the disk or file system
  /// is full (`SQLITE_FULL`) or a read or write of the file failed (`SQLITE_IOERR` and its extended codes). Nothing
  /// of the failed transaction is stored, and the same call can succeed once space returns.
  public static func isStorageFailure(_ error: any Error) -> Bool {
    guard let error = error as? DatabaseError else { return false }
    return error.resultCode == .SQLITE_FULL || error.resultCode == .SQLITE_IOERR
  }

  private func translated<T>(_ body: () throws -> T) throws -> T {
    guard let translation else { return try body() }
    do { return try body() } catch { throw translation(error) }
  }

  private func translated<T>(_ body: () async throws -> T) async throws -> T {
    guard let translation else { return try await body() }
    do { return try await body() } catch { throw translation(error) }
  }

  /// Runs `body` in a read-only snapshot.
  public func read<T>(_ body: (Database) throws -> T) throws -> T {
    try translated { try writer.read(body) }
  }

  /// Runs `body` in a write transaction; the transaction is rolled back if `body` throws.
  @discardableResult
  public func write<T>(_ body: (Database) throws -> T) throws -> T {
    try translated { try writer.write(body) }
  }

  /// Runs `body` in a read-only snapshot without blocking the caller's thread.
  public func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
    try await translated { try await writer.read(body) }
  }

  /// Runs `body` in a write transaction without blocking the caller's thread.
  @discardableResult
  public func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
    try await translated { try await writer.write(body) }
  }

  /// Schedules `body` in a write transaction on the writer's own serial queue and returns at once; `completion` gets
  /// its result (or the error, after the rollback) on that queue, after the commit.
  ///
  /// This is the write for pipelines that chain transactions, such as a group commit: calling it again from
  /// `completion` queues the next transaction with no hop through Swift concurrency's thread pool, where a busy
  /// server would make it wait behind every other task. Keep `completion` short: the next write waits for it.
  public func write<T: Sendable>(
    _ body: @escaping @Sendable (Database) throws -> T,
    completion: @escaping @Sendable (Result<T, any Error>) -> Void
  ) {
    guard let translation else { return writer.asyncWrite(body) { _, result in completion(result) } }
    writer.asyncWrite(body) { _, result in completion(result.mapError(translation)) }
  }

  /// Copies the whole log into the database file and truncates the log file to zero bytes (a `TRUNCATE`
  /// checkpoint), for example after a vacuum. SQLite doesn't wait for another connection that is checkpointing (such
  /// as a ``CheckpointPolicy/background(interval:)`` one), so this retries every few milliseconds for up to `timeout`.
  /// - Returns: Whether the log was truncated; false if other connections kept it busy (readers of an old snapshot,
  ///   another process) until `timeout`.
  @discardableResult
  public func checkpointAndTruncateLog(timeout: Duration = .seconds(2)) throws -> Bool {
    do {
      try Self.retryingWhileBusy(for: timeout) {
        // The pragma reports a busy lock in its first column rather than as an error.
        let busy = try writer.writeWithoutTransaction { db in
          try Int.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)") ?? 1
        }
        if busy != 0 { throw DatabaseError(resultCode: .SQLITE_BUSY) }
      }
      return true
    } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY {
      return false
    }
  }

  /// Rebuilds the database file without free pages (`VACUUM`), outside any transaction; the log grows by about the
  /// file's size until the next checkpoint (see ``checkpointAndTruncateLog(timeout:)``).
  public func vacuum() async throws {
    try await writer.vacuum()
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

  /// Releases this open of the file; the pool's connections close when the last open of the file is closed (or
  /// dropped). Closing the same open twice does nothing. For an in-memory database or a wrapped writer, closes it.
  /// Once the pool is closed, further use throws.
  public func close() throws {
    if let lease {
      try lease.close()
    } else if let pool = writer as? DatabasePool {
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

/// One ``SQLiteDatabase/open(at:options:)``'s hold on a registered pool, shared by copies of the value.
final class PoolLease: Sendable {
  let pool: DatabasePool
  let key: String
  private let released = Mutex(false)

  init(pool: DatabasePool, key: String) {
    self.pool = pool
    self.key = key
  }

  /// Releases the hold once; closes the pool if it was the last.
  func close() throws {
    guard markReleased() else { return }
    if PoolRegistry.shared.release(pool, for: key) { try pool.close() }
  }

  private func markReleased() -> Bool {
    released.withLock { released in
      if released { return false }
      released = true
      return true
    }
  }

  deinit {
    // Dropped without `close()`: give the hold back; the pool closes itself when its last reference goes.
    if markReleased() { _ = PoolRegistry.shared.release(pool, for: key) }
  }
}

/// The process-wide map from a database file's canonical path to its one open pool (GRDB: one pool per file).
///
/// Pools are held weakly and counted by open leases: the last ``PoolLease/close()`` closes the pool and removes it,
/// so a later open makes a fresh one.
final class PoolRegistry: Sendable {
  static let shared = PoolRegistry()

  private struct Entry {
    weak var pool: DatabasePool?
    var leases: Int
    /// The pool's background checkpointer (``CheckpointPolicy/background(interval:)``), stopped with the last lease.
    var checkpointer: BackgroundCheckpointer?
  }

  private let entries = Mutex<[String: Entry]>([:])

  /// A new lease on the pool registered for `key`, if one is open.
  func acquire(_ key: String) -> PoolLease? {
    entries.withLock { entries in
      guard let entry = entries[key], let pool = entry.pool, entry.leases > 0 else { return nil }
      entries[key]?.leases += 1
      return PoolLease(pool: pool, key: key)
    }
  }

  /// Registers `pool` (with its checkpointer, if any) for `key` and leases it, unless another pool got there first:
  /// then leases that one.
  func register(_ pool: DatabasePool, checkpointer: BackgroundCheckpointer? = nil, for key: String) -> PoolLease {
    entries.withLock { entries in
      if let entry = entries[key], let existing = entry.pool, entry.leases > 0 {
        entries[key]?.leases += 1
        return PoolLease(pool: existing, key: key)
      }
      entries[key] = Entry(pool: pool, leases: 1, checkpointer: checkpointer)
      return PoolLease(pool: pool, key: key)
    }
  }

  /// Gives back one lease on `pool`; returns whether it was the last, in which case the entry is removed and its
  /// checkpointer stopped.
  func release(_ pool: DatabasePool, for key: String) -> Bool {
    let last: BackgroundCheckpointer?? = entries.withLock { entries in
      guard let entry = entries[key], entry.pool === pool else { return nil }
      if entry.leases <= 1 {
        entries[key] = nil
        return .some(entry.checkpointer)
      }
      entries[key]?.leases -= 1
      return nil
    }
    guard let last else { return false }
    last?.stop()
    return true
  }

  /// How many leases the pool registered for `path` has (0 when none is open), for tests.
  func leaseCount(forPath path: String) -> Int {
    let key = Self.canonicalPath(path)
    return entries.withLock { $0[key]?.leases ?? 0 }
  }

  /// The absolute path with symlinks, `.` and `..` resolved; for a file that doesn't exist yet, its directory's
  /// resolved path plus its name.
  static func canonicalPath(_ path: String) -> String {
    if let resolved = resolve(path) { return resolved }
    let directory = (path as NSString).deletingLastPathComponent
    let name = (path as NSString).lastPathComponent
    if let resolvedDirectory = resolve(directory.isEmpty ? "." : directory) {
      return (resolvedDirectory as NSString).appendingPathComponent(name)
    }
    return URL(fileURLWithPath: path).standardizedFileURL.path
  }

  private static func resolve(_ path: String) -> String? {
    guard let resolved = realpath(path, nil) else { return nil }
    defer { free(resolved) }
    return String(cString: resolved)
  }
}
