import DomainKit
import Foundation
import MeridianStore
import PersistenceKit
import PostgresNIO

extension PostgresSchema {
  /// Appends the single sign-on migrations.
  public static func appendSingleSignOnMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-29 openid links", singleSignOn))
  }

  /// Accounts linked to OpenID subjects (a subject belongs to one account; an account may have several), and the
  /// short-lived single-use records of sign-ins in progress.
  static let singleSignOn = """
    CREATE TABLE openid_links(
      issuer text NOT NULL,
      subject text NOT NULL,
      user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      created_at bigint NOT NULL,
      PRIMARY KEY (issuer, subject)
    );
    CREATE INDEX openid_links_user ON openid_links(user_id);
    CREATE TABLE single_use_records(
      key text PRIMARY KEY,
      value text NOT NULL,
      expires_at bigint NOT NULL
    );
    CREATE INDEX single_use_records_expiry ON single_use_records(expires_at);
    """
}

extension PostgresStore: SingleSignOnStore {
  public func user(linkedTo subject: OpenIDSubject) async throws -> UserID? {
    try await rows(
      "SELECT user_id FROM openid_links WHERE issuer = \(subject.issuer) AND subject = \(subject.subject)"
    ).first.map { UserID(try $0.decode(String.self)) }
  }

  public func link(_ subject: OpenIDSubject, to user: UserID, now: Int64) async throws -> Bool {
    try await !rows(
      """
      INSERT INTO openid_links(issuer, subject, user_id, created_at)
      SELECT \(subject.issuer), \(subject.subject), id, \(now) FROM users WHERE id = \(user.rawValue)
      ON CONFLICT (issuer, subject) DO NOTHING RETURNING 1
      """
    ).isEmpty
  }

  public func createAccount(id: UserID, linkedTo subject: OpenIDSubject, now: Int64) async throws -> Account? {
    do {
      return try await transaction { connection in
        try await Self.insertAccount(id, phone: nil, on: connection, now: now, self.logger)
        // Linked already (perhaps a moment ago by another node): the whole account is rolled back.
        let claimed = try await connection.query(
          """
          INSERT INTO openid_links(issuer, subject, user_id, created_at)
          VALUES (\(subject.issuer), \(subject.subject), \(id.rawValue), \(now)) ON CONFLICT (issuer, subject) DO NOTHING
          RETURNING 1
          """, logger: self.logger
        ).collect()
        guard !claimed.isEmpty else { throw SubjectLinked() }
        return Account(id: id, createdAt: now, credentials: [])
      }
    } catch is SubjectLinked {
      return nil
    }
  }

  public func putSingleUseRecord(key: String, value: String, expiresAt: Int64, now: Int64) async throws {
    try await transaction { connection in
      _ = try await connection.query("DELETE FROM single_use_records WHERE expires_at <= \(now)", logger: self.logger)
        .collect()
      _ = try await connection.query(
        """
        INSERT INTO single_use_records(key, value, expires_at) VALUES (\(key), \(value), \(expiresAt))
        ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at
        """, logger: self.logger
      ).collect()
    }
  }

  public func takeSingleUseRecord(key: String, now: Int64) async throws -> String? {
    // Deleted either way: an expired record is of no use to anyone.
    guard
      let row = try await rows("DELETE FROM single_use_records WHERE key = \(key) RETURNING value, expires_at").first
    else { return nil }
    let (value, expiresAt) = try row.decode((String, Int64).self)
    return expiresAt > now ? value : nil
  }
}

private struct SubjectLinked: Error {}
