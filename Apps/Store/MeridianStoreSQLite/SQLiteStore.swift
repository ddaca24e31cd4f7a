import DomainKit
import Foundation
import GRDB
import GeoKit
import MeridianAPI
import MeridianStore
import PersistenceKit

/// ``MeridianStore`` on one SQLite file through PersistenceKit (one GRDB pool, WAL, migrations).
public struct SQLiteStore: MeridianStore {
  /// The database.
  public let database: SQLiteDatabase
  /// What every request looks up, remembered per database pool (so every store value on one file shares it).
  let caches: StoreCaches
  /// The time the store stamps rows with itself (a token's revocation, a group's change) and its caches' lifetimes
  /// run on, UTC milliseconds: the system clock unless a test gives its own.
  public let now: @Sendable () -> Int64
  /// Bearer token hash → its user and expiry.
  var tokens: LookupCache<String, (user: UserID, expiresAt: Int64)> { caches.tokens }
  /// Device → owner.
  var devices: LookupCache<DeviceID, UserID> { caches.devices }

  /// Where the server and `meridian-admin` keep the database unless told otherwise.
  public static let defaultPath = "./data/meridian.sqlite"

  /// Opens (creating directories as needed) and migrates the database at `path`; the store reads the time from
  /// `now`.
  public static func open(at path: String, now: @escaping @Sendable () -> Int64 = Timestamp.systemClock) throws
    -> SQLiteStore
  {
    let directory = URL(fileURLWithPath: path).deletingLastPathComponent()
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    // Checkpoints run on a connection of their own: a group commit never waits for one's copying and syncing.
    let database = try SQLiteDatabase.open(
      at: path, options: DatabaseOptions(label: "meridian", checkpoints: .background(interval: .milliseconds(50))))
    return try SQLiteStore(migrating: database, now: now)
  }

  /// Migrates `database` and wraps it; the store reads the time from `now`.
  public init(migrating database: SQLiteDatabase, now: @escaping @Sendable () -> Int64 = Timestamp.systemClock) throws {
    try database.migrate(SQLiteSchema.migrator)
    self.now = now
    self.database = database.translatingErrors(Self.unavailable)
    caches = StoreCaches.shared(for: database.writer, path: database.path)
  }

  /// `error` as ``StoreUnavailableError`` when the storage failed (the disk is full, a read or write of the file
  /// failed: ``SQLiteDatabase/isStorageFailure(_:)``), the server's 503 with `Retry-After`; any other error as it is.
  static func unavailable(_ error: any Error) -> any Error {
    guard SQLiteDatabase.isStorageFailure(error) else { return error }
    return StoreUnavailableError(reason: "SQLite storage: \(error)")
  }

  public func checkHealth() async throws {
    _ = try await database.read { db in try Int.fetchOne(db, sql: "SELECT 1") }
  }

  /// nil: one server process owns a SQLite file, so it keeps its limits in memory.
  public var sharedLimits: (any LimitStore)? { nil }

  // MARK: Accounts

  public func createAccount(id: UserID, credential: Credential, passwordHash: String?, now: Int64) async throws
    -> Account?
  {
    try await database.write { db in
      let (kind, value) = Self.parts(credential)
      if try Self.exists(db, "SELECT 1 FROM credentials WHERE kind = ? AND value = ?", [kind, value]) { return nil }
      try Self.insertAccount(id, phone: kind == "phone" ? value : nil, db: db, now: now)
      try db.execute(
        sql: "INSERT INTO credentials(kind, value, user_id, password_hash, created_at) VALUES (?, ?, ?, ?, ?)",
        arguments: [kind, value, id.rawValue, passwordHash, now])
      return Account(id: id, createdAt: now, credentials: [credential])
    }
  }

  /// Inserts a new account's rows — the user, its empty profile, its standard groups and default sharing state —
  /// for every way of creating one (a credential, an OpenID subject).
  static func insertAccount(_ id: UserID, phone: String?, db: Database, now: Int64) throws {
    try db.execute(sql: "INSERT INTO users(id, created_at) VALUES (?, ?)", arguments: [id.rawValue, now])
    try db.execute(
      sql: "INSERT INTO profiles(user_id, phone, audience) VALUES (?, ?, '{}')", arguments: [id.rawValue, phone])
    for group in Group.standardGroups(for: id) { try Self.save(group, db: db, now: now) }
    try db.execute(
      sql: "INSERT INTO sharing(user_id, state) VALUES (?, ?)",
      arguments: [id.rawValue, try JSONColumn.encode(SharingState())])
  }

