import Foundation
import PersistenceKitPostgres
import Synchronization
import Testing

/// Transactions, scripts and connection errors on a real PostgreSQL database.
@Suite struct PostgresDatabaseTests {
  struct Oops: Error, Equatable {}

  /// The states that pass when the database's machine recovers (a full disk, memory, connections, I/O, a standby)
  /// are unavailability, which a server answers with 503 and `Retry-After`; a request's own faults are not.
  @Test func statesThatPassWithTheMachineAreUnavailabilityAndARequestsFaultsAreNot() {
    for state in ["53100", "53200", "53300", "58030", "08006", "57P01", "25006"] {
      #expect(PostgresDatabase.isUnavailable(sqlState: state), "\(state)")
    }
    for state in ["23505", "42P01", "22P02", "40001", "58P01"] {
      #expect(!PostgresDatabase.isUnavailable(sqlState: state), "\(state)")
    }
  }

  @Test func commitsWhatTheBodyWrote() async throws {
    try await TestCluster.withFreshDatabase { database in
      try await database.execute("CREATE TABLE t(x int); INSERT INTO t VALUES (1)")
      let inserted = try await database.withTransaction(isolation: .serializable) { connection in
        _ = try await connection.query("INSERT INTO t VALUES (2)", logger: database.logger).collect()
        return 2
      }
      #expect(inserted == 2)
      #expect(try await database.integer("SELECT sum(x) FROM t") == 3)
    }
  }

