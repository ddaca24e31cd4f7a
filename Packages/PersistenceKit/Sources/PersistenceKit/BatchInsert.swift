import Foundation
import GRDB
import GRDBSQLite

@usableFromInline let transientDestructor = unsafeBitCast(
  OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)

/// The fast path for bulk writes: one cached prepared statement, values bound by 1-based index, no per-row
/// allocation.
///
/// Obtain one from ``GRDB/Database/batchInsert(into:columns:onConflict:_:)`` inside a write transaction, bind every
/// parameter of a row, then call ``insert()``. Parameters keep their value from the previous row until bound again.
/// Don't let the value escape the closure it was given to.
public struct BatchInserter {
  @usableFromInline let statement: OpaquePointer
  @usableFromInline let connection: OpaquePointer?
  @usableFromInline var count = 0
  /// The number of rows inserted so far.
  public var insertedCount: Int { count }

  init(statement: OpaquePointer, connection: OpaquePointer?) {
    self.statement = statement
    self.connection = connection
  }

  /// Binds an integer to the parameter at `index` (1-based).
  @inlinable public func bind(_ value: Int64, at index: Int32) {
    sqlite3_bind_int64(statement, index, value)
  }

  /// Binds an integer to the parameter at `index` (1-based).
  @inlinable public func bind(_ value: Int, at index: Int32) {
    sqlite3_bind_int64(statement, index, Int64(value))
  }

  /// Binds a floating-point value to the parameter at `index` (1-based).
  @inlinable public func bind(_ value: Double, at index: Int32) {
    sqlite3_bind_double(statement, index, value)
  }

  /// Binds a boolean (as 0 or 1) to the parameter at `index` (1-based).
  @inlinable public func bind(_ value: Bool, at index: Int32) {
    sqlite3_bind_int64(statement, index, value ? 1 : 0)
  }

  /// Binds text to the parameter at `index` (1-based); SQLite copies the bytes.
  @inlinable public func bind(_ value: String, at index: Int32) {
    let bound = value.utf8.withContiguousStorageIfAvailable { buffer in
      sqlite3_bind_text64(
        statement, index, buffer.baseAddress, UInt64(buffer.count), transientDestructor, UInt8(SQLITE_UTF8))
    }
    if bound == nil {
      var copy = value
      copy.withUTF8 { buffer in
        _ = sqlite3_bind_text64(
          statement, index, buffer.baseAddress, UInt64(buffer.count), transientDestructor, UInt8(SQLITE_UTF8))
      }
    }
  }

  /// Binds a blob to the parameter at `index` (1-based); SQLite copies the bytes.
  @inlinable public func bind(blob value: some ContiguousBytes, at index: Int32) {
    value.withUnsafeBytes { buffer in
      _ = sqlite3_bind_blob64(statement, index, buffer.baseAddress, UInt64(buffer.count), transientDestructor)
    }
  }

  /// Binds `NULL` to the parameter at `index` (1-based).
  @inlinable public func bindNull(at index: Int32) {
    sqlite3_bind_null(statement, index)
  }

  /// Binds an optional integer, `NULL` when absent.
  @inlinable public func bind(_ value: Int64?, at index: Int32) {
    if let value { bind(value, at: index) } else { bindNull(at: index) }
  }

  /// Binds an optional floating-point value, `NULL` when absent.
  @inlinable public func bind(_ value: Double?, at index: Int32) {
    if let value { bind(value, at: index) } else { bindNull(at: index) }
  }

  /// Binds optional text, `NULL` when absent.
  @inlinable public func bind(_ value: String?, at index: Int32) {
    if let value { bind(value, at: index) } else { bindNull(at: index) }
  }

  /// Inserts one row with the values bound so far.
  ///
  /// - Throws: A GRDB `DatabaseError` (a constraint violation, for example). The transaction is still open; the
  ///   caller decides whether to continue or to rethrow and roll back.
  @inlinable public mutating func insert() throws {
    let code = sqlite3_step(statement)
    sqlite3_reset(statement)
    guard code == SQLITE_DONE else { throw insertError(code) }
    count += 1
  }

  @usableFromInline func insertError(_ code: Int32) -> DatabaseError {
    let message = connection.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) }
    return DatabaseError(
      resultCode: ResultCode(rawValue: code), message: message, sql: String(cString: sqlite3_sql(statement)))
  }
}

/// What a batch insert does when a row violates a uniqueness constraint.
public enum InsertConflictPolicy: String, Sendable {
  /// Fail with an error (SQLite's default).
  case abort = "ABORT"
  /// Skip the row silently; useful to merge imports without duplicating rows.
  case ignore = "IGNORE"
  /// Replace the existing row.
  case replace = "REPLACE"
}

/// The `INSERT` statement of a batch insert, spelled once.
public struct BatchInsertSQL: Sendable, Hashable {
  /// `INSERT OR <policy> INTO "table" ("a", "b") VALUES (?, ?)`.
  public let text: String

  /// The statement inserting `columns` of `table`.
  public init(into table: String, columns: [String], onConflict policy: InsertConflictPolicy = .abort) {
    let columnList = columns.map(\.quotedDatabaseIdentifier).joined(separator: ", ")
    let placeholders = Array(repeating: "?", count: columns.count).joined(separator: ", ")
    text =
      "INSERT OR \(policy.rawValue) INTO \(table.quotedDatabaseIdentifier) (\(columnList)) VALUES (\(placeholders))"
  }
}

extension Database {
  /// Inserts many rows into `table` through one cached prepared statement.
  ///
  /// Call it inside a write transaction (``SQLiteDatabase/write(_:)-(Database)->T``) so the rows commit together:
  ///
  /// ```swift
  /// try database.write { db in
  ///   try db.batchInsert(into: "fix", columns: ["device_id", "latitude", "longitude"]) { rows in
  ///     for fix in fixes {
  ///       rows.bind(fix.deviceID, at: 1)
  ///       rows.bind(fix.latitude, at: 2)
  ///       rows.bind(fix.longitude, at: 3)
  ///       try rows.insert()
  ///     }
  ///   }
  /// }
  /// ```
  ///
  /// - Returns: The number of rows inserted (skipped rows under ``InsertConflictPolicy/ignore`` count too).
  @discardableResult
  public func batchInsert(
    into table: String,
    columns: [String],
    onConflict policy: InsertConflictPolicy = .abort,
    _ body: (inout BatchInserter) throws -> Void
  ) throws -> Int {
    try batchInsert(BatchInsertSQL(into: table, columns: columns, onConflict: policy), body)
  }

  /// Inserts many rows with a statement written once (for inserts on a hot path, where spelling the SQL on every
  /// call would cost more than small inserts themselves); otherwise the same as
  /// ``batchInsert(into:columns:onConflict:_:)``.
  @discardableResult
  public func batchInsert(_ sql: BatchInsertSQL, _ body: (inout BatchInserter) throws -> Void) throws -> Int {
    let statement = try cachedStatement(sql: sql.text)
    var inserter = BatchInserter(statement: statement.sqliteStatement, connection: sqliteConnection)
    defer { sqlite3_clear_bindings(statement.sqliteStatement) }
    try body(&inserter)
    return inserter.insertedCount
  }
}
