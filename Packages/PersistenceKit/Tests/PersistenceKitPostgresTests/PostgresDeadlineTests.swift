import Foundation
import Testing

@testable import PersistenceKitPostgres

/// Every call has a deadline (``PostgresTimeouts``): a call that overruns throws `timedOut` at its deadline and its
/// connection is closed, never handed out again; a call that can't get a connection in time throws too.
@Suite struct PostgresDeadlineTests {
  @Test func aQueryPastItsDeadlineThrowsAtTheDeadlineAndItsConnectionIsClosed() async throws {
    try await TestCluster.withFreshDatabase(maxConnections: 1) { database in
      let before = try await database.integer("SELECT pg_backend_pid()")
      let start = ContinuousClock.now
      await #expect {
        _ = try await database.query("SELECT pg_sleep(60)", timeout: .milliseconds(300))
      } throws: { error in
        guard case PostgresDatabaseError.timedOut(.statement(.milliseconds(300))) = error else { return false }
        return PostgresDatabase.isUnavailable(error)
      }
      // Not the statement's 60 s. A loaded machine is slow: in a CI run the 300 ms deadline threw after 8.5 s.
      #expect(ContinuousClock.now - start < .seconds(30))
      // The pool's one connection was closed, not handed out again: the next call is another session. On a loaded
      // machine the pool's new connection can fail to open at first (in root test runs the call answered unavailable:
      // "clientClosedConnection"), so the call is made as a client makes it, tried again while unavailable.
      let after = try await TestCluster.retryingWhileUnavailable {
        try await database.integer("SELECT pg_backend_pid()")
      }
      #expect(after != before)
      // The abandoned statement stopped on the server too (its session checks its client every second), rather
      // than sleeping on for its minute.
      var sleeping = 1
      let stopped = ContinuousClock.now
      while sleeping > 0 && ContinuousClock.now - stopped < .seconds(30) {
        sleeping = try await TestCluster.retryingWhileUnavailable {
          try await database.integer("SELECT count(*) FROM pg_stat_activity WHERE pid = \(before)")
        }
        if sleeping > 0 { try await Task.sleep(for: .milliseconds(100)) }
      }
      #expect(sleeping == 0, "the session of the call past its deadline still runs")
    }
  }

  /// The pool's session defaults (``PostgresDatabase/pooledSessionDefaults``) give way to the URL's settings, and one
  /// the server refuses is left out rather than failing the connection (a server without the client check).
  @Test func aSessionDefaultTheServerRefusesIsLeftOutAndTheURLsSettingsWin() async throws {
    try await TestCluster.withFreshDatabase { database in
      var url = database.url
      url.settings["lock_timeout"] = "3s"
      try await database.withDedicatedConnection { connection in
        try await PostgresDatabase.applySessionDefaults(
          ["client_connection_check_interval": "not a duration", "lock_timeout": "2s", "statement_timeout": "4321"],
          under: url, on: connection, logger: TestCluster.logger)
        var values: [String] = []
        for name in ["client_connection_check_interval", "lock_timeout", "statement_timeout"] {
          for try await value in try await connection.query(
            "SELECT current_setting(\(name))", logger: TestCluster.logger
          ).decode(String.self) {
            values.append(value)
          }
        }
        // The refused default left the server's own value, the URL's name was not touched here (the URL's settings
        // are set before the defaults, by `applySettings`), and the default after the refused one was set.
        #expect(values == ["0", "0", "4321ms"])
      }
    }
  }

  @Test func aCallThatGetsNoConnectionInTimeThrowsAfterTheWait() async throws {
    try await TestCluster.withFreshDatabase(maxConnections: 1) { database in
      let holder = Task { try await database.query("SELECT pg_sleep(10)") }
      try await Task.sleep(for: .milliseconds(200))
      let start = ContinuousClock.now
      await #expect {
        _ = try await database.withConnection(wait: .milliseconds(300)) { connection in
          try await connection.query("SELECT 1", logger: database.logger).collect().count
        }
      } throws: { error in
        guard case PostgresDatabaseError.timedOut(.connectionWait(.milliseconds(300))) = error else { return false }
        return true
      }
      #expect(ContinuousClock.now - start < .seconds(8))  // not the holder's 10 s (a loaded machine is slow)
      _ = try await holder.value
    }
  }

  /// A pooled connection serves calls for as long as it stays open: a call that ended must leave nothing on it (each
  /// call once registered a close watch on its connection, which kept the call's deadline, its task and handlers
  /// until the connection closed: meridian-server's memory grew by about 50 MiB a minute in the PostgreSQL soak).
  @Test func aCallThatEndedLeavesNothingOnItsConnection() async throws {
    try await TestCluster.withFreshDatabase(maxConnections: 1) { database in
      try await database.withDedicatedConnection { connection in
        weak var released: PostgresDeadline?
        do {
          let deadline = PostgresDeadline(wait: .seconds(30), limit: .seconds(30))
          #expect(deadline.leased(connection))
          _ = try await connection.query("SELECT 1", logger: database.logger).collect()
          deadline.finish()
          released = deadline
        }
        #expect(released == nil, "the open connection still holds the finished call's deadline")
      }
      // Through the pool: many calls on its one connection, one watch for that connection, never one per call.
      for _ in 0..<200 { _ = try await database.integer("SELECT 1") }
      #expect(database.watchedConnectionCount == 1)
    }
  }
}
