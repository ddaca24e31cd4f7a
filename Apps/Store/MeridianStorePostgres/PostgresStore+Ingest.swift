import DomainKit
import Foundation
import Logging
import MeridianAPI
import MeridianStore
import NIOCore
import PersistenceKitPostgres
import PostgresNIO
import Synchronization

extension PostgresStore {
  /// Stores the batches in one durable transaction (group commit): calls that arrive while a commit is in flight
  /// are stored together by the next one, up to `GroupCommitSize.maximumFixes` fixes a commit. A fix whose device
  /// and timestamp are stored already counts as a duplicate; an `Idempotency-Key` seen before (on any node) replays
  /// its answer or is a conflict, and inserts nothing.
  ///
  /// `completion` runs once the transaction committed (`synchronous_commit` as the server has it: on by default), on
  /// a task of the store's commit loop. Up to ``fixCommitsInFlight`` commits run at once, each on its own connection;
  /// their live log entries still commit in sequence order (``appendInCommitOrder(live:evaluated:answers:now:on:logger:)``).
  public func insertFixes(
    _ batches: [FixInsertBatch], now: Int64,
    completion: @escaping @Sendable (Result<[FixReceipt], any Error>) -> Void
  ) {
    let rows: [[FixRow]]
    do {
      rows = try batches.map { batch in try batch.fixes.map { try FixRow($0, device: batch.deviceID) } }
    } catch {
      return completion(.failure(error))
    }
    let request = FixCommitQueue.Request(batches: batches, rows: rows, now: now, completion: completion)
    guard let first = fixCommits.submit(request, limit: fixCommitsInFlight) else { return }
    Task { await commitLoop(first) }
  }

  /// Commits `requests`, then whatever queued meanwhile (up to `GroupCommitSize.maximumFixes` fixes a commit), until
  /// the queue is empty.
  private func commitLoop(_ requests: [FixCommitQueue.Request]) async {
    var requests = requests
    while true {
      await commit(requests)
      guard let next = fixCommits.next() else { return }
      requests = next
    }
  }

  /// One transaction for all `requests`, within ``commitTimeout``; when it fails and held several, each is tried
  /// alone, so one request's error (a device not registered, …) is not every request's — unless the database
  /// could not be reached, which fails them all at once.
  private func commit(_ requests: [FixCommitQueue.Request]) async {
    do {
      let receipts = try await storeFixes(
        requests.flatMap { request in
          zip(request.batches, request.rows).map { (batch: $0, rows: $1, now: request.now) }
        })
      var offset = 0
      for request in requests {
        request.completion(.success(Array(receipts[offset..<offset + request.batches.count])))
        offset += request.batches.count
      }
    } catch {
      // A database that can't be reached fails every request alike: trying each alone would only wait longer.
      guard requests.count > 1, PostgresCalls.unavailable(error) == nil else {
        return requests.forEach { $0.completion(.failure(error)) }
      }
      for request in requests { await commit([request]) }
    }
  }

  /// The group commit's transaction: claims the idempotency keys, inserts the fixes of the batches it may, stores
  /// the answers. Claims are resolved once it committed.
  private func storeFixes(_ batches: [(batch: FixInsertBatch, rows: [FixRow], now: Int64)]) async throws
    -> [FixReceipt]
  {
    let timestamps = batches.flatMap { $0.rows.map(\.fix.timestamp) }
    var attempt = 1
    while true {
      do {
        try await ensurePartitions(for: timestamps)
        let ((receipts, resolutions), _) = try await transaction(
          timeout: commitTimeout,
          endingWith: { connection in try await Self.storeFixes(batches, on: connection, self.logger) })
        for (claim, resolution) in resolutions { claim.resolve(resolution) }
        return receipts
      } catch let error where attempt == 1 && Self.isMissingPartition(error) {
        // A month this process saw was dropped since (retention, on any node): check every month again.
        fixPartitions.removeAll()
        attempt += 1
      }
    }
  }

