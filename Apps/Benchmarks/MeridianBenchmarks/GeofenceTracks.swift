import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import MeridianStore
import NetworkingKit

/// The geofence phase's check that nothing is lost (`geofences.lost`): `drivers` people, each granted sight of the
/// fences' owners before the fences exist (``geofenceFigures(store:viewers:)``), drive through the city at about
/// 12 m/s with a fix a second (`BENCH_GEOFENCE_TRACK_FIXES` fixes each, 1,000 by default), all uploading at once in
/// batches of 100 — a burst the monitor takes behind the commits. Run before the loads with fences, which leave the
/// monitor minutes behind. Then:
/// - `geofences.tracks.catch_up_ms`: from the last upload's answer until the monitor evaluated every driver's newest
///   fix (120 s at most);
/// - `geofences.tracks.events_expected`: what DomainKit's rules decide for the tracks, each fence evaluated on every
///   fix of the stretch of a track that passes within a kilometre of it (farther out a fix changes nothing in a
///   person's state: they are outside) — a model that knows no index, queue or stored state;
/// - `geofences.lost`: the expected events not stored (fence, kind and time compared, as multisets), and
///   `geofences.unexpected` the stored ones not expected, when there are any.
func geofenceTrackFigures(
  drivers: [(session: AuthSession, api: NetworkClient)], fences: [GeofenceItem], store: any MeridianStore,
  start: Int64
) async throws {
  let count = Int(ProcessInfo.processInfo.environment["BENCH_GEOFENCE_TRACK_FIXES"] ?? "") ?? 1_000
  var random = SystemRandomNumberGenerator()
  let tracks = try drivers.map { _ in try drive(fixes: count, from: start, using: &random) }
  let uploadStart = ContinuousClock.now
  try await withThrowingTaskGroup(of: Void.self) { uploads in
    for (index, (driver, track)) in zip(drivers, tracks).enumerated() {
      uploads.addTask {
        for batch in stride(from: 0, to: track.count, by: 100) {
          let fixes = Array(track[batch..<min(batch + 100, track.count)])
          let receipt = try await driver.api.send(
            API.postFixes, body: FixBatch(deviceId: DeviceID("driver-car-\(index)"), fixes: fixes))
          guard receipt.accepted == fixes.count else {
            throw BenchmarkFailure(description: "a driver's upload answered \(receipt)")
          }
        }
      }
    }
    try await uploads.waitForAll()
  }
  let uploaded = ContinuousClock.now
  emit(
    "geofences.tracks.upload_fixes_per_s", Double(count * drivers.count) / seconds(uploaded - uploadStart), "fixes/s")
  var behind = 0
  for (driver, track) in zip(drivers, tracks) {
    let left = uploaded + .seconds(120) - ContinuousClock.now
    let caughtUp = try await poll(for: left) {
      (try await store.geofenceTracking(of: driver.session.userId).lastFixAt ?? 0) >= track.last!.timestamp
    }
    if !caughtUp { behind += 1 }
  }
  emit("geofences.tracks.catch_up_ms", seconds(ContinuousClock.now - uploaded) * 1000, "ms")
  // The events of a driver the monitor had not finished count as lost: say how many there were.
  if behind > 0 { emit("geofences.tracks.drivers_not_caught_up", Double(behind), "drivers") }

  let rules = GeofenceRules()
  var expectedCount = 0
  var lost = 0
  var unexpected = 0
  for (driver, track) in zip(drivers, tracks) {
    var expected = expectedEvents(of: track, fences: fences, rules: rules)
    expectedCount += expected.values.reduce(0, +)
    var stored: [EventKey: Int] = [:]
    var cursor: HistoryCursor?
    repeat {
      let page = try await store.geofenceEvents(
        GeofenceEventQuery(
          involving: driver.session.userId, user: driver.session.userId, cursor: cursor, limit: 1_000))
      for event in page.events {
        stored[EventKey(fence: event.geofenceId, kind: event.kind, timestamp: event.timestamp), default: 0] += 1
      }
      cursor = page.next
    } while cursor != nil
    for (key, number) in stored {
      let matched = min(number, expected[key] ?? 0)
      unexpected += number - matched
      if number > matched {
        reportMismatch("unexpected", key, driver: driver.session.userId, track: track, fences: fences)
      }
      expected[key, default: 0] -= matched
    }
    for (key, number) in expected where number > 0 {
      lost += number
      reportMismatch("lost", key, driver: driver.session.userId, track: track, fences: fences)
    }
  }
  emit("geofences.tracks.events_expected", Double(expectedCount), "events")
  emit("geofences.lost", Double(lost), "events")
  if unexpected > 0 { emit("geofences.unexpected", Double(unexpected), "events") }
}

