import DomainKit
import Foundation
import MeridianAPI
import MeridianStore
import PostgresNIO

extension PostgresStore: ShareLinkStore {
  static func shareLink(_ row: PostgresRow) throws -> ShareLinkRecord {
    let (id, owner, hash, label, devices, track, createdAt, until, revokedAt, precision) = try row.decode(
      (String, String, String, String?, [String]?, Bool, Int64, Int64, Int64?, String).self)
    return ShareLinkRecord(
      id: id, owner: UserID(owner), tokenHash: hash, label: label, devices: devices?.map { DeviceID($0) },
      track: track, createdAt: createdAt, until: until, revokedAt: revokedAt,
      precision: LocationPrecision(rawValue: precision) ?? .exact)
  }

  public func createShareLink(_ link: ShareLinkRecord, activeLimit: Int?) async throws -> Bool {
    let devices = link.devices?.map(\.rawValue)
    return try await transaction { connection in
      if let activeLimit {
        // The owner's row, locked: two concurrent creations can't both pass the count.
        _ = try await connection.query(
          "SELECT 1 FROM users WHERE id = \(link.owner.rawValue) FOR UPDATE", logger: self.logger
        ).collect()
        let active =
          try await connection.query(
            """
            SELECT count(*) FROM share_links
            WHERE owner_id = \(link.owner.rawValue) AND revoked_at IS NULL AND expires_at > \(link.createdAt)
            """, logger: self.logger
          ).collect().first?.decode(Int.self) ?? 0
        guard active < activeLimit else { return false }
      }
      try await connection.query(
        """
        INSERT INTO share_links(id, owner_id, token_hash, label, devices, track, created_at, expires_at, precision)
        VALUES (\(link.id), \(link.owner.rawValue), \(link.tokenHash), \(link.label), \(devices)::text[],
          \(link.track), \(link.createdAt), \(link.until), \(link.precision.rawValue))
        """, logger: self.logger)
      return true
    }
  }

  public func shareLink(id: String) async throws -> ShareLinkRecord? {
    try await rows(
      """
      SELECT id, owner_id, token_hash, label, devices, track, created_at, expires_at, revoked_at,
        precision FROM share_links
      WHERE id = \(id)
      """
    ).first.map(Self.shareLink)
  }

  public func shareLink(tokenHash: String) async throws -> ShareLinkRecord? {
    try await rows(
      """
      SELECT s.id, s.owner_id, s.token_hash, s.label, s.devices, s.track, s.created_at, s.expires_at, s.revoked_at,
        s.precision
      FROM share_links s JOIN users u ON u.id = s.owner_id
      WHERE s.token_hash = \(tokenHash) AND NOT u.disabled
      """
    ).first.map(Self.shareLink)
  }

  public func shareLinks(owner: UserID, endedAfter: Int64?, limit: Int) async throws -> [ShareLinkRecord] {
    try await rows(
      """
      SELECT id, owner_id, token_hash, label, devices, track, created_at, expires_at, revoked_at,
        precision FROM share_links
      WHERE owner_id = \(owner.rawValue)
        AND (\(endedAfter)::bigint IS NULL OR least(coalesce(revoked_at, expires_at), expires_at) > \(endedAfter))
      ORDER BY created_at DESC, id DESC LIMIT \(Int64(limit))
      """
    ).map(Self.shareLink)
  }

  public func revokeShareLink(id: String, owner: UserID, now: Int64) async throws -> ShareLinkRecord? {
    try await rows(
      """
      UPDATE share_links SET revoked_at = coalesce(revoked_at, \(now))
      WHERE id = \(id) AND owner_id = \(owner.rawValue)
      RETURNING id, owner_id, token_hash, label, devices, track, created_at, expires_at, revoked_at, precision
      """
    ).first.map(Self.shareLink)
  }

  public func sharedFixes(owner: UserID, devices: [DeviceID]?, from: Int64, through: Int64, limit: Int)
    async throws -> [LocationFix]
  {
    let devices = devices?.map(\.rawValue)
    return try await rows(
      """
      SELECT \(unescaped: FixColumns.select) FROM fixes
      WHERE user_id = \(owner.rawValue) AND timestamp BETWEEN \(from) AND \(through)
        AND (\(devices)::text[] IS NULL OR device_id = ANY(\(devices)::text[]))
      ORDER BY timestamp DESC, id DESC LIMIT \(Int64(limit))
      """
    ).map { try FixColumns.fix($0).fix }
  }
}
