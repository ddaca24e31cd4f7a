import DomainKit
import Foundation
import MeridianAPI

/// Geofence tracking's primitives in one transaction (``StoreTransaction``).
public protocol GeofenceTransaction: Sendable {
  /// `user`'s tracking version (0 before their first commit), their tracker's row held until the transaction ends,
  /// so that commits for one person run one after another.
  func lockGeofenceTracker(of user: UserID) async throws -> Int64
  /// Sets `user`'s tracking version and newest evaluated fix, its time and position (after
  /// ``lockGeofenceTracker(of:)``).
  func setGeofenceTracker(of user: UserID, version: Int64, lastFixAt: Int64?, at position: GeofencePosition?)
    async throws
  /// Stores `user`'s state (encoded) per geofence; a fence deleted meanwhile gets none.
  func saveGeofenceStates(_ states: [(geofence: GeofenceID, state: String)], of user: UserID) async throws
  /// Removes `user`'s state for `geofences`.
  func removeGeofenceStates(_ geofences: [GeofenceID], of user: UserID) async throws
  /// Stores each of `events` with whether its fence's owner sees it, unless an event with its id is stored or its
  /// fence is gone.
  func insertGeofenceEvents(_ events: [(event: GeofenceEventItem, ownerSees: Bool)]) async throws
  /// Removes the geofence queue's entries `sequences`.
  func removeGeofenceQueueEntries(_ sequences: [UInt64]) async throws
}

extension StoreTransaction {
  /// Stores `update` if `user`'s tracking version is still `update.version` (see
  /// ``GeofenceStore/commitGeofenceTracking(_:)``): the new state, its events, their webhook deliveries and the
  /// removal of the queue entries it evaluated, all in this transaction; false (nothing stored) when another commit
  /// came first.
  public func commitGeofenceTracking(_ update: GeofenceTrackingUpdate) async throws -> Bool {
    let states = try update.states.map { (geofence: $0.key, state: try $0.value.encoded()) }
    guard try await lockGeofenceTracker(of: update.userID) == update.version else { return false }
    try await setGeofenceTracker(
      of: update.userID, version: update.version + 1, lastFixAt: update.lastFixAt, at: update.lastPosition)
    try await saveGeofenceStates(states, of: update.userID)
    if !update.removed.isEmpty { try await removeGeofenceStates(update.removed, of: update.userID) }
    if !update.events.isEmpty {
      try await insertGeofenceEvents(update.events.map { (event: $0, ownerSees: update.ownerSees($0)) })
    }
    for event in update.webhookEvents { try await enqueueWebhookEvent(event) }
    if !update.evaluatedEntries.isEmpty { try await removeGeofenceQueueEntries(update.evaluatedEntries) }
    return true
  }
}

extension GeofenceStore where Self: StoreTransactions {
  public func commitGeofenceTracking(_ update: GeofenceTrackingUpdate) async throws -> Bool {
    try await write { tx in try await tx.commitGeofenceTracking(update) }
  }
}

extension GeofenceQueue where Self: StoreTransactions {
  public func removeGeofenceQueueEntries(_ sequences: [UInt64]) async throws {
    guard !sequences.isEmpty else { return }
    try await write { tx in try await tx.removeGeofenceQueueEntries(sequences) }
  }
}
