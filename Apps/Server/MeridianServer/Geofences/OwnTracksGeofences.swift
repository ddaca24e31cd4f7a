import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import MeridianSecrets
import MeridianStore

/// OwnTracks interop for geofences: `waypoint` and `waypoints` messages create or update the person's circle
/// geofences (keyed by the region's `rid`, else its creation time `tst`; the radius brought into the allowed range),
/// and `transition` messages become events reported by the device, which the server's own evaluation does not
/// repeat. A transition for a region the server doesn't know is ignored.
struct OwnTracksGeofences: Sendable {
  let monitor: GeofenceMonitor
  var store: any MeridianStore { monitor.store }

  /// Takes the waypoints first (a transition may name a region defined in the same body), then the transitions.
  func take(_ messages: [OwnTracks.Message], from user: UserID) async throws {
    var waypoints: [OwnTracks.Waypoint] = []
    var transitions: [OwnTracks.Transition] = []
    for message in messages {
      switch message {
      case .waypoint(let waypoint): waypoints.append(waypoint)
      case .waypoints(let list): waypoints += list
      case .transition(let transition): transitions.append(transition)
      default: break
      }
    }
    do {
      for waypoint in waypoints { try await save(waypoint, of: user) }
    } catch {
      await monitor.fencesChanged(owner: user)  // the waypoints saved before the failure
      throw error
    }
    if !waypoints.isEmpty { await monitor.fencesChanged(owner: user) }
    for transition in transitions { try await report(transition, of: user) }
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
    // The app can't show an error for a region: a long name is cut, one with control characters is not taken.
    let name =
      (try? GeofenceItem.nameRule.validated(
        waypoint.desc.trimmingCharacters(in: .whitespacesAndNewlines).prefix(GeofenceItem.maximumNameLength))) ?? ""
    let key = Self.key(rid: waypoint.rid, tst: waypoint.tst)
    let time = monitor.now()
    if var fence = try await store.geofence(owner: user, externalID: key) {
      fence.name = name.isEmpty ? fence.name : name
      fence.shape = .circle(center: center, radius: radius)
      fence.updatedAt = time
      _ = try await store.updateGeofence(fence)
    } else if try await store.geofences(owners: [user]).count >= monitor.settings.maximumPerPerson {
      // The app can't show an error for a region: the region stays the device's own, and the server says why.
      monitor.logger.notice(
        "an OwnTracks region was not kept: the person has as many geofences as allowed",
        metadata: ["user": "\(user)", "region": "\(key)"])
    } else {
      try await store.createGeofence(
        GeofenceItem(
          id: GeofenceID(Secrets.userID()), ownerId: user, name: name.isEmpty ? "Region" : name,
          shape: .circle(center: center, radius: radius), source: .device, externalId: key, createdAt: time,
          updatedAt: time))
    }
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
