import DomainKit
import Foundation
import GRDB
import MeridianServer
import PersistenceKit

/// The server's database as the operators' CLI sees it: the server's own store (``SQLiteStore``) for everything
/// it offers, plus the admin-only SQL (listings, counts, deletion of a whole user, retention in batches).
public struct AdminDatabase: Sendable {
  /// The database file.
  public let path: String
  /// The database.
  public let database: SQLiteDatabase
  /// The server's store on the same pool.
  public let store: SQLiteStore

  /// Opens an existing database whose schema is up to date with this binary's migrations.
  /// - Throws: ``AdminError`` (not found when there is no file; a failure when migrations are pending or unknown).
  public static func open(path: String) throws -> AdminDatabase {
    guard FileManager.default.fileExists(atPath: path) else {
      throw AdminError.notFound(
        "There is no database at \(path). Pass --database PATH (or set MERIDIAN_DATABASE), "
          + "or create it with `meridian-admin db migrate`.")
    }
    let database = try SQLiteDatabase.open(at: path, options: DatabaseOptions(label: "meridian-admin"))
    let status = try database.migrationStatus(SQLiteSchema.migrator)
    if !status.unknown.isEmpty {
      throw AdminError.failure(
        "The database has migrations this meridian-admin doesn't know "
          + "(\(status.unknown.map(\.identifier).joined(separator: ", "))); use the admin CLI of the newer release.")
    }
    if !status.drifted.isEmpty {
      throw AdminError.failure(
        "Applied migrations changed since they ran (\(status.drifted.joined(separator: ", "))); see `db migrate --status`."
      )
    }
    if !status.pending.isEmpty {
      throw AdminError.failure(
        "\(status.pending.count) migration(s) are pending; run `meridian-admin db migrate` (or start the server) first."
      )
    }
    // Up to date: this only reads the ledger.
    return AdminDatabase(path: path, database: database, store: try SQLiteStore(migrating: database))
  }

  /// Opens an existing database file whatever its schema (for backups, checks and vacuum, which must work before
  /// a new release's migrations run).
  /// - Throws: ``AdminError`` (not found) when there is no file.
  public static func openFile(path: String) throws -> SQLiteDatabase {
    guard FileManager.default.fileExists(atPath: path) else {
      throw AdminError.notFound("There is no database at \(path). Pass --database PATH (or set MERIDIAN_DATABASE).")
    }
    return try SQLiteDatabase.open(at: path, options: DatabaseOptions(label: "meridian-admin"))
  }

  // MARK: Users

  /// Finds a user by id, email address or phone number.
  /// - Throws: ``AdminError`` (not found).
  public func resolveUser(_ text: String) async throws -> UserID {
    let trimmed = text.trimmingCharacters(in: .whitespaces)
    let phone = (try? Credential.validated(kind: .phone, value: trimmed)).flatMap { credential -> String? in
      if case .phone(let value) = credential { return value }
      return nil
    }
    let found = try await database.read { db -> String? in
      if let id = try String.fetchOne(db, sql: "SELECT id FROM users WHERE id = ?", arguments: [trimmed]) {
        return id
      }
      return try String.fetchOne(
        db,
        sql: """
          SELECT user_id FROM credentials
          WHERE (kind = 'email' AND value = ?) OR (kind = 'phone' AND (value = ? OR value = ?))
          """,
        arguments: [trimmed.lowercased(), trimmed, phone])
    }
    guard let found else {
      throw AdminError.notFound("No user '\(text)' (looked for an id, an email address and a phone number).")
    }
    return UserID(found)
  }

  /// Users with their credentials and activity, oldest account first.
  public func users(limit: Int, offset: Int) async throws -> [UserSummary] {
    try await database.read { db in
      try Row.fetchAll(
        db, sql: "\(Self.userSummarySQL) ORDER BY u.created_at, u.id LIMIT ? OFFSET ?", arguments: [limit, offset]
      ).map(Self.userSummary)
    }
  }