/// Tells standard error about an event that is `what` (lost, unexpected): the driver, the event, the fence and the
/// fixes around it, for whoever looks into it.
func reportMismatch(_ what: String, _ key: EventKey, driver: UserID, track: [LocationFix], fences: [GeofenceItem]) {
  let fence = fences.first { $0.id == key.fence }
  let index = track.firstIndex { $0.timestamp == key.timestamp } ?? 0
  let around = track[max(index - 2, 0)..<min(index + 3, track.count)].map { fix in
    "\(fix.timestamp): \(fence.map { $0.shape.geofence.signedDistance(to: fix.coordinate) } ?? .nan) m"
  }
  FileHandle.standardError.write(
    Data(
      "geofences.\(what): \(driver) \(key.kind) \(key.fence) at \(key.timestamp), \(fence.map { "\($0.shape)" } ?? "?"); \(around)\n"
        .utf8))
}

/// A geofence event as the model and the store both tell it.
struct EventKey: Hashable {
  var fence: GeofenceID
  var kind: GeofenceEventKind
  var timestamp: Int64
}

/// A drive of `fixes` fixes a second apart from `start` (ms), from a random point within 8 km of the city's middle,
/// 12 m a second, turning up to 10° between fixes and back towards the middle past 9.5 km.
func drive(fixes: Int, from start: Int64, using random: inout some RandomNumberGenerator) throws -> [LocationFix] {
  let middle = Coordinate(uncheckedLatitude: 50.5, longitude: 30.57)
  var position = try middle.destination(
    bearing: Double.random(in: 0..<360, using: &random), distance: Double.random(in: 0...8_000, using: &random))
  var bearing = Double.random(in: 0..<360, using: &random)
  return try (0..<fixes).map { index in
    if index > 0 {
      bearing += Double.random(in: -10...10, using: &random)
      if position.haversineDistance(to: middle) > 9_500 { bearing = position.initialBearing(to: middle) }
      position = try position.destination(bearing: bearing, distance: 12)
    }
    return try LocationFix(
      timestamp: start + Int64(index) * 1_000, latitude: position.latitude, longitude: position.longitude,
      horizontalAccuracy: 10, kind: .movement)
  }
}

/// The events `rules` decide for one person's `track` (oldest first, a person never evaluated before) against
/// `fences`, by fence, kind and time: each fence is evaluated on the fixes from the one before the first that comes
/// within a kilometre of its edge to the one after the last, from an unknown state (the fixes outside that stretch
/// are far outside it and leave a state of "outside" as it is).
func expectedEvents(of track: [LocationFix], fences: [GeofenceItem], rules: GeofenceRules) -> [EventKey: Int] {
  let reach = 1_000.0
  let latitudes = track.map(\.latitude)
  let longitudes = track.map(\.longitude)
  let (south, north) = (latitudes.min()!, latitudes.max()!)
  let (west, east) = (longitudes.min()!, longitudes.max()!)
  var events: [EventKey: Int] = [:]
  for fence in fences {
    let shape = fence.shape.geofence
    // A cheap first cut for a circle: the track's box widened by the radius and the reach (a degree of latitude is
    // 111 km; of longitude, at the city's 50.5°, 70 km).
    if case .circle(let center, let radius) = fence.shape {
      let box = radius + reach
      guard center.latitude >= south - box / 111_000, center.latitude <= north + box / 111_000,
        center.longitude >= west - box / 70_000, center.longitude <= east + box / 70_000
      else { continue }
    }
    let near = track.indices.filter { shape.signedDistance(to: track[$0].coordinate) <= reach }
    guard let first = near.first, let last = near.last else { continue }
    var state = GeofenceState()
    for fix in track[max(first - 1, 0)...min(last + 1, track.count - 1)] {
      let (next, transitions) = rules.evaluate(fix, in: shape, state: state)
      state = next
      for transition in transitions {
        events[EventKey(fence: fence.id, kind: transition.kind, timestamp: transition.timestamp), default: 0] += 1
      }
    }
  }
  return events
}
