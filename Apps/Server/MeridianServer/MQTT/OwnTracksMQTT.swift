import DomainKit
import Foundation
import Logging
import MeridianAPI
import MeridianMQTT
import MeridianStore
import ServiceLifecycle
import Synchronization

/// OwnTracks in MQTT mode: the server is a client of the operator's broker, subscribed (persistent session, QoS 1)
/// to what the phones publish, `owntracks/<device>/<device>` and its `/event`, `/waypoint` and `/waypoints`
/// topics, the device's broker account being its device id (``MQTTBrokerAccounts``). Each message takes the path
/// of an HTTP `/pub` body (``PhoneAppIngest/take(_:from:device:)``: the same parsing, validation, device claim,
/// group commit, live fan-out and geofences) and is acknowledged to the broker only once stored; after a location,
/// the server publishes what a `/pub` answer carries, the friends' last locations and cards, retained at QoS 1,
/// under the device's own tree: `owntracks/<device>/<friend>` and `owntracks/<device>/<friend>/info`, which the
/// app's default subscription (`owntracks/+/+`, `…/info`) receives and the broker's ACL shows to that device only.
///
/// Up to ``messagesInFlight`` messages are taken at once (their PUBACKs still in order), so that a phone's burst
/// of locations shares group commits as concurrent HTTP uploads do (its waypoints and events keep their order:
/// ``order(_:)``); the friends are published once per device for all the
/// locations that came while one publishing ran, not once per location.
///
/// A message that is no OwnTracks JSON, or that the API would answer with a 4xx (an invalid fix, a device of
/// another account), is dropped with a log line and acknowledged; a failure of the store is not acknowledged: the
/// connection closes and the broker delivers the message again when the client reconnects.
struct OwnTracksMQTT: Sendable {
  let client: MQTTClient
  let phoneApps: PhoneAppIngest
  let accounts: MQTTBrokerAccounts?
  let logger: Logger
  /// The devices whose friends are being published.
  let friendsPublishing = CoalescedRuns<DeviceID>()

  /// The messages taken at once (the broker's own window, mosquitto's `max_inflight_messages` of 20 by default,
  /// may be smaller).
  static let messagesInFlight = 32

  /// The topic filters the server subscribes to.
  static let subscriptions = [
    "owntracks/+/+", "owntracks/+/+/event", "owntracks/+/+/waypoint", "owntracks/+/+/waypoints",
  ]
  .map { MQTTSubscription($0, qos: .atLeastOnce) }

  /// The client of `settings`.
  static func client(_ settings: MQTTSettings, logger: Logger) -> MQTTClient {
    MQTTClient(
      MQTTClientConfiguration(
        host: settings.host, port: settings.port, clientIdentifier: settings.clientIdentifier,
        username: settings.username, password: settings.password, cleanSession: false,
        keepAlive: settings.keepAlive, acknowledgementTimeout: settings.timeout,
        reconnectInitialDelay: settings.reconnectInitialDelay, reconnectMaximumDelay: settings.reconnectMaximumDelay,
        subscriptions: subscriptions, messagesInFlight: messagesInFlight, ordering: order),
      logger: logger)
  }

  /// A device's locations are taken at once; its waypoints and events wait for what it sent before and hold back
  /// what it sends after (an event names a waypoint sent just before it).
  @Sendable static func order(_ message: MQTTPublish) -> MQTTMessageOrder? {
    guard let device = device(ofTopic: message.topic) else { return nil }
    return MQTTMessageOrder(key: device.rawValue, exclusive: message.topic.split(separator: "/").count > 3)
  }

  /// The device a topic is a phone's own topic of (`owntracks/<device>/<device>`, optionally with `/event`,
  /// `/waypoint` or `/waypoints`); nil for the friends' topics the server publishes and anything else.
  static func device(ofTopic topic: String) -> DeviceID? {
    let levels = topic.split(separator: "/", omittingEmptySubsequences: false)
    guard levels.count == 3 || levels.count == 4, levels[0] == "owntracks", levels[1] == levels[2],
      MQTTBrokerAccounts.isAccountName(String(levels[1]))
    else { return nil }
    if levels.count == 4, !["event", "waypoint", "waypoints"].contains(levels[3]) { return nil }
    return DeviceID(String(levels[1]))
  }