  /// One user's summary, devices, token counts and groups.
  public func userDetail(_ id: UserID) async throws -> UserDetail {
    let groups = try await store.groups(owner: id)
    let detail = try await database.read { db -> UserDetail? in
      guard
        let row = try Row.fetchOne(db, sql: "\(Self.userSummarySQL) WHERE u.id = ?", arguments: [id.rawValue])
      else { return nil }
      let devices = try Row.fetchAll(
        db,
        sql: """
          SELECT d.id, d.created_at, COUNT(f.id) AS fixes, MAX(f.timestamp) AS last_fix
          FROM devices d LEFT JOIN fixes f ON f.device_id = d.id
          WHERE d.owner_id = ? GROUP BY d.id ORDER BY d.created_at, d.id
          """,
        arguments: [id.rawValue]
      ).map { row in
        DeviceSummary(
          id: row["id"], createdAt: row["created_at"], fixes: row["fixes"], lastFix: row["last_fix"])
      }
      let now = Timestamp.milliseconds(Date())
      let activeTokens =
        try Int.fetchOne(
          db,
          sql: "SELECT COUNT(*) FROM tokens WHERE user_id = ? AND revoked_at IS NULL AND expires_at > ?",
          arguments: [id.rawValue, now]) ?? 0
      return UserDetail(
        user: try Self.userSummary(row), devices: devices, activeTokens: activeTokens,
        groups: groups.map(GroupSummary.init))
    }
    guard let detail else { throw AdminError.notFound("No user '\(id)'.") }
    return detail
  }

  /// Disables or enables sign-in (a disabled user's tokens stop working at once).
  /// - Returns: Whether the state changed.
  @discardableResult
  public func setDisabled(_ id: UserID, _ disabled: Bool) async throws -> Bool {
    try await database.write { db in
      try db.execute(
        sql: "UPDATE users SET disabled = ? WHERE id = ? AND disabled <> ?",
        arguments: [disabled, id.rawValue, disabled]
      )
      return db.changesCount > 0
    }
  }

  /// Deletes every row of a user: the rows of every table that refers to the user through foreign keys (directly,
  /// or through the user's groups and devices), the one-time codes of the user's phone numbers and the direct
  /// sharing grants other users gave the user. With `dryRun`, only counts.
  ///
  /// A long history would hold the write lock for as long as its `DELETE` runs and stall the server's ingest, so
  /// the account is disabled first (its tokens stop working), its fixes are deleted in batches of `batchSize` rows,
  /// and then everything else (with any fix that arrived meanwhile) goes in one transaction. If that fails, the
  /// account is still there, disabled, and running the command again finishes the job.
  /// - Returns: Rows per table (tables with no rows are left out).
  public func deleteUser(_ id: UserID, dryRun: Bool, batchSize: Int = 1000) async throws -> [TableCount] {
    var batched = 0
    if !dryRun {
      try await setDisabled(id, true)
      while true {
        let deleted = try await database.write { db in
          try db.execute(
            sql: "DELETE FROM fixes WHERE id IN (SELECT id FROM fixes WHERE user_id = ? LIMIT ?)",
            arguments: [id.rawValue, max(1, batchSize)])
          return db.changesCount
        }
        if deleted == 0 { break }
        batched += deleted
        await Task.yield()
      }
    }
    let alreadyDeleted = batched
    let body: @Sendable (Database) throws -> [TableCount] = { db in
      let plan = try Self.deletionPlan(db)
      let arguments: StatementArguments = ["user": id.rawValue]
      var counts: [TableCount] = []
      if try db.tableExists("otp_codes"), try db.tableExists("credentials") {
        let condition = "phone IN (SELECT value FROM credentials WHERE user_id = :user AND kind = 'phone')"
        let count = try Self.apply(db, table: "otp_codes", condition: condition, arguments: arguments, dryRun: dryRun)
        if count > 0 { counts.append(TableCount(table: "otp_codes", rows: count)) }
      }
      if try db.tableExists("sharing") {
        let count = try Self.removeGrants(db, to: id, dryRun: dryRun)
        if count > 0 { counts.append(TableCount(table: "sharing (grants to the user)", rows: count)) }
      }
      for step in plan {
        var count = try Self.apply(
          db, table: step.table, condition: step.condition, arguments: arguments, dryRun: dryRun)
        if step.table == "fixes" { count += alreadyDeleted }
        if count > 0 { counts.append(TableCount(table: step.table, rows: count)) }
      }
      return counts
    }
    return dryRun ? try await database.read(body) : try await database.write(body)
  }

