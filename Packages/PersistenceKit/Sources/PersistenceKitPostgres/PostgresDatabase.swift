import Foundation
import PersistenceKit
@_exported import PostgresNIO
import Synchronization

/// A PostgreSQL database: a PostgresNIO connection pool (``client``) for one ``PostgresURL``, with transactions that
/// roll back on throw and can retry conflicts, and multi-statement scripts.
///
/// Two ways to run the pool, which must run for as long as the database is used:
/// - ``open(url:maxConnections:logger:)`` checks that it can connect (a clear error otherwise) and runs the pool in a
///   task this object owns; ``close()`` ends it. This is what most code wants.
/// - ``init(url:maxConnections:logger:)`` then ``run()`` in a task or a `ServiceGroup` of your own (``run()`` ends
///   on cancellation, graceful shutdown or ``close()``).
///
/// ```swift
/// let database = try await PostgresDatabase.open(url: PostgresURL("postgres://meridian@127.0.0.1:5432/meridian"))
/// let count = try await database.withTransaction(isolation: .serializable, retries: 3) { connection in
///   try await connection.query("SELECT count(*) FROM note", logger: database.logger).decode(Int.self)
///     .reduce(0) { $0 + $1 }
/// }
/// await database.close()
/// ```
public final class PostgresDatabase: Sendable {
  /// The URL the pool connects to.
  public let url: PostgresURL
  /// The pool, for everything PostgresNIO offers (prepared statements, `query`, `LISTEN`).
  public let client: PostgresClient
  /// The logger given to the pool and to the queries this type runs.
  public let logger: Logger

  private enum RunState {
    case idle
    case running(Task<Void, Never>)
    case closed
  }

  private let state = Mutex(RunState.idle)

  /// Creates the pool without running it: run ``run()`` for the database's lifetime, or use
  /// ``open(url:maxConnections:logger:)``. Until the pool runs, leasing a connection waits.
  ///
  /// - Parameters:
  ///   - maxConnections: The most connections the pool opens (PostgreSQL's own limit is `max_connections`).
  public init(url: PostgresURL, maxConnections: Int = 20, logger: Logger = Logger(label: "persistencekit.postgres")) {
    var configuration = url.clientConfiguration
    configuration.options.maximumConnections = max(1, maxConnections)
    self.url = url
    self.logger = logger
    self.client = PostgresClient(configuration: configuration, backgroundLogger: logger)
  }

  /// Connects once to check the server, the credentials and the database, then runs the pool in a task this object
  /// owns. Call ``close()`` when done.
  ///
  /// - Throws: ``PostgresDatabaseError/cannotConnect(url:reason:)`` saying why (refused, unknown database, …).
  public static func open(
    url: PostgresURL, maxConnections: Int = 20, logger: Logger = Logger(label: "persistencekit.postgres")
  ) async throws -> PostgresDatabase {
    let database = PostgresDatabase(url: url, maxConnections: maxConnections, logger: logger)
    try await database.withDedicatedConnection { _ in }
    database.state.withLock { state in
      if case .idle = state { state = .running(database.startRunning()) }
    }
    return database
  }

  /// Runs the pool until the calling task is cancelled, a `ServiceGroup` shuts down gracefully, or ``close()``.
  /// Calling it on a database that already runs waits for that run to end.
  public func run() async {
    let task: Task<Void, Never>? = state.withLock { state in
      switch state {
      case .idle:
        let task = startRunning()
        state = .running(task)
        return task
      case .running(let task): return task
      case .closed: return nil
      }
    }
    guard let task else { return }
    await withTaskCancellationHandler {
      await task.value
    } onCancel: {
      task.cancel()
    }
  }

