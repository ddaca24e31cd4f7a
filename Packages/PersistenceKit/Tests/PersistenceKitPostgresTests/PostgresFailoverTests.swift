import Foundation
import PersistenceKitPostgres
import Synchronization
import Testing

/// A primary and its hot standby (`Tools/postgres start`, `standby-start`) and one `PostgresDatabase` on both
/// (`postgres://u@primary,standby/db?target_session_attrs=read-write`): when the primary is replaced by the promoted
/// standby, the same database writes again, on the new primary, and nothing it acknowledged is lost.
@Suite("Failover to a promoted standby", .serialized)
struct PostgresFailoverTests {
  @Test(.timeLimit(.minutes(3))) func writesResumeOnThePromotedStandbyWithNothingAcknowledgedLost() async throws {
    try await StandbyPair.with { pair in
      let database = try await pair.open(maxConnections: 4)
      defer { Task { await database.close() } }
      #expect(try await database.integer("SELECT inet_server_port()") == pair.primaryPort)
      try await database.execute("CREATE TABLE acknowledged(id int PRIMARY KEY)")

      let writer = Writer(database: database)
      let writing = Task { await writer.run() }
      await writer.waitFor(acknowledged: 20)

      try await pair.tool("halt")  // pg_ctl stop -m fast: the standby receives everything the primary wrote
      let refusedBefore = writer.state.withLock { $0.refused }
      let atPromotion = writer.state.withLock { $0.acknowledged.count }
      try await pair.tool("standby-promote")
      let promoted = ContinuousClock.now
      await writer.waitFor(acknowledged: atPromotion + 20)
      let resumed = writer.state.withLock { $0.firstAcknowledgedAfter(atPromotion) } ?? .now
      writer.stop()
      await writing.value

      let took = resumed - promoted
      print("measured: writes acknowledged again \(took) after pg_ctl promote returned")
      // 0.02–0.4 s on a quiet machine. The bound leaves room for a loaded one: in the clean-clone run, with the root
      // suite beside it, 5 writes took 10 s before any failover.
      #expect(took < .seconds(15), "writes resumed \(took) after the promotion")
      #expect(writer.state.withLock { $0.refused } > refusedBefore, "no write met the stopped primary")
      #expect(try await database.integer("SELECT inet_server_port()") == pair.standbyPort)
      let stored = Set(
        try await database.query("SELECT id FROM acknowledged").map { try $0.decode(Int.self) })
      let acknowledged = writer.state.withLock { $0.acknowledged }
      #expect(acknowledged.isSubset(of: stored), "lost: \(acknowledged.subtracting(stored).sorted().prefix(10))")
      #expect(writer.state.withLock { $0.unexpected }.isEmpty, "\(writer.state.withLock { $0.unexpected })")
      await database.close()
    }
  }

