import DomainKit
import Foundation

/// The fixes waiting for geofence evaluation, as a durable queue in commit order: the transaction that stores a
/// request's fixes appends one entry for them (unless they are all imported), and an entry leaves the queue only in
/// the transaction that stores its evaluation (``GeofenceTrackingUpdate/evaluatedEntries``) or once the evaluation
/// found nothing to store (``removeGeofenceQueueEntries(_:)``). A restart, a slow monitor or a burst therefore never
/// loses an evaluation: the server reads on from the oldest entry left.
public protocol GeofenceQueue: Sendable {
  /// The oldest entries, oldest first, each with the fixes its request stored (a fix deleted since is left out):
  /// at most `limit` of them, and none whose entries before it in the read stored `fixes` fixes or more (the first
  /// is always read), so that a read holds about `fixes` fixes however large the uploads were. Entries commit in
  /// sequence order, so no entry older than the newest one read can appear later.
  func geofenceQueue(limit: Int, fixes: Int) async throws -> [GeofenceQueueEntry]
  /// Removes these entries (evaluated); entries removed already are skipped.
  func removeGeofenceQueueEntries(_ sequences: [UInt64]) async throws
  /// How many entries wait, and when the oldest was queued.
  func geofenceQueueBacklog() async throws -> GeofenceQueueBacklog
}

/// One request's stored fixes, waiting for geofence evaluation.
public struct GeofenceQueueEntry: Sendable, Hashable {
  /// Its place in the queue (commit order).
  public var sequence: UInt64
  /// The person whose fixes they are.
  public var userID: UserID
  /// The fixes the request stored (duplicates left out), oldest first.
  public var fixes: [LocationFix]
  /// When the transaction that stored them ran, UTC ms.
  public var queuedAt: Int64

  /// An entry.
  public init(sequence: UInt64, userID: UserID, fixes: [LocationFix], queuedAt: Int64) {
    self.sequence = sequence
    self.userID = userID
    self.fixes = fixes
    self.queuedAt = queuedAt
  }
}

/// The size of the geofence queue.
public struct GeofenceQueueBacklog: Sendable, Hashable {
  /// Entries waiting.
  public var entries: Int
  /// When the oldest waiting entry was queued, UTC ms; nil when none waits.
  public var oldestQueuedAt: Int64?

  /// A backlog.
  public init(entries: Int, oldestQueuedAt: Int64?) {
    self.entries = entries
    self.oldestQueuedAt = oldestQueuedAt
  }
}

extension FixInsertBatch {
  /// Whether the batch's stored fixes go to the geofence queue: any of them is not imported (imported history is
  /// never evaluated).
  public var isEvaluatedByGeofences: Bool { fixes.contains { $0.kind != .imported } }
}
