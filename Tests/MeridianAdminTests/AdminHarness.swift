import DomainKit
import Foundation
import GRDB
import MeridianServer
import MeridianStore
import MeridianStoreSQLite
import MeridianTestSupport
import PersistenceKit
import Synchronization
import Testing

/// The built `meridian-admin` next to the test bundle (`swift build --build-tests` builds it).
let adminExecutable = builtExecutable("meridian-admin")

/// One run of the binary.
struct AdminRun: CustomStringConvertible {
  var arguments: [String]
  var status: Int32
  var stdout: String
  var stderr: String

  /// The standard output parsed as JSON.
  func json() throws -> Any {
    try JSONSerialization.jsonObject(with: Data(stdout.utf8))
  }

  /// The standard output as a JSON object.
  func object() throws -> [String: Any] {
    try #require(try json() as? [String: Any], "not a JSON object: \(stdout)")
  }

  var description: String {
    "meridian-admin \(arguments.joined(separator: " ")) → \(status)\nstdout: \(stdout)\nstderr: \(stderr)"
  }
}

/// A temporary directory with a database path, removed at the end.
final class AdminSandbox: Sendable {
  let directory: URL
  let database: String

  init() throws {
    StallWatchdog.start()
    directory = FileManager.default.temporaryDirectory.appendingPathComponent("meridian-admin-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    database = directory.appendingPathComponent("meridian.sqlite").path
  }

  deinit { try? FileManager.default.removeItem(at: directory) }

  func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

  /// Opens (and migrates) the database through the server's store, as the server does.
  func store() throws -> SQLiteStore { try SQLiteStore.open(at: database) }

  /// Runs `meridian-admin ARGUMENTS --database <sandbox>` (unless `database` is nil) and waits for it without
  /// blocking a thread, so concurrent writer tasks keep running.
  func admin(
    _ arguments: [String], database: String? = "", stdin: String? = nil, environment extra: [String: String] = [:]
  ) async throws -> AdminRun {
    let executable = try #require(adminExecutable, "meridian-admin is not built; run swift build --build-tests")
    var all = arguments
    if let database { all += ["--database", database.isEmpty ? self.database : database] }
    var environment = ProcessInfo.processInfo.environment
    environment["MERIDIAN_DATABASE"] = nil
    environment["MERIDIAN_DATABASE_URL"] = nil
    environment.merge(extra) { _, new in new }
    let child = try ChildProcess(executable, all, input: stdin, environment: environment)
    let status = await child.wait()
    return AdminRun(
      arguments: all, status: status, stdout: child.standardOutput.value, stderr: child.standardError.value)
  }
}

/// Fixes one second apart, starting at `start`, around Kyiv.
func makeFixes(count: Int, start: Int64, device: String, step: Int64 = 1000) throws -> [LocationFix] {
  try (0..<count).map { index in
    try LocationFix(
      deviceID: DeviceID(device), timestamp: start + Int64(index) * step,
      latitude: 50.45 + Double(index % 1000) * 0.00001, longitude: 30.52 + Double(index % 700) * 0.00001,
      horizontalAccuracy: 5)
  }
}

/// Creates an email account and returns its id.
func seedUser(_ store: some MeridianStore, email: String, now: Int64 = Timestamp.milliseconds(Date())) async throws
  -> UserID
{
  let id = UserID(UUID().uuidString.lowercased())
  let account = try await store.createAccount(id: id, credential: .email(email), passwordHash: "x", now: now)
  return try #require(account?.id)
}

/// Stores fixes for `user` on `device` (claimed first) in batches; returns the timestamps stored.
@discardableResult
func seedFixes(_ store: some MeridianStore, user: UserID, device: String, fixes: [LocationFix]) async throws -> [Int64]
{
  _ = try await store.claimDevice(DeviceID(device), owner: user, now: Timestamp.milliseconds(Date()))
  for start in stride(from: 0, to: fixes.count, by: 1000) {
    let batch = Array(fixes[start..<min(start + 1000, fixes.count)])
    _ = try await store.insertFixes(
      [FixInsertBatch(userID: user, deviceID: DeviceID(device), fixes: batch)], now: Timestamp.milliseconds(Date()))
  }
  return fixes.map(\.timestamp)
}

/// Timestamps acknowledged by a concurrent writer.
final class Acknowledged: Sendable {
  private struct State {
    var values: [Int64] = []
    var failures: [String] = []
  }

  private let state = Mutex(State())

  func add(_ timestamps: [Int64]) { state.withLock { $0.values += timestamps } }

  func fail(_ error: any Error) { state.withLock { $0.failures.append("\(error)") } }

  var snapshot: [Int64] { state.withLock { $0.values } }

  var errors: [String] { state.withLock { $0.failures } }
}

/// Inserts batches of `batchSize` fixes with current-looking timestamps through `SQLiteStore.insertFixes` until
/// cancelled; every batch whose call returned is acknowledged.
func writeContinuously(
  _ store: SQLiteStore, user: UserID, device: String, start: Int64, batchSize: Int = 50, into acknowledged: Acknowledged
) async {
  var next = start
  while !Task.isCancelled {
    do {
      let fixes = try makeFixes(count: batchSize, start: next, device: device)
      next += Int64(batchSize) * 1000
      let receipts = try await store.insertFixes(
        [FixInsertBatch(userID: user, deviceID: DeviceID(device), fixes: fixes)], now: Timestamp.milliseconds(Date()))
      if receipts.first?.accepted == batchSize { acknowledged.add(fixes.map(\.timestamp)) }
      try await Task.sleep(for: .milliseconds(2))
    } catch is CancellationError {
      return
    } catch {
      acknowledged.fail(error)
      return
    }
  }
}