  public func account(for credential: Credential) async throws -> (account: Account, passwordHash: String?)? {
    let (kind, value) = Self.parts(credential)
    let found = try await database.read { db -> (Account, String?)? in
      guard
        let row = try Row.fetchOne(
          db, sql: "SELECT user_id, password_hash FROM credentials WHERE kind = ? AND value = ?",
          arguments: [kind, value]),
        let account = try Self.account(db, UserID(row["user_id"]))
      else { return nil }
      return (account, row["password_hash"])
    }
    return found.map { (account: $0.0, passwordHash: $0.1) }
  }

  public func account(_ id: UserID) async throws -> Account? {
    try await database.read { db in try Self.account(db, id) }
  }

  // MARK: Tokens

  public func insertToken(hash: String, userID: UserID, createdAt: Int64, expiresAt: Int64) async throws {
    try await database.write { db in
      try db.execute(
        sql: "INSERT INTO tokens(hash, user_id, created_at, expires_at) VALUES (?, ?, ?, ?)",
        arguments: [hash, userID.rawValue, createdAt, expiresAt])
    }
  }

  public func user(forTokenHash hash: String, now: Int64) async throws -> UserID? {
    caches.dropIfRevokedElsewhere()
    let found = try await tokens.value(for: hash, now: now) {
      try await database.read { db in
        try Row.fetchOne(
          db,
          sql: """
            SELECT t.user_id, t.expires_at FROM tokens t JOIN users u ON u.id = t.user_id
            WHERE t.hash = ? AND t.revoked_at IS NULL AND t.expires_at > ? AND u.disabled = 0
            """,
          arguments: [hash, now]
        ).map { row in (user: UserID(row[0] as String), expiresAt: row[1] as Int64) }
      }
    }
    guard let found, found.expiresAt > now else { return nil }
    return found.user
  }

  public func revokeToken(hash: String) async throws {
    // Dropped before, so nothing answers from the cache meanwhile, and after: a lookup that read the token before
    // the update committed must not keep it alive (the cache refuses to store a load that overlapped a drop).
    tokens.remove(hash)
    defer { tokens.remove(hash) }
    let revoked = try await database.write { db in
      try db.execute(
        sql: "UPDATE tokens SET revoked_at = ? WHERE hash = ? AND revoked_at IS NULL",
        arguments: [now(), hash])
      return db.changesCount
    }
    if revoked > 0 { caches.announceRevocation() }
  }

  // MARK: One-time codes

  public func replaceOTP(phone: String, codeHash: String, expiresAt: Int64, maxAttempts: Int, now: Int64)
    async throws
  {
    try await database.write { db in
      try db.execute(
        sql: """
          INSERT OR REPLACE INTO otp_codes(phone, code_hash, expires_at, attempts_left, created_at)
          VALUES (?, ?, ?, ?, ?)
          """,
        arguments: [phone, codeHash, expiresAt, maxAttempts, now])
    }
  }

  // MARK: Profiles

  public func profile(_ userID: UserID) async throws -> Profile? {
    try await database.read { db in try Self.profile(db, userID) }
  }

  public func saveProfile(_ profile: Profile) async throws {
    let audience = try JSONColumn.encode(
      Dictionary(uniqueKeysWithValues: profile.audience.map { ($0.key.rawValue, $0.value.rawValue) }))
    try await database.write { db in
      try db.execute(
        sql: """
          UPDATE profiles SET avatar = ?, full_name = ?, phone = ?, birthday = ?, gender = ?, status = ?, audience = ?
          WHERE user_id = ?
          """,
        arguments: [
          profile.avatar, profile.fullName, profile.phone, profile.birthday?.description, profile.gender?.rawValue,
          profile.status, audience, profile.userID.rawValue,
        ])
    }
  }

