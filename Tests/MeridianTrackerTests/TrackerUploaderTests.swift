import DomainKit
import Foundation
import MeridianStoreTesting
import MeridianTracker
import MeridianTrackerStore
import NetworkingKit
import Testing

/// The tracker's reporting policy, local queue and uploader without a server.
@Suite("Tracker policy and uploader")
struct TrackerUploaderTests {
  @Test func anUnreachableServerKeepsEverythingQueued() async throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tracker-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: directory) }
    let store = try TrackerStore.open(at: directory.appendingPathComponent("history.sqlite").path)
    // A port nothing listens on: bind one, then close it.
    let connection = try TrackerConnection(server: "http://127.0.0.1:9")
    defer { Task { try? await connection.shutdown() } }
    var configuration = NetworkClient.Configuration()
    configuration.retryPolicy.maxAttempts = 1
    let client = try NetworkClient(
      baseURL: connection.server, transport: connection.transport, configuration: configuration)
    let uploader = Uploader(store: store, client: client, deviceID: "offline")
    for fix in try makeFixes(count: 5) { try await store.record(fix, send: true, now: fix.timestamp) }
    await #expect(throws: NetworkingError.self) { try await uploader.drain() }
    #expect(try await store.counts() == (history: 5, queued: 5))
  }

  /// 40 fixes 2 s apart, each `step` degrees of latitude north of the last: the policy of `mode` sends the first and
  /// then every 4th (3 steps are just under its distance, 4 just over), and every fix is recorded.
  @Test(arguments: [
    (AppState.background, 0.000_027),  // ≈ 3.0 m a step: 9 m < 10 m ≤ 12 m
    (AppState.closed, 0.000_27),  // ≈ 30 m a step: 90 m < 100 m ≤ 120 m
  ])
  func policyDistanceThresholdsOnASyntheticTrack(mode: AppState, step: Double) async throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tracker-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: directory) }
    let store = try TrackerStore.open(at: directory.appendingPathComponent("history.sqlite").path)
    var policy = ReportingPolicy(appState: mode, profile: .high)
    var queued: [Int] = []
    for index in 0..<40 {
      let fix = try LocationFix(
        timestamp: 1_700_000_000_000 + Int64(index) * 2000, latitude: 50.45 + Double(index) * step,
        longitude: 30.52, horizontalAccuracy: 5)
      let send = policy.decide(fix) == .send
      if case .stored(true) = try await store.record(fix, send: send, now: fix.timestamp) { queued.append(index) }
    }
    #expect(queued == Array(stride(from: 0, to: 40, by: 4)))
    #expect(try await store.counts() == (history: 40, queued: 10))
  }
}
