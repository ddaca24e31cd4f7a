import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import MeridianStore
import NetworkingKit
import Synchronization

/// The geofences phase of `meridian-server-bench`: `BENCH_GEOFENCES` circles (10,000 by default, radius 50–500 m)
/// of ten owners spread over a 20 km × 20 km city around the ingest phases' fixes, shared with everyone who may see
/// their owners' location — `viewers`, whom the owners let see them — stored through `store` (and answered), then
/// random fixes in the city evaluated
/// the way the server does for a person who may see all of them — per batch of 100 fixes a snapshot of the monitor's
/// in-memory ``GeofenceIndex`` (geohash cells over the fences decoded and prepared once), then for each fix (its point
/// prepared once) the fences whose box holds it, by slot, and DomainKit's rules for each (`BENCH_GEOFENCE_FIXES` fixes, 2,000 by default):
/// - `geofences.index.load_ms`: reading and indexing the owners' fences (once per node, then per change);
/// - `geofences.eval.ns_per_fix`: the mean time per fix, lookup included;
/// - `geofences.eval.candidates_per_fix`: how many fences the lookup returned per fix.
@discardableResult
func geofenceFigures(store: any MeridianStore, viewers: [UserID]) async throws -> [GeofenceItem] {
  let count = Int(ProcessInfo.processInfo.environment["BENCH_GEOFENCES"] ?? "") ?? 10_000
  // The middle of the line `fix(_:)` draws (50.45…50.55, 30.52…30.62): every ingested fix is in the city.
  let center = Coordinate(uncheckedLatitude: 50.5, longitude: 30.57)
  var random = SystemRandomNumberGenerator()
  var owners: [UserID] = []
  for index in 0..<10 {
    let id = UserID("bench-geofence-owner-\(index)")
    _ = try await store.createAccount(
      id: id, credential: .email("bench-geofence-\(index)@example.com"), passwordHash: nil, now: 1)
    var sharing = SharingState()
    for viewer in viewers { sharing.viewerGrants[viewer] = .some(nil) }  // always
    try await store.saveSharing(sharing, owner: id)
    owners.append(id)
  }
  func randomPoint() throws -> Coordinate {
    try center.destination(
      bearing: Double.random(in: 0..<360, using: &random), distance: Double.random(in: 0...10_000, using: &random))
  }
  let seedStart = ContinuousClock.now
  var fences: [GeofenceItem] = []
  for index in 0..<count {
    let fence = GeofenceItem(
      id: GeofenceID("bench-geofence-\(index)"), ownerId: owners[index % owners.count], name: "fence \(index)",
      shape: .circle(center: try randomPoint(), radius: Double.random(in: 50...500, using: &random)),
      sharing: .everyone, createdAt: 1, updatedAt: 1)
    try await store.createGeofence(fence)
    fences.append(fence)
  }
  emit("geofences.seed_per_s", Double(count) / seconds(ContinuousClock.now - seedStart), "geofences/s")

  let rules = GeofenceRules()
  let fenceIndex = GeofenceIndex(store: store, lifetime: .max)  // as the monitor's, without the reloads
  let loadStart = ContinuousClock.now
  _ = try await fenceIndex.fences(owners: owners, now: 1)
  emit("geofences.index.load_ms", seconds(ContinuousClock.now - loadStart) * 1000, "ms")
  let fixes = try (0..<(Int(ProcessInfo.processInfo.environment["BENCH_GEOFENCE_FIXES"] ?? "") ?? 2_000)).map {
    index in
    let point = try randomPoint()
    return try LocationFix(
      timestamp: 1_800_000_000_000 + Int64(index) * 1_000, latitude: point.latitude, longitude: point.longitude,
      horizontalAccuracy: 10)
  }
  var candidates = 0
  var events = 0
  let start = ContinuousClock.now
  // As the monitor asks (``GeofenceMonitor/evaluate(_:_:)``), per batch of 100 fixes (an upload): one snapshot of the
  // owners' fences, then each fix's fences by slot, with the person's state per fence in an array by slot.
  var states: [GeofenceState] = []
  for batch in stride(from: 0, to: fixes.count, by: 100) {
    let fences = try await fenceIndex.snapshot(owners: owners, now: 1)
    if states.count < fences.slotCount {
      states += repeatElement(GeofenceState(), count: fences.slotCount - states.count)
    }
    for fix in fixes[batch..<min(batch + 100, fixes.count)] {
      let point = HaversinePoint(fix.coordinate)
      fences.forEachFence(near: fix.coordinate) { slot, fence in
        candidates += 1
        let result = rules.evaluate(fix, at: point, in: fence, state: states[Int(slot)])
        states[Int(slot)] = result.state
        events += result.events.count
      }
    }
  }
  let elapsed = seconds(ContinuousClock.now - start)
  emit("geofences.eval.ns_per_fix", elapsed / Double(fixes.count) * 1e9, "ns")
  emit("geofences.eval.candidates_per_fix", Double(candidates) / Double(fixes.count), "geofences")
  _ = events
  return fences
}