  /// The group commit's statements: (1) one locks the live-only owners, claims the idempotency keys and inserts the
  /// fixes of the batches that may store theirs; (2) a read of the answers stored under keys claimed before (only
  /// when some were); (3) one, right before `COMMIT`, takes the live log's lock, stores the answers of the keys
  /// claimed now and appends the live log's and the geofence queue's entries; (4) the live-only rule, when an owner is
  /// live only. Commits running at once overlap everything but (3) and the commit itself; (3) and (4) are sent
  /// without waiting for their answers, `COMMIT` right behind them (``PostgresTransactionEnd``), so the lock (3) takes
  /// is held for no turn through this process.
  private static func storeFixes(
    _ batches: [(batch: FixInsertBatch, rows: [FixRow], now: Int64)], on connection: PostgresConnection,
    _ logger: Logger
  ) async throws -> PostgresTransactionEnd<([FixReceipt], [(IdempotencyClaim, IdempotencyClaim.Resolution)])> {
    // The keys: the first batch with a key claims it for the commit; a later batch with the same key follows it.
    var leaders: [IdempotencyKey: Int] = [:]
    for (index, entry) in batches.enumerated() {
      guard let claim = entry.batch.idempotency else { continue }
      let key = IdempotencyKey(user: entry.batch.userID.rawValue, key: claim.key)
      if leaders[key] == nil { leaders[key] = index }
    }
    // Sorted, so two commits claiming the same keys take their locks in the same order.
    let claimed = leaders.map { (key: $0.key, batch: $0.value) }.sorted { $0.key < $1.key }

    // The fixes of the batches without a key and of those leading theirs (inserted only if the key is claimed now),
    // sorted by key so that two commits inserting the same fixes wait for each other in the same order.
    var inserting: [(row: FixRow, batch: Int)] = []
    for (index, entry) in batches.enumerated() {
      if let claim = entry.batch.idempotency,
        leaders[IdempotencyKey(user: entry.batch.userID.rawValue, key: claim.key)] != index
      {
        continue
      }
      inserting += entry.rows.map { (row: $0, batch: index) }
    }
    inserting.sort { lhs, rhs in
      let (a, b) = (batches[lhs.batch].batch, batches[rhs.batch].batch)
      if a.userID != b.userID { return a.userID.rawValue < b.userID.rawValue }
      if a.deviceID != b.deviceID { return a.deviceID.rawValue < b.deviceID.rawValue }
      if lhs.row.fix.timestamp != rhs.row.fix.timestamp { return lhs.row.fix.timestamp < rhs.row.fix.timestamp }
      return lhs.batch < rhs.batch
    }

    // 1. One statement, one round trip.
    var liveOnly: [String] = []
    var mine: Set<IdempotencyKey> = []
    var new = Set<FixKey>()
    let first = try FixRow.claimAndInsert(
      owners: Set(batches.map(\.batch.userID.rawValue)).sorted(),
      claims: claimed.map { claim in
        let entry = batches[claim.batch]
        return (claim.key.user, claim.key.key, entry.batch.idempotency?.requestHash ?? "", entry.now)
      },
      rows: inserting.map { (row: $0.row, batch: batches[$0.batch].batch, now: batches[$0.batch].now) })
    for (kind, user, key, timestamp) in try await runPrepared(first, on: connection, logger: logger) {
      switch kind {
      case "u": liveOnly.append(user)
      case "k": mine.insert(IdempotencyKey(user: user, key: key ?? ""))
      default: new.insert(FixKey(user: user, device: key ?? "", timestamp: timestamp ?? 0))
      }
    }

    // 2. The answers stored under the keys another transaction claimed (it has ended: the claim waited for it).
    var stored: [IdempotencyKey: StoredResponse] = [:]
    let existing = claimed.map(\.key).filter { !mine.contains($0) }
    if !existing.isEmpty {
      for row in try await connection.query(
        """
        SELECT user_id, key, request_hash, status, body FROM idempotency_keys
        WHERE (user_id, key) IN (SELECT * FROM unnest(\(existing.map(\.user))::text[], \(existing.map(\.key))::text[]))
        """, logger: logger
      ).collect() {
        let (user, key, requestHash, status, body) = try row.decode((String, String, String, Int32, Data).self)
        stored[IdempotencyKey(user: user, key: key)] = StoredResponse(
          requestHash: requestHash, status: Int(status), body: body)
      }
    }

    // The receipts, in order; the first batch with a fix gets the fix (a later one counts it a duplicate).
    var receipts: [FixReceipt] = []
    var resolutions: [(IdempotencyClaim, IdempotencyClaim.Resolution)] = []
    var answers: [IdempotencyKey: (requestHash: String, receipt: FixReceipt)] = [:]
    var live: [(user: UserID, device: DeviceID, timestamps: [Int64])] = []
    var evaluated: [(user: UserID, device: DeviceID, timestamps: [Int64])] = []
    for (index, entry) in batches.enumerated() {
      let batch = entry.batch
      if let claim = batch.idempotency {
        let key = IdempotencyKey(user: batch.userID.rawValue, key: claim.key)
        if leaders[key] != index || !mine.contains(key) {
          // Stored by an earlier transaction, or by an earlier batch of this one.
          let previous =
            answers[key]
            ?? stored[key].flatMap { response in
              Self.receipt(response.body).map { (requestHash: response.requestHash, receipt: $0) }
            }
          if let previous, claim.matches(previous.requestHash) {
            resolutions.append((claim, .replayed))
            receipts.append(previous.receipt)
          } else {
            resolutions.append((claim, .conflict))
            receipts.append(FixReceipt(accepted: 0, duplicates: 0))
          }
          continue
        }
      }
      var accepted: [Int64] = []
      for row in entry.rows
      where new.remove(
        FixKey(user: batch.userID.rawValue, device: batch.deviceID.rawValue, timestamp: row.fix.timestamp))
        != nil
      {
        accepted.append(row.fix.timestamp)
      }
      // An imported history file is not live (``FixInsertBatch/isLive``).
      if batch.isLive { live.append((batch.userID, batch.deviceID, accepted)) }
      if batch.isEvaluatedByGeofences { evaluated.append((batch.userID, batch.deviceID, accepted)) }
      let receipt = FixReceipt(accepted: accepted.count, duplicates: entry.rows.count - accepted.count)
      receipts.append(receipt)
      if let claim = batch.idempotency {
        answers[IdempotencyKey(user: batch.userID.rawValue, key: claim.key)] = (claim.requestHash, receipt)
        resolutions.append((claim, .stored))
      }
    }

    // 3. The answers of the keys claimed now and the entries of the live log and the geofence queue, in one
    // statement under the live log's lock, held from here to the commit.
    let answered = claimed.map(\.key).filter { mine.contains($0) }
    var pending = appendInCommitOrder(
      live: live, evaluated: evaluated,
      answers: answered.map { (user: $0.user, key: $0.key, body: answers[$0]?.receipt.commonFormJSON ?? Data()) },
      now: batches.first?.now ?? 0, on: connection, logger: logger)
    // 4. The live-only rule, once the queue holds this commit's fixes (they stay until evaluated).
    if !liveOnly.isEmpty { pending.append(connection.query(keepLastPositionQuery(of: liveOnly), logger: logger)) }
    return PostgresTransactionEnd((receipts, resolutions), pending: pending)
  }