  /// Every table that refers to `users`, with the condition that selects the user's rows (`:user` is the id),
  /// children before parents, `users` last.
  static func deletionPlan(_ db: Database) throws -> [(table: String, condition: String)] {
    let tables = try String.fetchAll(
      db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
    var keys: [String: [(column: String, parent: String, parentColumn: String)]] = [:]
    for table in tables {
      let rows = try Row.fetchAll(db, sql: "PRAGMA foreign_key_list(\(table.quotedDatabaseIdentifier))")
      let grouped = Dictionary(grouping: rows) { $0["id"] as Int }
      for (_, columns) in grouped where columns.count == 1 {
        let row = columns[0]
        let parent: String = row["table"]
        var target: String? = row["to"]
        if target == nil {
          let columns = try Row.fetchAll(db, sql: "PRAGMA table_info(\(parent.quotedDatabaseIdentifier))")
          target = columns.first { ($0["pk"] as Int) == 1 }?["name"]
        }
        keys[table, default: []].append((row["from"], parent, target ?? "rowid"))
      }
    }
    // Depth: the longest chain of references from `users` (a child is deleted before its parents).
    var depth: [String: Int] = ["users": 0]
    for _ in 0..<8 {
      var changed = false
      for table in tables where table != "users" {
        let parents = (keys[table] ?? []).compactMap { $0.parent == table ? nil : depth[$0.parent] }
        guard let deepest = parents.max(), depth[table] != deepest + 1 else { continue }
        if deepest + 1 < 8 {
          depth[table] = deepest + 1
          changed = true
        }
      }
      if !changed { break }
    }
    var conditions: [String: String] = ["users": "id = :user"]
    for table in depth.keys.sorted(by: { (depth[$0] ?? 0, $0) < (depth[$1] ?? 0, $1) }) where table != "users" {
      let parts = (keys[table] ?? []).compactMap { key -> String? in
        guard let parentDepth = depth[key.parent], parentDepth < (depth[table] ?? 0),
          let parentCondition = conditions[key.parent]
        else { return nil }
        let column = key.column.quotedDatabaseIdentifier
        if key.parent == "users", key.parentColumn == "id" { return "\(column) = :user" }
        return
          "\(column) IN (SELECT \(key.parentColumn.quotedDatabaseIdentifier) FROM "
          + "\(key.parent.quotedDatabaseIdentifier) WHERE \(parentCondition))"
      }
      if !parts.isEmpty { conditions[table] = parts.joined(separator: " OR ") }
    }
    return conditions.keys.sorted { (depth[$0] ?? 0, $1) > (depth[$1] ?? 0, $0) }.compactMap { table in
      conditions[table].map { (table, $0) }
    }
  }

  private static func apply(
    _ db: Database, table: String, condition: String, arguments: StatementArguments, dryRun: Bool
  ) throws -> Int {
    let name = table.quotedDatabaseIdentifier
    if dryRun {
      return try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(name) WHERE \(condition)", arguments: arguments) ?? 0
    }
    try db.execute(sql: "DELETE FROM \(name) WHERE \(condition)", arguments: arguments)
    return db.changesCount
  }

  /// Removes direct sharing grants to `id` from other users' sharing states; returns how many states changed.
  private static func removeGrants(_ db: Database, to id: UserID, dryRun: Bool) throws -> Int {
    let quoted = String(decoding: try JSONEncoder().encode(id.rawValue), as: UTF8.self)
    let rows = try Row.fetchAll(
      db, sql: "SELECT user_id, state FROM sharing WHERE instr(state, ?) > 0 AND user_id <> ?",
      arguments: [quoted, id.rawValue])
    var changed = 0
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    for row in rows {
      var state = try JSONDecoder().decode(SharingState.self, from: Data((row["state"] as String).utf8))
      guard state.viewerGrants.removeValue(forKey: id) != nil else { continue }
      changed += 1
      if !dryRun {
        try db.execute(
          sql: "UPDATE sharing SET state = ? WHERE user_id = ?",
          arguments: [String(decoding: try encoder.encode(state), as: UTF8.self), row["user_id"] as String])
      }
    }
    return changed
  }

  static let userSummarySQL = """
    SELECT u.id, u.created_at, u.disabled, p.full_name,
      (SELECT group_concat(c.kind || ':' || c.value, ' ') FROM credentials c WHERE c.user_id = u.id) AS credentials,
      (SELECT COUNT(*) FROM devices d WHERE d.owner_id = u.id) AS devices,
      (SELECT COUNT(*) FROM fixes f WHERE f.user_id = u.id) AS fixes,
      (SELECT MAX(f.timestamp) FROM fixes f WHERE f.user_id = u.id) AS last_fix
    FROM users u LEFT JOIN profiles p ON p.user_id = u.id
    """

  static func userSummary(_ row: Row) throws -> UserSummary {
    let credentials = (row["credentials"] as String?)?.split(separator: " ").map(String.init) ?? []
    return UserSummary(
      id: row["id"], createdAt: row["created_at"], disabled: row["disabled"], name: row["full_name"],
      credentials: credentials.sorted(), devices: row["devices"], fixes: row["fixes"], lastFix: row["last_fix"])
  }

  // MARK: Tokens

  /// Tokens, newest first: all of them, or one user's; only usable ones unless `includeInactive`.
  public func tokens(user: UserID?, includeInactive: Bool, now: Int64) async throws -> [TokenSummary] {
    try await database.read { db in
      var conditions: [String] = []
      var arguments: StatementArguments = []
      if let user {
        conditions.append("user_id = ?")
        arguments += [user.rawValue]
      }
      if !includeInactive {
        conditions.append("revoked_at IS NULL AND expires_at > ?")
        arguments += [now]
      }
      let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
      return try Row.fetchAll(
        db, sql: "SELECT * FROM tokens \(filter) ORDER BY created_at DESC, hash", arguments: arguments
      ).map { row in
        let revokedAt: Int64? = row["revoked_at"]
        let expiresAt: Int64 = row["expires_at"]
        let hash: String = row["hash"]
        return TokenSummary(
          id: String(hash.prefix(TokenSummary.idLength)), user: row["user_id"], createdAt: row["created_at"],
          expiresAt: expiresAt, revokedAt: revokedAt,
          state: revokedAt != nil ? "revoked" : expiresAt <= now ? "expired" : "active")
      }
    }
  }

  /// The full hashes of the usable tokens whose hash starts with `prefix`.
  public func tokenHashes(prefix: String, now: Int64) async throws -> [String] {
    guard !prefix.isEmpty, prefix.allSatisfy(\.isHexDigit) else { return [] }
    let pattern = prefix.lowercased() + "%"
    return try await database.read { db in
      try String.fetchAll(
        db, sql: "SELECT hash FROM tokens WHERE hash LIKE ? AND revoked_at IS NULL AND expires_at > ? ORDER BY hash",
        arguments: [pattern, now])
    }
  }

  /// Revokes every usable token of `user`; returns how many.
  public func revokeTokens(user: UserID, now: Int64) async throws -> Int {
    try await database.write { db in
      try db.execute(
        sql: "UPDATE tokens SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL AND expires_at > ?",
        arguments: [now, user.rawValue, now])
      return db.changesCount
    }
  }

  // MARK: Retention

  /// What ``applyRetention(olderThan:batchSize:progress:)`` would delete.
  public func retentionPreview(olderThan cutoff: Int64) async throws -> RetentionReport {
    try await database.read { db in
      let row = try Row.fetchOne(
        db,
        sql: "SELECT COUNT(*) AS n, MIN(timestamp) AS oldest, MAX(timestamp) AS newest FROM fixes WHERE timestamp < ?",
        arguments: [cutoff])
      let users =
        try Int.fetchOne(db, sql: "SELECT COUNT(DISTINCT user_id) FROM fixes WHERE timestamp < ?", arguments: [cutoff])
        ?? 0
      return RetentionReport(
        dryRun: true, cutoff: cutoff, deleted: row?["n"] ?? 0, batches: 0, users: users, oldest: row?["oldest"],
        newest: row?["newest"])
    }
  }

  /// Deletes every fix older than `cutoff` in batches of `batchSize` rows, one short write transaction each.
  ///
  /// Each batch's rows are found in a read snapshot (readers never block the server's writers in WAL mode) by rowid
  /// after the previous batch, then deleted by rowid range in their own transaction, so the write lock is held for
  /// one batch at a time and the server's group commits interleave with the batches.
  public func applyRetention(
    olderThan cutoff: Int64, batchSize: Int, progress: @Sendable (Int) -> Void = { _ in }
  ) async throws -> RetentionReport {
    var report = RetentionReport(
      dryRun: false, cutoff: cutoff, deleted: 0, batches: 0, users: 0, oldest: nil, newest: nil)
    var users = Set<String>()
    var after: Int64 = 0
    let limit = max(1, batchSize)
    while true {
      let start = after
      let rows = try await database.read { db in
        try Row.fetchAll(
          db, sql: "SELECT id, timestamp, user_id FROM fixes WHERE id > ? AND timestamp < ? ORDER BY id LIMIT ?",
          arguments: [start, cutoff, limit]
        ).map { row in (id: row["id"] as Int64, timestamp: row["timestamp"] as Int64, user: row["user_id"] as String) }
      }
      guard let first = rows.first, let last = rows.last else { break }
      let deleted = try await database.write { db in
        try db.execute(
          sql: "DELETE FROM fixes WHERE id BETWEEN ? AND ? AND timestamp < ?", arguments: [first.id, last.id, cutoff])
        return db.changesCount
      }
      report.deleted += deleted
      report.batches += 1
      for row in rows {
        users.insert(row.user)
        report.oldest = min(report.oldest ?? row.timestamp, row.timestamp)
        report.newest = max(report.newest ?? row.timestamp, row.timestamp)
      }
      progress(report.deleted)
      after = last.id
      await Task.yield()
    }
    report.users = users.count
    return report
  }

  // MARK: Statistics

  /// Counts, fixes per UTC day for the last `days` days, and the size of the database files.
  public func statistics(now: Int64, days: Int = 7) async throws -> DatabaseStatistics {
    let dayLength: Int64 = 86_400_000
    let firstDay = now / dayLength - Int64(days - 1)
    let path = self.path
    var statistics = try await database.read { db in
      func count(_ sql: String, _ arguments: StatementArguments = []) throws -> Int {
        try Int.fetchOne(db, sql: sql, arguments: arguments) ?? 0
      }
      let perDay = try Row.fetchAll(
        db,
        sql: """
          SELECT f.timestamp / ? AS day, COUNT(*) AS n FROM users u JOIN fixes f ON f.user_id = u.id AND f.timestamp >= ?
          GROUP BY day ORDER BY day
          """,
        arguments: [dayLength, firstDay * dayLength]
      ).reduce(into: [Int64: Int]()) { $0[$1["day"]] = $1["n"] }
      let days = (0..<Int64(days)).map { offset in
        let day = firstDay + offset
        return DayCount(day: String(Timestamp.formatISO8601(day * dayLength).prefix(10)), fixes: perDay[day] ?? 0)
      }
      let pageSize = try count("PRAGMA page_size")
      return DatabaseStatistics(
        users: try count("SELECT COUNT(*) FROM users"),
        disabledUsers: try count("SELECT COUNT(*) FROM users WHERE disabled <> 0"),
        devices: try count("SELECT COUNT(*) FROM devices"),
        fixes: try count("SELECT COUNT(*) FROM fixes"),
        activeTokens: try count(
          "SELECT COUNT(*) FROM tokens WHERE revoked_at IS NULL AND expires_at > ?", [now]),
        venues: try db.tableExists("venues") ? try count("SELECT COUNT(*) FROM venues") : 0,
        promotions: try db.tableExists("venue_promotions") ? try count("SELECT COUNT(*) FROM venue_promotions") : 0,
        fixesPerDay: days,
        databaseBytes: Int64(try count("PRAGMA page_count") * pageSize),
        freeBytes: Int64(try count("PRAGMA freelist_count") * pageSize),
        walBytes: 0)
    }
    statistics.walBytes = Self.fileSize(path + "-wal")
    return statistics
  }

  /// The size of a file, 0 when it does not exist.
  static func fileSize(_ path: String) -> Int64 {
    ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.int64Value ?? 0
  }
}

/// One table's row count (deleted, or that would be deleted).
public struct TableCount: Sendable, Hashable, Codable {
  /// The table.
  public var table: String
  /// Rows.
  public var rows: Int
}

/// A user in listings.
public struct UserSummary: Sendable, Hashable, Codable {
  /// The id.
  public var id: String
  /// Account creation, UTC ms.
  public var createdAt: Int64
  /// Whether sign-in is disabled.
  public var disabled: Bool
  /// The profile's full name.
  public var name: String?
  /// `email:…` and `phone:…`.
  public var credentials: [String]
  /// Registered devices.
  public var devices: Int
  /// Stored fixes.
  public var fixes: Int
  /// The newest fix's time, UTC ms.
  public var lastFix: Int64?
}

/// A device of a user.
public struct DeviceSummary: Sendable, Hashable, Codable {
  /// The device id.
  public var id: String
  /// When it was registered, UTC ms.
  public var createdAt: Int64
  /// Its stored fixes.
  public var fixes: Int
  /// Its newest fix, UTC ms.
  public var lastFix: Int64?
}

/// A group in listings.
public struct GroupSummary: Sendable, Hashable, Codable {
  /// The group id.
  public var id: String
  /// family, friends, blacklist or custom.
  public var kind: String
  /// The name.
  public var name: String
  /// Member ids, sorted.
  public var members: [String]
  /// Whether members see the owner's location.
  public var sharesLocation: Bool
  /// Profile fields members see.
  public var fields: [String]

