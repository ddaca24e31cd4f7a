import DomainKit
import Foundation
import NetworkingKit

/// The caller's devices and their OsmAnd / Traccar access. The OsmAnd protocol carries no credentials, so a device
/// takes OsmAnd reports only after its owner enables them: the server then gives out a long random identifier, shown
/// once, that the phone app sends as its `id` (it is never the device's id, which viewers' apps may learn).
extension API {
  /// `GET /v1/devices`: the caller's devices, oldest first.
  public static let devices = Endpoint<Void, NoBody, DeviceList>(.get, "/v1/devices")
  /// `POST /v1/devices/{id}/osmand` → 201 with a new OsmAnd identifier for the device (registered if new); an
  /// identifier given out before stops working.
  public static let enableOsmAnd = Endpoint<DeviceRef, NoBody, OsmAndAccess>(
    .post, "/v1/devices/\(\.id, "id")/osmand")
  /// `DELETE /v1/devices/{id}/osmand` → 204: the device's OsmAnd identifier stops working.
  public static let disableOsmAnd = Endpoint<DeviceRef, NoBody, NoContent>(
    .delete, "/v1/devices/\(\.id, "id")/osmand", body: .none, response: .empty)
  /// `POST /v1/devices/{id}/mqtt-credentials` → 201 with a new MQTT user name and password for the device
  /// (registered if new) on the server's broker (OwnTracks in MQTT mode); a password given out before stops working.
  public static let issueMQTTCredentials = Endpoint<DeviceRef, NoBody, MQTTCredentials>(
    .post, "/v1/devices/\(\.id, "id")/mqtt-credentials")
  /// `DELETE /v1/devices/{id}/mqtt-credentials` → 204: the device's MQTT password stops working.
  public static let revokeMQTTCredentials = Endpoint<DeviceRef, NoBody, NoContent>(
    .delete, "/v1/devices/\(\.id, "id")/mqtt-credentials", body: .none, response: .empty)
}

/// The answer to `POST /v1/devices/{id}/mqtt-credentials`: what to type into OwnTracks in MQTT mode.
public struct MQTTCredentials: Sendable, Hashable, Codable {
  /// The device whose messages these credentials publish.
  public var deviceId: DeviceID
  /// The broker user name (the app's "UserID"); it is the device id.
  public var username: String
  /// The broker password (shown once; the broker keeps a salted hash).
  public var password: String
  /// The topic the app publishes its locations to (OwnTracks' default `owntracks/%u/%d` with the device id as the
  /// app's "DeviceID").
  public var topic: String
  /// The topic filter under which the server publishes the friends' locations and cards (`…/info`) for this device.
  public var friendsTopic: String
  /// Credentials.
  public init(deviceId: DeviceID, username: String, password: String, topic: String, friendsTopic: String) {
    self.deviceId = deviceId
    self.username = username
    self.password = password
    self.topic = topic
    self.friendsTopic = friendsTopic
  }
}

/// The path parameter of the device routes.
public struct DeviceRef: RouteParameters, Hashable {
  /// The device id.
  public var id: DeviceID
  /// A reference.
  public init(id: DeviceID) { self.id = id }
  /// Reads `{id}`.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    id = DeviceID(try path.required("id"))
  }
}

/// The answer to `GET /v1/devices`.
public struct DeviceList: Sendable, Hashable, Codable {
  /// The devices, oldest first.
  public var devices: [OwnedDevice]
  /// A list.
  public init(devices: [OwnedDevice]) { self.devices = devices }
}

/// The answer to `POST /v1/devices/{id}/osmand`: what to type into the OsmAnd or Traccar Client app.
public struct OsmAndAccess: Sendable, Hashable, Codable {
  /// The device whose reports this identifier stores.
  public var deviceId: DeviceID
  /// The secret device identifier for the app's "Device identifier" field (shown once; the server keeps only its
  /// hash).
  public var identifier: String
  /// The URL path the app reports to (`/osmand`, on this server's address).
  public var path: String
  /// An answer.
  public init(deviceId: DeviceID, identifier: String, path: String = "/osmand") {
    self.deviceId = deviceId
    self.identifier = identifier
    self.path = path
  }
}

/// One of the caller's devices, as `GET /v1/devices` lists it.
public struct OwnedDevice: Sendable, Hashable, Codable {
  /// The device id its apps report with.
  public var id: DeviceID
  /// When it first reported, UTC milliseconds.
  public var createdAt: Int64
  /// Whether it takes OsmAnd / Traccar reports (with its own secret identifier, not this id).
  public var osmAnd: Bool
  /// A device row.
  public init(id: DeviceID, createdAt: Int64, osmAnd: Bool) {
    self.id = id
    self.createdAt = createdAt
    self.osmAnd = osmAnd
  }
}
