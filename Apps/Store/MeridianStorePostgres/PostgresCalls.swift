import Logging
import MeridianStore
import PersistenceKitPostgres

/// The store's calls to its database: each within the database's deadlines (``PostgresTimeouts``: a connection
/// within the wait, the call within its statement deadline, else its connection is closed), and a database that
/// can't be reached or did not answer in time thrown as ``StoreUnavailableError`` (the server's 503), never as a
/// driver's error.
public struct PostgresCalls: Sendable {
  /// The database.
  public let database: PersistenceKitPostgres.PostgresDatabase

  /// Calls to `database`.
  public init(database: PersistenceKitPostgres.PostgresDatabase) {
    self.database = database
  }

  /// The rows of `query`, collected on a pooled connection; `within` bounds both the wait for a connection and the
  /// query (else the database's deadlines apply).
  public func query(_ query: PostgresQuery, logger: Logger? = nil, within: Duration? = nil) async throws -> PostgresRows
  {
    let logger = logger ?? database.logger
    return try await withConnection(wait: within, timeout: within) { connection in
      PostgresRows(rows: try await connection.query(query, logger: logger).collect())
    }
  }

  /// Runs `body` on a pooled connection, which it must not keep, got within `wait`; `body` ends within `timeout`
  /// (the database's deadlines when nil).
  public func withConnection<T: Sendable>(
    wait: Duration? = nil, timeout: Duration? = nil,
    _ body: @escaping @Sendable (PostgresConnection) async throws -> T
  ) async throws -> T {
    try await Self.translating { try await database.withConnection(wait: wait, timeout: timeout, body) }
  }

  /// Runs `body` on a pooled connection with no deadline of its own (a `LISTEN` session, which ends when its
  /// connection does).
  public func withLastingConnection<T: Sendable>(
    _ body: @escaping @Sendable (PostgresConnection) async throws -> T
  ) async throws -> T {
    try await Self.translating { try await database.withLastingConnection(body) }
  }

  /// Runs `body` in a transaction (``PersistenceKitPostgres/PostgresDatabase/withTransaction(isolation:retries:timeout:_:)``).
  public func withTransaction<T: Sendable>(
    isolation: PostgresIsolationLevel = .readCommitted, retries: Int = 0, timeout: Duration? = nil,
    _ body: @escaping @Sendable (PostgresConnection) async throws -> T
  ) async throws -> T {
    try await Self.translating {
      try await database.withTransaction(isolation: isolation, retries: retries, timeout: timeout, body)
    }
  }

  /// Runs `body` in a transaction whose last statements `COMMIT` follows at once
  /// (``PersistenceKitPostgres/PostgresDatabase/withTransaction(isolation:retries:timeout:endingWith:)``).
  public func withTransaction<T: Sendable>(
    isolation: PostgresIsolationLevel = .readCommitted, retries: Int = 0, timeout: Duration? = nil,
    endingWith body: @escaping @Sendable (PostgresConnection) async throws -> PostgresTransactionEnd<T>
  ) async throws -> (value: T, results: [PostgresQueryResult]) {
    try await Self.translating {
      try await database.withTransaction(isolation: isolation, retries: retries, timeout: timeout, endingWith: body)
    }
  }

  /// `body`'s result; its failure to reach the database (a deadline passed, the connection refused or lost) as
  /// ``StoreUnavailableError``, any other error as it is.
  static func translating<T: Sendable>(_ body: () async throws -> T) async throws -> T {
    do {
      return try await body()
    } catch {
      throw unavailable(error) ?? error
    }
  }

  /// `error` as ``StoreUnavailableError`` when it says the database could not be reached in time, else nil.
  static func unavailable(_ error: any Error) -> StoreUnavailableError? {
    if let error = error as? StoreUnavailableError { return error }
    guard PersistenceKitPostgres.PostgresDatabase.isUnavailable(error) else { return nil }
    return StoreUnavailableError(reason: PostgresDatabaseError.describe(error))
  }
}

/// A query's rows, read whole within the call's deadline: iterate them, `decode` them as PostgresNIO's row sequence
/// offers, or `collect()` them.
public struct PostgresRows: AsyncSequence, Sendable {
  /// The rows.
  public let rows: [PostgresRow]

  /// The rows as an array.
  public func collect() -> [PostgresRow] { rows }

  /// An iterator over the rows.
  public struct AsyncIterator: AsyncIteratorProtocol {
    var base: IndexingIterator<[PostgresRow]>
    /// The next row.
    public mutating func next() async -> PostgresRow? { base.next() }
  }

  public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: rows.makeIterator()) }
}
