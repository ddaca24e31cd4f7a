import DomainKit
import Foundation
import GRDB
import GeoKit
import MeridianAPI
import MeridianStore
import PersistenceKit

extension SQLiteStore {
  // MARK: Users

  public func usersSeen(near center: Coordinate, radius: Double, from: Int64, to: Int64) async throws -> [UserID] {
    let near = try Self.nearbyFixes(center, radius)
    return try await database.read { db in
      try String.fetchAll(
        db,
        sql: "SELECT DISTINCT f.user_id FROM fixes f WHERE f.timestamp BETWEEN ? AND ? AND \(near.sql) ORDER BY 1",
        arguments: [from, to] + near.arguments
      ).map { UserID($0) }
    }
  }

  /// Finds a user by id, email address or phone number.
  public func findUser(_ text: String) async throws -> UserID? {
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
    return found.map { UserID($0) }
  }

  /// Users with their credentials and activity, oldest account first.
  public func userSummaries(limit: Int, offset: Int) async throws -> [UserSummary] {
    try await database.read { db in
      try Row.fetchAll(
        db, sql: "\(Self.userSummarySQL) ORDER BY u.created_at, u.id LIMIT ? OFFSET ?", arguments: [limit, offset]
      ).map(Self.userSummary)
    }
  }

  /// One user's summary, devices, token counts and groups.
  public func userDetail(_ id: UserID, now: Int64) async throws -> UserDetail? {
    let groups = try await groups(owner: id)
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
      let activeTokens =
        try Int.fetchOne(
          db,
          sql: "SELECT COUNT(*) FROM tokens WHERE user_id = ? AND revoked_at IS NULL AND expires_at > ?",
          arguments: [id.rawValue, now]) ?? 0
      return UserDetail(
        user: try Self.userSummary(row), devices: devices, activeTokens: activeTokens,
        groups: groups.map(GroupSummary.init))
    }
    return detail
  }

  /// Disables or enables sign-in (a disabled user's tokens stop working at once).
  /// - Returns: Whether the state changed.
  @discardableResult
  public func setDisabled(_ id: UserID, _ disabled: Bool) async throws -> Bool {
    defer { forget(id) }
    return try await database.write { db in
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
    defer { if !dryRun { forget(id) } }
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
    var keys: [ForeignKeyReference] = []
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
        keys.append(
          ForeignKeyReference(table: table, columns: [row["from"]], parent: parent, parentColumns: [target ?? "rowid"]))
      }
    }
    return ForeignKeyReference.deletionPlan(root: "users", key: "id", parameter: ":user", keys: keys)
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
    defer { forget(user) }
    return try await database.write { db in
      try db.execute(
        sql: "UPDATE tokens SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL AND expires_at > ?",
        arguments: [now, user.rawValue, now])
      return db.changesCount
    }
  }

  /// Drops what this store remembers about `user`'s tokens and devices, after a change to them, and tells the other
  /// processes on the database to drop theirs (``StoreCaches/announceRevocation()``).
  func forget(_ user: UserID) {
    tokens.removeAll { $0.user == user }
    devices.removeAll { $0 == user }
    caches.announceRevocation()
  }

  // MARK: Statistics

  /// Counts, fixes per UTC day for the last `days` days, and the size of the database files.
  public func statistics(now: Int64, days: Int = 7) async throws -> DatabaseStatistics {
    let dayLength: Int64 = 86_400_000
    let firstDay = now / dayLength - Int64(days - 1)
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
    statistics.walBytes = database.path.map { Self.fileSize($0 + "-wal") } ?? 0
    return statistics
  }

  /// The size of a file, 0 when it does not exist.
  public static func fileSize(_ path: String) -> Int64 {
    ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.int64Value ?? 0
  }
}
