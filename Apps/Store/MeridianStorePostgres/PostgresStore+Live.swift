import DomainKit
import Foundation
import Logging
import MeridianAPI
import MeridianStore
import NIOCore
import PostgresNIO
import Synchronization

/// The live log every node reads (`docs/realtime-protocol.md` §2.1): the transaction that stores fixes appends one
/// entry per request that stored any (an imported history file's batches excepted: ``FixInsertBatch/isLive``),
/// numbered in commit order, and sends `NOTIFY meridian_live, 'c:<sequence>'`,
/// which PostgreSQL delivers when (and only if) it commits. Nodes read the entries after their cursor, joined with
/// the fixes they name: the notification carries a number, never fixes, far from its 8,000-byte limit.
///
/// Commit order: the append takes a transaction-scoped advisory lock held until commit, so a later sequence number
/// never commits before an earlier one and a reader that saw entry `n` has seen every entry before it. The lock is
/// taken last, in the statement right before `COMMIT`, after the fixes are written: with several commits in flight
/// (``PostgresStore/fixCommitsInFlight``) only that statement and the commit itself wait for it.
///
/// Entries older than ``liveLogRetention`` are pruned; `live_log_state.pruned_through` records the newest pruned
/// sequence, so a reader whose cursor is older learns it lost entries (and says `reload` to resuming clients)
/// instead of skipping them silently.
extension PostgresStore: LiveLog {
  /// The channel of the nodes' signals.
  static let liveChannel = "meridian_live"
  /// How long entries stay in the log: a node that was cut off from the database for longer catches up from the
  /// oldest entry left and raises its history floor.
  static let liveLogRetention: Int64 = 15 * 60_000
  /// The key of the advisory lock that orders appends (`pg_advisory_xact_lock`, held from the last statement of a
  /// fix transaction to its commit).
  public static let liveLogLock: Int64 = 0x4d65_7269_4c69_7665

  /// The migration of the log.
  static let liveLogSchema = """
    CREATE SEQUENCE live_log_sequence AS bigint;
    CREATE TABLE live_log(
      sequence bigint PRIMARY KEY,
      user_id text NOT NULL,
      device_id text NOT NULL,
      timestamps bigint[] NOT NULL,
      committed_at bigint NOT NULL
    );
    CREATE INDEX live_log_committed ON live_log(committed_at);
    CREATE TABLE live_log_state(
      id integer PRIMARY KEY CHECK (id = 1),
      pruned_through bigint NOT NULL,
      epoch text NOT NULL
    );
    INSERT INTO live_log_state(id, pruned_through, epoch)
    VALUES (1, 0, substr(md5(random()::text || clock_timestamp()::text), 1, 10));
    """

  public var liveLog: (any LiveLog)? { self }

  public var liveEpoch: String { liveState.withLock { $0.epoch } }

  /// Reads the log's epoch (once, when the store opens).
  func loadLiveEpoch() async throws {
    guard let epoch = try await rows("SELECT epoch FROM live_log_state WHERE id = 1").first?.decode(String.self)
    else { throw PostgresStoreError.missingRow("live_log_state") }
    liveState.withLock { $0.epoch = "pg-" + epoch }
  }

  public func newestLiveSequence() async throws -> UInt64 {
    // `last_value` of a sequence never used is 1 with `is_called` false.
    let row = try await rows("SELECT last_value, is_called FROM live_log_sequence").first
    guard let (value, called) = try row?.decode((Int64, Bool).self) else { return 0 }
    return called ? UInt64(value) : 0
  }

  /// The entries' fixes are looked up by their key (``entryFixes(_:)``).
  public func liveEntries(after sequence: UInt64, limit: Int, fixes: Int) async throws -> LiveLogRead {
    let rows = try await rows(Self.liveEntriesQuery(after: sequence, limit: limit, fixes: fixes))
    // Read after the entries: a pruning committed before the read above is seen here.
    let pruned = try await self.rows("SELECT pruned_through FROM live_log_state WHERE id = 1").first?.decode(
      Int64.self)
    if let pruned, pruned > 0, sequence < UInt64(pruned) { return .truncated(oldest: UInt64(pruned)) }
    var entries: [LiveLogEntry] = []
    let entryColumn = Self.fixColumnCount
    for row in rows {
      let columns = row.makeRandomAccess()
      let number = try columns[entryColumn].decode(Int64.self)
      if entries.last?.sequence != UInt64(number) {
        let (user, device) = (
          try columns[entryColumn + 1].decode(String.self), try columns[entryColumn + 2].decode(String.self)
        )
        entries.append(
          LiveLogEntry(sequence: UInt64(number), userID: UserID(user), deviceID: DeviceID(device), fixes: []))
      }
      // A fix deleted since (its history was deleted) leaves NULLs: the entry stays, without it.
      if try columns[0].decode(String?.self) != nil {
        entries[entries.count - 1].fixes.append(try FixColumns.fix(row).fix)
      }
    }
    return .entries(entries)
  }

