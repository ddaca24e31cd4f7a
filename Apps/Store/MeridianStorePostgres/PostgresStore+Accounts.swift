import DomainKit
import Foundation
import Logging
import MeridianAPI
import MeridianStore
import PostgresNIO

extension PostgresStore: AccountStore {
  /// A round trip to the database within the health deadline; throws ``StoreUnavailableError`` when it does not
  /// answer in time.
  public func checkHealth() async throws {
    _ = try await client.query("SELECT 1", logger: logger, within: healthTimeout)
  }

  /// The deployment's 32-byte random secret called `name`: the first node to ask stores one, every node then reads
  /// that one (`INSERT … ON CONFLICT DO NOTHING`, then the stored row).
  public func deploymentSecret(_ name: String) async throws -> Data {
    if let stored = try await secret(name) { return stored }
    var generator = SystemRandomNumberGenerator()
    let candidate = Data((0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) })
    try await execute(
      """
      INSERT INTO deployment_secrets(name, value, created_at)
      VALUES (\(name), \(candidate), \(now())) ON CONFLICT (name) DO NOTHING
      """)
    guard let stored = try await secret(name) else { throw PostgresStoreError.missingRow("secret \(name)") }
    return stored
  }

  private func secret(_ name: String) async throws -> Data? {
    try await rows("SELECT value FROM deployment_secrets WHERE name = \(name)").first?.decode(Data.self)
  }

  // MARK: Accounts

  public func createAccount(id: UserID, credential: Credential, passwordHash: String?, now: Int64) async throws
    -> Account?
  {
    let (kind, value) = Self.parts(credential)
    let phone: String? = kind == "phone" ? value : nil
    do {
      return try await transaction { connection in
        try await Self.insertAccount(id, phone: phone, on: connection, now: now, self.logger)
        // Taken already (perhaps a moment ago by another node): the whole account is rolled back.
        let claimed = try await connection.query(
          """
          INSERT INTO credentials(kind, value, user_id, password_hash, created_at)
          VALUES (\(kind), \(value), \(id.rawValue), \(passwordHash), \(now)) ON CONFLICT (kind, value) DO NOTHING
          RETURNING 1
          """, logger: self.logger
        ).collect()
        guard !claimed.isEmpty else { throw CredentialTaken() }
        return Account(id: id, createdAt: now, credentials: [credential])
      }
    } catch is CredentialTaken {
      return nil
    }
  }

  /// Inserts a new account's rows — the user, its empty profile, its standard groups and default sharing state —
  /// for every way of creating one (a credential, an OpenID subject).
  static func insertAccount(
    _ id: UserID, phone: String?, on connection: PostgresConnection, now: Int64, _ logger: Logger
  ) async throws {
    _ = try await connection.query("INSERT INTO users(id, created_at) VALUES (\(id.rawValue), \(now))", logger: logger)
      .collect()
    _ = try await connection.query(
      "INSERT INTO profiles(user_id, phone, audience) VALUES (\(id.rawValue), \(phone), '{}')", logger: logger
    ).collect()
    for group in Group.standardGroups(for: id) { try await Self.save(group, on: connection, now: now, logger) }
    let sharing = try JSONColumn.encode(SharingState())
    _ = try await connection.query(
      "INSERT INTO sharing(user_id, state) VALUES (\(id.rawValue), \(sharing)::jsonb)", logger: logger
    ).collect()
  }

  public func account(for credential: Credential) async throws -> (account: Account, passwordHash: String?)? {
    let (kind, value) = Self.parts(credential)
    guard
      let row = try await rows(
        "SELECT user_id, password_hash FROM credentials WHERE kind = \(kind) AND value = \(value)"
      ).first
    else { return nil }
    let (user, passwordHash) = try row.decode((String, String?).self)
    guard let account = try await account(UserID(user)) else { return nil }
    return (account, passwordHash)
  }

  public func account(_ id: UserID) async throws -> Account? {
    guard let createdAt = try await rows("SELECT created_at FROM users WHERE id = \(id.rawValue)").first else {
      return nil
    }
    let credentials = try await rows(
      "SELECT kind, value FROM credentials WHERE user_id = \(id.rawValue) ORDER BY created_at, kind"
    ).compactMap { row -> Credential? in
      let (kind, value) = try row.decode((String, String).self)
      return kind == "phone" ? .phone(value) : kind == "email" ? .email(value) : nil
    }
    return Account(id: id, createdAt: try createdAt.decode(Int64.self), credentials: credentials)
  }

  public func isDisabled(_ user: UserID) async throws -> Bool {
    try await rows("SELECT disabled FROM users WHERE id = \(user.rawValue)").first?.decode(Bool.self) ?? false
  }

  // MARK: Tokens

  public func insertToken(hash: String, userID: UserID, createdAt: Int64, expiresAt: Int64) async throws {
    try await execute(
      """
      INSERT INTO tokens(hash, user_id, created_at, expires_at)
      VALUES (\(hash), \(userID.rawValue), \(createdAt), \(expiresAt))
      """)
  }

  /// Read from the database on every call (a primary-key lookup): a token revoked or an account disabled through
  /// any node stops working on every node at once.
  public func user(forTokenHash hash: String, now: Int64) async throws -> UserID? {
    try await client.withConnection { connection in
      try await Self.runPrepared(TokenUser(hash: hash, now: now), on: connection, logger: self.logger).first.map {
        UserID($0)
      }
    }
  }

  /// The statement of ``user(forTokenHash:now:)``, run by every authenticated request: prepared once per connection,
  /// so that each run is only bound and executed (parsing and planning it cost PostgreSQL more than running it).
  struct TokenUser: PostgresPreparedStatement {
    static let sql = """
      SELECT t.user_id FROM tokens t JOIN users u ON u.id = t.user_id
      WHERE t.hash = $1 AND t.revoked_at IS NULL AND t.expires_at > $2 AND NOT u.disabled
      """
    typealias Row = String

    var hash: String
    var now: Int64

    func makeBindings() throws -> PostgresBindings {
      var bindings = PostgresBindings()
      bindings.append(hash)
      bindings.append(now)
      return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(String.self) }
  }

  public func revokeToken(hash: String) async throws {
    try await execute(
      "UPDATE tokens SET revoked_at = \(now()) WHERE hash = \(hash) AND revoked_at IS NULL")
  }

  public func revokeTokens(of user: UserID, keepingNewest keep: Int, now: Int64) async throws -> Int {
    try await rows(
      """
      UPDATE tokens SET revoked_at = \(now)
      WHERE user_id = \(user.rawValue) AND revoked_at IS NULL AND expires_at > \(now) AND hash NOT IN (
        SELECT hash FROM tokens WHERE user_id = \(user.rawValue) AND revoked_at IS NULL AND expires_at > \(now)
        ORDER BY created_at DESC, hash COLLATE "C" LIMIT \(max(0, keep)))
      RETURNING 1
      """
    ).count
  }

  // MARK: One-time codes

  public func replaceOTP(phone: String, codeHash: String, expiresAt: Int64, maxAttempts: Int, now: Int64)
    async throws
  {
    try await execute(
      """
      INSERT INTO otp_codes(phone, code_hash, expires_at, attempts_left, created_at)
      VALUES (\(phone), \(codeHash), \(expiresAt), \(Int32(clamping: maxAttempts)), \(now))
      ON CONFLICT (phone) DO UPDATE SET code_hash = excluded.code_hash, expires_at = excluded.expires_at,
        attempts_left = excluded.attempts_left, created_at = excluded.created_at
      """)
  }

  // MARK: Idempotency (the routes' answers; the fix upload's are stored by its group commit)

  public func idempotentResponse(userID: UserID, key: String) async throws -> StoredResponse? {
    try await rows(
      "SELECT request_hash, status, body FROM idempotency_keys WHERE user_id = \(userID.rawValue) AND key = \(key)"
    ).first.map { row in
      let (requestHash, status, body) = try row.decode((String, Int32, Data).self)
      return StoredResponse(requestHash: requestHash, status: Int(status), body: body)
    }
  }

  /// Stores the answer unless one is stored for the key already (first writer wins, on every node).
  public func saveIdempotentResponse(_ response: StoredResponse, userID: UserID, key: String, now: Int64)
    async throws
  {
    try await execute(
      """
      INSERT INTO idempotency_keys(user_id, key, request_hash, status, body, created_at)
      VALUES (\(userID.rawValue), \(key), \(response.requestHash), \(Int32(clamping: response.status)),
        \(response.body), \(now))
      ON CONFLICT (user_id, key) DO NOTHING
      """)
  }

  // MARK: Helpers

  static func parts(_ credential: Credential) -> (String, String) {
    switch credential {
    case .phone(let value): ("phone", value)
    case .email(let value): ("email", value)
    }
  }
}

/// Thrown inside ``PostgresStore/createAccount(id:credential:passwordHash:now:)``'s transaction to roll it back.
private struct CredentialTaken: Error {}

/// The `jsonb` columns (visibility, audiences, sharing state), written as sorted-key JSON text.
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
extension PostgresStore: IdempotencyStore {}

extension PostgresTransaction {
  // MARK: One-time codes

  func oneTimeCode(for phone: String) async throws -> StoredOneTimeCode? {
    try await rows("SELECT code_hash, expires_at, attempts_left FROM otp_codes WHERE phone = \(phone) FOR UPDATE")
      .first.map { row in
        let (hash, expiresAt, attemptsLeft) = try row.decode((String, Int64, Int32).self)
        return StoredOneTimeCode(codeHash: hash, expiresAt: expiresAt, attemptsLeft: Int(attemptsLeft))
      }
  }

  func deleteOneTimeCode(for phone: String) async throws {
    _ = try await rows("DELETE FROM otp_codes WHERE phone = \(phone)")
  }

  func spendOneTimeCodeAttempt(for phone: String) async throws {
    _ = try await rows("UPDATE otp_codes SET attempts_left = attempts_left - 1 WHERE phone = \(phone)")
  }
}