  public func searchProfiles(text: String, phone: String?, excluding: UserID, limit: Int) async throws -> [Profile] {
    let pattern =
      "%"
      + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "%", with: "\\%")
      .replacingOccurrences(of: "_", with: "\\_") + "%"
    return try await database.read { db in
      let ids = try String.fetchAll(
        db,
        sql: """
          SELECT user_id FROM profiles
          WHERE user_id <> ? AND (full_name LIKE ? ESCAPE '\\' OR (? IS NOT NULL AND phone = ?))
          ORDER BY full_name LIMIT ?
          """,
        arguments: [excluding.rawValue, pattern, phone, phone, limit])
      return try ids.compactMap { try Self.profile(db, UserID($0)) }
    }
  }

  // MARK: Groups and sharing

  public func groups(owner: UserID) async throws -> [Group] {
    try await database.read { db in try Self.groups(db, owner: owner) }
  }

  public func group(_ id: GroupID) async throws -> Group? {
    try await database.read { db in
      guard let row = try Row.fetchOne(db, sql: "SELECT * FROM groups WHERE id = ?", arguments: [id.rawValue])
      else { return nil }
      return try Self.group(db, row)
    }
  }

  public func saveGroup(_ group: Group) async throws {
    let now = self.now()
    try await database.write { db in try Self.save(group, db: db, now: now) }
  }

  public func deleteGroup(_ id: GroupID) async throws {
    try await database.write { db in
      try db.execute(sql: "DELETE FROM groups WHERE id = ?", arguments: [id.rawValue])
    }
  }

  public func sharing(owner: UserID) async throws -> SharingState {
    try await database.read { db in try Self.sharing(db, owner) }
  }

  public func saveSharing(_ state: SharingState, owner: UserID) async throws {
    let json = try JSONColumn.encode(state)
    try await database.write { db in
      try db.execute(
        sql: "INSERT OR REPLACE INTO sharing(user_id, state) VALUES (?, ?)", arguments: [owner.rawValue, json])
    }
  }

  public func privacySettings(owner: UserID) async throws -> PrivacySettings? {
    try await database.read { db in
      guard let profile = try Self.profile(db, owner) else { return nil }
      return PrivacySettings(
        owner: owner, groups: try Self.groups(db, owner: owner), fieldAudience: profile.audience,
        sharing: try Self.sharing(db, owner), zones: try Self.privacyZones(db, owner))
    }
  }

  public func sharingCandidates(viewer: UserID) async throws -> [UserID] {
    // Direct grants live in the sharing state's JSON; the id as a JSON string finds them (canSee checks after).
    let quoted = try JSONColumn.encode(viewer)
    return try await database.read { db in
      try String.fetchAll(
        db,
        sql: """
          SELECT g.owner_id FROM group_members m JOIN groups g ON g.id = m.group_id
          WHERE m.user_id = ? AND g.kind <> 'blacklist' AND g.owner_id <> ?
          UNION
          SELECT user_id FROM sharing WHERE instr(state, ?) > 0 AND user_id <> ?
          ORDER BY 1
          """,
        arguments: [viewer.rawValue, viewer.rawValue, quoted, viewer.rawValue]
      ).map { UserID($0) }
    }
  }

  // MARK: Devices and fixes

  public func deviceOwner(_ device: DeviceID) async throws -> UserID? {
    try await database.read { db in
      try String.fetchOne(db, sql: "SELECT owner_id FROM devices WHERE id = ?", arguments: [device.rawValue])
        .map { UserID($0) }
    }
  }

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
    database.write({ db in try Self.insertFixes(db, batches, rows: rows, now: now) }, completion: completion)
  }

  /// One group commit's statements, inside its transaction.
  private static func insertFixes(_ db: Database, _ batches: [FixInsertBatch], rows: [[FixRow]], now: Int64) throws
    -> [FixReceipt]
  {
    var receipts: [FixReceipt] = []
    receipts.reserveCapacity(batches.count)
    for (batch, batchRows) in zip(batches, rows) {
      // A key used before: the stored answer for the same request, or a conflict; nothing is inserted.
      if let claim = batch.idempotency, let stored = try storedResponse(db, userID: batch.userID, key: claim.key) {
        let body = stored.body
        if claim.matches(stored.requestHash),
          let receipt = FixReceipt.decodeCommonForm(body) ?? (try? JSONDecoder().decode(FixReceipt.self, from: body))
        {
          claim.resolve(.replayed)
          receipts.append(receipt)
        } else {
          claim.resolve(.conflict)
          receipts.append(FixReceipt(accepted: 0, duplicates: 0))
        }
        continue
      }
      var inserted: [FixRow] = []
      try db.batchInsert(FixRow.insertSQL) { insert in
        for row in batchRows {
          row.bind(to: &insert, userID: batch.userID, deviceID: batch.deviceID, receivedAt: now)
          try insert.insert()
          if db.changesCount > 0 { inserted.append(row) }  // 0: a duplicate, ignored
        }
      }
      // Counted before anything below may delete them (live only), as the delete trigger takes them out again.
      try countInHistoryCells(db, user: batch.userID, inserted)
      let accepted = inserted.count
      let receipt = FixReceipt(accepted: accepted, duplicates: batchRows.count - accepted)
      receipts.append(receipt)
      if accepted > 0, batch.isEvaluatedByGeofences {
        try queueForGeofences(db, user: batch.userID, lastFix: db.lastInsertedRowID, count: accepted, now: now)
      }
      if accepted > 0, try isLiveOnly(db, batch.userID) { _ = try keepLastPosition(db, of: batch.userID) }
      if let claim = batch.idempotency {
        let answer = StoredResponse(requestHash: claim.requestHash, status: 200, body: receipt.commonFormJSON)
        try saveResponse(db, answer, userID: batch.userID, key: claim.key, now: now)
        claim.resolve(.stored)
      }
    }
    return receipts
  }

  public func lastFix(owner: UserID, notAfter: Int64) async throws -> LocationFix? {
    try await database.read { db in
      try Row.fetchOne(
        db,
        sql: "SELECT * FROM fixes WHERE user_id = ? AND timestamp <= ? ORDER BY timestamp DESC, id DESC LIMIT 1",
        arguments: [owner.rawValue, notAfter]
      ).map(FixRow.fix)
    }
  }

  public func history(owner: UserID, filter: HistoryFilter, limit: Int, before: HistoryCursor?) async throws
    -> [(fix: LocationFix, cursor: HistoryCursor)]
  {
    var (conditions, arguments) = Self.conditions(owner: owner, filter: filter)
    if let before {
      conditions.append("(timestamp < ? OR (timestamp = ? AND id < ?))")
      arguments += [before.timestamp.databaseValue, before.timestamp.databaseValue, before.row.databaseValue]
    }
    let sql =
      "SELECT * FROM fixes WHERE \(conditions.joined(separator: " AND ")) ORDER BY timestamp DESC, id DESC LIMIT ?"
    arguments.append(limit.databaseValue)
    let values = arguments
    let result = try await database.read { db in
      try Row.fetchAll(db, sql: sql, arguments: StatementArguments(values)).map { row in
        (try FixRow.fix(row), HistoryCursor(timestamp: row["timestamp"], row: row["id"]))
      }
    }
    return result.map { (fix: $0.0, cursor: $0.1) }
  }

  public func deleteHistory(owner: UserID, filter: HistoryFilter) async throws -> Int {
    let (conditions, arguments) = Self.conditions(owner: owner, filter: filter)
    let sql = "DELETE FROM fixes WHERE \(conditions.joined(separator: " AND "))"
    return try await database.write { db in
      try db.execute(sql: sql, arguments: StatementArguments(arguments))
      return db.changesCount
    }
  }

  public func clusters(owner: UserID, filter: HistoryFilter, precision: Int, box: BoundingBox?) async throws
    -> [HistoryCluster]
  {
    guard (2...6).contains(precision) else { return [] }
    var (conditions, arguments) = Self.conditions(owner: owner, filter: filter)
    if let box { Self.within(box, &conditions, &arguments) }
    let column = "geohash\(precision)"
    let sql = """
      SELECT \(column) AS cell, COUNT(*) AS n, AVG(latitude) AS lat, AVG(longitude) AS lon FROM fixes
      WHERE \(conditions.joined(separator: " AND ")) GROUP BY \(column) ORDER BY n DESC, cell
      """
    let values = arguments
    return try await database.read { db in
      try Row.fetchAll(db, sql: sql, arguments: StatementArguments(values)).map { row in
        HistoryCluster(geohash: row["cell"], count: row["n"], latitude: row["lat"], longitude: row["lon"])
      }
    }
  }

  public func fixPositions(owner: UserID, filter: HistoryFilter, box: BoundingBox, limit: Int) async throws
    -> [LocationFix]
  {
    let ranges = HistoryCells.ranges(covering: box)
    var arguments = ranges.flatMap { [$0.lower.databaseValue, $0.upper.databaseValue] }
    var (conditions, filters) = Self.conditions(owner: owner, filter: filter)
    Self.within(box, &conditions, &filters)
    // The box's fixes through the (user_id, geohash6) index, a range search per range (the ranges joined first).
    let sql = """
      SELECT f.device_id, f.timestamp, f.latitude, f.longitude
      FROM (VALUES \(ranges.map { _ in "(?, ?)" }.joined(separator: ", "))) r
      CROSS JOIN fixes f INDEXED BY fixes_user_geohash6 ON f.geohash6 >= r.column1 AND f.geohash6 < r.column2
      WHERE \(conditions.joined(separator: " AND ")) ORDER BY f.timestamp, f.id LIMIT ?
      """
    arguments += filters
    arguments.append(max(0, limit).databaseValue)
    let values = arguments
    return try await database.read { db in
      try Row.fetchAll(db, sql: sql, arguments: StatementArguments(values)).map { row in
        try LocationFix(deviceID: DeviceID(row[0] as String), timestamp: row[1], latitude: row[2], longitude: row[3])
      }
    }
  }

  /// Adds the conditions of fixes inside `box`: one longitude range per side of the antimeridian.
  private static func within(_ box: BoundingBox, _ conditions: inout [String], _ arguments: inout [DatabaseValue]) {
    let parts = box.antimeridianSplit
    conditions.append("latitude BETWEEN ? AND ?")
    arguments += [box.south.databaseValue, box.north.databaseValue]
    conditions.append("(" + parts.map { _ in "longitude BETWEEN ? AND ?" }.joined(separator: " OR ") + ")")
    for part in parts { arguments += [part.west.databaseValue, part.east.databaseValue] }
  }

  // MARK: Idempotency

  public func idempotentResponse(userID: UserID, key: String) async throws -> StoredResponse? {
    try await database.read { db in try Self.storedResponse(db, userID: userID, key: key) }
  }

  public func saveIdempotentResponse(_ response: StoredResponse, userID: UserID, key: String, now: Int64)
    async throws
  {
    try await database.write { db in try Self.saveResponse(db, response, userID: userID, key: key, now: now) }
  }

  /// The answer stored with the user's `key`, if any (the routes' lookup, and the group commit's).
  private static func storedResponse(_ db: Database, userID: UserID, key: String) throws -> StoredResponse? {
    try Row.fetchOne(
      db.cachedStatement(sql: "SELECT request_hash, status, body FROM idempotency_keys WHERE user_id = ? AND key = ?"),
      arguments: [userID.rawValue, key]
    ).map { row in StoredResponse(requestHash: row["request_hash"], status: row["status"], body: row["body"]) }
  }

  /// Stores `response` with the user's `key` unless one is stored already (the routes' and the group commit's).
  private static func saveResponse(_ db: Database, _ response: StoredResponse, userID: UserID, key: String, now: Int64)
    throws
  {
    try db.batchInsert(saveResponseSQL) { insert in
      insert.bind(userID.rawValue, at: 1)
      insert.bind(key, at: 2)
      insert.bind(response.requestHash, at: 3)
      insert.bind(response.status, at: 4)
      insert.bind(blob: response.body, at: 5)
      insert.bind(now, at: 6)
      try insert.insert()
    }
  }

  private static let saveResponseSQL = BatchInsertSQL(
    into: "idempotency_keys", columns: ["user_id", "key", "request_hash", "status", "body", "created_at"],
    onConflict: .ignore)

  // MARK: Helpers

  private static func parts(_ credential: Credential) -> (String, String) {
    switch credential {
    case .phone(let value): ("phone", value)
    case .email(let value): ("email", value)
    }
  }

  private static func exists(_ db: Database, _ sql: String, _ arguments: StatementArguments) throws -> Bool {
    try Row.fetchOne(db, sql: sql, arguments: arguments) != nil
  }

  private static func account(_ db: Database, _ id: UserID) throws -> Account? {
    guard
      let createdAt = try Int64.fetchOne(db, sql: "SELECT created_at FROM users WHERE id = ?", arguments: [id.rawValue])
    else { return nil }
    let credentials = try Row.fetchAll(
      db, sql: "SELECT kind, value FROM credentials WHERE user_id = ? ORDER BY created_at, kind",
      arguments: [id.rawValue]
    ).compactMap { row -> Credential? in
      let kind: String = row["kind"]
      let value: String = row["value"]
      return kind == "phone" ? .phone(value) : kind == "email" ? .email(value) : nil
    }
    return Account(id: id, createdAt: createdAt, credentials: credentials)
  }

  private static func profile(_ db: Database, _ userID: UserID) throws -> Profile? {
    guard let row = try Row.fetchOne(db, sql: "SELECT * FROM profiles WHERE user_id = ?", arguments: [userID.rawValue])
    else { return nil }
    let rawAudience = try JSONColumn.decode([String: String].self, from: row["audience"])
    var audience: [ProfileField: FieldAudience] = [:]
    for (key, value) in rawAudience {
      if let field = ProfileField(rawValue: key), let level = FieldAudience(rawValue: value) { audience[field] = level }
    }
    return Profile(
      userID: userID, avatar: row["avatar"], fullName: row["full_name"], phone: row["phone"],
      birthday: (row["birthday"] as String?).flatMap { CalendarDay($0) },
      gender: (row["gender"] as String?).flatMap(Gender.init(rawValue:)),
      status: row["status"], audience: audience)
  }

  private static func groups(_ db: Database, owner: UserID) throws -> [Group] {
    try Row.fetchAll(
      db,
      sql: """
        SELECT * FROM groups WHERE owner_id = ?
        ORDER BY CASE kind WHEN 'family' THEN 0 WHEN 'friends' THEN 1 WHEN 'blacklist' THEN 2 ELSE 3 END, name, id
        """,
      arguments: [owner.rawValue]
    ).compactMap { try group(db, $0) }
  }

  private static func group(_ db: Database, _ row: Row) throws -> Group? {
    let id = GroupID(row["id"])
    let owner = UserID(row["owner_id"])
    let kindName: String = row["kind"]
    let visibility = try JSONColumn.decode(GroupVisibility.self, from: row["visibility"])
    let members = Set(
      try String.fetchAll(db, sql: "SELECT user_id FROM group_members WHERE group_id = ?", arguments: [id.rawValue])
        .map { UserID($0) })
    guard let kind = GroupKind(rawValue: kindName) else { return nil }
    if kind.isStandard {
      guard var group = Group.standardGroups(for: owner).first(where: { $0.kind == kind }) else { return nil }
      group.id = id
      group.members = members
      group.visibility = visibility
      return group
    }
    return Group(stored: id, ownerID: owner, name: row["name"], members: members, visibility: visibility)
  }

  private static func save(_ group: Group, db: Database, now: Int64) throws {
    let visibility = try JSONColumn.encode(group.visibility)
    try db.execute(
      sql: """
        INSERT INTO groups(id, owner_id, kind, name, visibility, created_at) VALUES (?, ?, ?, ?, ?, ?)
        ON CONFLICT(id) DO UPDATE SET name = excluded.name, visibility = excluded.visibility
        """,
      arguments: [group.id.rawValue, group.ownerID.rawValue, group.kind.rawValue, group.name, visibility, now])
    try db.execute(sql: "DELETE FROM group_members WHERE group_id = ?", arguments: [group.id.rawValue])
    for member in group.members.sorted() {
      try db.execute(
        sql: "INSERT INTO group_members(group_id, user_id) VALUES (?, ?)",
        arguments: [group.id.rawValue, member.rawValue])
    }
  }

  private static func sharing(_ db: Database, _ owner: UserID) throws -> SharingState {
    guard
      let json = try String.fetchOne(
        db, sql: "SELECT state FROM sharing WHERE user_id = ?", arguments: [owner.rawValue])
    else { return SharingState() }
    return try JSONColumn.decode(SharingState.self, from: json)
  }

  private static func conditions(owner: UserID, filter: HistoryFilter) -> ([String], [DatabaseValue]) {
    var conditions = ["user_id = ?"]
    var arguments: [DatabaseValue] = [owner.rawValue.databaseValue]
    if let start = filter.range.start {
      conditions.append("timestamp >= ?")
      arguments.append(start.databaseValue)
    }
    if let end = filter.range.end {
      conditions.append("timestamp < ?")
      arguments.append(end.databaseValue)
    }
    if let accuracy = filter.minimumAccuracy {
      conditions.append("(horizontal_accuracy IS NULL OR horizontal_accuracy <= ?)")
      arguments.append(accuracy.databaseValue)
    }
    if !filter.kinds.isEmpty {
      let kinds = filter.kinds.map(\.rawValue).sorted()
      conditions.append("kind IN (\(Array(repeating: "?", count: kinds.count).joined(separator: ", ")))")
      arguments += kinds.map(\.databaseValue)
    }
    return (conditions, arguments)
  }
}

