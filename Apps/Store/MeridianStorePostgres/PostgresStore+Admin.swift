import DomainKit
import Foundation
import GeoKit
import Logging
import MeridianAPI
import MeridianStore
import PersistenceKit
import PostgresNIO

extension PostgresStore: AdministrationStore {
  // MARK: Users

  /// The users with a fix in `from...to` within `radius` metres of `center` by `ST_DWithin` on the sphere, a hair
  /// wider than `radius` (``spatialSearchRadius(_:)``): never one too few; ``fixRuns(owner:near:radius:from:to:)``
  /// checks the exact distance.
  public func usersSeen(near center: Coordinate, radius: Double, from: Int64, to: Int64) async throws -> [UserID] {
    guard radius >= 0, radius.isFinite else { return [] }
    let query = Self.usersSeenQuery(near: center, radius: radius, from: from, to: to)
    return try await client.withConnection { connection in
      try await Self.column(String.self, query, on: connection, logger: self.logger)
    }.map { UserID($0) }
  }

  /// The statement of ``usersSeen(near:radius:from:to:)``: the GiST index on `fixes.location` finds the fixes.
  static func usersSeenQuery(near center: Coordinate, radius: Double, from: Int64, to: Int64) -> PostgresQuery {
    """
    SELECT DISTINCT user_id COLLATE "C" FROM fixes
    WHERE timestamp BETWEEN \(from) AND \(to) AND ST_DWithin(location,
      ST_SetSRID(ST_MakePoint(\(center.longitude), \(center.latitude)), 4326)::geography,
      \(Self.spatialSearchRadius(radius)), false)
    ORDER BY 1
    """
  }

  /// Finds a user by id, email address or phone number.
  public func findUser(_ text: String) async throws -> UserID? {
    let trimmed = text.trimmingCharacters(in: .whitespaces)
    let phone = (try? Credential.validated(kind: .phone, value: trimmed)).flatMap { credential -> String? in
      if case .phone(let value) = credential { return value }
      return nil
    }
    let found = try await client.withConnection { connection -> String? in
      if let id = try await Self.column(
        String.self, "SELECT id FROM users WHERE id = \(trimmed)", on: connection, logger: self.logger
      ).first {
        return id
      }
      return try await Self.column(
        String.self,
        """
        SELECT user_id FROM credentials
        WHERE (kind = 'email' AND value = \(trimmed.lowercased()))
          OR (kind = 'phone' AND (value = \(trimmed) OR value = \(phone)))
        ORDER BY kind, value LIMIT 1
        """, on: connection, logger: self.logger
      ).first
    }
    return found.map { UserID($0) }
  }

  public func userSummaries(limit: Int, offset: Int) async throws -> [UserSummary] {
    try await client.query(
      PostgresQuery(
        unsafeSQL: "\(Self.userSummarySQL) ORDER BY u.created_at, u.id COLLATE \"C\" LIMIT $1 OFFSET $2",
        binds: Self.bindings(Int64(limit), Int64(offset))),
      logger: logger
    ).collect().map { try Self.userSummary($0.makeRandomAccess()) }
  }

  public func userDetail(_ id: UserID, now: Int64) async throws -> UserDetail? {
    let groups = try await groups(owner: id)
    return try await client.withConnection { connection -> UserDetail? in
      guard
        let row = try await connection.query(
          PostgresQuery(unsafeSQL: "\(Self.userSummarySQL) WHERE u.id = $1", binds: Self.bindings(id.rawValue)),
          logger: self.logger
        ).collect().first
      else { return nil }
      var devices: [DeviceSummary] = []
      for try await (device, createdAt, fixes, lastFix) in try await connection.query(
        """
        SELECT d.id, d.created_at, COUNT(f.id), MAX(f.timestamp)
        FROM devices d LEFT JOIN fixes f ON f.user_id = d.owner_id AND f.device_id = d.id
        WHERE d.owner_id = \(id.rawValue) GROUP BY d.id, d.created_at ORDER BY d.created_at, d.id COLLATE "C"
        """, logger: self.logger
      ).decode((String, Int64, Int, Int64?).self) {
        devices.append(DeviceSummary(id: device, createdAt: createdAt, fixes: fixes, lastFix: lastFix))
      }
      let activeTokens = try await Self.count(
        """
        SELECT COUNT(*) FROM tokens WHERE user_id = \(id.rawValue) AND revoked_at IS NULL AND expires_at > \(now)
        """, on: connection, logger: self.logger)
      return UserDetail(
        user: try Self.userSummary(row.makeRandomAccess()), devices: devices, activeTokens: activeTokens,
        groups: groups.map(GroupSummary.init))
    }
  }

