import DomainKit
import Foundation
import MeridianAPI
import MeridianStore

/// Where fixes enter the server, however they arrive (`POST /v1/fixes`, a `publish` on the live socket, OwnTracks,
/// OsmAnd): checks the batch (device id, times, the account's upload rate), claims the device for the user and
/// hands the batch to the group-commit writer, whose commits the live fan-out reads. Fixes inside one of the
/// account's privacy zones that store nothing are dropped here, on arrival (``PrivacyZone/stores(_:in:)``).
struct FixIngest: Sendable {
  let store: any MeridianStore
  let writer: FixWriter
  let now: @Sendable () -> Int64
  let limits: ServerLimits
  /// Fixes per account per minute.
  let rate: RateLimiter
  /// Each account's privacy zones, dropped on every change of the owner's settings on any node (``zonesChanged(_:)``,
  /// from the live updates' signal) and after a few seconds anyway (a change made by the admin CLI).
  let zones = LookupCache<UserID, [PrivacyZone]>(lifetime: 5_000, capacity: 10_000)

  /// Stores `batch` for `user` and returns its receipt once it is durably committed.
  ///
  /// - Throws: ``APIError`` `invalid_request` for an empty or oversized batch or a bad device id, `invalid_fix` for a
  ///   fix dated before 2000 or more than ``ServerLimits/futureFixSeconds`` ahead of the server's clock,
  ///   `rate_limited` (429) past the account's upload rate, `device_not_owned` (403) for another account's device,
  ///   `quota_exceeded` (409) for a new device past the account's quota, `unavailable` (503) while shutting down.
  /// `name` names a fix in errors by its index in the batch (`fixes[3]`, or the client's own name for it).
  func submit(
    _ user: UserID, _ batch: FixBatch, idempotency: IdempotencyClaim? = nil,
    name: (Int) -> String = { "fixes[\($0)]" }
  ) async throws -> FixReceipt {
    guard (1...1000).contains(batch.fixes.count) else {
      throw APIError.invalidRequest("Send between 1 and 1000 fixes per request (got \(batch.fixes.count)).")
    }
    let device = try Self.checkedDeviceID(batch.deviceId.rawValue)
    let now = now()
    try FixTimes.check(batch.fixes, now: now, futureSeconds: limits.futureFixSeconds, name: name)
    let claim = try await store.claimDevice(
      device, owner: user, now: now, maxDevices: ServerLimits.active(limits.devicesPerAccount))
    try Self.check(claim, device: device)
    // With the limit off, no hop onto the limiter's actor on the ingest path.
    if rate.limit > 0, let wait = try await rate.reserve(user.rawValue, cost: batch.fixes.count, now: now) {
      throw APIError.rateLimited(
        "This account uploaded more than \(limits.fixesPerAccountPerMinute) fixes in the last minute; send the rest "
          + "later.", retryAfterMilliseconds: wait)
    }
    let (kept, withheld) = try await keptFixes(batch.fixes, of: user, now: now)
    // Nothing to store: the answer is the same whenever it is asked again, so no idempotency record is needed.
    guard !kept.isEmpty else { return FixReceipt(accepted: 0, duplicates: 0, withheld: withheld) }
    var receipt = try await writer.submit(
      FixInsertBatch(userID: user, deviceID: device, fixes: kept, idempotency: idempotency))
    if withheld > 0 { receipt.withheld = withheld }
    return receipt
  }

  /// `fixes` without those inside a privacy zone of `user` that stores nothing, and how many those were.
  func keptFixes(_ fixes: [LocationFix], of user: UserID, now: Int64) async throws -> (
    kept: [LocationFix], withheld: Int
  ) {
    let zones = try await zones.value(for: user, now: now) { try await store.privacyZones(owner: user) } ?? []
    guard zones.contains(where: { !$0.store }) else { return (fixes, 0) }
    let kept = fixes.filter { PrivacyZone.stores($0, in: zones) }
    return (kept, fixes.count - kept.count)
  }

  /// Forgets what this node remembers of `user`'s zones: call after any change to them.
  func zonesChanged(_ user: UserID) { zones.remove(user) }

  /// The device id without surrounding spaces, checked: 1…128 characters, no control characters.
  /// - Throws: ``APIError`` `invalid_request`.
  static func checkedDeviceID(_ text: String) throws(APIError) -> DeviceID {
    let device = text.trimmedOfWhitespace
    try Identifier.check(device, name: "deviceId")
    return DeviceID(device)
  }

  /// Turns a claim other than `.claimed` into its error.
  static func check(_ claim: DeviceClaim, device: DeviceID) throws(APIError) {
    switch claim {
    case .claimed: return
    case .otherOwner:
      throw APIError(
        status: 403, code: .deviceNotOwned,
        message: "The device '\(echo(device.rawValue))' is registered to another account.")
    case .quotaExceeded(let limit):
      throw APIError(
        status: 409, code: .quotaExceeded,
        message: "This account already has \(limit) devices, the most allowed; a new device can't be added.")
    }
  }
}