/// JSON text columns (visibility, audiences, sharing state).
enum JSONColumn {
  static func encode(_ value: some Encodable) throws -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    return String(decoding: try encoder.encode(value), as: UTF8.self)
  }

  static func decode<T: Decodable>(_ type: T.Type, from text: String) throws -> T {
    try JSONDecoder().decode(type, from: Data(text.utf8))
  }
}

/// A fix as a row of `fixes`, with its geohash columns computed once.
struct FixRow: Sendable {
  static let columns = [
    "user_id", "device_id", "timestamp", "latitude", "longitude", "horizontal_accuracy", "vertical_accuracy",
    "altitude", "speed", "speed_accuracy", "course", "floor", "battery_level", "battery_state", "kind", "trigger",
    "refined_by_device", "refined_by_timestamp", "geohash2", "geohash3", "geohash4", "geohash5", "geohash6", "geokey",
    "received_at",
  ]
  /// The insert of the group commit: new fixes, a duplicate (same device and timestamp) skipped.
  static let insertSQL = BatchInsertSQL(into: "fixes", columns: columns, onConflict: .ignore)

  let fix: LocationFix
  let cells: [String]
  let geokey: Int64

  init(_ fix: LocationFix, device: DeviceID) throws {
    var fix = fix
    fix.deviceID = device
    self.fix = fix
    cells = fix.geohashes.all
    geokey = Int64(bitPattern: try GeohashCell(fix.coordinate, bits: 62).value)
  }

