import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import MeridianStore
import NetworkingKit
import NetworkingKitAsyncHTTPClient

/// `GET /v1/history/map` (issue 38 §2) over one account's generated history of `BENCH_HISTORY_POINTS` fixes
/// (1,000,000 by default; the figure is for 5,000,000): a track wandering over Kyiv and around, a fix every
/// 10 s, stored through the store's group-commit insert in batches of 10,000. Then 200 random views per zoom band
/// (4, 8, 12, 16, each a 1024×768-pixel screen), timed over HTTP. Prints the size used, `history.map.p50_ms` and
/// `p99_ms` over all of them, the p99 per band and the largest answer (vertices + cells).
func historyMapFigures(
  port: Int, transport: AsyncHTTPClientTransport, configuration: NetworkClient.Configuration, store: any MeridianStore
)
  async throws
{
  let count = Int(ProcessInfo.processInfo.environment["BENCH_HISTORY_POINTS"] ?? "") ?? 1_000_000
  emit("history.map.points", Double(count), "fixes")
  let session = try await makeClient(port: port, token: nil, transport: transport, configuration: configuration)
    .send(API.register, body: EmailCredentials(email: "map-bench@example.com", password: "benchmark password"))
  let client = try makeClient(port: port, token: session.token, transport: transport, configuration: configuration)
  let device: DeviceID = "map-bench-phone"
  _ = try await store.claimDevice(device, owner: session.userId, now: Timestamp.milliseconds(Date()))

  // A random walk of about 10 m a step, turning slowly, kept within 49.5…51.5°N, 29.5…32.5°E.
  var random = SystemRandomNumberGenerator()
  var (latitude, longitude, heading) = (50.45, 30.52, 0.0)
  let start: Int64 = 1_500_000_000_000
  let seedStart = ContinuousClock.now
  for chunk in stride(from: 0, to: count, by: 10_000) {
    var fixes: [LocationFix] = []
    fixes.reserveCapacity(10_000)
    for index in chunk..<min(chunk + 10_000, count) {
      heading += Double.random(in: -0.3...0.3, using: &random)
      latitude += 0.00009 * cos(heading)
      longitude += 0.00014 * sin(heading)
      if !(49.5...51.5).contains(latitude) || !(29.5...32.5).contains(longitude) {
        heading += .pi
        latitude = min(51.5, max(49.5, latitude))
        longitude = min(32.5, max(29.5, longitude))
      }
      fixes.append(
        try LocationFix(
          deviceID: device, timestamp: start + Int64(index) * 10_000, latitude: latitude, longitude: longitude,
          horizontalAccuracy: 5))
    }
    let batch = FixInsertBatch(userID: session.userId, deviceID: device, fixes: fixes)
    let batchNow = Timestamp.milliseconds(Date())
    _ = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[FixReceipt], any Error>) in
      store.insertFixes([batch], now: batchNow) { continuation.resume(with: $0) }
    }
  }
  emit("history.map.seed_fixes_per_s", Double(count) / seconds(ContinuousClock.now - seedStart), "fixes/s")

  var all: [Duration] = []
  var largest = 0
  for zoom in [4, 8, 12, 16] {
    // A 1024×768 screen's span in degrees at the zoom (Web Mercator, near 50°N: a degree of latitude is about
    // 1.55 degrees of longitude on screen).
    let width = 360 * 1024 / (256 * pow(2, Double(zoom)))
    let height = width * 768 / 1024 / 1.55
    var latencies: [Duration] = []
    for _ in 0..<200 {
      let south = Double.random(in: 49.5...51.5, using: &random) - height / 2
      let west = Double.random(in: 29.5...32.5, using: &random) - width / 2
      let box = BoundingBox(
        south: max(-90, south), west: max(-180, west), north: min(90, south + height), east: min(180, west + width))
      let begin = ContinuousClock.now
      let map = try await client.send(API.historyMap, parameters: HistoryMapQuery(box: box, zoom: zoom))
      latencies.append(ContinuousClock.now - begin)
      largest = max(largest, map.tracks.reduce(0) { $0 + $1.points.count } + map.cells.count)
    }
    latencies.sort()
    emit("history.map.zoom\(zoom).p99_ms", quantile(latencies, 0.99), "ms")
    all += latencies
  }
  all.sort()
  emit("history.map.p50_ms", quantile(all, 0.5), "ms")
  emit("history.map.p99_ms", quantile(all, 0.99), "ms")
  emit("history.map.largest_answer", Double(largest), "vertices+cells")
}