  @Test func theHostsAreTriedInOrderUntilOneGivesTheTargetSession() async throws {
    try await StandbyPair.with { pair in
      let standbyFirst = try PostgresURL(
        "postgres://\(pair.url.user)@127.0.0.1:\(pair.standbyPort),127.0.0.1:\(pair.primaryPort)/postgres")
      for (attributes, port) in [
        (PostgresURL.TargetSessionAttributes.any, pair.standbyPort), (.readWrite, pair.primaryPort),
        (.primary, pair.primaryPort), (.readOnly, pair.standbyPort), (.standby, pair.standbyPort),
        (.preferStandby, pair.standbyPort),
      ] {
        var url = standbyFirst
        url.targetSessionAttributes = attributes
        let database = try await PostgresDatabase.open(url: url, maxConnections: 1, logger: TestCluster.logger)
        #expect(try await database.integer("SELECT inet_server_port()") == port, "\(attributes)")
        await database.close()
      }

      // A connection of its own (the operators' tools) follows the same rule.
      var writable = standbyFirst
      writable.targetSessionAttributes = .readWrite
      let connection = try await writable.connect(logger: TestCluster.logger)
      let port = try await connection.query("SELECT inet_server_port()", logger: TestCluster.logger).collect()
        .first?.decode(Int.self)
      try await connection.close()
      #expect(port == pair.primaryPort)

      // No host gives the session asked for: the error says why, host by host.
      try await pair.tool("halt")
      var url = standbyFirst
      url.targetSessionAttributes = .readWrite
      await #expect {
        _ = try await PostgresDatabase.open(url: url, maxConnections: 1, logger: TestCluster.logger)
      } throws: { error in
        let text = "\(error)"
        return text.contains("127.0.0.1:\(pair.standbyPort): a hot standby, not target_session_attrs=read-write")
          && text.contains("127.0.0.1:\(pair.primaryPort): ")
      }
    }
  }

  /// A primary whose sessions turn read-only (`default_transaction_read_only`, as a server that came back as a
  /// standby): the write that meets SQLSTATE 25006 fails as unavailable and its connection leaves the pool; no host is
  /// writable, so calls fail at once; once the primary is writable again, writes resume on a new session.
  @Test func aWriteOnASessionThatTurnedReadOnlyDropsItsConnectionUntilAHostIsWritable() async throws {
    try await StandbyPair.with { pair in
      let database = try await pair.open(maxConnections: 1)
      defer { Task { await database.close() } }
      try await database.execute("CREATE TABLE t(x int)")
      let session = try await database.integer("SELECT pg_backend_pid()")
      var primary = pair.url
      primary.endpoints = [pair.url.endpoints[0]]
      primary.targetSessionAttributes = .any
      let control = PostgresDatabase(url: primary, logger: TestCluster.logger)
      try await control.withDedicatedConnection { connection in
        try await connection.execute(
          script: "ALTER SYSTEM SET default_transaction_read_only = on; SELECT pg_reload_conf()",
          logger: TestCluster.logger)
      }

      // The pooled session takes the new default at its next statement, once it has read the reloaded file.
      var refusal: (any Error)?
      for _ in 0..<100 where refusal == nil {
        do {
          try await database.execute("INSERT INTO t VALUES (1)")
          try await Task.sleep(for: .milliseconds(20))
        } catch {
          refusal = error
        }
      }
      let error = try #require(refusal)
      #expect(PostgresDatabase.isUnavailable(error) && "\(error)".contains("25006"), "\(error)")
      await #expect {
        try await database.execute("INSERT INTO t VALUES (2)")
      } throws: { error in
        PostgresDatabase.isUnavailable(error)
      }

      try await control.withDedicatedConnection { connection in
        try await connection.execute(
          script: "SET default_transaction_read_only = off; ALTER SYSTEM RESET default_transaction_read_only; "
            + "SELECT pg_reload_conf()",
          logger: TestCluster.logger)
      }
      // As a client would: a call answered `unavailable` is tried again until the watch has a writable session (a
      // pooled connection still on the read-only default is dropped at its next check, which may come after the
      // first write succeeded: a clean-clone run met it at the reads below).
      let start = ContinuousClock.now
      func retrying<T>(_ call: () async throws -> T) async throws -> T {
        try await TestCluster.retryingWhileUnavailable(since: start, call)
      }
      try await retrying { try await database.execute("INSERT INTO t VALUES (3)") }
      #expect(
        try await retrying { try await database.integer("SELECT pg_backend_pid()") } != session,
        "the read-only session was reused")
      #expect(try await retrying { try await database.integer("SELECT count(*) FROM t WHERE x = 3") } == 1)
      await database.close()
    }
  }

  /// Inserts ids 1, 2, 3, … one transaction each until stopped, and records what was acknowledged and when.
  final class Writer: Sendable {
    struct State {
      var acknowledged: Set<Int> = []
      var acknowledgedAt: [(count: Int, at: ContinuousClock.Instant)] = []
      var refused = 0
      var unexpected: [String] = []
      var stopped = false
      /// Who waits for how many acknowledged writes.
      var waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []

      func firstAcknowledgedAfter(_ count: Int) -> ContinuousClock.Instant? {
        acknowledgedAt.first { $0.count > count }?.at
      }
    }

    let database: PostgresDatabase
    let state = Mutex(State())

    init(database: PostgresDatabase) {
      self.database = database
    }

    func stop() { state.withLock { $0.stopped = true } }

    func run() async {
      var id = 0
      while !state.withLock({ $0.stopped }) {
        id += 1
        let next = id
        do {
          try await database.withTransaction { connection in
            _ = try await connection.query("INSERT INTO acknowledged VALUES (\(next))", logger: TestCluster.logger)
              .collect()
          }
          let reached = state.withLock { state in
            state.acknowledged.insert(next)
            state.acknowledgedAt.append((state.acknowledged.count, .now))
            let count = state.acknowledged.count
            let reached = state.waiters.filter { $0.count <= count }
            state.waiters.removeAll { $0.count <= count }
            return reached
          }
          for waiter in reached { waiter.continuation.resume() }
        } catch  where PostgresDatabase.isUnavailable(error) {
          state.withLock { $0.refused += 1 }
          try? await Task.sleep(for: .milliseconds(20))
        } catch {
          state.withLock { $0.unexpected.append("\(id): \(error)") }
          try? await Task.sleep(for: .milliseconds(20))
        }
      }
    }

    /// Returns once `count` writes are acknowledged: the writer resumes it with the acknowledgement that reaches the
    /// count (the test's time limit ends a wait that never returns).
    func waitFor(acknowledged count: Int) async {
      await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        let reached = state.withLock { state in
          if state.acknowledged.count >= count { return true }
          state.waiters.append((count, continuation))
          return false
        }
        if reached { continuation.resume() }
      }
    }
  }
}

