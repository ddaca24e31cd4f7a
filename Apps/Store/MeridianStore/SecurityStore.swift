import DomainKit
import Foundation
import MeridianAPI

/// What the server's security rules keep: which devices take OsmAnd reports (by a secret identifier that is never
/// the device's id), the deployment's own secrets, and the counts the per-account quotas are checked against.
public protocol MeridianSecurityStore: Sendable {
  /// Whether the account exists and is disabled.
  func isDisabled(_ user: UserID) async throws -> Bool

  /// The owner's registered devices, oldest first.
  func devices(owner: UserID) async throws -> [OwnedDevice]
  /// Registers `device` for `owner` unless it is another account's, or the owner already has `maxDevices` devices
  /// (nil: no limit).
  func claimDevice(_ device: DeviceID, owner: UserID, now: Int64, maxDevices: Int?) async throws -> DeviceClaim

  /// Makes `device` (registered for `owner` if new) accept OsmAnd reports carrying the identifier whose SHA-256 is
  /// `identifierHash`, replacing the identifier it had. Returns the claim: only `.claimed` enabled it.
  func enableOsmAnd(device: DeviceID, owner: UserID, identifierHash: String, now: Int64, maxDevices: Int?)
    async throws -> DeviceClaim
  /// Stops `device` of `owner` from accepting OsmAnd reports; returns whether it did.
  func disableOsmAnd(device: DeviceID, owner: UserID) async throws -> Bool
  /// The device and owner of the OsmAnd identifier whose SHA-256 is `identifierHash`, unless the owner is disabled.
  func osmAndDevice(identifierHash: String) async throws -> (device: DeviceID, owner: UserID)?

  /// The deployment's 32-byte random secret called `name`: created on first use, then the same for every server
  /// process on this database.
  func deploymentSecret(_ name: String) async throws -> Data

  /// Revokes all but the newest `keep` unexpired tokens of `user`; returns how many it revoked.
  func revokeTokens(of user: UserID, keepingNewest keep: Int, now: Int64) async throws -> Int
}

extension MeridianSecurityStore {
  /// Registers `device` for `owner` if new, without a device quota; false when it belongs to someone else.
  public func claimDevice(_ device: DeviceID, owner: UserID, now: Int64) async throws -> Bool {
    try await claimDevice(device, owner: owner, now: now, maxDevices: nil) == .claimed
  }
}

/// What claiming a device for an account found.
public enum DeviceClaim: Sendable, Hashable {
  /// The device is the account's (registered now or before).
  case claimed
  /// The device is registered to another account.
  case otherOwner
  /// The device is new and the account already has as many devices as it may.
  case quotaExceeded(limit: Int)
}