  /// The statement of ``liveEntries(after:limit:fixes:)``.
  static func liveEntriesQuery(after sequence: UInt64, limit: Int, fixes: Int) -> PostgresQuery {
    """
    WITH e AS (
      \(unescaped: Self.entriesUpToFixes(
        "sequence, user_id, device_id, timestamps", from: "live_log",
        where: "sequence > \(Int64(clamping: sequence))", limit: limit, fixes: fixes))
    )
    SELECT \(unescaped: Self.qualifiedFixColumns), e.sequence, e.user_id, e.device_id
    FROM e \(unescaped: Self.entryFixes("e"))
    ORDER BY e.sequence, f.timestamp
    """
  }

  public func listen(_ receive: @escaping @Sendable (LiveSignal) async -> Void) async {
    while !Task.isCancelled {
      do {
        try await client.withLastingConnection { connection in
          try await connection.listen(on: Self.liveChannel) { notifications in
            await receive(.listening)
            for try await notification in notifications {
              if let signal = LiveSignal(text: notification.payload) { await receive(signal) }
            }
          }
        }
      } catch {
        if Task.isCancelled { return }
        logger.warning(
          "listening for live signals failed; listening again", metadata: ["error": "\(String(reflecting: error))"])
        try? await Task.sleep(for: .milliseconds(200))
      }
    }
  }

  public func announce(_ signals: [LiveSignal]) async throws {
    guard !signals.isEmpty else { return }
    // One statement: its notifications are sent on commit, in the array's order.
    try await execute(
      "SELECT pg_notify(\(Self.liveChannel), signal) FROM unnest(\(signals.map(\.text))::text[]) AS signal")
  }

  /// The last statement of a fix transaction before its `COMMIT`: takes the live log's lock (held until the
  /// transaction ends, so sequence numbers commit in order: a reader that saw `n` has seen every number before it),
  /// stores `answers` (the idempotency keys' bodies), appends one live log entry per request in `live` that stored
  /// fixes and one geofence queue entry per request in `evaluated` that did, in their order, and notifies the nodes
  /// on commit. Each entry is a request's owner, device and the timestamps it stored (duplicates left out; `live`
  /// holds only the live batches, ``FixInsertBatch/isLive``). Taken
  /// last, the lock makes concurrent commits wait for each other only for this statement and the commit itself.
  /// Returns the statements sent, not awaited: the caller queues `COMMIT` right behind them
  /// (``PersistenceKitPostgres/PostgresTransactionEnd``), so the lock is not held while this process takes its turn.
  static func appendInCommitOrder(
    live: [(user: UserID, device: DeviceID, timestamps: [Int64])],
    evaluated: [(user: UserID, device: DeviceID, timestamps: [Int64])],
    answers: [(user: String, key: String, body: Data)], now: Int64, on connection: PostgresConnection,
    logger: Logger
  ) -> [EventLoopFuture<PostgresQueryResult>] {
    let live = live.filter { !$0.timestamps.isEmpty }
    let evaluated = evaluated.filter { !$0.timestamps.isEmpty }
    guard !live.isEmpty || !evaluated.isEmpty || !answers.isEmpty else { return [] }
    // One list of entries, each marked for the live log or the geofence queue, appended by two INSERTs of the
    // same shape in their order.
    let entries = live.map { (entry: $0, queued: false) } + evaluated.map { (entry: $0, queued: true) }
    let append: EventLoopFuture<PostgresQueryResult> = connection.query(
      """
      WITH lock AS MATERIALIZED (SELECT pg_advisory_xact_lock(\(liveLogLock))),
      answered AS (
        UPDATE idempotency_keys SET body = a.body
        FROM lock, unnest(\(answers.map(\.user))::text[], \(answers.map(\.key))::text[],
          \(answers.map { ByteBuffer(data: $0.body) })::bytea[]) AS a(u, k, body)
        WHERE user_id = a.u AND key = a.k
      ),
      entries AS MATERIALIZED (
        SELECT u, d, string_to_array(t, ',')::bigint[] AS ts, q, n
        FROM lock, unnest(
          \(entries.map(\.entry.user.rawValue))::text[], \(entries.map(\.entry.device.rawValue))::text[],
          \(entries.map { $0.entry.timestamps.map(String.init).joined(separator: ",") })::text[],
          \(entries.map(\.queued))::boolean[]) WITH ORDINALITY AS x(u, d, t, q, n)
      ),
      live AS (
        INSERT INTO live_log(sequence, user_id, device_id, timestamps, committed_at)
        SELECT nextval('live_log_sequence'), u, d, ts, \(now)
        FROM (SELECT * FROM entries WHERE NOT q ORDER BY n) AS o
        RETURNING sequence
      ),
      queued AS (
        INSERT INTO geofence_queue(sequence, user_id, device_id, timestamps, committed_at)
        SELECT nextval('geofence_queue_sequence'), u, d, ts, \(now)
        FROM (SELECT * FROM entries WHERE q ORDER BY n) AS o
      )
      SELECT max(sequence), pg_notify(\(liveChannel), 'c:' || max(sequence)) FROM live HAVING count(*) > 0
      """, logger: logger
    )
    // Now and then (about one commit in 256), the entries older than the retention go, under the same lock.
    if !live.isEmpty, UInt8.random(in: 0...255) == 0 {
      return [
        append,
        connection.query(
          """
          WITH pruned AS (DELETE FROM live_log WHERE committed_at < \(now - liveLogRetention) RETURNING sequence)
          UPDATE live_log_state SET pruned_through = GREATEST(pruned_through, (SELECT max(sequence) FROM pruned))
          WHERE id = 1 AND EXISTS (SELECT 1 FROM pruned)
          """, logger: logger
        ),
      ]
    }
    return [append]
  }

