import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import MeridianStore

/// The geofences phase of `meridian-server-bench`: `BENCH_GEOFENCES` circles (10,000 by default, radius 50–500 m)
/// of ten owners spread over a 20 km × 20 km city, stored through `store`, then random fixes in the city evaluated
/// the way the server does for a person who may see all of them — the fences whose box holds the fix (an index
/// lookup: geohash cells on SQLite, GiST on PostgreSQL) and DomainKit's rules for each:
/// - `geofences.eval.ns_per_fix`: the mean time per fix, lookup included;
/// - `geofences.eval.candidates_per_fix`: how many fences the lookup returned per fix.
func geofenceFigures(store: any MeridianStore) async throws {
  let count = Int(ProcessInfo.processInfo.environment["BENCH_GEOFENCES"] ?? "") ?? 10_000
  let center = Coordinate(uncheckedLatitude: 55.75, longitude: 37.62)
  var random = SystemRandomNumberGenerator()
  var owners: [UserID] = []
  for index in 0..<10 {
    let id = UserID("bench-geofence-owner-\(index)")
    _ = try await store.createAccount(
      id: id, credential: .email("bench-geofence-\(index)@example.com"), passwordHash: nil, now: 1)
    owners.append(id)
  }
  func randomPoint() throws -> Coordinate {
    try center.destination(
      bearing: Double.random(in: 0..<360, using: &random), distance: Double.random(in: 0...10_000, using: &random))
  }
  let seedStart = ContinuousClock.now
  for index in 0..<count {
    try await store.createGeofence(
      GeofenceItem(
        id: GeofenceID("bench-geofence-\(index)"), ownerId: owners[index % owners.count], name: "fence \(index)",
        shape: .circle(center: try randomPoint(), radius: Double.random(in: 50...500, using: &random)),
        createdAt: 1, updatedAt: 1))
  }
  emit("geofences.seed_per_s", Double(count) / seconds(ContinuousClock.now - seedStart), "geofences/s")

  let rules = GeofenceRules()
  let fixes = 2_000
  var candidates = 0
  var events = 0
  var states: [GeofenceID: GeofenceState] = [:]
  let start = ContinuousClock.now
  for index in 0..<fixes {
    let point = try randomPoint()
    let fix = try LocationFix(
      timestamp: 1_800_000_000_000 + Int64(index) * 1_000, latitude: point.latitude, longitude: point.longitude,
      horizontalAccuracy: 10)
    let near = try await store.geofences(near: point, owners: owners)
    candidates += near.count
    for fence in near {
      let result = rules.evaluate(fix, in: fence.shape.geofence, state: states[fence.id] ?? GeofenceState())
      states[fence.id] = result.state
      events += result.events.count
    }
  }
  let elapsed = seconds(ContinuousClock.now - start)
  emit("geofences.eval.ns_per_fix", elapsed / Double(fixes) * 1e9, "ns")
  emit("geofences.eval.candidates_per_fix", Double(candidates) / Double(fixes), "geofences")
  _ = events
}
