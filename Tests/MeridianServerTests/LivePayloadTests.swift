import DomainKit
import Foundation
import MeridianAPI
import MeridianStore
import MeridianStoreSQLite
import RealtimeKit
import Testing

@testable import MeridianServer

/// The live event payload is built by hand for speed; it must read back as exactly the `LiveLocation` it stands for.
@Suite struct LivePayloadTests {
  @Test func handBuiltPayloadDecodesAsTheLocation() throws {
    let full = try LocationFix(
      deviceID: "phone", timestamp: 1_700_000_000_123, latitude: 50.45, longitude: -0.000_1, horizontalAccuracy: 4.5,
      verticalAccuracy: 3, altitude: -12.25, speed: 1.4, speedAccuracy: 0.2, course: 359.9, floor: -2,
      batteryLevel: 0.5, batteryState: .charging, kind: .visit, trigger: .manual,
      refinedBy: FixID(deviceID: "watch", timestamp: 1_700_000_000_000))
    let bare = try LocationFix(timestamp: 1_700_000_001_000, latitude: 0, longitude: 180)
    let refinedWithoutDevice = try LocationFix(
      timestamp: 1_700_000_002_000, latitude: -90, longitude: 10, refinedBy: FixID(deviceID: nil, timestamp: 1))
    let location = LiveLocation(userId: "anna", deviceId: "phone", fixes: [full, bare, refinedWithoutDevice])

    let payload = LiveUpdates.payload(location)
    let viaPayload = try payload.decode(as: LiveLocation.self)
    #expect(viaPayload == location)
    // And it is the same JSON value the Codable form produces.
    let viaCodable = try JSONValue(encoding: location)
    #expect(try viaCodable.decode(as: LiveLocation.self) == payload.decode(as: LiveLocation.self))
    #expect(Set(Self.keys(payload)) == Set(Self.keys(viaCodable)))
  }

  @Test func handBuiltGeofenceEventPayloadIsTheCodableForm() throws {
    let full = GeofenceEventItem(
      id: "e1", geofenceId: "fence-1", geofenceName: "Home \u{1F3E0} \"quoted\"", ownerId: "anna", userId: "bob",
      kind: .dwell, timestamp: 1_700_000_000_123, reportedBy: .device, lat: 50.45, lon: -0.000_1, accuracy: 8,
      alerted: false)
    let bare = GeofenceEventItem(
      id: "e2", geofenceId: "fence-2", geofenceName: "", ownerId: "anna", userId: "anna", kind: .exit,
      timestamp: 0, reportedBy: .server)
    var proximity = bare
    proximity.proximity = ProximityEventDetail(ruleId: "rule-1", kind: .apart, radius: 500)
    for event in [full, bare, proximity] {
      let payload = try GeofenceMonitor.livePayload(event)
      // The same text on the wire (the encoder keeps a whole double as an integer: the same JSON number).
      #expect(payload.jsonText == (try JSONValue(encoding: GeofenceLiveEvent(event: event))).jsonText)
      #expect(try payload.decode(as: GeofenceLiveEvent.self) == GeofenceLiveEvent(event: event))
    }
  }

  /// Every key path in a JSON value, e.g. `fixes.refinedBy.deviceId`.
  static func keys(_ value: JSONValue, prefix: String = "") -> [String] {
    switch value {
    case .object(let object):
      object.flatMap { key, child in [prefix + key] + keys(child, prefix: prefix + key + ".") }
    case .array(let items): items.flatMap { keys($0, prefix: prefix) }
    default: []
    }
  }
}