  /// The `SELECT` of `columns` of the first `limit` entries of `table` (a live log or the geofence queue, each entry's
  /// fixes' timestamps in `timestamps`) by `sequence`, those `condition` keeps, up to the one that brings their fixes
  /// to `fixes` or past it: the first entry is always read, so a read holds a bounded number of fixes and at least one
  /// entry.
  static func entriesUpToFixes(
    _ columns: String, from table: String, where condition: String? = nil, limit: Int, fixes: Int
  ) -> String {
    """
    SELECT \(columns) FROM (
      SELECT \(columns),
        sum(cardinality(timestamps)) OVER (ORDER BY sequence) - cardinality(timestamps) AS fixes_before
      FROM \(table)\(condition.map { " WHERE \($0)" } ?? "") ORDER BY sequence LIMIT \(max(1, limit))
    ) AS read WHERE fixes_before < \(max(1, fixes))
    """
  }

  /// The joins that add to each row of `entry` (a live log or geofence queue entry: `user_id`, `device_id`,
  /// `timestamps`) its fixes as `f`, each looked up alone by its whole key (NULLs for a fix that is gone): the
  /// timestamps are unnested outside the lookup, which `OFFSET 0` keeps a subquery of its own, so that every
  /// condition the lookup has is on values it is given, and each index path on the key takes all three columns.
  ///
  /// With the timestamps joined inside the lookup, a month's partition never analysed yet (a month an import or a
  /// backfill is filling) was probed through the key's first two columns alone, a path that needs only the entry,
  /// filtered by timestamp: PostgreSQL's default guess for a person and device it has no statistics for is a few
  /// rows, so the path looked cheap, and each of an entry's 10,000 fixes read the device's whole month (minutes a
  /// read, in the benchmark's 5,000,000-fix seed). Bounded by the timestamps' range with `timestamp = ANY(timestamps)`
  /// instead, the `ANY` stayed a filter, comparing each fix of the range with the whole array (3.5 s for 10,000).
  /// Joined on `ANY` for all the entries at once, it planned a hash join over a sequential scan of the month, or a
  /// merge join over its whole key index.
  static func entryFixes(_ entry: String) -> String {
    """
    LEFT JOIN LATERAL unnest(\(entry).timestamps) AS t(timestamp) ON true
    LEFT JOIN LATERAL (
      SELECT \(qualifiedFixColumns) FROM fixes f
      WHERE f.user_id = \(entry).user_id AND f.device_id = \(entry).device_id AND f.timestamp = t.timestamp
      OFFSET 0
    ) AS f ON true
    """
  }

  /// ``FixColumns/select`` with every column qualified by `f`, and how many columns that is (computed once).
  static let qualifiedFixColumns = FixColumns.select.split(separator: ",")
    .map { "f.\($0.trimmingCharacters(in: .whitespacesAndNewlines))" }.joined(separator: ", ")
  static let fixColumnCount = FixColumns.select.split(separator: ",").count
}

/// The live log's epoch, read when the store opens.
struct LiveLogState: Sendable {
  var epoch = ""
}
