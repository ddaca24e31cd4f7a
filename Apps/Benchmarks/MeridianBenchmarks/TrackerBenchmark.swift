import DomainKit
import Foundation
import Logging
import MeridianAPI
import MeridianServer
import MeridianStore
import MeridianStoreSQLite
import MeridianTracker
import MeridianTrackerStore

/// `meridian-tracker-bench`: how fast the device agent records fixes locally (history + outbox, one transaction per
/// fix, as `run` does) and how fast it gets them to a real server on loopback (agent → uploader → meridian-server on
/// SQLite, durable acknowledgements).
public enum TrackerBenchmark {
  /// Runs both phases; `arguments` are the command line's (`[fixes]`, default 20,000).
  /// - Throws: ``BenchmarkUsageError`` for a bad command line.
  public static func run(arguments: [String]) async throws {
    guard arguments.count <= 1, let count = arguments.first.map(Int.init) ?? 20_000, count > 0 else {
      throw BenchmarkUsageError(description: "usage: meridian-tracker-bench [fixes > 0]")
    }
    try await run(count: count)
  }

  /// `count` fixes one second apart, walking north-east.
  static func track(_ count: Int, start: Int64) throws -> [LocationFix] {
    try (0..<count).map { index in
      try LocationFix(
        timestamp: start + Int64(index) * 1000, latitude: 50.45 + Double(index % 10_000) * 0.00001,
        longitude: 30.52 + Double(index % 10_000) * 0.00001, horizontalAccuracy: 5)
    }
  }

  static func run(count: Int) async throws {
    var logger = Logger(label: "meridian-tracker-bench")
    logger.logLevel = .error
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tracker-bench-\(getpid())")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }

    // Local recording: what `run` does per fix.
    let local = try TrackerStore.open(at: directory.appendingPathComponent("local.sqlite").path)
    let fixes = try track(count, start: 1_700_000_000_000)
    let recordStart = ContinuousClock.now
    for fix in fixes { try await local.record(fix, send: true, now: fix.timestamp) }
    emit("record.fixes_per_s", Double(count) / seconds(ContinuousClock.now - recordStart), "fixes/s")

    // End to end: the agent records and uploads into a real server on loopback.
    var configuration = ServerConfiguration()
    configuration.port = 0
    configuration.databasePath = directory.appendingPathComponent("server.sqlite").path
    configuration.bcryptCost = 4
    let server = try await RunningServer.start(configuration: configuration, logger: logger)
    let connection = try TrackerConnection(server: "http://127.0.0.1:\(server.port)")
    guard
      let session = try await connection.signIn(.email("bench@example.com", password: "benchmark pass", create: true))
    else { throw CancellationError() }
    let store = try TrackerStore.open(at: directory.appendingPathComponent("agent.sqlite").path)
    let agent = TrackerAgent(
      store: store,
      uploader: Uploader(store: store, client: try connection.client(token: session.token), deviceID: "bench"),
      policy: ReportingPolicy(), logger: logger)
    let source = AsyncThrowingStream<LocationFix, any Error> { continuation in
      for fix in fixes { continuation.yield(fix) }
      continuation.finish()
    }
    let uploadStart = ContinuousClock.now
    let summary = try await agent.run(source)
    let elapsed = ContinuousClock.now - uploadStart
    guard summary.uploaded == count else {
      FileHandle.standardError.write(Data("uploaded \(summary.uploaded) of \(count)\n".utf8))
      exit(1)
    }
    emit("end_to_end.fixes_per_s", Double(count) / seconds(elapsed), "fixes/s")
    try await connection.shutdown()
    try await server.stop()
  }
}
