import DomainKit
import Foundation
import MeridianStore

/// Polls and rewards: the points each action earns and where images are kept.
///
/// | setting | default | variable |
/// |---|---|---|
/// | points for posting a poll | 10 | `MERIDIAN_POINTS_POLL` |
/// | points for a first vote in a poll | 1 | `MERIDIAN_POINTS_VOTE` |
/// | blob directory | next to the SQLite file (`./data/blobs`); in the database on PostgreSQL | `MERIDIAN_BLOB_DIR` |
/// | largest image | 5 MiB | `MERIDIAN_BLOB_MAX_BYTES` |
/// | sweep of unreferenced images | every 6 hours (0: never) | `MERIDIAN_BLOB_SWEEP_SECONDS` |
public struct PollSettings: Sendable, Hashable {
  /// Points per action (DomainKit's `PointsRewards`).
  public var rewards = PointsRewards()
  /// Where blobs are files; nil keeps them in the database when the engine has a blob table (PostgreSQL, so every
  /// node sees them), else in `blobs` next to the SQLite file.
  public var blobDirectory: String?
  /// The largest image accepted, in bytes.
  public var maximumBlobBytes = 5 * 1024 * 1024
  /// How long an uploaded image is kept though nothing refers to it, ms: what a deleted poll, a replaced photo or a
  /// deleted account releases goes only when it was last uploaded at least this long ago.
  public var blobGracePeriod = BlobGracePeriod.default
  /// How often the server deletes the images nothing refers to, ms; 0 never (`meridian-admin blobs sweep` still
  /// does).
  public var blobSweepInterval: Int64 = 6 * 60 * 60 * 1000

  /// The defaults.
  public init() {}

  /// Reads `MERIDIAN_POINTS_POLL`, `MERIDIAN_POINTS_VOTE`, `MERIDIAN_BLOB_DIR`, `MERIDIAN_BLOB_MAX_BYTES` and
  /// `MERIDIAN_BLOB_GRACE_SECONDS` and `MERIDIAN_BLOB_SWEEP_SECONDS`.
  /// - Throws: ``ConfigurationError`` for a value out of range.
  mutating func read(_ environment: [String: String]) throws(ConfigurationError) {
    func number(_ name: String, minimum: Int) throws(ConfigurationError) -> Int? {
      guard let text = environment[name], !text.isEmpty else { return nil }
      guard let value = Int(text), value >= minimum else {
        throw ConfigurationError(setting: name, value: text, reason: "must be a whole number ≥ \(minimum)")
      }
      return value
    }
    if let points = try number("MERIDIAN_POINTS_POLL", minimum: 0) { rewards.pollPosted = points }
    if let points = try number("MERIDIAN_POINTS_VOTE", minimum: 0) { rewards.voted = points }
    if let bytes = try number("MERIDIAN_BLOB_MAX_BYTES", minimum: 1) { maximumBlobBytes = bytes }
    if let seconds = try number("MERIDIAN_BLOB_GRACE_SECONDS", minimum: 0) { blobGracePeriod = Int64(seconds) * 1000 }
    if let seconds = try number("MERIDIAN_BLOB_SWEEP_SECONDS", minimum: 0) { blobSweepInterval = Int64(seconds) * 1000 }
    if let directory = environment["MERIDIAN_BLOB_DIR"], !directory.isEmpty { blobDirectory = directory }
  }
}
