import Foundation
import Logging
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
