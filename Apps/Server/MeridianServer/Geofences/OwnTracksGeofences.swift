import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import MeridianStore

/// OwnTracks interop for geofences: `waypoint` and `waypoints` messages create or update the person's circle
/// geofences (keyed by the region's `rid`, else its creation time `tst`; the radius brought into the allowed range),
/// and `transition` messages become events reported by the device, which the server's own evaluation does not
/// repeat. A transition for a region the server doesn't know is ignored.
struct OwnTracksGeofences: Sendable {
  let monitor: GeofenceMonitor
  var store: any MeridianStore { monitor.store }

  /// Takes the waypoints first (a transition may name a region defined in the same body), then the transitions.
  func take(_ messages: [OwnTracks.Message], body: Data, from user: UserID) async throws {
    var waypoints: [OwnTracks.Waypoint] = []
    var transitions: [OwnTracks.Transition] = []
    var listed = false
    for message in messages {
      switch message {
      case .waypoint(let waypoint): waypoints.append(waypoint)
      case .transition(let transition): transitions.append(transition)
      case .other(let type) where type == "waypoints": listed = true
      default: break
      }
    }
    if listed { waypoints += Self.listedWaypoints(body) }
    for waypoint in waypoints { try await save(waypoint, of: user) }
    for transition in transitions { try await report(transition, of: user) }
  }

  /// The waypoints of every `{"_type": "waypoints", "waypoints": […]}` in `body` (an object or an array); entries
  /// that aren't valid waypoints are skipped.
  static func listedWaypoints(_ body: Data) -> [OwnTracks.Waypoint] {
    guard let json = try? JSONSerialization.jsonObject(with: body) else { return [] }
    let objects = (json as? [Any] ?? [json]).compactMap { $0 as? [String: Any] }
    var found: [OwnTracks.Waypoint] = []
    for object in objects where object["_type"] as? String == "waypoints" {
      for entry in object["waypoints"] as? [Any] ?? [] {
        guard let data = try? JSONSerialization.data(withJSONObject: entry),
          let waypoint = try? JSONDecoder().decode(OwnTracks.Waypoint.self, from: data)
        else { continue }
        found.append(waypoint)
      }
    }
    return found
  }

  /// The device's key of a region.
  static func key(rid: String?, tst: Int64) -> String {
    if let rid, !rid.isEmpty { return rid }
    return "tst:\(tst)"
  }

  func save(_ waypoint: OwnTracks.Waypoint, of user: UserID) async throws {
    guard let center = try? Coordinate(latitude: waypoint.lat, longitude: waypoint.lon) else { return }
    let range = monitor.rules.radiusRange
    let radius = min(max(Double(waypoint.rad ?? 100), range.lowerBound), range.upperBound)
    let name = String(
      waypoint.desc.trimmingCharacters(in: .whitespacesAndNewlines).prefix(GeofenceItem.maximumNameLength))
    let key = Self.key(rid: waypoint.rid, tst: waypoint.tst)
    let time = monitor.now()
    if var fence = try await store.geofence(owner: user, externalID: key) {
      fence.name = name.isEmpty ? fence.name : name
      fence.shape = .circle(center: center, radius: radius)
      fence.updatedAt = time
      _ = try await store.updateGeofence(fence)
    } else {
      try await store.createGeofence(
        GeofenceItem(
          id: GeofenceID(Secrets.userID()), ownerId: user, name: name.isEmpty ? "Region" : name,
          shape: .circle(center: center, radius: radius), source: .device, externalId: key, createdAt: time,
          updatedAt: time))
    }
    monitor.fencesChanged()
  }

  func report(_ transition: OwnTracks.Transition, of user: UserID) async throws {
    let kind: GeofenceEventKind
    switch transition.event {
    case "enter": kind = .enter
    case "leave", "exit": kind = .exit
    default: return
    }
    guard
      let fence = try await store.geofence(owner: user, externalID: Self.key(rid: transition.rid, tst: transition.wtst))
    else { return }
    let time = transition.tst.multipliedReportingOverflow(by: 1_000)
    guard !time.overflow else { return }
    let location = try? LocationFix(
      timestamp: time.partialValue, latitude: transition.lat, longitude: transition.lon,
      horizontalAccuracy: transition.acc.map(Double.init))
    try await monitor.reported(kind, fence: fence, user: user, at: time.partialValue, location: location)
  }
}
