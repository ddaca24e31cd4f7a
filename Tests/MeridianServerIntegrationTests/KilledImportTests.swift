import DomainKit
import Foundation
import Logging
import MeridianAPI
import MeridianStore
import MeridianStoreEngines
import MeridianStoreTesting
import MeridianTestSupport
import NetworkingKit
import NetworkingKitAsyncHTTPClient
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// `kill -9` of `meridian-server` during `POST /v1/history/import` (issue 42 §4): after a restart, the same file
/// posted again stores every point exactly once, and `meridian-admin db check` finds the database intact. The
/// server is killed twice, once right after its first batch is stored and once past half the file, each watched in
/// the database, on SQLite and PostgreSQL. What was stored before a kill is the start of the file (whole batches,
/// in order), and the killed server left no spooled upload in its temporary directory.
@Suite("A history import killed with kill -9", .serialized)
struct KilledImportTests {
  /// Points in the file: 8 storage batches (``HistoryImport`` stores what its 64 KiB reads hold once they reach
  /// 1,000 points: about 1,360 of these lines).
  static let points = 11_000

  /// A CSV of `points` fixes one second apart from 2024-01-01, around Kyiv.
  static func csv(points: Int) -> Data {
    var text = "time,lat,lon\n"
    text.reserveCapacity(points * 40)
    for index in 0..<points {
      let time = Timestamp.formatISO8601(1_704_067_200_000 + Int64(index) * 1000)
      text += "\(time),\(50.45 + Double(index % 1000) * 0.00001),\(30.52 + Double(index % 700) * 0.00001)\n"
    }
    return Data(text.utf8)
  }

  /// The number of fixes `store` holds.
  static func fixCount(_ store: any MeridianStore) async throws -> Int {
    try await store.statistics(now: Timestamp.milliseconds(Date()), days: 1).fixes
  }

  /// Waits until `store` holds at least `count` fixes (polled every 2 ms, for at most 60 s) and returns how many.
  static func waitForFixes(_ store: any MeridianStore, atLeast count: Int, _ what: String) async throws -> Int {
    let deadline = ContinuousClock.now + .seconds(60)
    while ContinuousClock.now < deadline {
      let stored = try await fixCount(store)
      if stored >= count { return stored }
      try await Task.sleep(for: .milliseconds(2))
    }
    throw ServerProcessError(message: "\(what): fewer than \(count) fixes stored after 60 s")
  }

  /// `meridian-admin db check` on `database`.
  static func databaseCheck(_ database: String) async throws -> (status: Int32, output: String) {
    let admin = try #require(builtExecutable("meridian-admin"), "build meridian-admin first")
    var environment = ProcessInfo.processInfo.environment
    environment["MERIDIAN_DATABASE"] = nil
    environment["MERIDIAN_DATABASE_URL"] = nil
    return try await ChildProcess.run(admin, ["db", "check", "--database", database], environment: environment)
  }

  // The server's import is paced at 1,000 fixes a second (MERIDIAN_LIMIT_IMPORTED_FIXES_PER_SECOND), so its kill
  // points are a second apart: unpaced, a quiet machine's SQLite stored the whole file before the poller saw the
  // second one (and at 2,000 a second, a machine running two test suites at once did too).
  @Test(arguments: ["sqlite", "postgres"])
  func aServerKilledDuringAnImportStoresEveryPointOnceWhenTheFileIsPostedAgain(_ engine: String) async throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("killed-import-\(UUID())")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let postgres = engine == "postgres" ? try await PostgresTestDatabase.create() : nil
    let database = postgres?.url ?? directory.appendingPathComponent("meridian.sqlite").path
    let opened = try await StoreLocation(database).open(maximumConnections: 2, logger: Logger(label: "test"))
    let store = opened.store
    defer {
      Task {
        await opened.close()
        await postgres?.drop()
      }
    }
    let transport = AsyncHTTPClientTransport()
    defer { Task { try? await transport.shutdown() } }
    let file = Self.csv(points: Self.points)
    let times = (0..<Int64(Self.points)).map { 1_704_067_200_000 + $0 * 1000 }
    // The server's temporary directory, where it spools uploads.
    let temporary = directory.appendingPathComponent("tmp")
    try FileManager.default.createDirectory(at: temporary, withIntermediateDirectories: true)
    func start() async throws -> ServerProcess {
      try await ServerProcess.start(
        database: database,
        environment: ["TMPDIR": temporary.path, "MERIDIAN_LIMIT_IMPORTED_FIXES_PER_SECOND": "1000"])
    }
    let started = ContinuousClock.now
    var server = try await start()
    print("[\(engine)] \(ContinuousClock.now - started): server started")
    let session = try await server.client(transport: transport).send(
      API.register, body: EmailCredentials(email: "importer@example.com", password: "correct horse"))

    // Killed twice: right after the first batch is stored, then (posted again) past half the file.
    for (threshold, point) in [(1, "after the first batch"), (Self.points / 2, "past half the file")] {
      let client = try server.client(transport: transport, token: session.token)
      let upload = Task { try await client.send(API.importHistory, body: file) }
      let before = try await Self.waitForFixes(store, atLeast: threshold, point)
      server.child.terminate(with: SIGKILL)
      _ = await server.child.wait()
      _ = await upload.result
      let stored = try await store.history(
        owner: session.userId, filter: HistoryFilter(), limit: Self.points * 2, before: nil
      ).map(\.fix.timestamp).sorted()
      print(
        "[\(engine)] \(ContinuousClock.now - started): kill -9 \(point): \(before) fixes stored when the kill was sent, \(stored.count) after it"
      )
      #expect(stored.count < Self.points, "the import ended before the kill \(point)")
      #expect(stored == Array(times.prefix(stored.count)), "not the file's first \(stored.count) points")
      let left = try FileManager.default.contentsOfDirectory(atPath: temporary.path)
      #expect(left.isEmpty, "the killed server left \(left) in its temporary directory")
      server = try await start()
    }

    // Posted once more to the restarted server: the whole file, each point once.
    let storedBefore = try await Self.fixCount(store)
    let client = try server.client(transport: transport, token: session.token)
    let summary = try await client.send(API.importHistory, body: file)
    print(
      "[\(engine)] \(ContinuousClock.now - started): after restart: \(summary.stored) stored, \(summary.duplicates) already there"
    )
    #expect(summary.read == Self.points)
    #expect(summary.stored == Self.points - storedBefore)
    #expect(summary.duplicates == storedBefore)
    let history = try await store.history(
      owner: session.userId, filter: HistoryFilter(), limit: Self.points * 2, before: nil)
    #expect(history.count == Self.points)
    #expect(Set(history.map(\.fix.timestamp)).count == Self.points)
    server.child.terminate(with: SIGTERM)
    _ = await server.child.wait()
    print("[\(engine)] \(ContinuousClock.now - started): server stopped")
    let check = try await Self.databaseCheck(database)
    #expect(check.status == 0, "\(check.output)")
    print("[\(engine)] db check: status \(check.status); the test took \(ContinuousClock.now - started)")
  }
}