  /// Takes one message; returns once it is stored or dropped (then it may be acknowledged).
  /// - Throws: what the store failed with (the message is then not acknowledged).
  func take(_ message: MQTTPublish) async throws {
    guard let device = Self.device(ofTopic: message.topic) else { return }
    guard let owner = try await phoneApps.store.deviceOwner(device) else {
      logger.warning("MQTT: dropped a message on \(message.topic): no account has the device \(device.rawValue)")
      return
    }
    let located: Bool
    do {
      let messages = try PhoneAppIngest.messages(in: Data(message.payload))
      located = try await phoneApps.take(messages, from: owner, device: device.rawValue)
    } catch let error as APIError where (400..<500).contains(error.status) {
      logger.warning("MQTT: dropped a message on \(message.topic): \(error.code.rawValue): \(error.message)")
      return
    }
    if located { await friendsPublishing.run(device) { await publishFriends(to: device, of: owner) } }
  }

  /// Publishes what a `/pub` answer to `owner` carries under `device`'s tree. Failures are logged: the fix is
  /// stored, and the next location publishes them again.
  func publishFriends(to device: DeviceID, of owner: UserID) async {
    do {
      let encoder = JSONEncoder()
      encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
      var friendTopic: String? = nil
      for message in try await phoneApps.reply(to: owner, acceptLanguage: nil) {
        var message = message
        let topic: String
        switch message {
        case .location(var location):
          let base = "owntracks/\(device.rawValue)/" + Self.friendLevel(location.topic)
          friendTopic = base
          location.topic = base
          message = .location(location)
          topic = base
        case .card:
          guard let friendTopic else { continue }
          topic = friendTopic + "/info"
        default:
          continue
        }
        try await client.publish(
          topic: topic, payload: Array(try encoder.encode(message)), qos: .atLeastOnce, retain: true)
      }
    } catch {
      logger.warning("MQTT: could not publish the friends of device \(device.rawValue): \(error)")
    }
  }

  /// The topic level naming a friend's device under a phone's tree: `<user>@<device>` of the friend's topic
  /// `owntracks/<user>/<device>` (`@` never occurs in a device's broker name, so it never names the phone's own).
  static func friendLevel(_ topic: String?) -> String {
    let levels = (topic ?? "").split(separator: "/", omittingEmptySubsequences: false).dropFirst()
    let level = levels.joined(separator: "@").map { "/+#".contains($0) ? "-" : $0 }
    return level.isEmpty ? "friend@device" : String(level)
  }
}

/// Runs of a piece of work per key that coalesce: a run asked for while the key's run is under way becomes one more
/// run after it (however many were asked for), done by the caller that started the first.
final class CoalescedRuns<Key: Hashable & Sendable>: Sendable {
  /// Each key with a run under way, and whether another was asked for meanwhile.
  private let running = Mutex<[Key: Bool]>([:])

  /// Runs `work` for `key` now, and again while more runs were asked for; returns at once when a run of `key` is
  /// under way (which then runs once more).
  func run(_ key: Key, _ work: @Sendable () async -> Void) async {
    let first = running.withLock { running in
      guard running[key] == nil else {
        running[key] = true
        return false
      }
      running[key] = false
      return true
    }
    guard first else { return }
    repeat {
      await work()
    } while running.withLock { running in
      if running[key] == true {
        running[key] = false
        return true
      }
      running[key] = nil
      return false
    }
  }
}

/// Runs the MQTT link: writes the broker's account files, then keeps connected until the graceful shutdown.
struct OwnTracksMQTTService: Service {
  let bridge: OwnTracksMQTT

  func run() async throws {
    if let accounts = bridge.accounts {
      do {
        try await accounts.prepare()
      } catch {
        bridge.logger.error("MQTT: could not write the broker's password and ACL files: \(error)")
      }
    }
    let bridge = bridge
    await cancelWhenGracefulShutdown {
      await bridge.client.run { message in try await bridge.take(message) }
    }
  }
}
