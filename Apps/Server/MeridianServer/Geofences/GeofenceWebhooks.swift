import Foundation
import Logging
import MeridianAPI

extension WebhookOutbox {
  /// The geofence monitor's sink: each stored event the geofence's owner may see now (the monitor hands over no
  /// other) is queued for the owner's webhooks and the operator-wide ones, as `geofence.enter`, `.exit` or
  /// `.dwell` with the event as `data`. The event's id is the idempotency key — the same on every node and after a
  /// restart — so an event handed over twice is queued once.
  ///
  /// The hand-over follows the commit of the event; an event whose node stops in between reaches the sockets and
  /// `GET /v1/geofences/events` but no webhook.
  func geofenceSink(logger: Logger) -> GeofenceEventSink {
    { events in
      let encoder = JSONEncoder()
      for event in events {
        do {
          _ = try await enqueue(
            kind: "geofence.\(event.kind.rawValue)", userID: event.ownerId, payload: try encoder.encode(event),
            idempotencyKey: "geofence:\(event.id)", occurredAt: event.timestamp)
        } catch {
          logger.error(
            "queueing a geofence event for webhooks failed",
            metadata: ["event": "\(event.id)", "error": "\(error)"])
        }
      }
    }
  }
}