  @discardableResult
  public func setDisabled(_ id: UserID, _ disabled: Bool) async throws -> Bool {
    try await !client.query(
      "UPDATE users SET disabled = \(disabled) WHERE id = \(id.rawValue) AND disabled <> \(disabled) RETURNING 1",
      logger: logger
    ).collect().isEmpty
  }

  /// Deletes every row of a user: the rows of every table that refers to the user through foreign keys (directly,
  /// or through the user's groups and devices; keys of several columns included), the one-time codes of the user's
  /// phone numbers and the direct sharing grants other users gave the user. With `dryRun`, only counts, in one
  /// snapshot.
  ///
  /// As on SQLite, the account is disabled first (its tokens stop working), its fixes go in batches of `batchSize`
  /// rows, one short transaction each, and then everything else (with any fix that arrived meanwhile) in one
  /// transaction. If that fails, the account is still there, disabled, and running the command again finishes it.
  /// - Returns: Rows per table, children before parents, `users` last (tables with no rows are left out).
  public func deleteUser(_ id: UserID, dryRun: Bool, batchSize: Int = 1000) async throws -> [TableCount] {
    // This node forgets the user's devices at once; other nodes' caches expire (``deviceOwners``).
    defer { if !dryRun { deviceOwners.removeAll { $0 == id } } }
    var batched = 0
    if !dryRun {
      try await setDisabled(id, true)
      while true {
        let deleted = try await client.withConnection { connection in
          try await Self.count(
            """
            WITH doomed AS (
              SELECT user_id, device_id, timestamp FROM fixes WHERE user_id = \(id.rawValue)
              LIMIT \(Int64(max(1, batchSize)))
            ), gone AS (
              DELETE FROM fixes f USING doomed d
              WHERE f.user_id = d.user_id AND f.device_id = d.device_id AND f.timestamp = d.timestamp
              RETURNING 1
            )
            SELECT COUNT(*) FROM gone
            """, on: connection, logger: self.logger)
        }
        if deleted == 0 { break }
        batched += deleted
        await Task.yield()
      }
    }
    let alreadyDeleted = batched
    // A dry run counts in one snapshot; the deletion retries a deadlock or serialization failure.
    return try await client.withTransaction(isolation: dryRun ? .repeatableRead : .readCommitted, retries: 4) {
      connection in
      let tables = Set(
        try await Self.column(
          String.self,
          """
          SELECT c.relname::text FROM pg_class c
          WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition
          """, on: connection, logger: self.logger))
      var counts: [TableCount] = []
      if tables.contains("otp_codes"), tables.contains("credentials") {
        let count = try await Self.apply(
          connection, table: "otp_codes",
          condition: "phone IN (SELECT value FROM credentials WHERE user_id = $1 AND kind = 'phone')", user: id,
          dryRun: dryRun, logger: self.logger)
        if count > 0 { counts.append(TableCount(table: "otp_codes", rows: count)) }
      }
      if tables.contains("sharing") {
        let count = try await Self.removeGrants(connection, to: id, dryRun: dryRun, logger: self.logger)
        if count > 0 { counts.append(TableCount(table: "sharing (grants to the user)", rows: count)) }
      }
      for step in try await Self.deletionPlan(connection, logger: self.logger) {
        var count = try await Self.apply(
          connection, table: step.table, condition: step.condition, user: id, dryRun: dryRun, logger: self.logger)
        if step.table == "fixes" { count += alreadyDeleted }
        if count > 0 { counts.append(TableCount(table: step.table, rows: count)) }
      }
      return counts
    }
  }

