import Logging
import MeridianStore
import PersistenceKitPostgres
import PostgresNIO
import Synchronization

extension PostgresSchema {
  /// The counters of the rate limits and sign-in backoffs that every node shares: one row per key, the key naming
  /// its limit (`otp.phone:+15550100`). Not per user, so the text key alone distributes it. `expires_at` is when the
  /// row stops mattering (its window is over, its failures forgotten), for the cleanup.
  ///
  /// Unlogged: a take writes no WAL and waits for no flush (about 5,000 takes/s on one key here, against 450 for a
  /// logged table with `synchronous_commit` on, which a check on every request can't afford). PostgreSQL empties it
  /// after a crash and standbys don't have it, so after a crash or a failover every window starts afresh.
  static let limitCounters = """
    CREATE UNLOGGED TABLE limit_counters(
      key text PRIMARY KEY,
      count bigint NOT NULL,
      since bigint NOT NULL,
      expires_at bigint NOT NULL
    );
    CREATE INDEX limit_counters_expiry ON limit_counters(expires_at);
    """
}

extension PostgresStore {
  /// Every node on this database counts its limits in the `limit_counters` table.
  public var sharedLimits: (any LimitStore)? { PostgresLimitCounters(database: database) }
}

/// The ``LimitStore`` of a PostgreSQL database: the `limit_counters` table, shared by every node on it.
public struct PostgresLimitCounters: LimitStore {
  /// The database: its pool and transactions.
  public let database: PersistenceKitPostgres.PostgresDatabase
  var client: PostgresCalls { PostgresCalls(database: database) }
  var logger: Logger { database.logger }

  /// The counters of `database`.
  public init(database: PersistenceKitPostgres.PostgresDatabase) {
    self.database = database
  }

  /// One statement, atomic however many nodes take at once: the upsert locks the row, and its window is replaced
  /// or added to only when the units fit. Its window is current when it started between `oldest` and `newest`
  /// (``WindowLimit/isCurrent(_:now:)``; the contract suite runs the same cases on every engine). When the units
  /// don't fit, ``WindowLimit`` computes the wait from the row as it is then, and the take is tried again if the
  /// row changed in between so that they would.
  public func take(_ key: String, cost: Int, in window: WindowLimit, now: Int64) async throws -> Int64? {
    guard !window.isOff else { return nil }
    await removeExpiredCountersNowAndThen(now: now)
    let (units, limit, length, end) = (Int64(cost), Int64(window.limit), window.window, now + window.window)
    let (oldest, newest) = (now - window.window + 1, now + window.skew)
    for _ in 0..<8 {
      if cost <= window.limit {
        let rows = try await client.query(
          """
          INSERT INTO limit_counters AS c (key, count, since, expires_at) VALUES (\(key), \(units), \(now), \(end))
          ON CONFLICT (key) DO UPDATE SET
            count = CASE WHEN c.since BETWEEN \(oldest) AND \(newest) THEN c.count + \(units) ELSE \(units) END,
            since = CASE WHEN c.since BETWEEN \(oldest) AND \(newest) THEN c.since ELSE \(now) END,
            expires_at = CASE WHEN c.since BETWEEN \(oldest) AND \(newest) THEN c.since + \(length) ELSE \(end) END
          WHERE c.since NOT BETWEEN \(oldest) AND \(newest) OR c.count + \(units) <= \(limit)
          RETURNING 1
          """, logger: logger)
        if try await rows.collect().count == 1 { return nil }
      }
      switch window.take(cost: cost, from: try await counter(key), now: now) {
      case .refused(let wait): return wait
      case .taken: continue  // the window ended or was removed since the upsert: try again
      }
    }
    return 1  // the key's window changed under every attempt: the caller tries again at once
  }

  public func failureWait(_ key: String, policy: BackoffPolicy, now: Int64) async throws -> Int64? {
    guard !policy.isOff else { return nil }
    return policy.wait(after: try await counter(key), now: now)
  }

  /// A transaction: the row is created if missing and locked, then ``BackoffPolicy`` computes the next counter.
  public func recordFailure(_ key: String, policy: BackoffPolicy, now: Int64) async throws {
    guard !policy.isOff else { return }
    try await client.withTransaction(retries: 4) { connection in
      try await connection.query(
        """
        INSERT INTO limit_counters (key, count, since, expires_at) VALUES (\(key), 0, \(now), \(now))
        ON CONFLICT (key) DO NOTHING
        """, logger: logger)
      var current: LimitCounter?
      for try await (count, since) in try await connection.query(
        "SELECT count, since FROM limit_counters WHERE key = \(key) FOR UPDATE", logger: logger
      ).decode((Int64, Int64).self) {
        current = LimitCounter(count: Int(count), since: since)
      }
      let next = policy.recordingFailure(on: current, now: now)
      try await connection.query(
        """
        UPDATE limit_counters SET count = \(Int64(next.count)), since = \(next.since),
          expires_at = \(policy.expiry(of: next)) WHERE key = \(key)
        """, logger: logger)
    }
  }

  public func clearFailures(_ key: String) async throws {
    try await client.query("DELETE FROM limit_counters WHERE key = \(key)", logger: logger)
  }

  public func removeExpiredCounters(now: Int64) async throws -> Int {
    var removed = 0
    while true {
      let batch = try await removeExpiredCounters(now: now, atMost: 5_000)
      removed += batch
      if batch < 5_000 { return removed }
    }
  }

  /// Removes up to `atMost` expired counters; returns how many.
  func removeExpiredCounters(now: Int64, atMost: Int) async throws -> Int {
    let rows = try await client.query(
      """
      DELETE FROM limit_counters WHERE key IN (
        SELECT key FROM limit_counters WHERE expires_at <= \(now) LIMIT \(Int64(atMost)) FOR UPDATE SKIP LOCKED)
      RETURNING 1
      """, logger: logger)
    return try await rows.collect().count
  }

  /// The counter of `key`, if it has one.
  private func counter(_ key: String) async throws -> LimitCounter? {
    let rows = try await client.query("SELECT count, since FROM limit_counters WHERE key = \(key)", logger: logger)
    for try await (count, since) in rows.decode((Int64, Int64).self) {
      return LimitCounter(count: Int(count), since: since)
    }
    return nil
  }

  /// At most every ``cleanupInterval`` ms of the callers' clock (per process), before a take: removes a batch of
  /// expired counters, so the table holds about the keys of the current windows whatever the traffic. A failure is
  /// logged, and the take goes on.
  private func removeExpiredCountersNowAndThen(now: Int64) async {
    let due = Self.lastCleanup.withLock { last in
      guard now - last >= Self.cleanupInterval || now < last else { return false }
      last = now
      return true
    }
    guard due else { return }
    do {
      _ = try await removeExpiredCounters(now: now, atMost: 1_000)
    } catch {
      logger.warning("removing expired limit counters failed", metadata: ["error": "\(error)"])
    }
  }

  /// How often, in milliseconds, a take also removes expired counters.
  static let cleanupInterval: Int64 = 10_000
  private static let lastCleanup = Mutex<Int64>(Int64.min / 2)
}
