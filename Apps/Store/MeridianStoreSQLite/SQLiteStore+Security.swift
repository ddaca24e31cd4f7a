import DomainKit
import Foundation
import GRDB
import MeridianAPI
import MeridianStore

extension SQLiteStore {
  public func isDisabled(_ user: UserID) async throws -> Bool {
    try await database.read { db in
      try Bool.fetchOne(db, sql: "SELECT disabled <> 0 FROM users WHERE id = ?", arguments: [user.rawValue]) ?? false
    }
  }

  public func devices(owner: UserID) async throws -> [OwnedDevice] {
    try await database.read { db in
      try Row.fetchAll(
        db,
        sql: """
          SELECT d.id, d.created_at, o.hash IS NOT NULL AS osmand FROM devices d
          LEFT JOIN osmand_identifiers o ON o.device_id = d.id
          WHERE d.owner_id = ? ORDER BY d.created_at, d.id
          """,
        arguments: [owner.rawValue]
      ).map { row in OwnedDevice(id: DeviceID(row["id"] as String), createdAt: row["created_at"], osmAnd: row["osmand"])
      }
    }
  }

  public func claimDevice(_ device: DeviceID, owner: UserID, now: Int64, maxDevices: Int?) async throws
    -> DeviceClaim
  {
    // Almost every request comes from a known device: memory or a concurrent read answers without the writer.
    if let known = try await devices.value(
      for: device, now: now, load: { try await deviceOwner(device) })
    {
      return known == owner ? .claimed : .otherOwner
    }
    return try await database.write { db in try Self.claim(db, device, owner: owner, now: now, maxDevices: maxDevices) }
  }

  public func enableOsmAnd(
    device: DeviceID, owner: UserID, identifierHash: String, now: Int64, maxDevices: Int?
  ) async throws -> DeviceClaim {
    try await database.write { db in
      let claim = try Self.claim(db, device, owner: owner, now: now, maxDevices: maxDevices)
      guard claim == .claimed else { return claim }
      try db.execute(
        sql: "INSERT OR REPLACE INTO osmand_identifiers(hash, device_id, created_at) VALUES (?, ?, ?)",
        arguments: [identifierHash, device.rawValue, now])
      return .claimed
    }
  }

  public func disableOsmAnd(device: DeviceID, owner: UserID) async throws -> Bool {
    try await database.write { db in
      try db.execute(
        sql: """
          DELETE FROM osmand_identifiers
          WHERE device_id = ? AND device_id IN (SELECT id FROM devices WHERE owner_id = ?)
          """,
        arguments: [device.rawValue, owner.rawValue])
      return db.changesCount > 0
    }
  }

  public func osmAndDevice(identifierHash: String) async throws -> (device: DeviceID, owner: UserID)? {
    try await database.read { db in
      try Row.fetchOne(
        db,
        sql: """
          SELECT d.id, d.owner_id FROM osmand_identifiers o JOIN devices d ON d.id = o.device_id
          JOIN users u ON u.id = d.owner_id
          WHERE o.hash = ? AND u.disabled = 0
          """,
        arguments: [identifierHash]
      ).map { row in (device: DeviceID(row["id"] as String), owner: UserID(row["owner_id"] as String)) }
    }
  }

  public func deploymentSecret(_ name: String) async throws -> Data {
    if let stored = try await database.read({ db in try Self.secret(db, name) }) { return stored }
    return try await database.write { db in
      // SQLite's randomblob() draws from its generator seeded by the operating system's.
      try db.execute(
        sql: "INSERT OR IGNORE INTO deployment_secrets(name, value, created_at) VALUES (?, randomblob(32), ?)",
        arguments: [name, now()])
      guard let secret = try Self.secret(db, name) else {
        throw DatabaseError(resultCode: .SQLITE_ERROR, message: "no secret \(name)")
      }
      return secret
    }
  }

  public func revokeTokens(of user: UserID, keepingNewest keep: Int, now: Int64) async throws -> Int {
    let revoked = try await database.write { db in
      try db.execute(
        sql: """
          UPDATE tokens SET revoked_at = ?
          WHERE user_id = ? AND revoked_at IS NULL AND expires_at > ? AND hash NOT IN (
            SELECT hash FROM tokens WHERE user_id = ? AND revoked_at IS NULL AND expires_at > ?
            ORDER BY created_at DESC, hash LIMIT ?)
          """,
        arguments: [now, user.rawValue, now, user.rawValue, now, max(0, keep)])
      return db.changesCount
    }
    if revoked > 0 {
      tokens.removeAll { $0.user == user }
      caches.announceRevocation()
    }
    return revoked
  }

  /// Registers `device` for `owner` within a transaction, unless another account has it or the quota is full.
  private static func claim(_ db: Database, _ device: DeviceID, owner: UserID, now: Int64, maxDevices: Int?) throws
    -> DeviceClaim
  {
    if let stored = try String.fetchOne(
      db, sql: "SELECT owner_id FROM devices WHERE id = ?", arguments: [device.rawValue])
    {
      return stored == owner.rawValue ? .claimed : .otherOwner
    }
    if let maxDevices {
      let count =
        try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM devices WHERE owner_id = ?", arguments: [owner.rawValue]) ?? 0
      guard count < maxDevices else { return .quotaExceeded(limit: maxDevices) }
    }
    try db.execute(
      sql: "INSERT INTO devices(id, owner_id, created_at) VALUES (?, ?, ?)",
      arguments: [device.rawValue, owner.rawValue, now])
    return .claimed
  }

  private static func secret(_ db: Database, _ name: String) throws -> Data? {
    try Data.fetchOne(db, sql: "SELECT value FROM deployment_secrets WHERE name = ?", arguments: [name])
  }
}