  /// Every table that refers to `users`, with the condition that selects the user's rows (`$1` is the id),
  /// children before parents, `users` last, as on SQLite (``ForeignKeyReference/deletionPlan(root:key:parameter:keys:)``).
  /// Partitions are not listed (their parent is); keys of several columns select by a row value.
  static func deletionPlan(_ connection: PostgresConnection, logger: Logger) async throws
    -> [(table: String, condition: String)]
  {
    var keys: [ForeignKeyReference] = []
    for try await (table, columns, parent, parentColumns) in try await connection.query(
      """
      SELECT c.relname::text, ARRAY(
          SELECT a.attname::text FROM unnest(k.conkey) WITH ORDINALITY AS u(attnum, n)
          JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = u.attnum ORDER BY u.n),
        p.relname::text, ARRAY(
          SELECT a.attname::text FROM unnest(k.confkey) WITH ORDINALITY AS u(attnum, n)
          JOIN pg_attribute a ON a.attrelid = k.confrelid AND a.attnum = u.attnum ORDER BY u.n)
      FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN pg_class p ON p.oid = k.confrelid
      WHERE k.contype = 'f' AND k.conparentid = 0 AND NOT c.relispartition
        AND c.relnamespace = current_schema()::regnamespace
      ORDER BY 1, 3
      """, logger: logger
    ).decode((String, [String], String, [String]).self) {
      keys.append(ForeignKeyReference(table: table, columns: columns, parent: parent, parentColumns: parentColumns))
    }
    return ForeignKeyReference.deletionPlan(root: "users", key: "id", parameter: "$1", keys: keys)
  }

  private static func apply(
    _ connection: PostgresConnection, table: String, condition: String, user: UserID, dryRun: Bool, logger: Logger
  ) async throws -> Int {
    let name = PostgresSchema.quoted(table)
    let sql =
      dryRun
      ? "SELECT COUNT(*) FROM \(name) WHERE \(condition)"
      : "WITH gone AS (DELETE FROM \(name) WHERE \(condition) RETURNING 1) SELECT COUNT(*) FROM gone"
    return try await count(
      PostgresQuery(unsafeSQL: sql, binds: bindings(user.rawValue)), on: connection, logger: logger)
  }

  /// Removes direct sharing grants to `id` from other users' sharing states; returns how many states changed.
  private static func removeGrants(_ connection: PostgresConnection, to id: UserID, dryRun: Bool, logger: Logger)
    async throws -> Int
  {
    let quoted = try JSONColumn.encode(id.rawValue)
    var states: [(String, String)] = []
    for try await row in try await connection.query(
      """
      SELECT user_id, state::text FROM sharing WHERE strpos(state::text, \(quoted)) > 0 AND user_id <> \(id.rawValue)
      ORDER BY user_id \(unescaped: dryRun ? "" : "FOR UPDATE")
      """, logger: logger
    ).decode((String, String).self) {
      states.append(row)
    }
    var changed = 0
    for (owner, text) in states {
      var state = try JSONColumn.decode(SharingState.self, from: text)
      guard state.viewerGrants.removeValue(forKey: id) != nil else { continue }
      changed += 1
      if !dryRun {
        try await connection.query(
          """
          UPDATE sharing SET state = \(try JSONColumn.encode(state))::jsonb
          WHERE user_id = \(owner)
          """, logger: logger)
      }
    }
    return changed
  }

  static let userSummarySQL = """
    SELECT u.id, u.created_at, u.disabled, p.full_name,
      (SELECT string_agg(c.kind || ':' || c.value, ' ') FROM credentials c WHERE c.user_id = u.id) AS credentials,
      (SELECT COUNT(*) FROM devices d WHERE d.owner_id = u.id) AS devices,
      (SELECT COUNT(*) FROM fixes f WHERE f.user_id = u.id) AS fixes,
      (SELECT MAX(f.timestamp) FROM fixes f WHERE f.user_id = u.id) AS last_fix
    FROM users u LEFT JOIN profiles p ON p.user_id = u.id
    """

  static func userSummary(_ row: PostgresRandomAccessRow) throws -> UserSummary {
    let credentials = try row["credentials"].decode(String?.self)?.split(separator: " ").map(String.init) ?? []
    return UserSummary(
      id: try row["id"].decode(String.self), createdAt: try row["created_at"].decode(Int64.self),
      disabled: try row["disabled"].decode(Bool.self), name: try row["full_name"].decode(String?.self),
      credentials: credentials.sorted(), devices: try row["devices"].decode(Int.self),
      fixes: try row["fixes"].decode(Int.self), lastFix: try row["last_fix"].decode(Int64?.self))
  }

  // MARK: Tokens

