import Foundation
import Logging
import MeridianStore
import PersistenceKitPostgres
import PostgresNIO

extension PostgresStore {
  /// The SQLSTATE of a server error (`55P03` lock not available, `40P01` deadlock, `23503` foreign key, …), or nil.
  static func sqlState(_ error: any Error) -> String? {
    PersistenceKitPostgres.PostgresDatabase.sqlState(of: error)
  }

  /// The first column of every row of `query`, decoded as `T`.
  static func column<T: PostgresDecodable & Sendable>(
    _ type: T.Type, _ query: PostgresQuery, on connection: PostgresConnection, logger: Logger
  ) async throws -> [T] {
    var values: [T] = []
    for try await value in try await connection.query(query, logger: logger).decode(T.self) { values.append(value) }
    return values
  }

  /// The count (`bigint`) that `query` answers in its first row, 0 when it has none.
  static func count(_ query: PostgresQuery, on connection: PostgresConnection, logger: Logger) async throws -> Int {
    try await column(Int.self, query, on: connection, logger: logger).first ?? 0
  }
}

/// One PostgreSQL transaction as a ``StoreTransaction``: the primitives are this engine's SQL (in each area's file),
/// run on the connection that holds the transaction. The rules that call them live once, in ``MeridianStore``.
struct PostgresTransaction: StoreTransaction {
  /// The transaction's connection.
  let connection: PostgresConnection
  let logger: Logger

  /// The rows of `query`, in this transaction.
  func rows(_ query: PostgresQuery) async throws -> [PostgresRow] {
    try await connection.query(query, logger: logger).collect()
  }
}

extension PostgresStore {
  /// Read committed; run again from the start after a serialization failure or a deadlock (``transaction(timeout:_:)``).
  public func write<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) async throws -> T) async throws
    -> T
  {
    try await transaction { connection in
      try await body(PostgresTransaction(connection: connection, logger: self.logger))
    }
  }

  /// Repeatable read, read only: one snapshot.
  public func read<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) async throws -> T) async throws
    -> T
  {
    try await transaction { connection in
      _ = try await connection.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY", logger: self.logger)
      return try await body(PostgresTransaction(connection: connection, logger: self.logger))
    }
  }
}

extension PostgresStore {
  /// The rows of `statement`, prepared on `connection` the first time it runs there. PostgresNIO keeps a
  /// preparation's failure for the connection's life (every later run of the statement on it fails alike), so when
  /// the server refused the statement the connection is closed, and the pool replaces it — unless the error is one
  /// only a run raises, on the rows (``isAnErrorOfTheRows(_:)``: a constraint, a missing partition), which
  /// leaves the connection as it is, so that its transaction rolls back and can be tried again.
  static func runPrepared<Statement: PostgresPreparedStatement>(
    _ statement: Statement, on connection: PostgresConnection, logger: Logger
  ) async throws -> [Statement.Row] {
    do {
      var rows: [Statement.Row] = []
      for try await row in try await connection.execute(statement, logger: logger) { rows.append(row) }
      return rows
    } catch let error as PSQLError where error.code == .server {
      if !isAnErrorOfTheRows(error) { try? await connection.close() }
      throw error
    }
  }

  /// Whether a server error is one that only running a prepared statement raises, never preparing it: a data
  /// exception (SQLSTATE class 22), an integrity constraint (23, a row without partition included), a serialization
  /// failure (40001) or a trigger's own exception (P0). Not a deadlock (40P01), a lock not available (55P03) or a
  /// cancelled statement (57014): preparing waits for the locks of the tables the statement names, and can end so.
  static func isAnErrorOfTheRows(_ error: PSQLError) -> Bool {
    guard let state = error.serverInfo?[.sqlState] else { return false }
    return ["22", "23", "P0"].contains(String(state.prefix(2))) || state == "40001"
  }
}