  /// A task running the pool. Started immediately where the platform can, so that the pool knows it runs before
  /// the first lease (PostgresNIO warns about leases before `run()`).
  private func startRunning() -> Task<Void, Never> {
    let client = client
    if #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) {
      return Task.immediate { await client.run() }
    }
    return Task { await client.run() }
  }

  /// Stops the pool and closes its connections; the database can't be used afterwards. Safe to call twice.
  public func close() async {
    let task: Task<Void, Never>? = state.withLock { state in
      defer { state = .closed }
      if case .running(let task) = state { return task }
      return nil
    }
    task?.cancel()
    await task?.value
  }

  /// Leases a pooled connection for `body`, which must not keep it.
  public func withConnection<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
    try await client.withConnection { connection in try await body(connection) }
  }

  /// Runs `body` on a connection of its own, outside the pool, closed afterwards: for session state that must not
  /// leak into the pool (advisory locks, `LISTEN`), or a check before the pool runs.
  ///
  /// - Throws: ``PostgresDatabaseError/cannotConnect(url:reason:)`` when the connection can't be made.
  public func withDedicatedConnection<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
    let connection: PostgresConnection
    do {
      connection = try await PostgresConnection.connect(
        configuration: try url.connectionConfiguration(),
        id: Self.dedicatedConnectionIDs.add(1, ordering: .relaxed).newValue,
        logger: logger)
    } catch {
      throw PostgresDatabaseError.cannotConnect(url: url.description, reason: PostgresDatabaseError.describe(error))
    }
    do {
      let result = try await body(connection)
      try? await connection.close()
      return result
    } catch {
      try? await connection.close()
      throw error
    }
  }

  /// Runs `body` in a transaction on one pooled connection: `BEGIN` with `isolation`, `COMMIT` when `body` returns,
  /// `ROLLBACK` when it throws (the error is rethrown as it is).
  ///
  /// - Parameters:
  ///   - retries: How many times to run `body` again, from the start, when PostgreSQL aborts the transaction for a
  ///     serialization failure (SQLSTATE 40001) or a deadlock (40P01) — which `.serializable` and
  ///     `.repeatableRead` transactions must expect. `body` must then only touch the database.
  /// - Throws: `body`'s error; ``PostgresDatabaseError/transactionAborted`` when `body` returned although a statement
  ///   of the transaction had failed (PostgreSQL then rolls back on `COMMIT`).
  public func withTransaction<T: Sendable>(
    isolation: PostgresIsolationLevel = .readCommitted,
    retries: Int = 0,
    _ body: (PostgresConnection) async throws -> T
  ) async throws -> T {
    var attempt = 0
    while true {
      do {
        return try await withConnection { connection in
          try await Self.transaction(on: connection, isolation: isolation, logger: logger, body)
        }
      } catch  where attempt < retries && Self.isRetryable(error) {
        attempt += 1
        // A little random back-off, so that two conflicting transactions don't collide again in step.
        try await Task.sleep(for: .milliseconds(Int.random(in: 1...(5 << min(attempt, 5)))))
      }
    }
  }

  /// Runs one or more SQL statements separated by semicolons (a migration, a schema), in order, on one pooled
  /// connection. Nothing wraps them in a transaction: use ``withTransaction(isolation:retries:_:)`` and
  /// `PostgresConnection.execute(script:logger:)` for that.
  ///
  /// - Throws: ``PostgresDatabaseError/statementFailed(line:statement:sqlState:reason:)`` naming the statement, or
  ///   ``PostgresSQLScriptError`` when the text can't be split.
  public func execute(_ sql: String) async throws {
    let script = try PostgresSQLScript(sql)
    try await withConnection { connection in try await connection.execute(script, logger: logger) }
  }

  /// The rows of `query`, collected, on a pooled connection.
  public func query(_ query: PostgresQuery) async throws -> [PostgresRow] {
    try await client.query(query, logger: logger).collect()
  }

  /// The SQLSTATE of a server error, looking through this module's errors and PostgresNIO's wrappers; `nil` when
  /// `error` didn't come from the server.
  public static func sqlState(of error: any Error) -> String? {
    switch error {
    case let error as PSQLError: return error.serverInfo?[.sqlState]
    case let error as PostgresTransactionError:
      return (error.closureError ?? error.beginError ?? error.commitError).flatMap(sqlState(of:))
    case PostgresDatabaseError.statementFailed(_, _, let state, _): return state
    case MigrationError.migrationFailed(_, let underlying): return sqlState(of: underlying)
    default: return nil
    }
  }

  /// Whether `error` is a serialization failure (40001) or a deadlock (40P01): the transaction may succeed if run
  /// again.
  public static func isRetryable(_ error: any Error) -> Bool {
    let state = sqlState(of: error)
    return state == "40001" || state == "40P01"
  }

  static func transaction<T: Sendable>(
    on connection: PostgresConnection,
    isolation: PostgresIsolationLevel,
    logger: Logger,
    _ body: (PostgresConnection) async throws -> T
  ) async throws -> T {
    _ = try await connection.query(
      PostgresQuery(unsafeSQL: "BEGIN ISOLATION LEVEL \(isolation.rawValue)"), logger: logger
    ).collect()
    let value: T
    do {
      value = try await body(connection)
    } catch {
      do {
        _ = try await connection.query("ROLLBACK", logger: logger).collect()
      } catch {
        // The connection's state is unknown: close it so that the pool doesn't hand it out again.
        try? await connection.close()
      }
      throw error
    }
    let commit: EventLoopFuture<PostgresQueryResult> = connection.query("COMMIT", logger: logger)
    if try await commit.get().metadata.command == "ROLLBACK" { throw PostgresDatabaseError.transactionAborted }
    return value
  }

  private static let dedicatedConnectionIDs = Atomic<Int>(1_000_000)
}