  /// A summary of `group`.
  public init(_ group: Group) {
    id = group.id.rawValue
    kind = group.kind.rawValue
    name = group.name
    members = group.members.map(\.rawValue).sorted()
    sharesLocation = group.visibility.location
    fields = group.visibility.fields.map(\.rawValue).sorted()
  }
}

/// `users show`.
public struct UserDetail: Sendable, Hashable, Codable {
  /// The summary.
  public var user: UserSummary
  /// The devices.
  public var devices: [DeviceSummary]
  /// Usable tokens.
  public var activeTokens: Int
  /// The user's groups.
  public var groups: [GroupSummary]
}

/// A token in listings; never the secret, only the first characters of its SHA-256.
public struct TokenSummary: Sendable, Hashable, Codable {
  /// Characters of the hash shown as the token's id.
  public static let idLength = 12
  /// The first characters of the token's SHA-256 (what `tokens revoke` takes).
  public var id: String
  /// The owner.
  public var user: String
  /// Issued, UTC ms.
  public var createdAt: Int64
  /// Expiry, UTC ms.
  public var expiresAt: Int64
  /// Revocation, UTC ms.
  public var revokedAt: Int64?
  /// active, expired or revoked.
  public var state: String
}

/// What `retention apply` deleted (or would delete).
public struct RetentionReport: Sendable, Hashable, Codable {
  /// Whether nothing was deleted.
  public var dryRun: Bool
  /// Fixes older than this (UTC ms) are deleted.
  public var cutoff: Int64
  /// Fixes deleted (or that would be).
  public var deleted: Int
  /// Write transactions used.
  public var batches: Int
  /// Users whose fixes were deleted.
  public var users: Int
  /// The oldest deleted fix, UTC ms.
  public var oldest: Int64?
  /// The newest deleted fix, UTC ms.
  public var newest: Int64?
}

/// Fixes of one UTC day.
public struct DayCount: Sendable, Hashable, Codable {
  /// `YYYY-MM-DD`.
  public var day: String
  /// Fixes with timestamps on that day.
  public var fixes: Int
}

/// `stats`.
public struct DatabaseStatistics: Sendable, Hashable, Codable {
  /// Accounts.
  public var users: Int
  /// Disabled accounts.
  public var disabledUsers: Int
  /// Devices.
  public var devices: Int
  /// Fixes.
  public var fixes: Int
  /// Usable tokens.
  public var activeTokens: Int
  /// Venues.
  public var venues: Int
  /// Promotions.
  public var promotions: Int
  /// Fixes per day (by fix time) for the last days, oldest first.
  public var fixesPerDay: [DayCount]
  /// The main file's pages.
  public var databaseBytes: Int64
  /// Free pages (what `db vacuum` gives back).
  public var freeBytes: Int64
  /// The write-ahead log.
  public var walBytes: Int64
}
