import DomainKit
import Foundation
import Logging
import MeridianAPI
import MeridianStore
import NIOCore
import PostgresNIO
import Synchronization

extension PostgresStore {
  /// Stores the batches in one durable transaction (group commit): calls that arrive while a commit is in flight
  /// are stored together by the next one. A fix whose device and timestamp are stored already counts as a duplicate;
  /// an `Idempotency-Key` seen before (on any node) replays its answer or is a conflict, and inserts nothing.
  ///
  /// `completion` runs once the transaction committed (`synchronous_commit` as the server has it: on by default), on
  /// a task of the store's commit loop.
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
    guard let first = fixCommits.submit(request) else { return }
    Task { await commitLoop(first) }
  }

  /// Commits `requests`, then whatever queued meanwhile, until the queue is empty.
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
        let (receipts, resolutions) = try await transaction(timeout: commitTimeout) { connection in
          try await Self.storeFixes(batches, on: connection, self.logger)
        }
        for (claim, resolution) in resolutions { claim.resolve(resolution) }
        return receipts
      } catch let error where attempt == 1 && Self.isMissingPartition(error) {
        // A month this process saw was dropped since (retention, on any node): check every month again.
        fixPartitions.removeAll()
        attempt += 1
      }
    }
  }

  private static func storeFixes(
    _ batches: [(batch: FixInsertBatch, rows: [FixRow], now: Int64)], on connection: PostgresConnection,
    _ logger: Logger
  ) async throws -> ([FixReceipt], [(IdempotencyClaim, IdempotencyClaim.Resolution)]) {
    // 0. The live-only accounts among the batches' owners, locked first (before any fix or the live log's lock).
    let liveOnly = try await lockLiveOnly(batches.map(\.batch.userID.rawValue), on: connection, logger: logger)
    // 1. The keys: the first batch with a key claims it for the commit; a later batch with the same key follows it.
    var leaders: [IdempotencyKey: Int] = [:]
    for (index, entry) in batches.enumerated() {
      guard let claim = entry.batch.idempotency else { continue }
      let key = IdempotencyKey(user: entry.batch.userID.rawValue, key: claim.key)
      if leaders[key] == nil { leaders[key] = index }
    }
    // Sorted, so two commits claiming the same keys take their locks in the same order.
    let claimed = leaders.map { (key: $0.key, batch: $0.value) }.sorted { $0.key < $1.key }
    var stored: [IdempotencyKey: StoredResponse] = [:]
    var mine: Set<IdempotencyKey> = []
    if !claimed.isEmpty {
      // A key another transaction holds waits for it to end: then it is that one's (read below) or, if that one
      // rolled back, this one's.
      let inserted = try await connection.query(
        """
        INSERT INTO idempotency_keys(user_id, key, request_hash, status, body, created_at)
        SELECT u, k, h, 200, ''::bytea, t
        FROM unnest(\(claimed.map(\.key.user))::text[], \(claimed.map(\.key.key))::text[],
          \(claimed.map { batches[$0.batch].batch.idempotency?.requestHash ?? "" })::text[],
          \(claimed.map { batches[$0.batch].now })::bigint[]) AS c(u, k, h, t)
        ON CONFLICT (user_id, key) DO NOTHING
        RETURNING user_id, key
        """, logger: logger
      ).collect()
      for row in inserted {
        let (user, key) = try row.decode((String, String).self)
        mine.insert(IdempotencyKey(user: user, key: key))
      }
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
    }

    // 2. The fixes of the batches without a key and of those that claimed theirs now, sorted by key so that two
    // commits inserting the same fixes wait for each other in the same order (never a deadlock).
    var inserting: [(row: FixRow, batch: Int)] = []
    for (index, entry) in batches.enumerated() {
      if let claim = entry.batch.idempotency {
        let key = IdempotencyKey(user: entry.batch.userID.rawValue, key: claim.key)
        guard leaders[key] == index, mine.contains(key) else { continue }
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
    var new = Set<FixKey>()
    if !inserting.isEmpty {
      let query = try FixRow.insert(
        inserting.map { (row: $0.row, batch: batches[$0.batch].batch, now: batches[$0.batch].now) })
      for row in try await connection.query(query, logger: logger).collect() {
        let (user, device, timestamp) = try row.decode((String, String, Int64).self)
        new.insert(FixKey(user: user, device: device, timestamp: timestamp))
      }
    }

    // 3. The receipts, in order; the first batch with a fix gets the fix (a later one counts it a duplicate).
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
      live.append((batch.userID, batch.deviceID, accepted))
      if batch.isEvaluatedByGeofences { evaluated.append((batch.userID, batch.deviceID, accepted)) }
      let receipt = FixReceipt(accepted: accepted.count, duplicates: entry.rows.count - accepted.count)
      receipts.append(receipt)
      if let claim = batch.idempotency {
        answers[IdempotencyKey(user: batch.userID.rawValue, key: claim.key)] = (claim.requestHash, receipt)
        resolutions.append((claim, .stored))
      }
    }

    // 4. The answers of the keys claimed now, in the same transaction as their fixes.
    let answered = claimed.map(\.key).filter { mine.contains($0) }
    if !answered.isEmpty {
      let bodies = answered.map { ByteBuffer(data: answers[$0]?.receipt.commonFormJSON ?? Data()) }
      _ = try await connection.query(
        """
        UPDATE idempotency_keys SET body = a.body
        FROM unnest(\(answered.map(\.user))::text[], \(answered.map(\.key))::text[], \(bodies)::bytea[]) AS a(u, k, body)
        WHERE user_id = a.u AND key = a.k
        """, logger: logger
      ).collect()
    }
    // 5. The live log's entries, near the end: its lock is held from here to the commit.
    try await appendLiveEntries(live, now: batches.first?.now ?? 0, on: connection, logger: logger)
    // 6. The geofence queue's entries, under the same lock: they commit in sequence order too.
    try await queueForGeofences(evaluated, now: batches.first?.now ?? 0, on: connection, logger: logger)
    // 7. The live-only rule, once the queue holds this commit's fixes (they stay until evaluated).
    _ = try await keepLastPosition(of: liveOnly, on: connection, logger: logger)
    return (receipts, resolutions)
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
  /// creating the same month at once take turns (an advisory lock) and `IF NOT EXISTS` makes the later ones no-ops.
  func ensurePartitions(for timestamps: [Int64]) async throws {
    let missing = fixPartitions.missing(FixPartitions.Month.of(timestamps))
    for month in missing.sorted() {
      try await transaction { connection in
        _ = try await connection.query("SELECT pg_advisory_xact_lock(\(FixPartitions.lock))", logger: self.logger)
          .collect()
        _ = try await connection.query(PostgresQuery(unsafeSQL: month.createSQL), logger: self.logger).collect()
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
    /// The statement that creates the partition unless it exists.
    var createSQL: String {
      "CREATE TABLE IF NOT EXISTS \"\(name)\" PARTITION OF fixes FOR VALUES FROM (\(start)) TO (\(end))"
    }

    /// The months of `timestamps` (each day's month computed once).
    static func of(_ timestamps: [Int64]) -> Set<Month> {
      let days = Set(timestamps.map { $0 >= 0 ? $0 / 86_400_000 : ($0 + 1) / 86_400_000 - 1 })
      return Set(days.map { Month($0 * 86_400_000) })
    }

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

/// The calls to ``PostgresStore/insertFixes(_:now:completion:)`` waiting for the next commit, and whether one runs.
final class FixCommitQueue: Sendable {
  /// One call.
  struct Request: Sendable {
    let batches: [FixInsertBatch]
    let rows: [[FixRow]]
    let now: Int64
    let completion: @Sendable (Result<[FixReceipt], any Error>) -> Void
  }

  private struct State {
    var pending: [Request] = []
    var committing = false
    var idleWaiters: [CheckedContinuation<Void, Never>] = []
  }

  private let state = Mutex(State())

  /// Queues `request`; returns the requests to commit now when no commit was running (the caller runs it).
  func submit(_ request: Request) -> [Request]? {
    state.withLock { state in
      guard !state.committing else {
        state.pending.append(request)
        return nil
      }
      state.committing = true
      return [request]
    }
  }

  /// After a commit: the requests queued meanwhile, or nil when none (the loop ends).
  func next() -> [Request]? {
    let (next, waiters): ([Request]?, [CheckedContinuation<Void, Never>]) = state.withLock { state in
      if !state.pending.isEmpty {
        defer { state.pending.removeAll() }
        return (state.pending, [])
      }
      state.committing = false
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
        if state.committing { state.idleWaiters.append(waiter) }
        return !state.committing
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

  /// One multi-row insert of `rows` (an array per column, `unnest`ed), skipping those stored already; returns the
  /// keys of the rows it inserted.
  static func insert(_ rows: [(row: FixRow, batch: FixInsertBatch, now: Int64)]) throws -> PostgresQuery {
    var bindings = PostgresBindings(capacity: 24)
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
    return PostgresQuery(unsafeSQL: insertSQL, binds: bindings)
  }

  static let insertSQL = """
    INSERT INTO fixes(
      user_id, device_id, timestamp, latitude, longitude, horizontal_accuracy, vertical_accuracy, altitude, speed,
      speed_accuracy, course, floor, battery_level, battery_state, kind, trigger, refined_by_device,
      refined_by_timestamp, geohash2, geohash3, geohash4, geohash5, geohash6, received_at)
    SELECT * FROM unnest(
      $1::text[], $2::text[], $3::bigint[], $4::float8[], $5::float8[], $6::float8[], $7::float8[], $8::float8[],
      $9::float8[], $10::float8[], $11::float8[], $12::integer[], $13::float8[], $14::text[], $15::text[],
      $16::text[], $17::text[], $18::bigint[], $19::text[], $20::text[], $21::text[], $22::text[], $23::text[],
      $24::bigint[])
    ON CONFLICT (user_id, device_id, timestamp) DO NOTHING
    RETURNING user_id, device_id, timestamp
    """
}