  @Test func rollsBackWhenTheBodyThrowsAndRethrowsItsError() async throws {
    try await TestCluster.withFreshDatabase { database in
      try await database.execute("CREATE TABLE t(x int)")
      await #expect(throws: Oops()) {
        try await database.withTransaction { connection in
          _ = try await connection.query("INSERT INTO t VALUES (1)", logger: database.logger).collect()
          throw Oops()
        }
      }
      #expect(try await database.integer("SELECT count(*) FROM t") == 0)
      // The connection went back to the pool outside any transaction: the next one works as usual.
      try await database.withTransaction { connection in
        _ = try await connection.query("INSERT INTO t VALUES (5)", logger: database.logger).collect()
      }
      #expect(try await database.integer("SELECT sum(x) FROM t") == 5)
    }
  }

  @Test func aSwallowedStatementFailureAbortsTheCommit() async throws {
    try await TestCluster.withFreshDatabase { database in
      try await database.execute("CREATE TABLE t(x int PRIMARY KEY)")
      await #expect {
        try await database.withTransaction { connection in
          _ = try await connection.query("INSERT INTO t VALUES (1)", logger: database.logger).collect()
          _ = try? await connection.query("INSERT INTO t VALUES (1)", logger: database.logger).collect()
        }
      } throws: { error in
        if case PostgresDatabaseError.transactionAborted = error { return true }
        return false
      }
      #expect(try await database.integer("SELECT count(*) FROM t") == 0)
    }
  }

  /// Statements a body sends last without waiting (`PostgresTransactionEnd`) run before `COMMIT`, in order, and
  /// their results come back; the lock one of them takes is held to the commit, as any transaction's.
  @Test func theStatementsSentLastCommitWithTheTransactionAndAnswerInOrder() async throws {
    try await TestCluster.withFreshDatabase { database in
      try await database.execute("CREATE TABLE t(x int)")
      let (value, results) = try await database.withTransaction(endingWith: { connection in
        _ = try await connection.query("INSERT INTO t VALUES (1)", logger: database.logger).collect()
        return PostgresTransactionEnd(
          "body",
          pending: [
            connection.query("INSERT INTO t VALUES (2) RETURNING x", logger: database.logger),
            connection.query(
              "SELECT count(*)::int FROM t, (SELECT pg_advisory_xact_lock(77)) AS locked", logger: database.logger),
          ])
      })
      #expect(value == "body")
      #expect(results.count == 2)
      #expect(try results[0].rows.first?.decode(Int.self) == 2)
      #expect(try results[1].rows.first?.decode(Int.self) == 2)
      #expect(try await database.integer("SELECT sum(x) FROM t") == 3)
      // The transaction-scoped lock ended with the commit: another session takes it at once.
      #expect(try await database.integer("SELECT pg_try_advisory_xact_lock(77)::int") == 1)
    }
  }

  /// A statement sent last that fails rolls the whole transaction back, and its error is thrown.
  @Test func aStatementSentLastThatFailsRollsEverythingBack() async throws {
    try await TestCluster.withFreshDatabase { database in
      try await database.execute("CREATE TABLE t(x int PRIMARY KEY)")
      await #expect {
        try await database.withTransaction(endingWith: { connection in
          _ = try await connection.query("INSERT INTO t VALUES (1)", logger: database.logger).collect()
          return PostgresTransactionEnd(
            0,
            pending: [
              connection.query("INSERT INTO t VALUES (2)", logger: database.logger),
              connection.query("INSERT INTO t VALUES (1)", logger: database.logger),
            ])
        })
      } throws: { error in
        PostgresDatabase.sqlState(of: error) == "23505"
      }
      #expect(try await database.integer("SELECT count(*) FROM t") == 0)
      // The connection went back to the pool outside any transaction.
      try await database.execute("INSERT INTO t VALUES (3)")
      #expect(try await database.integer("SELECT count(*) FROM t") == 1)
    }
  }

  @Test func retriesSerializationFailuresWhenAsked() async throws {
    try await TestCluster.withFreshDatabase { database in
      try await database.execute("CREATE TABLE t(x int)")
      // The server itself raises SQLSTATE 40001 on the first attempt, as a conflicting serializable commit would.
      let conflictOnFirstAttempt = """
        DO $$ BEGIN RAISE EXCEPTION 'could not serialize' USING ERRCODE = 'serialization_failure'; END $$
        """
      let attempts = Atomic<Int>(0)
      try await database.withTransaction(isolation: .serializable, retries: 2) { connection in
        if attempts.add(1, ordering: .relaxed).newValue == 1 {
          try await connection.execute(script: conflictOnFirstAttempt, logger: database.logger)
        }
        _ = try await connection.query("INSERT INTO t VALUES (1)", logger: database.logger).collect()
      }
      #expect(attempts.load(ordering: .relaxed) == 2)
      #expect(try await database.integer("SELECT count(*) FROM t") == 1)

      // Without retries the error comes out, recognisably retryable.
      await #expect {
        try await database.withTransaction(isolation: .serializable) { connection in
          try await connection.execute(script: conflictOnFirstAttempt, logger: database.logger)
        }
      } throws: { error in
        PostgresDatabase.isRetryable(error) && PostgresDatabase.sqlState(of: error) == "40001"
      }
    }
  }

  @Test func aRealSerializationConflictIsRetried() async throws {
    try await TestCluster.withFreshDatabase { database in
      try await database.execute("CREATE TABLE counter(n int); INSERT INTO counter VALUES (0)")
      // Ten concurrent serializable read-modify-write transactions: conflicts abort some, retries finish them all.
      try await withThrowingTaskGroup(of: Void.self) { group in
        for _ in 0..<10 {
          group.addTask {
            try await database.withTransaction(isolation: .serializable, retries: 50) { connection in
              let n = try await connection.query("SELECT n FROM counter", logger: database.logger)
                .decode(Int.self).reduce(0, +)
              try await Task.sleep(for: .milliseconds(5))
              _ = try await connection.query("UPDATE counter SET n = \(n + 1)", logger: database.logger).collect()
            }
          }
        }
        try await group.waitForAll()
      }
      #expect(try await database.integer("SELECT n FROM counter") == 10)
    }
  }

  @Test func scriptsNameTheFailingStatement() async throws {
    try await TestCluster.withFreshDatabase { database in
      await #expect {
        try await database.execute("CREATE TABLE a(x int);\nSELECT 1;\nINSERT INTO nowhere VALUES (1);")
      } throws: { error in
        guard case PostgresDatabaseError.statementFailed(let line, let statement, let state, let reason) = error
        else { return false }
        return line == 3 && statement == "INSERT INTO nowhere VALUES (1)" && state == "42P01"
          && reason.contains("relation \"nowhere\" does not exist")
      }
      // Statements before the failing one ran (no transaction around a plain script).
      let tables = try await database.integer("SELECT count(*) FROM pg_tables WHERE tablename = 'a'")
      #expect(tables == 1)
    }
  }

  @Test func postGISIsAvailable() async throws {
    try await TestCluster.withFreshDatabase { database in
      let meters = try await database.query(
        "SELECT ST_Distance('SRID=4326;POINT(2.3522 48.8566)'::geography, 'SRID=4326;POINT(-0.1276 51.5072)'::geography)"
      ).first?.decode(Double.self)
      // Paris to London on the WGS 84 ellipsoid: about 343.9 km.
      #expect(abs((meters ?? 0) - 343_900) < 1_000)
    }
  }

  @Test func openExplainsWhyItCannotConnect() async throws {
    let url = try TestCluster.url()
    await #expect {
      _ = try await PostgresDatabase.open(url: url.with(database: "no_such_database"), logger: TestCluster.logger)
    } throws: { error in
      "\(error)".contains("database \"no_such_database\" does not exist") && "\(error)".contains("3D000")
    }
    var closedPort = url
    closedPort.endpoint = .tcp(host: "127.0.0.1", port: 1)
    await #expect {
      _ = try await PostgresDatabase.open(url: closedPort, logger: TestCluster.logger)
    } throws: { error in
      guard case PostgresDatabaseError.cannotConnect(let shown, _) = error else { return false }
      return shown.contains("127.0.0.1:1") && "\(error)".contains("Tools/postgres start")
    }
  }

  @Test func connectsThroughTheUnixSocket() async throws {
    let url = try TestCluster.url()
    guard case .tcp(_, let port) = url.endpoint else {
      Issue.record("Tools/postgres printed a non-TCP URL: \(url)")
      return
    }
    let directory =
      ProcessInfo.processInfo.environment["MERIDIAN_POSTGRES_DIR"]
      ?? (NSTemporaryDirectory() + "meridian-postgres-\(getuid())")
    let socket = try PostgresURL("postgres:///postgres?host=\(directory)&port=\(port)&user=\(url.user)")
    let database = try await PostgresDatabase.open(url: socket, logger: TestCluster.logger)
    #expect(try await database.integer("SELECT 40 + 2") == 42)
    await database.close()
  }

  /// A URL's settings hold on every connection of the pool from its first statement.
  @Test func everySessionStartsWithTheURLsSettings() async throws {
    var url = try TestCluster.url()
    url.settings = ["jit": "off", "work_mem": "7MB"]
    let database = try await PostgresDatabase.open(url: url, maxConnections: 2, logger: TestCluster.logger)
    let shown = try await withThrowingTaskGroup(of: String.self) { group in
      for _ in 0..<4 {
        group.addTask {
          try await database.withConnection { connection in
            var text = ""
            for try await (jit, memory) in try await connection.query(
              "SELECT current_setting('jit'), current_setting('work_mem')", logger: database.logger
            ).decode((String, String).self) { text = "\(jit) \(memory)" }
            return text
          }
        }
      }
      return try await group.reduce(into: Set<String>()) { $0.insert($1) }
    }
    #expect(shown == ["off 7MB"])
    await database.close()
  }

  @Test func runServesQueriesUntilClosed() async throws {
    // What is checked is run() and close(), not the wait: a full run's first seconds (a hundred suites starting on
    // two cores) once kept the first connection past the default 30 s.
    let database = PostgresDatabase(
      url: try TestCluster.url(), maxConnections: 2, timeouts: PostgresTimeouts(connectionWait: .seconds(120)),
      logger: TestCluster.logger)
    let runner = Task.immediate { await database.run() }
    #expect(try await database.integer("SELECT 1") == 1)
    await database.close()
    await runner.value  // run() returned because of close()
  }
}
