import Foundation
import PersistenceKit
@_exported import PostgresNIO
import Synchronization

/// A PostgreSQL database: a PostgresNIO connection pool (``client``) for one ``PostgresURL``, with transactions that
/// roll back on throw and can retry conflicts, and multi-statement scripts.
///
/// With several hosts (a primary and its standbys: `postgres://u@h1:5432,h2:5432/db?target_session_attrs=read-write`)
/// the pool connects to the first host, in the URL's order, whose session the URL's
/// ``PostgresURL/targetSessionAttributes`` accepts. Each new connection of the pool is checked once before its first
/// call; a connection whose session is no longer accepted, or that meets SQLSTATE 25006 (a write on a read-only
/// session), is closed and the call throws ``PostgresDatabaseError/unavailable(_:)``; then, as when a call can't
/// reach the server, the hosts are tried again in order and the pool is made afresh for the one that is accepted —
/// so that after a failover the database follows the promoted standby.
///
/// Every call through this type has a deadline (``PostgresTimeouts``): it gets a connection within
/// ``PostgresTimeouts/connectionWait`` and ends within its statement deadline, or throws
/// ``PostgresDatabaseError/timedOut(_:)`` (the connection of a call that overran is closed, never reused). When a
/// call can't reach the server, the database tries it every ``PostgresTimeouts/reconnectInterval`` and, once it
/// answers, makes the pool afresh if the old one is still waiting out postgres-nio's back-off (up to a minute).
///
/// Two ways to run the pool, which must run for as long as the database is used:
/// - ``open(url:maxConnections:timeouts:logger:)`` checks that it can connect (a clear error otherwise) and runs the
///   pool in a task this object owns; ``close()`` ends it. This is what most code wants.
/// - ``init(url:maxConnections:timeouts:logger:)`` then ``run()`` in a task of your own (``run()`` ends on
///   cancellation or ``close()``).
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
  /// The deadlines of every call.
  public let timeouts: PostgresTimeouts
  /// The pool, for everything PostgresNIO offers (prepared statements, `query`, `LISTEN`). Calls made on it
  /// directly have no deadline; it is replaced when the server comes back after an outage, so read it per call.
  public var client: PostgresClient { pools.withLock { $0.current } }
  /// The logger given to the pool and to the queries this type runs.
  public let logger: Logger

  private enum RunState {
    case idle
    case running
    case closed
  }

  /// The current pool and the task running it, the pools being retired, the reconnection watch if one runs.
  private struct Pools {
    var current: PostgresClient
    /// The host the current pool connects to (one of the URL's endpoints).
    var endpoint: PostgresURL.Endpoint
    /// Counts the pools made, so that a connection is known by its pool's number and its id.
    var generation = 0
    var state = RunState.idle
    var currentTask: Task<Void, Never>?
    var retiring: [Task<Void, Never>] = []
    var watch: Task<Void, Never>?
    /// Set while the watch finds the server refusing connections: calls fail at once instead of waiting.
    var serverDown = false
    var closeWaiters: [CheckedContinuation<Void, Never>] = []

    /// Every task, for ``PostgresDatabase/close()``.
    var tasks: [Task<Void, Never>] { [currentTask, watch].compactMap { $0 } + retiring }
  }

  private let pools: Mutex<Pools>
  private let maxConnections: Int
  /// The pooled connections handed out before, by pool generation and connection id, each watched once for its
  /// close (whatever call runs on it then ends as lost); an entry leaves when its connection closes, so the map holds
  /// at most the open connections.
  private let pooledConnections = Mutex<[PooledConnection: PooledConnectionState]>([:])

  private struct PooledConnection: Hashable {
    var generation: Int
    var connection: PostgresConnection.ID
  }

  private struct PooledConnectionState {
    /// Whether its session was checked against the URL's ``PostgresURL/targetSessionAttributes``.
    var checked = false
    /// The call running on it now, if one does.
    var call: PostgresDeadline?
  }

  /// How many pooled connections are watched now (at most the open ones), for tests.
  var watchedConnectionCount: Int { pooledConnections.withLock { $0.count } }

  /// The calls under way, by a number of their own: their pool's generation and their deadline.
  private let calls = Mutex<(next: Int, running: [Int: (generation: Int, deadline: PostgresDeadline)])>((0, [:]))

  /// Creates the pool without running it: run ``run()`` for the database's lifetime, or use
  /// ``open(url:maxConnections:timeouts:logger:)``. Until the pool runs, leasing a connection waits.
  ///
  /// - Parameters:
  ///   - maxConnections: The most connections the pool opens (PostgreSQL's own limit is `max_connections`).
  ///   - timeouts: The deadlines of every call.
  public convenience init(
    url: PostgresURL, maxConnections: Int = 20, timeouts: PostgresTimeouts = PostgresTimeouts(),
    logger: Logger = Logger(label: "persistencekit.postgres")
  ) {
    self.init(url: url, endpoint: url.endpoint, maxConnections: maxConnections, timeouts: timeouts, logger: logger)
  }

  private init(
    url: PostgresURL, endpoint: PostgresURL.Endpoint, maxConnections: Int, timeouts: PostgresTimeouts, logger: Logger
  ) {
    self.url = url
    self.timeouts = timeouts
    self.logger = logger
    self.maxConnections = max(1, maxConnections)
    self.pools = Mutex(
      Pools(
        current: Self.makeClient(url: url, endpoint: endpoint, maxConnections: maxConnections, logger: logger),
        endpoint: endpoint))
  }

  private static func makeClient(
    url: PostgresURL, endpoint: PostgresURL.Endpoint, maxConnections: Int, logger: Logger
  ) -> PostgresClient {
    var configuration = url.clientConfiguration(for: endpoint)
    configuration.options.maximumConnections = max(1, maxConnections)
    return PostgresClient(configuration: configuration, backgroundLogger: logger)
  }

  /// Connects once to check the server, the credentials and the database (with several hosts: to find the first
  /// whose session the URL's ``PostgresURL/targetSessionAttributes`` accepts, which the pool then uses), then runs
  /// the pool in a task this object owns. Call ``close()`` when done.
  ///
  /// - Throws: ``PostgresDatabaseError/cannotConnect(url:reason:)`` saying why (refused, unknown database, no
  ///   writable host, …).
  public static func open(
    url: PostgresURL, maxConnections: Int = 20, timeouts: PostgresTimeouts = PostgresTimeouts(),
    logger: Logger = Logger(label: "persistencekit.postgres")
  ) async throws -> PostgresDatabase {
    let (connection, endpoint) = try await connectToTarget(url: url, logger: logger)
    try? await connection.close()
    let database = PostgresDatabase(
      url: url, endpoint: endpoint, maxConnections: maxConnections, timeouts: timeouts, logger: logger)
    database.startIfIdle(lookingForTarget: false)
    return database
  }

  /// Runs the pool until the calling task is cancelled or ``close()``. Calling it on a database that already runs
  /// waits for ``close()``.
  public func run() async {
    startIfIdle()
    await withTaskCancellationHandler {
      await withCheckedContinuation { waiter in
        let closed = pools.withLock { pools in
          if case .closed = pools.state { return true }
          pools.closeWaiters.append(waiter)
          return false
        }
        if closed { waiter.resume() }
      }
    } onCancel: {
      Task { await self.close() }
    }
  }

  /// Runs the pool unless it runs or ran; with `lookingForTarget`, then looks for the host the URL's target
  /// accepts when the URL has several (the pool starts on the first).
  private func startIfIdle(lookingForTarget: Bool = true) {
    let started = pools.withLock { pools in
      guard case .idle = pools.state else { return false }
      pools.state = .running
      pools.currentTask = Self.startRunning(pools.current)
      return true
    }
    // The pool starts on the first host; the watch moves it to the one the URL's target accepts if that is another.
    if started && lookingForTarget && url.endpoints.count > 1 && url.targetSessionAttributes != .any {
      watchForRecovery()
    }
  }

  /// A task running `client`. Started immediately where the platform can, so that the pool knows it runs before
  /// the first lease (PostgresNIO warns about leases before `run()`).
  private static func startRunning(_ client: PostgresClient) -> Task<Void, Never> {
    if #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) {
      return Task.immediate { await client.run() }
    }
    return Task { await client.run() }
  }

  /// Stops the pool and closes its connections; the database can't be used afterwards. Safe to call twice.
  public func close() async {
    let (tasks, waiters) = pools.withLock { pools in
      defer {
        pools.state = .closed
        (pools.currentTask, pools.watch, pools.retiring, pools.closeWaiters) = (nil, nil, [], [])
      }
      return (pools.tasks, pools.closeWaiters)
    }
    for task in tasks { task.cancel() }
    for task in tasks { await task.value }
    for waiter in waiters { waiter.resume() }
  }

  // MARK: Reconnection

  /// Notes that a call could not reach the server, overran its deadline or met a session the URL's target does not
  /// accept: unless a watch runs already, tries the hosts every ``PostgresTimeouts/reconnectInterval`` until one
  /// gives an accepted session, then makes sure the pool serves, on that host.
  private func watchForRecovery() {
    pools.withLock { pools in
      guard case .running = pools.state, pools.watch == nil else { return }
      pools.watch = Task { await self.recover() }
    }
  }

  private func recover() async {
    defer {
      pools.withLock { pools in
        pools.watch = nil
        pools.serverDown = false
      }
    }
    // A try starts every reconnectInterval even while earlier ones still wait for a host (up to connectionWait
    // each): one stalled connection attempt must not hold up the others.
    await withTaskGroup(of: RecoveryStep.self) { group in
      var tries = 1
      group.addTask { await self.tryHosts() }
      group.addTask { await self.tick() }
      while let step = await group.next() {
        switch step {
        case .found(let endpoint):
          let serves = endpoint == pools.withLock({ $0.endpoint }) ? await poolServes() : false
          if !serves { replacePool(endpoint: endpoint) }
          pools.withLock { $0.serverDown = false }
          group.cancelAll()
          return
        case .refused:
          tries -= 1
          pools.withLock { $0.serverDown = true }
        case .tick:
          guard !Task.isCancelled else { return group.cancelAll() }
          if tries < Self.concurrentRecoveryTries {
            tries += 1
            group.addTask { await self.tryHosts() }
          }
          group.addTask { await self.tick() }
        }
      }
    }
  }

  /// At most this many tries of the hosts run at once during a recovery.
  private static let concurrentRecoveryTries = 4

  private enum RecoveryStep: Sendable {
    case found(PostgresURL.Endpoint)
    case refused
    case tick
  }

  /// One try of the URL's hosts: the first that gives an accepted session, if one does.
  private func tryHosts() async -> RecoveryStep {
    guard
      case let (connection, endpoint)? = try? await url.connectToTarget(
        connectTimeout: timeouts.connectionWait, logger: logger)
    else { return .refused }
    try? await connection.close()
    return .found(endpoint)
  }

  private func tick() async -> RecoveryStep {
    try? await Task.sleep(for: timeouts.reconnectInterval)
    return .tick
  }

  /// Whether the current pool runs `SELECT 1` within a moment (it does unless it waits out a back-off).
  private func poolServes() async -> Bool {
    let deadline = PostgresDeadline(wait: .milliseconds(500), limit: timeouts.connectionWait)
    let (client, generation) = pools.withLock { ($0.current, $0.generation) }
    let logger = logger
    let answered = try? await Self.underDeadline(deadline) {
      try await client.withConnection { connection -> Bool in
        guard deadline.leased(connection) else { throw CancellationError() }
        let pooled = PooledConnection(generation: generation, connection: connection.id)
        self.attach(deadline, to: connection, as: pooled)
        defer { self.detach(deadline, from: pooled) }
        _ = try await connection.query("SELECT 1", logger: logger).collect()
        return true
      }
    }
    return answered == true
  }

  /// Puts a fresh pool for `endpoint` in place of the current one. The old pool is closed once the calls still
  /// waiting on it have met their deadlines — or at once when it served another host, which the URL's target no
  /// longer accepts: its calls then fail now instead of waiting out their deadlines.
  private func replacePool(endpoint: PostgresURL.Endpoint) {
    let fresh = Self.makeClient(url: url, endpoint: endpoint, maxConnections: maxConnections, logger: logger)
    let previous: PostgresURL.Endpoint? = pools.withLock { pools in
      guard case .running = pools.state else { return nil }
      let retirement = pools.endpoint == endpoint ? timeouts.connectionWait + timeouts.statement : .zero
      if let old = pools.currentTask {
        pools.retiring.append(
          Task {
            try? await Task.sleep(for: retirement)
            old.cancel()
            await old.value
          })
      }
      pools.current = fresh
      pools.currentTask = Self.startRunning(fresh)
      pools.generation += 1
      defer { pools.endpoint = endpoint }
      return pools.endpoint
    }
    guard let previous else { return }
    if previous != endpoint {
      // The calls still waiting for a connection of the old pool would wait out their deadlines: end them now.
      let generation = pools.withLock { $0.generation }
      let waiting = calls.withLock { $0.running.values.filter { $0.generation < generation }.map(\.deadline) }
      for deadline in waiting { deadline.abandonIfWaiting("the database moved to \(endpoint); try again") }
    }
    if previous == endpoint {
      logger.notice("PostgreSQL answers again: made a fresh connection pool")
    } else {
      let target = url.targetSessionAttributes.rawValue
      logger.notice(
        "PostgreSQL: \(endpoint) gives the session target_session_attrs=\(target) asks for, not \(previous): made a fresh connection pool for it"
      )
    }
  }

  /// Leases a pooled connection for `body`, which must not keep it, within `wait` (else
  /// ``PostgresTimeouts/connectionWait``); `body` must end within `timeout` (else ``PostgresTimeouts/statement``),
  /// or its connection is closed.
  ///
  /// - Throws: `body`'s error; ``PostgresDatabaseError/timedOut(_:)`` when a deadline passed;
  ///   ``PostgresDatabaseError/unavailable(_:)`` when the server can't be reached or ended the session.
  public func withConnection<T: Sendable>(
    wait: Duration? = nil, timeout: Duration? = nil, _ body: @escaping @Sendable (PostgresConnection) async throws -> T
  ) async throws -> T {
    try await withDeadline(
      PostgresDeadline(wait: wait ?? timeouts.connectionWait, limit: timeout ?? timeouts.statement), body)
  }

  /// Leases a pooled connection for `body` within ``PostgresTimeouts/connectionWait``, with no deadline on `body`
  /// itself: for a session that lasts (`LISTEN`), which must end when its connection does.
  public func withLastingConnection<T: Sendable>(
    _ body: @escaping @Sendable (PostgresConnection) async throws -> T
  ) async throws -> T {
    try await withDeadline(PostgresDeadline(wait: timeouts.connectionWait, limit: .seconds(100 * 365 * 86_400)), body)
  }

  private func withDeadline<T: Sendable>(
    _ deadline: PostgresDeadline, _ body: @escaping @Sendable (PostgresConnection) async throws -> T
  ) async throws -> T {
    let (client, generation, serverDown) = pools.withLock { ($0.current, $0.generation, $0.serverDown) }
    guard !serverDown else {
      throw PostgresDatabaseError.unavailable(
        url.endpoints.count == 1 && url.targetSessionAttributes == .any
          ? "the server refused the last connection attempt; retrying every \(timeouts.reconnectInterval)"
          : "no host gave a session with target_session_attrs=\(url.targetSessionAttributes.rawValue) at the last "
            + "attempt; retrying every \(timeouts.reconnectInterval)")
    }
    let call = calls.withLock { calls in
      defer { calls.next += 1 }
      calls.running[calls.next] = (generation, deadline)
      return calls.next
    }
    defer { _ = calls.withLock { $0.running.removeValue(forKey: call) } }
    do {
      return try await Self.underDeadline(deadline) {
        // A connection closed a moment ago (a deadline closed it) may still be handed out before the pool notices:
        // nothing ran on it, so another is taken after a pause that lets the pool's event loop see the close (on a
        // loaded machine that took longer than three immediate attempts); a pool that keeps doing so for about a
        // second is unavailable.
        var attempt = 0
        while true {
          attempt += 1
          do {
            return try await self.run(body, on: client, generation: generation, deadline: deadline)
          } catch is ClosedBeforeUse {
            guard attempt < Self.closedConnectionAttempts else {
              throw PostgresDatabaseError.unavailable("the pool handed out only closed connections")
            }
            try await Task.sleep(for: .milliseconds(min(attempt * 10, 100)))
          }
        }
      }
    } catch {
      guard Self.isUnavailable(error) else { throw error }
      watchForRecovery()
      if error is PostgresDatabaseError { throw error }
      throw PostgresDatabaseError.unavailable(PostgresDatabaseError.describe(error))
    }
  }

  /// A pooled connection that was closed when the pool handed it out.
  private struct ClosedBeforeUse: Error {}

  /// How many closed connections in a row a call takes from the pool, pausing 10, 20, … 100 ms between them (about
  /// 1.4 s in all), before it ends as unavailable.
  private static let closedConnectionAttempts = 20

  /// Runs `body` on a connection of `client` (the pool of `generation`) under `deadline`.
  private func run<T: Sendable>(
    _ body: @escaping @Sendable (PostgresConnection) async throws -> T, on client: PostgresClient, generation: Int,
    deadline: PostgresDeadline
  ) async throws -> T {
    try await client.withConnection { connection in
      if connection.isClosed { throw ClosedBeforeUse() }
      guard deadline.leased(connection) else { throw CancellationError() }
      let pooled = PooledConnection(generation: generation, connection: connection.id)
      self.attach(deadline, to: connection, as: pooled)
      defer { self.detach(deadline, from: pooled) }
      try await self.checkSession(of: connection, as: pooled)
      do {
        return try await body(connection)
      } catch  where Self.sqlState(of: error) == Self.readOnlySQLTransaction {
        // A write on a read-only session: this host is a standby now. Never hand the connection out again.
        try? await connection.close()
        throw error
      }
    }
  }

  /// Records that the call of `deadline` runs on `connection`. The first time the pool hands `connection` out, watches
  /// it, once for its lifetime: when it closes (the server went away or ended the session, or a deadline closed it),
  /// the call running on it then ends as lost (``PostgresDeadline/connectionClosed()``), and, for a connection of
  /// the current pool, the hosts are tried at once, without waiting for a call to fail — a call waiting for a
  /// connection of a pool whose server is gone waits out ``PostgresTimeouts/connectionWait``.
  ///
  /// One watch per connection, never one per call: a pooled connection serves calls for as long as it stays open,
  /// and a watch per call would keep every finished call for that long (the PostgreSQL soak's memory grew by about
  /// 50 MiB a minute that way).
  private func attach(_ deadline: PostgresDeadline, to connection: PostgresConnection, as pooled: PooledConnection) {
    let first = pooledConnections.withLock { connections in
      defer { connections[pooled, default: PooledConnectionState()].call = deadline }
      return connections[pooled] == nil
    }
    guard first else { return }
    connection.closeFuture.whenComplete { _ in
      let call = self.pooledConnections.withLock { $0.removeValue(forKey: pooled)?.call }
      call?.connectionClosed()
      if self.pools.withLock({ $0.generation }) == pooled.generation { self.watchForRecovery() }
    }
  }

  /// What every pooled session runs with unless the URL's `options` say otherwise: `client_connection_check_interval`
  /// of a second, so that a statement whose call passed its deadline (its connection closed) stops within about a
  /// second. PostgreSQL otherwise notices a closed connection only when it sends the result: an abandoned statement
  /// ran on for minutes, and the calls tried again after it piled more of them on the server's cores.
  static let pooledSessionDefaults = ["client_connection_check_interval": "1s"]

  /// Sets those of `defaults` that `url` does not set on `connection`, one by one; a default the server refuses
  /// (one older than PostgreSQL 14, or on Windows, has no client check) is logged and left out, and the connection
  /// serves without it: only the URL's own settings are a condition of serving.
  static func applySessionDefaults(
    _ defaults: [String: String], under url: PostgresURL, on connection: PostgresConnection, logger: Logger
  ) async throws {
    for (name, value) in defaults.sorted(by: { $0.key < $1.key }) where url.settings[name] == nil {
      do {
        _ = try await connection.query("SELECT set_config(\(name), \(value), false)", logger: logger).collect()
      } catch let error as PSQLError where error.serverInfo != nil {
        logger.warning(
          "PostgreSQL refused the session default \(name) = \(value); the session runs without it",
          metadata: ["error": "\(PostgresDatabaseError.describe(error))"])
      }
    }
  }

  /// Records that the call of `deadline` ended on the connection `pooled` (unless the connection closed meanwhile).
  private func detach(_ deadline: PostgresDeadline, from pooled: PooledConnection) {
    pooledConnections.withLock { connections in
      if connections[pooled]?.call === deadline { connections[pooled]?.call = nil }
    }
  }

  /// Checks, the first time the pool hands `connection` out, that its session is one the URL's
  /// ``PostgresURL/targetSessionAttributes`` accepts, and sets the URL's ``PostgresURL/settings`` (then those of
  /// ``pooledSessionDefaults`` the URL does not set); closes it and throws ``PostgresDatabaseError/unavailable(_:)``
  /// when it is not (the host became a standby).
  private func checkSession(of connection: PostgresConnection, as pooled: PooledConnection) async throws {
    guard pooledConnections.withLock({ $0[pooled]?.checked }) == false else { return }
    try await url.applySettings(on: connection, logger: logger)
    try await Self.applySessionDefaults(Self.pooledSessionDefaults, under: url, on: connection, logger: logger)
    if url.targetSessionAttributes != .any {
      let state = try await PostgresSessionState.of(connection, logger: logger)
      guard url.targetSessionAttributes.accepts(state) else {
        try? await connection.close()
        throw PostgresDatabaseError.unavailable(
          "the server gave \(url.targetSessionAttributes.refusal(state)); looking for the host that does")
      }
    }
    pooledConnections.withLock { $0[pooled]?.checked = true }
  }

  /// Runs `body` on a connection of its own, outside the pool, closed afterwards: for session state that must not
  /// leak into the pool (advisory locks, `LISTEN`), or a check before the pool runs. With several hosts, the
  /// connection goes to the first whose session the URL's ``PostgresURL/targetSessionAttributes`` accepts.
  ///
  /// - Throws: ``PostgresDatabaseError/cannotConnect(url:reason:)`` when the connection can't be made.
  public func withDedicatedConnection<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
    let (connection, _) = try await Self.connectToTarget(url: url, logger: logger)
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
  ///   - timeout: How long one attempt may take from `BEGIN` to `COMMIT` (``PostgresTimeouts/statement`` when nil).
  /// - Throws: the errors of ``withConnection(wait:timeout:_:)``; `body`'s error; ``PostgresDatabaseError/transactionAborted`` when `body` returned although a statement
  ///   of the transaction had failed (PostgreSQL then rolls back on `COMMIT`).
  public func withTransaction<T: Sendable>(
    isolation: PostgresIsolationLevel = .readCommitted,
    retries: Int = 0,
    timeout: Duration? = nil,
    _ body: @escaping @Sendable (PostgresConnection) async throws -> T
  ) async throws -> T {
    try await withTransaction(
      isolation: isolation, retries: retries, timeout: timeout,
      endingWith: { connection in PostgresTransactionEnd(try await body(connection)) }
    ).value
  }

  /// Runs `body` in a transaction as ``withTransaction(isolation:retries:timeout:_:)`` does, except that `body` may
  /// end with statements it sent without waiting for their answers (``PostgresTransactionEnd/pending``): `COMMIT`
  /// is queued right behind them, so the connection sends it the moment the last one is answered, with no turn
  /// through this process's tasks in between. That shortens how long the transaction holds what its last statements
  /// lock (a lock that orders commits is held only for those statements and the commit). Returns `body`'s value and
  /// the pending statements' results, in order; a pending statement's error is thrown as `body`'s would be (its
  /// transaction rolled back).
  public func withTransaction<T: Sendable>(
    isolation: PostgresIsolationLevel = .readCommitted,
    retries: Int = 0,
    timeout: Duration? = nil,
    endingWith body: @escaping @Sendable (PostgresConnection) async throws -> PostgresTransactionEnd<T>
  ) async throws -> (value: T, results: [PostgresQueryResult]) {
    var attempt = 0
    while true {
      do {
        return try await withConnection(timeout: timeout) { connection in
          try await Self.transaction(on: connection, isolation: isolation, logger: self.logger, endingWith: body)
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
    try await withConnection { connection in try await connection.execute(script, logger: self.logger) }
  }

  /// The rows of `query`, collected, on a pooled connection (deadlines as for ``withConnection(wait:timeout:_:)``).
  public func query(_ query: PostgresQuery, timeout: Duration? = nil) async throws -> [PostgresRow] {
    try await withConnection(timeout: timeout) { connection in
      try await connection.query(query, logger: self.logger).collect()
    }
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

  /// Whether `error` says the server could not be reached or did not answer in time (a deadline passed, the
  /// connection was refused, lost or closed, the server is shutting down or starting, or has no free connection),
  /// or refused a write because it is a standby now (SQLSTATE 25006): the call may succeed later, on this server or
  /// on the primary that replaces it, unlike a statement the server refused.
  public static func isUnavailable(_ error: any Error) -> Bool {
    switch error {
    case PostgresDatabaseError.timedOut, PostgresDatabaseError.unavailable, PostgresDatabaseError.cannotConnect:
      return true
    case let error as PostgresTransactionError:
      return [error.closureError, error.beginError, error.commitError, error.rollbackError]
        .contains { $0.map(isUnavailable) ?? false }
    case PostgresDatabaseError.statementFailed(_, _, let state?, _):
      return isUnavailable(sqlState: state)
    case let error as PSQLError:
      switch error.code {
      case .server:
        return isUnavailable(sqlState: error.serverInfo?[.sqlState] ?? "")
      case .clientClosedConnection, .serverClosedConnection, .connectionError, .uncleanShutdown, .poolClosed,
        .queryCancelled:
        return true
      default:
        return false
      }
    case is IOError, is ChannelError: return true
    default:
      // The pool's own errors (its circuit breaker: no connection could be made for a minute) and NIO's connect
      // errors, whose modules PostgresNIO does not export.
      let type = String(reflecting: type(of: error))
      return type.hasSuffix(".ConnectionPoolError") || type.hasPrefix("NIOPosix.")
    }
  }

  /// 08: connection exception; 57P01-57P05: shutdown, crash, cannot connect now, idle timeouts; 53: insufficient
  /// resources (53100 a full disk, 53200 out of memory, 53300 too many connections, …); 58030: an I/O error (a
  /// file could not be written); 25006: a write on a read-only session (the server is a standby now). Each passes
  /// when the database's machine recovers, so the caller is told to retry, not that its request was wrong.
  public static func isUnavailable(sqlState state: String) -> Bool {
    state.hasPrefix("08") || state.hasPrefix("57P") || state.hasPrefix("53") || state == "58030"
      || state == readOnlySQLTransaction
  }

  /// A connection to the first of `url`'s hosts whose session its target accepts, and that host.
  private static func connectToTarget(
    url: PostgresURL, logger: Logger
  ) async throws(PostgresDatabaseError) -> (PostgresConnection, PostgresURL.Endpoint) {
    do {
      return try await url.connectToTarget(logger: logger)
    } catch {
      throw PostgresDatabaseError.cannotConnect(url: url.description, reason: error.description)
    }
  }

  /// SQLSTATE 25006, `read_only_sql_transaction`: a write on a read-only session (a hot standby).
  static let readOnlySQLTransaction = "25006"

  static func transaction<T: Sendable>(
    on connection: PostgresConnection,
    isolation: PostgresIsolationLevel,
    logger: Logger,
    _ body: (PostgresConnection) async throws -> T
  ) async throws -> T {
    try await transaction(
      on: connection, isolation: isolation, logger: logger,
      endingWith: { connection in PostgresTransactionEnd(try await body(connection)) }
    ).value
  }

  static func transaction<T: Sendable>(
    on connection: PostgresConnection,
    isolation: PostgresIsolationLevel,
    logger: Logger,
    endingWith body: (PostgresConnection) async throws -> PostgresTransactionEnd<T>
  ) async throws -> (value: T, results: [PostgresQueryResult]) {
    // `BEGIN` is sent, not awaited: the connection runs its queries in the order they came, so the body's first
    // statement follows it without waiting for its answer here (a round trip fewer: on a busy server each is a wait
    // for an event loop and then for a thread). Should `BEGIN` fail (its connection lost, or `SERIALIZABLE` refused
    // by a hot standby), the body's statements ran outside a transaction and the call still fails with its error.
    let begin: EventLoopFuture<PostgresQueryResult> = connection.query(
      PostgresQuery(unsafeSQL: "BEGIN ISOLATION LEVEL \(isolation.rawValue)"), logger: logger)
    let end: PostgresTransactionEnd<T>
    do {
      end = try await body(connection)
    } catch {
      do {
        _ = try await connection.query("ROLLBACK", logger: logger).collect()
      } catch {
        // The connection's state is unknown: close it so that the pool doesn't hand it out again.
        try? await connection.close()
      }
      throw error
    }
    // `COMMIT` is queued before anything is awaited, right behind the statements the body sent last. Should `BEGIN`
    // have failed, there is no transaction for it to commit (PostgreSQL only warns) and the call fails with
    // `BEGIN`'s error, as when the body had awaited every statement.
    let commit: EventLoopFuture<PostgresQueryResult> = connection.query("COMMIT", logger: logger)
    var results: [PostgresQueryResult] = []
    do {
      _ = try await begin.get()
      for statement in end.pending { results.append(try await statement.get()) }
    } catch {
      // A statement the server refused aborted the transaction, so `COMMIT` rolls it back; its answer frees the
      // connection for the pool.
      _ = try? await commit.get()
      throw error
    }
    if try await commit.get().metadata.command == "ROLLBACK" { throw PostgresDatabaseError.transactionAborted }
    return (end.value, results)
  }
}

/// What a transaction's body returns to ``PostgresDatabase/withTransaction(isolation:retries:timeout:endingWith:)``:
/// its value, and the statements it sent last without waiting for their answers, which `COMMIT` follows at once.
public struct PostgresTransactionEnd<Value: Sendable>: Sendable {
  /// The body's result.
  public var value: Value
  /// The last statements, in the order they were sent on the transaction's connection (with
  /// `PostgresConnection.query(_:logger:)`'s future form, which queues a statement as it is called). A future that
  /// fails in this process (a check chained to it) can't stop the `COMMIT` queued behind it: the call then throws
  /// although the transaction committed, so keep such checks for what can't happen.
  public var pending: [EventLoopFuture<PostgresQueryResult>]

  /// `value`, after `pending`.
  public init(_ value: Value, pending: [EventLoopFuture<PostgresQueryResult>] = []) {
    self.value = value
    self.pending = pending
  }
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
  /// A call's deadline passed (``PostgresTimeouts``): it got no connection in time, or did not finish in time (its
  /// connection was closed).
  case timedOut(Timeout)
  /// The server could not be reached, or ended the session (it shut down or restarted); in words.
  case unavailable(String)

  /// Which deadline passed.
  public enum Timeout: Sendable, Hashable {
    /// No pooled connection within this long.
    case connectionWait(Duration)
    /// The call did not end within this long.
    case statement(Duration)
  }

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
    case .timedOut(.connectionWait(let wait)):
      return "No connection to PostgreSQL within \(wait) (the server does not answer, or every connection is busy)."
    case .timedOut(.statement(let limit)):
      return "PostgreSQL did not answer within \(limit); the connection was closed."
    case .unavailable(let reason):
      return "PostgreSQL can't be reached: \(reason)."
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