/// A primary and its hot standby in a directory of their own (`MERIDIAN_POSTGRES_DIR` for `Tools/postgres`), so that
/// stopping and promoting them disturbs no other test.
struct StandbyPair {
  let directory: String
  /// `postgres://user@127.0.0.1:primary,127.0.0.1:standby/postgres?target_session_attrs=read-write`.
  let url: PostgresURL
  let primaryPort: Int
  let standbyPort: Int

  /// Runs `body` with a fresh pair, stopped and removed afterwards whatever `body` does.
  static func with(_ body: (StandbyPair) async throws -> Void) async throws {
    let directory = "/tmp/pk-pair-" + UUID().uuidString.prefix(8).lowercased()
    defer { try? FileManager.default.removeItem(atPath: directory + ".lock") }
    do {
      _ = try await tool("start", directory)
      _ = try await tool("standby-start", directory)
      let url = try PostgresURL(try await tool("pair-url", directory))
      guard case .tcp(_, let primaryPort) = url.endpoints[0], case .tcp(_, let standbyPort) = url.endpoints[1] else {
        throw TestCluster.StartFailure(description: "Tools/postgres pair-url printed \(url)")
      }
      try await body(
        StandbyPair(directory: directory, url: url, primaryPort: primaryPort, standbyPort: standbyPort))
    } catch {
      _ = try? await tool("stop", directory)
      throw error
    }
    _ = try await tool("stop", directory)
  }

  /// A database on both hosts (``url``), with short deadlines and tries every 100 ms; the caller closes it.
  func open(maxConnections: Int) async throws -> PostgresDatabase {
    let timeouts = PostgresTimeouts(
      connectionWait: .seconds(10), statement: .seconds(5), reconnectInterval: .milliseconds(100))
    return try await PostgresDatabase.open(
      url: url, maxConnections: maxConnections, timeouts: timeouts, logger: TestCluster.logger)
  }

  /// Runs `Tools/postgres command` on this pair; returns the last line it printed.
  @discardableResult
  func tool(_ command: String) async throws -> String { try await Self.tool(command, directory) }

  static func tool(_ command: String, _ directory: String) async throws -> String {
    // The script blocks (pg_basebackup, pg_ctl -w): on a thread of its own, not the test's shared pool.
    let outcome = await withCheckedContinuation { continuation in
      Thread.detachNewThread {
        continuation.resume(
          returning: TestCluster.runScript(command, environment: ["MERIDIAN_POSTGRES_DIR": directory]))
      }
    }
    return try outcome.get().split(separator: "\n").last.map(String.init) ?? ""
  }
}
