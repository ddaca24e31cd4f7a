import DomainKit
import Foundation
import GRDB
import MeridianStore
import PersistenceKit

extension SQLiteSchema {
  /// Appends the single sign-on migrations.
  static func appendSingleSignOnMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-29 openid links", singleSignOn))
  }

  /// Accounts linked to OpenID subjects (a subject belongs to one account; an account may have several), and the
  /// short-lived single-use records of sign-ins in progress.
  static let singleSignOn = """
    CREATE TABLE openid_links(
      issuer TEXT NOT NULL,
      subject TEXT NOT NULL,
      user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      created_at INTEGER NOT NULL,
      PRIMARY KEY (issuer, subject)
    );
    CREATE INDEX openid_links_user ON openid_links(user_id);
    CREATE TABLE single_use_records(
      key TEXT PRIMARY KEY NOT NULL,
      value TEXT NOT NULL,
      expires_at INTEGER NOT NULL
    );
    CREATE INDEX single_use_records_expiry ON single_use_records(expires_at);
    """
}

extension SQLiteStore {
  public func user(linkedTo subject: OpenIDSubject) async throws -> UserID? {
    try await database.read { db in
      try String.fetchOne(
        db, sql: "SELECT user_id FROM openid_links WHERE issuer = ? AND subject = ?",
        arguments: [subject.issuer, subject.subject]
      ).map { UserID($0) }
    }
  }

  public func link(_ subject: OpenIDSubject, to user: UserID, now: Int64) async throws -> Bool {
    try await database.write { db in
      guard try Bool.fetchOne(db, sql: "SELECT 1 FROM users WHERE id = ?", arguments: [user.rawValue]) != nil
      else { return false }
      try db.execute(
        sql: """
          INSERT INTO openid_links(issuer, subject, user_id, created_at) VALUES (?, ?, ?, ?)
          ON CONFLICT (issuer, subject) DO NOTHING
          """,
        arguments: [subject.issuer, subject.subject, user.rawValue, now])
      return db.changesCount == 1
    }
  }

  public func createAccount(id: UserID, linkedTo subject: OpenIDSubject, now: Int64) async throws -> Account? {
    try await database.write { db in
      if try Bool.fetchOne(
        db, sql: "SELECT 1 FROM openid_links WHERE issuer = ? AND subject = ?",
        arguments: [subject.issuer, subject.subject]) != nil
      {
        return nil
      }
      try Self.insertAccount(id, phone: nil, db: db, now: now)
      try db.execute(
        sql: "INSERT INTO openid_links(issuer, subject, user_id, created_at) VALUES (?, ?, ?, ?)",
        arguments: [subject.issuer, subject.subject, id.rawValue, now])
      return Account(id: id, createdAt: now, credentials: [])
    }
  }

  public func putSingleUseRecord(key: String, value: String, expiresAt: Int64, now: Int64) async throws {
    try await database.write { db in
      try db.execute(sql: "DELETE FROM single_use_records WHERE expires_at <= ?", arguments: [now])
      try db.execute(
        sql: "INSERT OR REPLACE INTO single_use_records(key, value, expires_at) VALUES (?, ?, ?)",
        arguments: [key, value, expiresAt])
    }
  }

  public func takeSingleUseRecord(key: String, now: Int64) async throws -> String? {
    try await database.write { db in
      // Deleted either way: an expired record is of no use to anyone.
      guard
        let row = try Row.fetchOne(
          db, sql: "DELETE FROM single_use_records WHERE key = ? RETURNING value, expires_at", arguments: [key])
      else { return nil }
      let expiresAt: Int64 = row["expires_at"]
      return expiresAt > now ? row["value"] : nil
    }
  }
}
