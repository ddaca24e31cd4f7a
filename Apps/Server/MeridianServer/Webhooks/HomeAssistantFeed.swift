import DomainKit
import Foundation
import MeridianAPI
import MeridianStore
import RealtimeKit

/// People's positions for Home Assistant: each stored batch's newest fix, for every enabled `homeassistant`
/// registration whose owner may see its person now (``DomainKit/Sharing/canSee(_:_:of:at:)``, the rule of the live
/// `user:` channels), or is that person, queued on the webhook outbox for that registration alone (its retries,
/// back-off and delivery log). The delivery is a `device_tracker.see` service call (``AlertChannel/homeAssistant``).
struct HomeAssistantFeed: Sendable {
  /// The event kind of a position.
  static let kind = "location"
  /// Home Assistant's REST path of the `device_tracker.see` service.
  static let servicePath = "/api/services/device_tracker/see"

  let store: any MeridianStore
  let outbox: WebhookOutbox
  let now: @Sendable () -> Int64

  /// The service URL of a Home Assistant instance given by its base URL (or already by the service URL).
  static func serviceURL(_ base: String) -> String {
    var base = base.trimmingCharacters(in: .whitespaces)
    if base.hasSuffix(servicePath) { return base }
    while base.hasSuffix("/") { base.removeLast() }
    return base + servicePath
  }

  /// The entity id Home Assistant gives a person: `device_tracker.meridian_<id>` (letters, digits and `_` only).
  static func deviceID(of person: UserID) -> String {
    "meridian_" + String(person.rawValue.lowercased().map { $0.isLetter || $0.isNumber ? $0 : "_" })
  }

  /// The service call's data for `fix` of `person`: `dev_id`, `gps`, and `gps_accuracy`, `battery` and `host_name`
  /// when known.
  static func serviceData(_ fix: LocationFix, of person: UserID, name: String?) -> JSONValue {
    var data: [String: JSONValue] = [
      "dev_id": .string(deviceID(of: person)), "gps": [.double(fix.latitude), .double(fix.longitude)],
    ]
    if let accuracy = fix.horizontalAccuracy { data["gps_accuracy"] = .int(Int64(accuracy.rounded())) }
    if let battery = fix.batteryLevel { data["battery"] = .int(Int64(battery.rounded())) }
    if let name { data["host_name"] = .string(name) }
    return .object(data)
  }

  /// The service call's data out of a delivery's envelope (its `data`).
  static func serviceData(envelope: Data) throws -> Data {
    guard let data = try JSONValue.parse(envelope)["data"] else {
      throw APIError(status: 500, code: .internal, message: "A Home Assistant delivery without its data.")
    }
    return Data(data.jsonText.utf8)
  }

  /// Queues the positions of `stored` (one commit's batches, in order) for the registrations that may have them.
  /// Best effort, like the live fan-out: what can't be read or queued now is left out (the fixes are stored).
  func enqueue(_ stored: [LiveUpdates.StoredFixes]) async {
    let time = now()
    guard
      let targets = try? await outbox.homeAssistantTargets.value(
        for: 0, now: time,
        load: {
          try await store.webhooks(.all).filter { $0.channel == .homeAssistant && $0.enabled && $0.ownerID != nil }
        }),
      !targets.isEmpty
    else { return }
    for item in stored {
      guard let fix = item.fixes.last, let settings = try? await store.privacySettings(owner: item.owner) else {
        continue
      }
      for target in targets {
        guard let ownerID = target.ownerID else { continue }
        let owner = UserID(ownerID)
        guard owner == item.owner || Sharing.canSee(owner, .location, of: settings, at: time) else { continue }
        let showsName = owner == item.owner || Sharing.canSee(owner, .field(.fullName), of: settings, at: time)
        let name = showsName ? try? await store.profile(item.owner)?.fullName : nil
        let data = Self.serviceData(fix, of: item.owner, name: name)
        _ = try? await outbox.enqueue(
          WebhookEvent(
            kind: Self.kind, userID: item.owner, payload: Data(data.jsonText.utf8),
            idempotencyKey: "location:\(item.owner.rawValue):\(item.device.rawValue):\(fix.timestamp)",
            occurredAt: fix.timestamp, queuedAt: time, target: target.id))
      }
    }
  }
}