  /// Whether `error` is an insert that found no partition for its row (23514 on the partitioned table).
  static func isMissingPartition(_ error: any Error) -> Bool {
    guard sqlState(error) == "23514", let error = error as? PSQLError else { return false }
    return error.serverInfo?[.message]?.contains("no partition") == true
  }

  /// A stored fix upload's answer.
  private static func receipt(_ body: Data) -> FixReceipt? {
    FixReceipt.decodeCommonForm(body) ?? (try? JSONDecoder().decode(FixReceipt.self, from: body))
  }

  /// Creates the monthly partitions of `fixes` that `timestamps` fall in and this process has not seen yet. Nodes
  /// creating the same month at once take turns (an advisory lock), and a later one finds the month attached.
  ///
  /// The partition is made apart and then attached (``FixPartitions/Month/attachSQL``): `CREATE TABLE … PARTITION
  /// OF fixes` takes an ACCESS EXCLUSIVE lock on `fixes`, which waits for every read of it under way (a live-log
  /// read, a long history query) while every later insert and read queues behind it — the first fix of a new month
  /// (or an import of an old one) stalled a node's ingest past its deadlines. `ATTACH PARTITION` takes SHARE UPDATE
  /// EXCLUSIVE, which reads and inserts don't conflict with.
  func ensurePartitions(for timestamps: [Int64]) async throws {
    let missing = fixPartitions.missing(FixPartitions.Month.of(timestamps))
    for month in missing.sorted() {
      try await transaction { connection in
        _ = try await connection.query("SELECT pg_advisory_xact_lock(\(FixPartitions.lock))", logger: self.logger)
          .collect()
        let attached =
          try await connection.query(
            "SELECT coalesce((SELECT relispartition FROM pg_class WHERE oid = to_regclass(\(month.name))), false)",
            logger: self.logger
          ).collect().first?.decode(Bool.self) ?? false
        guard !attached else { return }
        for statement in month.attachSQL {
          _ = try await connection.query(PostgresQuery(unsafeSQL: statement), logger: self.logger).collect()
        }
      }
      fixPartitions.insert(month)
    }
  }
}

