import DomainKit
import Foundation
import MeridianAPI
import MeridianTrackerStore
import NetworkingKit

/// Sends the outbox to the server in batches and removes each batch only after the server acknowledged it: over
/// the live socket when a ``LiveLink`` is connected and can carry the batch, over HTTP otherwise.
///
/// Exactly once, whatever happens: a batch's `Idempotency-Key` is derived from the rows it holds, so a batch re-sent
/// after a lost acknowledgement (or after `kill -9` and a restart) replays the server's first answer; and the server
/// stores a fix once per device and timestamp even if a batch is formed differently after a restart.
public struct Uploader: Sendable {
  /// The local history and outbox.
  public let store: TrackerStore
  /// The server's client (NetworkingKit retries within one attempt's policy).
  public let client: NetworkClient
  /// This device.
  public let deviceID: DeviceID
  /// Fixes per request (the server takes up to 1000).
  public let batchSize: Int
  /// The live socket, when the tracker keeps one open.
  public let live: LiveLink?

  /// An uploader.
  public init(
    store: TrackerStore, client: NetworkClient, deviceID: DeviceID, batchSize: Int = 500, live: LiveLink? = nil
  ) {
    self.store = store
    self.client = client
    self.deviceID = deviceID
    self.batchSize = min(max(batchSize, 1), 1000)
    self.live = live
  }

  /// What one ``drain()`` did.
  public struct Progress: Sendable, Hashable {
    /// Fixes acknowledged by the server.
    public var acknowledged = 0
    /// Of those, fixes the server already had (known for uploads over HTTP only).
    public var duplicates = 0
    /// Of those, fixes sent over the live socket.
    public var overSocket = 0
  }

  /// Uploads until the outbox is empty.
  ///
  /// - Throws: ``TrackerError/tokenRejected`` when the server refuses the token, ``TrackerError/uploadRefused(_:)``
  ///   when it refuses the batch for good (4xx); `NetworkingError` when the server can't be reached or keeps failing
  ///   after the client's retries (the batch stays queued: call again later).
  public func drain() async throws -> Progress {
    var progress = Progress()
    try await drain(into: &progress)
    return progress
  }

  /// Uploads until the outbox is empty, adding every acknowledged batch to `progress` at once, so that what was
  /// uploaded before a failure or a cancellation is counted too.
  public func drain(into progress: inout Progress) async throws {
    while true {
      let batch = try await store.pending(limit: batchSize)
      guard !batch.isEmpty else { return }
      let body = FixBatch(deviceId: deviceID, fixes: batch.map(\.fix))
      let key = Self.idempotencyKey(device: deviceID, rows: batch.map { ($0.id, $0.fix.timestamp) })
      let sentOverSocket = await live?.send(body, id: key) == true
      if !sentOverSocket {
        do {
          progress.duplicates += try await client.send(API.postFixes, body: body, idempotencyKey: key).duplicates
        } catch let error as NetworkingError {
          if case .unauthorized = error { throw TrackerError.tokenRejected }
          // A refusal that no retry can change (a fix the server won't take, another account's device, too many
          // devices): stop instead of retrying for ever. Timeouts (408) and the upload rate (429) pass.
          if case .server(let server) = error, (400..<500).contains(server.status.code),
            ![408, 429].contains(server.status.code)
          {
            throw TrackerError.uploadRefused("\(server)")
          }
          throw error
        }
      }
      try await store.acknowledge(batch.map(\.id))
      progress.acknowledged += batch.count
      if sentOverSocket { progress.overSocket += batch.count }
      try await store.setValue(String(Timestamp.milliseconds(Date())), for: TrackerStore.lastUploadKey)
    }
  }

  /// A key that names exactly these rows (row id and fix timestamp) of this device: the same batch gets the same key
  /// after any restart, and a history rebuilt from scratch can't reuse a key for other fixes.
  static func idempotencyKey(device: DeviceID, rows: [(id: Int64, timestamp: Int64)]) -> String {
    // FNV-1a over the device and the rows, twice with different offsets for 128 bits.
    var first: UInt64 = 0xcbf2_9ce4_8422_2325
    var second: UInt64 = 0x6c62_272e_07bb_0142
    func mix(_ byte: UInt8) {
      first = (first ^ UInt64(byte)) &* 0x100_0000_01b3
      second = (second ^ UInt64(byte)) &* 0x100_0000_01b3
    }
    for byte in device.rawValue.utf8 { mix(byte) }
    for row in rows {
      mix(0xff)
      for value in [row.id, row.timestamp] {
        withUnsafeBytes(of: value.littleEndian) { for byte in $0 { mix(byte) } }
      }
    }
    return "tracker-\(String(first, radix: 16))\(String(second, radix: 16))-\(rows.count)"
  }
}
