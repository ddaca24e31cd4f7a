import DomainKit
import Foundation
import MeridianAPI

/// Where fixes enter the server, however they arrive (`POST /v1/fixes`, a `publish` on the live socket, OwnTracks,
/// OsmAnd): checks the batch, claims the device for the user and hands the batch to the group-commit writer, whose
/// commits the live fan-out reads.
struct FixIngest: Sendable {
  let store: any MeridianStore
  let writer: FixWriter
  let now: @Sendable () -> Int64

  /// Stores `batch` for `user` and returns its receipt once it is durably committed.
  ///
  /// - Throws: ``APIError`` `invalid_request` for an empty or oversized batch or a bad device id,
  ///   `device_not_owned` (403) for another account's device, `unavailable` (503) while shutting down.
  func submit(_ user: UserID, _ batch: FixBatch, idempotency: IdempotencyClaim? = nil) async throws -> FixReceipt {
    guard (1...1000).contains(batch.fixes.count) else {
      throw APIError.invalidRequest("Send between 1 and 1000 fixes per request (got \(batch.fixes.count)).")
    }
    let device = batch.deviceId.rawValue.trimmedOfWhitespace
    guard (1...128).contains(device.count) else {
      throw APIError.invalidRequest("'deviceId' must have between 1 and 128 characters.")
    }
    guard try await store.claimDevice(DeviceID(device), owner: user, now: now()) else {
      throw APIError(
        status: 403, code: .deviceNotOwned, message: "The device '\(device)' is registered to another account.")
    }
    return try await writer.submit(
      FixInsertBatch(userID: user, deviceID: DeviceID(device), fixes: batch.fixes, idempotency: idempotency))
  }
}