/// A user's idempotency key.
private struct IdempotencyKey: Hashable, Comparable {
  let user: String
  let key: String
  static func < (lhs: Self, rhs: Self) -> Bool { (lhs.user, lhs.key) < (rhs.user, rhs.key) }
}

/// A stored fix's key.
private struct FixKey: Hashable {
  let user: String
  let device: String
  let timestamp: Int64
}

/// The months of `fixes` known to have their partition.
final class FixPartitions: Sendable {
  /// A UTC month: the partition `fixes_yYYYYmMM` holds the timestamps from its first millisecond to the next month's.
  struct Month: Hashable, Comparable, Sendable {
    let year: Int64
    let month: Int64

    /// The month `timestamp` (UTC milliseconds) falls in.
    init(_ timestamp: Int64) {
      let components = Self.calendar.dateComponents([.year, .month], from: Timestamp.date(timestamp))
      year = Int64(components.year ?? 1970)
      month = Int64(components.month ?? 1)
    }

    init(year: Int64, month: Int64) {
      self.year = year
      self.month = month
    }

    /// Its first millisecond.
    var start: Int64 {
      let first = Self.calendar.date(from: DateComponents(year: Int(year), month: Int(month), day: 1))
      return first.map(Timestamp.milliseconds) ?? 0
    }
    /// The next month's first millisecond.
    var end: Int64 { (month == 12 ? Month(year: year + 1, month: 1) : Month(year: year, month: month + 1)).start }
    /// The partition's name.
    var name: String {
      let digits = String(year)
      return "fixes_y" + String(repeating: "0", count: max(0, 4 - digits.count)) + digits + "m"
        + (month < 10 ? "0" : "") + String(month)
    }
    /// The statements that make the partition as a table of its own, with a check of its range (so that attaching
    /// it needs no scan), and attach it to `fixes`, which creates its indexes, key and foreign key.
    var attachSQL: [String] {
      [
        """
        CREATE TABLE "\(name)" (LIKE fixes INCLUDING DEFAULTS INCLUDING GENERATED INCLUDING CONSTRAINTS,
          CONSTRAINT "\(name)_range" CHECK (timestamp >= \(start) AND timestamp < \(end)))
        """,
        "ALTER TABLE fixes ATTACH PARTITION \"\(name)\" FOR VALUES FROM (\(start)) TO (\(end))",
      ]
    }

    /// The months of `timestamps` (each day's month computed once).
    static func of(_ timestamps: [Int64]) -> Set<Month> { of(days: Set(timestamps.map(Timestamp.utcDay))) }

    /// The months of `days` (UTC days since 1970-01-01).
    static func of(days: Set<Int64>) -> Set<Month> { Set(days.map { Month($0 * 86_400_000) }) }

    /// The proleptic Gregorian calendar in UTC.
    private static let calendar: Calendar = {
      var calendar = Calendar(identifier: .gregorian)
      calendar.timeZone = TimeZone(secondsFromGMT: 0) ?? calendar.timeZone
      return calendar
    }()

    static func < (lhs: Month, rhs: Month) -> Bool { (lhs.year, lhs.month) < (rhs.year, rhs.month) }
  }

  /// The advisory lock partition creators take.
  static let lock: Int64 = 0x4d65_7269_6469_6670

  private let known = Mutex(Set<Month>())

  /// Those of `months` not known to exist.
  func missing(_ months: Set<Month>) -> [Month] { known.withLock { Array(months.subtracting($0)) } }

  /// Records that `month`'s partition exists.
  func insert(_ month: Month) { _ = known.withLock { $0.insert(month) } }

