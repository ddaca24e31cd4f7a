import Foundation
import GRDB
import PersistenceKit
import Testing

/// ``SQLiteDatabase/isStorageFailure(_:)`` and ``SQLiteDatabase/translatingErrors(_:)``: a full disk or an I/O error
/// is a storage failure and reaches the caller translated, from every form of read and write; any other error is
/// neither.
@Suite struct StorageFailureTests {
  struct Translated: Error { let underlying: any Error }

  @Test func aFullDiskAndAnIOErrorAreStorageFailuresAConstraintIsNot() {
    #expect(SQLiteDatabase.isStorageFailure(DatabaseError(resultCode: .SQLITE_FULL)))
    #expect(SQLiteDatabase.isStorageFailure(DatabaseError(resultCode: .SQLITE_IOERR_WRITE)))
    #expect(!SQLiteDatabase.isStorageFailure(DatabaseError(resultCode: .SQLITE_CONSTRAINT)))
    #expect(!SQLiteDatabase.isStorageFailure(CocoaError(.fileWriteOutOfSpace)))
  }

  @Test func everyReadAndWriteThrowsTheTranslatedError() async throws {
    let database = try SQLiteDatabase.inMemory().translatingErrors { error in
      SQLiteDatabase.isStorageFailure(error) ? Translated(underlying: error) : error
    }
    let full: @Sendable (Database) throws -> Int = { _ in throw DatabaseError(resultCode: .SQLITE_FULL) }
    #expect(throws: Translated.self) { try database.write(full) }
    #expect(throws: Translated.self) { try database.read(full) }
    await #expect(throws: Translated.self) { try await database.write(full) }
    await #expect(throws: Translated.self) { try await database.read(full) }
    let result: Result<Int, any Error> = await withCheckedContinuation { continuation in
      database.write(full) { continuation.resume(returning: $0) }
    }
    #expect(throws: Translated.self) { try result.get() }
    // Any other error is thrown as it is, and a write that succeeds commits.
    await #expect(throws: DatabaseError.self) {
      try await database.write { db in try db.execute(sql: "SELECT * FROM nothing") }
    }
    try await database.write { db in try db.execute(sql: "CREATE TABLE t(x)") }
    #expect(try await database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM t") } == 0)
  }
}
