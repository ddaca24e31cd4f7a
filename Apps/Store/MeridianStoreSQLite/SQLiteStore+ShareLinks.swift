import DomainKit
import Foundation
import GRDB
import MeridianAPI
import MeridianStore
import PersistenceKit

extension SQLiteStore {
  static let shareLinkColumns =
    "id, owner_id, token_hash, label, devices, track, created_at, expires_at, revoked_at, precision"
  /// ``shareLinkColumns`` of `share_links s` in a join.
  static let joinedShareLinkColumns = shareLinkColumns.split(separator: ", ").map { "s.\($0)" }.joined(separator: ", ")

  static func shareLink(_ row: Row) throws -> ShareLinkRecord {
    let devices: String? = row[4]
    return ShareLinkRecord(
      id: row[0], owner: UserID(row[1]), tokenHash: row[2], label: row[3],
      devices: try devices.map { try JSONColumn.decode([String].self, from: $0).map { DeviceID($0) } },
      track: row[5], createdAt: row[6], until: row[7], revokedAt: row[8],
      precision: LocationPrecision(rawValue: row[9]) ?? .exact)
  }

  public func createShareLink(_ link: ShareLinkRecord, activeLimit: Int?) async throws -> Bool {
    let devices = try link.devices.map { try JSONColumn.encode($0.map(\.rawValue)) }
    // SQLite runs one write transaction at a time: the count and the insert can't interleave with another's.
    return try await database.write { db in
      if let activeLimit {
        let active =
          try Int.fetchOne(
            db,
            sql: "SELECT count(*) FROM share_links WHERE owner_id = ? AND revoked_at IS NULL AND expires_at > ?",
            arguments: [link.owner.rawValue, link.createdAt]) ?? 0
        guard active < activeLimit else { return false }
      }
      try db.execute(
        sql: """
          INSERT INTO share_links(id, owner_id, token_hash, label, devices, track, created_at, expires_at, precision)
          VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
          """,
        arguments: [
          link.id, link.owner.rawValue, link.tokenHash, link.label, devices, link.track, link.createdAt, link.until,
          link.precision.rawValue,
        ])
      return true
    }
  }

  public func shareLink(id: String) async throws -> ShareLinkRecord? {
    try await database.read { db in
      try Row.fetchOne(db, sql: "SELECT \(Self.shareLinkColumns) FROM share_links WHERE id = ?", arguments: [id])
        .map(Self.shareLink)
    }
  }

  public func shareLink(tokenHash: String) async throws -> ShareLinkRecord? {
    try await database.read { db in
      try Row.fetchOne(
        db,
        sql: "SELECT \(Self.joinedShareLinkColumns) FROM share_links s JOIN users u ON u.id = s.owner_id "
          + "WHERE s.token_hash = ? AND u.disabled = 0",
        arguments: [tokenHash]
      ).map(Self.shareLink)
    }
  }

  public func shareLinks(owner: UserID, endedAfter: Int64?, limit: Int) async throws -> [ShareLinkRecord] {
    try await database.read { db in
      try Row.fetchAll(
        db,
        sql: "SELECT \(Self.shareLinkColumns) FROM share_links WHERE owner_id = ? "
          + "AND (? IS NULL OR min(coalesce(revoked_at, expires_at), expires_at) > ?) "
          + "ORDER BY created_at DESC, id DESC LIMIT ?",
        arguments: [owner.rawValue, endedAfter, endedAfter, limit]
      ).map(Self.shareLink)
    }
  }

  public func revokeShareLink(id: String, owner: UserID, now: Int64) async throws -> ShareLinkRecord? {
    try await database.write { db in
      try db.execute(
        sql: "UPDATE share_links SET revoked_at = coalesce(revoked_at, ?) WHERE id = ? AND owner_id = ?",
        arguments: [now, id, owner.rawValue])
      guard db.changesCount > 0 else { return nil }
      return try Row.fetchOne(
        db, sql: "SELECT \(Self.shareLinkColumns) FROM share_links WHERE id = ?", arguments: [id]
      ).map(Self.shareLink)
    }
  }

  public func sharedFixes(owner: UserID, devices: [DeviceID]?, from: Int64, through: Int64, limit: Int)
    async throws -> [LocationFix]
  {
    var sql = "SELECT * FROM fixes WHERE user_id = ? AND timestamp BETWEEN ? AND ?"
    var arguments: [(any DatabaseValueConvertible)?] = [owner.rawValue, from, through]
    if let devices {
      guard !devices.isEmpty else { return [] }
      sql += " AND device_id IN (\(Array(repeating: "?", count: devices.count).joined(separator: ", ")))"
      arguments += devices.map(\.rawValue)
    }
    sql += " ORDER BY timestamp DESC, id DESC LIMIT ?"
    arguments.append(limit)
    let (query, values) = (sql, StatementArguments(arguments))
    return try await database.read { db in
      try Row.fetchAll(db, sql: query, arguments: values).map(FixRow.fix)
    }
  }
}