  /// Forgets every month (after partitions were dropped: the next insert checks again).
  func removeAll() { known.withLock { $0.removeAll() } }
}

/// The calls to ``PostgresStore/insertFixes(_:now:completion:)`` waiting for a commit, and how many commit loops run
/// (each its own transaction at a time, on its own connection).
final class FixCommitQueue: Sendable {
  /// One call.
  struct Request: Sendable {
    let batches: [FixInsertBatch]
    let rows: [[FixRow]]
    let now: Int64
    let completion: @Sendable (Result<[FixReceipt], any Error>) -> Void

    /// How many fixes it stores at most.
    var fixes: Int { rows.reduce(0) { $0 + $1.count } }
  }

  private struct State {
    var pending: [Request] = []
    var loops = 0
    var idleWaiters: [CheckedContinuation<Void, Never>] = []
  }

  private let state = Mutex(State())

  /// Queues `request`; returns the requests to commit now when fewer than `limit` loops run (the caller starts one).
  func submit(_ request: Request, limit: Int) -> [Request]? {
    state.withLock { state in
      guard state.loops < max(1, limit) else {
        state.pending.append(request)
        return nil
      }
      state.loops += 1
      return [request]
    }
  }

  /// After a loop's commit: the oldest requests queued meanwhile, as many as ``GroupCommitSize`` lets one commit
  /// take, or nil when none (the loop ends).
  func next() -> [Request]? {
    let (next, waiters): ([Request]?, [CheckedContinuation<Void, Never>]) = state.withLock { state in
      if !state.pending.isEmpty {
        let taken = GroupCommitSize.taken(from: state.pending) { $0.fixes }
        defer { state.pending.removeFirst(taken) }
        return (Array(state.pending.prefix(taken)), [])
      }
      state.loops -= 1
      guard state.loops == 0 else { return (nil, []) }
      defer { state.idleWaiters.removeAll() }
      return (nil, state.idleWaiters)
    }
    for waiter in waiters { waiter.resume() }
    return next
  }

  /// Returns once no commit runs.
  func drain() async {
    await withCheckedContinuation { waiter in
      let idle = state.withLock { state in
        if state.loops > 0 { state.idleWaiters.append(waiter) }
        return state.loops == 0
      }
      if idle { waiter.resume() }
    }
  }
}

/// A fix as a row of `fixes`, with its geohash columns computed once.
struct FixRow: Sendable {
  let fix: LocationFix
  let cells: [String]

  init(_ fix: LocationFix, device: DeviceID) throws {
    var fix = fix
    fix.deviceID = device
    self.fix = fix
    cells = fix.geohashes.all
  }

  /// The first statement of a group commit (``PostgresStore/insertFixes(_:now:completion:)``), in this order: locks
  /// those of `owners` that are live only (their rows, to the end of the transaction, in id order), claims the
  /// idempotency keys `claims` (a key another transaction holds waits for it to end), then inserts `rows` — those
  /// without a key, and those whose batch's key was claimed now — skipping the fixes stored already. Each row it
  /// answers is `('u', owner)` for a live-only owner, `('k', user, key)` for a key claimed now or
  /// `('f', user, device, timestamp)` for a fix inserted.
  static func claimAndInsert(
    owners: [String], claims: [(user: String, key: String, requestHash: String, now: Int64)],
    rows: [(row: FixRow, batch: FixInsertBatch, now: Int64)]
  ) throws -> ClaimAndInsert {
    var bindings = PostgresBindings(capacity: 30)
    bindings.append(owners)
    bindings.append(claims.map(\.user))
    bindings.append(claims.map(\.key))
    bindings.append(claims.map(\.requestHash))
    bindings.append(claims.map(\.now))
    bindings.append(rows.map(\.batch.userID.rawValue))
    bindings.append(rows.map(\.batch.deviceID.rawValue))
    bindings.append(rows.map(\.row.fix.timestamp))
    bindings.append(rows.map(\.row.fix.latitude))
    bindings.append(rows.map(\.row.fix.longitude))
    try bindings.appendNullable(rows.map(\.row.fix.horizontalAccuracy))
    try bindings.appendNullable(rows.map(\.row.fix.verticalAccuracy))
    try bindings.appendNullable(rows.map(\.row.fix.altitude))
    try bindings.appendNullable(rows.map(\.row.fix.speed))
    try bindings.appendNullable(rows.map(\.row.fix.speedAccuracy))
    try bindings.appendNullable(rows.map(\.row.fix.course))
    try bindings.appendNullable(rows.map { $0.row.fix.floor.map { Int32(clamping: $0) } })
    try bindings.appendNullable(rows.map(\.row.fix.batteryLevel))
    try bindings.appendNullable(rows.map(\.row.fix.batteryState?.rawValue))
    bindings.append(rows.map(\.row.fix.kind.rawValue))
    try bindings.appendNullable(rows.map(\.row.fix.trigger?.rawValue))
    try bindings.appendNullable(rows.map(\.row.fix.refinedBy?.deviceID?.rawValue))
    try bindings.appendNullable(rows.map(\.row.fix.refinedBy?.timestamp))
    for precision in 0..<5 { bindings.append(rows.map { $0.row.cells[precision] }) }
    bindings.append(rows.map(\.now))
    try bindings.appendNullable(rows.map(\.batch.idempotency?.key))
    return ClaimAndInsert(bindings: bindings)
  }