/// A transaction's isolation level.
public enum PostgresIsolationLevel: String, Sendable, CaseIterable {
  /// PostgreSQL's default: each statement sees what was committed before it started.
  case readCommitted = "READ COMMITTED"
  /// One snapshot for the whole transaction; concurrent updates of the same rows fail with 40001.
  case repeatableRead = "REPEATABLE READ"
  /// As if the transactions ran one after another; conflicts fail with 40001.
  case serializable = "SERIALIZABLE"
}

/// What went wrong talking to PostgreSQL, in words (PostgresNIO's own errors print a generic text on purpose).
public enum PostgresDatabaseError: Error, CustomStringConvertible {
  /// No connection could be made to the URL (shown without its password).
  case cannotConnect(url: String, reason: String)
  /// A statement of a script failed; `line` is where it starts in the script.
  case statementFailed(line: Int, statement: String, sqlState: String?, reason: String)
  /// `COMMIT` rolled back because a statement of the transaction had failed and its error was caught.
  case transactionAborted

  /// A message that says what went wrong and what to do.
  public var description: String {
    switch self {
    case .cannotConnect(let url, let reason):
      return "Can't connect to PostgreSQL at \(url): \(reason). Check that the server runs and the URL is right "
        + "(for a development cluster: Tools/postgres start)."
    case .statementFailed(let line, let statement, _, let reason):
      let excerpt = statement.count > 200 ? statement.prefix(200) + "…" : Substring(statement)
      return "The statement on line \(line) failed: \(reason)\n  in: \(excerpt)"
    case .transactionAborted:
      return "The transaction was rolled back at COMMIT: one of its statements had failed and its error was caught. "
        + "Let the error propagate out of the transaction, or use a savepoint."
    }
  }

  /// `error` in words: the server's severity, SQLSTATE, message, detail and hint, or the connection failure.
  public static func describe(_ error: any Error) -> String {
    if let error = error as? PostgresDatabaseError { return error.description }
    guard let error = error as? PSQLError else { return String(describing: error) }
    if let info = error.serverInfo {
      var text = "\(info[.severity] ?? "ERROR") \(info[.sqlState] ?? "?"): \(info[.message] ?? "(no message)")"
      if let detail = info[.detail] { text += " (detail: \(detail))" }
      if let hint = info[.hint] { text += " (hint: \(hint))" }
      return text
    }
    if let underlying = error.underlying { return "\(error.code): \(underlying)" }
    return "\(error.code)"
  }
}

extension PostgresConnection {
  /// Runs the statements of `script` in order; stops at the first that fails.
  ///
  /// - Throws: ``PostgresDatabaseError/statementFailed(line:statement:sqlState:reason:)``.
  public func execute(_ script: PostgresSQLScript, logger: Logger) async throws {
    for statement in script.statements {
      do {
        _ = try await query(PostgresQuery(unsafeSQL: statement.sql), logger: logger).collect()
      } catch {
        throw PostgresDatabaseError.statementFailed(
          line: statement.line, statement: statement.sql, sqlState: PostgresDatabase.sqlState(of: error),
          reason: PostgresDatabaseError.describe(error))
      }
    }
  }

  /// Splits `sql` into statements (``PostgresSQLScript``) and runs them in order.
  public func execute(script sql: String, logger: Logger) async throws {
    try await execute(try PostgresSQLScript(sql), logger: logger)
  }
}