  public func tokens(user: UserID?, includeInactive: Bool, now: Int64) async throws -> [TokenSummary] {
    var conditions: [String] = []
    var binds = PostgresBindings()
    if let user {
      binds.append(user.rawValue)
      conditions.append("user_id = $\(binds.count)")
    }
    if !includeInactive {
      binds.append(now)
      conditions.append("revoked_at IS NULL AND expires_at > $\(binds.count)")
    }
    let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
    var tokens: [TokenSummary] = []
    for try await (hash, user, createdAt, expiresAt, revokedAt) in try await client.query(
      PostgresQuery(
        unsafeSQL: """
          SELECT hash, user_id, created_at, expires_at, revoked_at FROM tokens \(filter)
          ORDER BY created_at DESC, hash
          """, binds: binds), logger: logger
    ).decode((String, String, Int64, Int64, Int64?).self) {
      tokens.append(
        TokenSummary(
          id: String(hash.prefix(TokenSummary.idLength)), user: user, createdAt: createdAt, expiresAt: expiresAt,
          revokedAt: revokedAt, state: revokedAt != nil ? "revoked" : expiresAt <= now ? "expired" : "active"))
    }
    return tokens
  }

  public func tokenHashes(prefix: String, now: Int64) async throws -> [String] {
    guard !prefix.isEmpty, prefix.allSatisfy(\.isHexDigit) else { return [] }
    let pattern = prefix.lowercased() + "%"
    return try await client.withConnection { connection in
      try await Self.column(
        String.self,
        """
        SELECT hash FROM tokens WHERE hash LIKE \(pattern) AND revoked_at IS NULL AND expires_at > \(now)
        ORDER BY hash
        """, on: connection, logger: self.logger)
    }
  }

  public func revokeTokens(user: UserID, now: Int64) async throws -> Int {
    try await client.withConnection { connection in
      try await Self.count(
        """
        WITH revoked AS (
          UPDATE tokens SET revoked_at = \(now)
          WHERE user_id = \(user.rawValue) AND revoked_at IS NULL AND expires_at > \(now) RETURNING 1
        )
        SELECT COUNT(*) FROM revoked
        """, on: connection, logger: self.logger)
    }
  }

  // MARK: Statistics

  /// Counts, fixes per UTC day for the last `days` days, and the database's size (`pg_database_size`). There is no
  /// free-page figure on PostgreSQL (`freeBytes` is 0: plain `VACUUM` reuses space in place); `walBytes` is the
  /// cluster's write-ahead log when the role may read it (`pg_monitor`), else 0.
  public func statistics(now: Int64, days: Int = 7) async throws -> DatabaseStatistics {
    let dayLength: Int64 = 86_400_000
    let firstDay = now / dayLength - Int64(days - 1)
    var statistics = try await client.withTransaction(isolation: .repeatableRead) { connection in
      var perDay: [Int64: Int] = [:]
      for try await (day, count) in try await connection.query(
        """
        SELECT timestamp / \(dayLength) AS day, COUNT(*) FROM fixes WHERE timestamp >= \(firstDay * dayLength)
        GROUP BY day ORDER BY day
        """, logger: self.logger
      ).decode((Int64, Int).self) {
        perDay[day] = count
      }
      let days = (0..<Int64(days)).map { offset in
        let day = firstDay + offset
        return DayCount(day: String(Timestamp.formatISO8601(day * dayLength).prefix(10)), fixes: perDay[day] ?? 0)
      }
      func count(_ query: PostgresQuery) async throws -> Int {
        try await Self.count(query, on: connection, logger: self.logger)
      }
      return DatabaseStatistics(
        users: try await count("SELECT COUNT(*) FROM users"),
        disabledUsers: try await count("SELECT COUNT(*) FROM users WHERE disabled"),
        devices: try await count("SELECT COUNT(*) FROM devices"),
        fixes: try await count("SELECT COUNT(*) FROM fixes"),
        activeTokens: try await count("SELECT COUNT(*) FROM tokens WHERE revoked_at IS NULL AND expires_at > \(now)"),
        venues: try await count("SELECT COUNT(*) FROM venues"),
        promotions: try await count("SELECT COUNT(*) FROM venue_promotions"),
        fixesPerDay: days,
        databaseBytes: Int64(try await count("SELECT pg_database_size(current_database())")),
        freeBytes: 0, walBytes: 0)
    }
    // Reading the WAL directory needs `pg_monitor`; without it the figure stays 0.
    if let wal = try? await client.withConnection({ connection in
      try await Self.count(
        "SELECT COALESCE(SUM(size), 0)::bigint FROM pg_ls_waldir()", on: connection, logger: self.logger)
    }) {
      statistics.walBytes = Int64(wal)
    }
    return statistics
  }

  /// Bindings of two integers.
  static func bindings(_ first: Int64, _ second: Int64) -> PostgresBindings {
    var binds = PostgresBindings()
    binds.append(first)
    binds.append(second)
    return binds
  }
}