  /// ``claimAndInsert(owners:claims:rows:)``'s statement, prepared once per connection: its text never changes (the
  /// rows come as arrays), and parsing and planning it took PostgreSQL about 1 ms of every group commit.
  struct ClaimAndInsert: PostgresPreparedStatement {
    static let sql = claimAndInsertSQL
    typealias Row = (String, String, String?, Int64?)

    let bindings: PostgresBindings

    func makeBindings() throws -> PostgresBindings { bindings }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
  }

  /// ``claimAndInsert(owners:claims:rows:)``'s text. Each step's one-time filter reads the step before it, so they
  /// run in order whatever plan PostgreSQL picks: owners locked, keys claimed, then fixes inserted.
  static let claimAndInsertSQL = """
    WITH live_only AS (
      SELECT id FROM users WHERE id = ANY($1::text[]) AND live_only_since IS NOT NULL ORDER BY id FOR UPDATE
    ), claimed AS (
      INSERT INTO idempotency_keys(user_id, key, request_hash, status, body, created_at)
      SELECT u, k, h, 200, ''::bytea, t
      FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[]) WITH ORDINALITY AS c(u, k, h, t, n)
      WHERE (SELECT count(*) FROM live_only) >= 0
      ORDER BY n
      ON CONFLICT (user_id, key) DO NOTHING
      RETURNING user_id, key
    ), inserted AS (
      INSERT INTO fixes(\(columns))
      SELECT \(columns)
      FROM unnest(
        $6::text[], $7::text[], $8::bigint[], $9::float8[], $10::float8[], $11::float8[], $12::float8[],
        $13::float8[], $14::float8[], $15::float8[], $16::float8[], $17::integer[], $18::float8[], $19::text[],
        $20::text[], $21::text[], $22::text[], $23::bigint[], $24::text[], $25::text[], $26::text[], $27::text[],
        $28::text[], $29::bigint[], $30::text[]
      ) WITH ORDINALITY AS r(\(columns), claim, n)
      WHERE (SELECT count(*) FROM claimed) >= 0
        AND (r.claim IS NULL OR EXISTS (SELECT 1 FROM claimed c WHERE c.user_id = r.user_id AND c.key = r.claim))
      ORDER BY r.n
      ON CONFLICT (user_id, device_id, timestamp) DO NOTHING
      RETURNING user_id, device_id, timestamp
    )
    SELECT 'u', id, NULL::text, NULL::bigint FROM live_only
    UNION ALL SELECT 'k', user_id, key, NULL FROM claimed
    UNION ALL SELECT 'f', user_id, device_id, timestamp FROM inserted
    """

  /// The columns of `fixes` a group commit writes, in the order of ``claimAndInsert(owners:claims:rows:)``'s arrays.
  private static let columns = """
    user_id, device_id, timestamp, latitude, longitude, horizontal_accuracy, vertical_accuracy, altitude, speed, \
    speed_accuracy, course, floor, battery_level, battery_state, kind, trigger, refined_by_device, \
    refined_by_timestamp, geohash2, geohash3, geohash4, geohash5, geohash6, received_at
    """
}
