import GRDB
import MeridianStore
import PersistenceKit

/// One SQLite transaction as a ``StoreTransaction``: the primitives are this engine's SQL (in each area's file), run
/// on the GRDB connection that holds the transaction. The rules that call them live once, in ``MeridianStore``.
struct SQLiteTransaction: StoreTransaction, @unchecked Sendable {
  /// The connection; used only by the transaction's body, which runs on the connection's own thread
  /// (`SQLiteDatabase.awaitingWrite(_:)`).
  let db: Database
}

extension SQLiteStore {
  public func write<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) async throws -> T) async throws
    -> T
  {
    try await transaction(body)
  }

  public func read<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) async throws -> T) async throws
    -> T
  {
    try await database.awaitingRead { db in try await body(SQLiteTransaction(db: db)) }
  }

  /// Runs `body` in one write transaction, with this engine's transaction (its connection, for the engine's own
  /// statements beside the shared rules).
  func transaction<T: Sendable>(_ body: @escaping @Sendable (SQLiteTransaction) async throws -> T) async throws -> T {
    try await database.awaitingWrite { db in try await body(SQLiteTransaction(db: db)) }
  }
}

extension SQLiteTransaction {
  // MARK: One-time codes

  /// No lock is needed: SQLite runs one write transaction at a time.
  func oneTimeCode(for phone: String) throws -> StoredOneTimeCode? {
    try Row.fetchOne(
      db, sql: "SELECT code_hash, expires_at, attempts_left FROM otp_codes WHERE phone = ?", arguments: [phone]
    ).map { StoredOneTimeCode(codeHash: $0[0], expiresAt: $0[1], attemptsLeft: $0[2]) }
  }

  func deleteOneTimeCode(for phone: String) throws {
    try db.execute(sql: "DELETE FROM otp_codes WHERE phone = ?", arguments: [phone])
  }

  func spendOneTimeCodeAttempt(for phone: String) throws {
    try db.execute(sql: "UPDATE otp_codes SET attempts_left = attempts_left - 1 WHERE phone = ?", arguments: [phone])
  }
}