/// Ingest through `api` the way the ingest phases load it — single fixes, then batches of 100, 32 clients — with
/// times that grow from `start` across all clients, so the geofence monitor evaluates nearly every batch (it skips
/// a person's fixes older than their newest evaluated one). Run before the geofences are seeded and after, as
/// `ingest.{single,batch100}.{without,with}_geofences.*`; `without` waits for the monitor to pass its uploads
/// (`geofences.monitor.without_drain_ms`), `with` prints how long after the load the monitor had evaluated the newest
/// fix (`geofences.monitor.catch_up_ms`), and the shares of the rates without.
func geofenceIngestFigures(
  api: NetworkClient, store: any MeridianStore, user: UserID, phase: Duration, start: Int64, label: String
) async throws -> (single: Double, batch: Double) {
  let newest = LargestValue<Int64>(0)
  let counters = ["meridian_geofence_fixes_evaluated_total", "meridian_geofence_events_total"]
  let before = try await serverMetrics(api, counters)
  let loadStart = ContinuousClock.now
  let single = try await load(for: phase) { task, iteration in
    let timestamp = start + Int64(iteration * clients + task) * 1_000
    newest.max(timestamp)
    let receipt = try await api.send(
      postFormattedFixes, body: formattedBatch(device: "fenced-single-\(task)", timestamps: [timestamp]))
    guard receipt.accepted == 1 else { throw BenchmarkFailure(description: "a single-fix upload answered \(receipt)") }
  }
  emit("ingest.single.\(label)_geofences.requests_per_s", single.requestsPerSecond, "requests/s")
  emit("ingest.single.\(label)_geofences.p99_ms", quantile(single.sortedLatencies, 0.99), "ms")
  let batchStart = start + Int64(1_000_000) * 1_000
  let batch = try await load(for: phase) { task, iteration in
    let first = batchStart + Int64(iteration * clients + task) * 100_000
    newest.max(first + 99_000)
    _ = try await api.send(
      postFormattedFixes,
      body: formattedBatch(device: "fenced-batch-\(task)", timestamps: (0..<100).lazy.map { first + Int64($0) * 1000 }))
  }
  emit("ingest.batch100.\(label)_geofences.fixes_per_s", batch.requestsPerSecond * 100, "fixes/s")
  emit("ingest.batch100.\(label)_geofences.p99_ms", quantile(batch.sortedLatencies, 0.99), "ms")
  if label == "without" {
    // Every upload is queued for the monitor, fences or not: it must have passed these before the fences exist, or it
    // would evaluate them against the fences afterwards (they are dated after the fences' creation) in the later
    // phases' time.
    let loaded = ContinuousClock.now
    let drained = try await poll(for: .seconds(120)) { try await store.geofenceQueueBacklog().entries == 0 }
    emit("geofences.monitor.without_drain_ms", seconds(ContinuousClock.now - loaded) * 1000, "ms")
    guard drained else {
      throw BenchmarkFailure(description: "the geofence monitor had uploads without fences left after 120 s")
    }
  } else {
    // The monitor evaluates after the commit: how long it took to reach the newest fix (60 s at most).
    let loaded = ContinuousClock.now
    let target = newest.value
    try await poll(for: .seconds(60)) { (try await store.geofenceTracking(of: user).lastFixAt ?? 0) >= target }
    emit("geofences.monitor.catch_up_ms", seconds(ContinuousClock.now - loaded) * 1000, "ms")
    // What the monitor got through from the first upload of the loads to the end of the wait.
    let after = try await serverMetrics(api, counters)
    let (evaluated, events) = (after[0] - before[0], after[1] - before[1])
    emit("geofences.monitor.fixes_per_s", evaluated / seconds(ContinuousClock.now - loadStart), "fixes/s")
    emit("geofences.monitor.events_per_fix", events / max(evaluated, 1), "events")
    emit("geofences.monitor.backlog_after_wait", Double(try await store.geofenceQueueBacklog().entries), "uploads")
  }
  return (single.requestsPerSecond, batch.requestsPerSecond * 100)
}

/// The largest value given so far.
final class LargestValue<Value: Comparable & Sendable>: Sendable {
  private let state: Mutex<Value>
  init(_ value: Value) { state = Mutex(value) }
  var value: Value { state.withLock { $0 } }
  func max(_ candidate: Value) { state.withLock { $0 = Swift.max($0, candidate) } }
}
