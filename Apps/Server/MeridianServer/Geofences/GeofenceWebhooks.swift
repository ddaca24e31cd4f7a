import Foundation
import MeridianAPI
import MeridianStore

extension GeofenceMonitor {
  /// The webhook event of `item` for the fence owner's webhooks and the operator-wide ones — `geofence.enter`,
  /// `.exit` or `.dwell` with the event as `data` — when the owner is in the event's audience (the owner's webhooks
  /// hear what the owner's socket may hear, never more) and the fence's alert rule allows it
  /// (``GeofenceEventItem/alerted``); nil otherwise. The webhook registrations are every alert channel's (Web Push,
  /// email, ntfy), so none of them hears an event the rule holds back.
  ///
  /// It is queued in the transaction that stores the event (``GeofenceTrackingUpdate/webhookEvents``), so a node
  /// stopping right after the commit loses no delivery. The event's id is the idempotency key — the same on every
  /// node and after a restart — so an event evaluated twice is queued once. Its deliveries are due at `queuedAt` (the
  /// server's clock at evaluation), whatever time the fix that decided it says.
  static func webhookEvent(_ item: Addressed, queuedAt: Int64) -> WebhookEvent? {
    let event = item.event
    guard event.alerted, item.audience.contains(event.ownerId), let payload = try? JSONEncoder().encode(event) else {
      return nil
    }
    return WebhookEvent(
      kind: "geofence.\(event.kind.rawValue)", userID: event.ownerId, payload: payload,
      idempotencyKey: "geofence:\(event.id)", occurredAt: event.timestamp, queuedAt: queuedAt)
  }
}