  func bind(to insert: inout BatchInserter, userID: UserID, deviceID: DeviceID, receivedAt: Int64) {
    insert.bind(userID.rawValue, at: 1)
    insert.bind(deviceID.rawValue, at: 2)
    insert.bind(fix.timestamp, at: 3)
    insert.bind(fix.latitude, at: 4)
    insert.bind(fix.longitude, at: 5)
    insert.bind(fix.horizontalAccuracy, at: 6)
    insert.bind(fix.verticalAccuracy, at: 7)
    insert.bind(fix.altitude, at: 8)
    insert.bind(fix.speed, at: 9)
    insert.bind(fix.speedAccuracy, at: 10)
    insert.bind(fix.course, at: 11)
    insert.bind(fix.floor.map(Int64.init), at: 12)
    insert.bind(fix.batteryLevel, at: 13)
    insert.bind(fix.batteryState?.rawValue, at: 14)
    insert.bind(fix.kind.rawValue, at: 15)
    insert.bind(fix.trigger?.rawValue, at: 16)
    insert.bind(fix.refinedBy?.deviceID?.rawValue, at: 17)
    insert.bind(fix.refinedBy?.timestamp, at: 18)
    for (offset, cell) in cells.enumerated() { insert.bind(cell, at: Int32(19 + offset)) }
    insert.bind(geokey, at: 24)
    insert.bind(receivedAt, at: 25)
  }

  static func fix(_ row: Row) throws -> LocationFix {
    let refinedDevice: String? = row["refined_by_device"]
    let refinedTimestamp: Int64? = row["refined_by_timestamp"]
    return try LocationFix(
      deviceID: DeviceID(row["device_id"]), timestamp: row["timestamp"], latitude: row["latitude"],
      longitude: row["longitude"], horizontalAccuracy: row["horizontal_accuracy"],
      verticalAccuracy: row["vertical_accuracy"], altitude: row["altitude"], speed: row["speed"],
      speedAccuracy: row["speed_accuracy"], course: row["course"], floor: row["floor"],
      batteryLevel: row["battery_level"],
      batteryState: (row["battery_state"] as String?).flatMap(BatteryState.init(rawValue:)),
      kind: (row["kind"] as String?).flatMap(FixKind.init(rawValue:)) ?? .movement,
      trigger: (row["trigger"] as String?).flatMap(FixTrigger.init(rawValue:)),
      refinedBy: refinedTimestamp.map { FixID(deviceID: refinedDevice.map { DeviceID($0) }, timestamp: $0) })
  }
}
