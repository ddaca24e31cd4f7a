import DomainKit
import Foundation
import MeridianAPI
import MeridianStoreTesting
import MeridianTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A full disk under the database (issue 42 §3): `meridian-server` on SQLite on an 8 MiB tmpfs, and on PostgreSQL with
/// the database in a tablespace on a 40 MiB one, that a filler file fills.
/// Writes are answered 503 `unavailable` with `Retry-After` (not 500), reads keep working, every fix acknowledged
/// before and during the fault is stored, and once the filler is deleted uploads succeed again without a restart;
/// `meridian-admin db check` (integrity_check, foreign keys, migrations) finds the database intact afterwards.
/// Mounting needs root: the test is skipped otherwise.
@Suite("A full disk under the database", .serialized)
struct FullDiskTests {
  static let isRoot = getuid() == 0

  /// One HTTP request by curl: status, `Retry-After` and body.
  static func curl(_ arguments: [String]) async throws -> (status: Int, retryAfter: String, body: String) {
    let output = try await ChildProcess.run(
      URL(fileURLWithPath: "/usr/bin/curl"),
      ["-s", "-w", "\n%{http_code} %header{retry-after}"] + arguments)
    let lines = output.output.split(separator: "\n", omittingEmptySubsequences: false)
    let last = (lines.last ?? "").split(separator: " ", omittingEmptySubsequences: false)
    return (
      Int(last.first ?? "") ?? 0, last.count > 1 ? String(last[1]) : "",
      lines.dropLast().joined(separator: "\n")
    )
  }

  /// Runs `body` with a new tmpfs of `megabytes` mounted in the temporary directory, unmounted afterwards.
  static func withSmallDisk(megabytes: Int, _ body: (URL) async throws -> Void) async throws {
    let mountPoint = FileManager.default.temporaryDirectory.appendingPathComponent("full-disk-\(UUID())")
    try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
    let mount = try await ChildProcess.run(
      URL(fileURLWithPath: "/bin/mount"), ["-t", "tmpfs", "-o", "size=\(megabytes)m", "tmpfs", mountPoint.path])
    try #require(mount.status == 0, "mount -t tmpfs failed: \(mount.output)")
    defer {
      _ = umount2(mountPoint.path, Int32(MNT_DETACH))
      try? FileManager.default.removeItem(at: mountPoint)
    }
    try await body(mountPoint)
  }

  @Test(
    .enabled(if: isRoot, "needs root to mount a small tmpfs (mount -t tmpfs -o size=8m): run the tests as root"))
  func writesAre503WithRetryAfterReadsWorkAndTheServerRecoversWhenSpaceReturns() async throws {
    try await Self.withSmallDisk(megabytes: 8) { mountPoint in
      try await Self.fillTheDiskUnderAServer(
        database: mountPoint.appendingPathComponent("meridian.sqlite").path, disk: mountPoint)
    }
  }

  /// PostgreSQL with the database's files in a tablespace on a 40 MiB tmpfs (the write-ahead log, in the cluster's
  /// own directory, keeps room: a full log is a crash and recovery that PostgreSQL does itself, and the node answers
  /// it as a database restart): the same promises as SQLite's.
  @Test(
    .enabled(if: isRoot, "needs root to mount a small tmpfs (mount -t tmpfs -o size=40m): run the tests as root"))
  func onPostgreSQLWritesAre503WithRetryAfterReadsWorkAndTheServerRecoversWhenSpaceReturns() async throws {
    try await Self.withSmallDisk(megabytes: 40) { mountPoint in
      let tablespace = mountPoint.appendingPathComponent("tablespace")
      try FileManager.default.createDirectory(at: tablespace, withIntermediateDirectories: true)
      let database = try await PostgresTestDatabase.create(migrated: true, tablespaceAt: tablespace)
      do {
        try await Self.fillTheDiskUnderAServer(database: database.url, disk: mountPoint)
      } catch {
        await database.drop()
        throw error
      }
      await database.drop()
    }
  }

  /// Starts `meridian-server` on `database`, stores a few uploads, fills `disk` with a filler file and checks the
  /// promises: 503 with `Retry-After`, reads that work and hold every acknowledged fix, recovery without a restart
  /// once the filler is gone, and `db check` clean.
  static func fillTheDiskUnderAServer(database: String, disk mountPoint: URL) async throws {
    let server = try await ServerProcess.start(
      database: database, environment: ["MERIDIAN_LIMIT_FIXES_PER_ACCOUNT_PER_MINUTE": "0"])
    defer { server.child.terminate() }
    let register = try await Self.curl([
      "-X", "POST", "-H", "Content-Type: application/json", "--data",
      #"{"email":"walker@example.com","password":"correct horse"}"#, "\(server.url)/v1/auth/register",
    ])
    #expect(register.status == 201, "\(register)")
    let session = try JSONDecoder().decode(AuthSession.self, from: Data(register.body.utf8))
    let bodies = mountPoint.deletingLastPathComponent().appendingPathComponent("\(mountPoint.lastPathComponent).body")
    defer { try? FileManager.default.removeItem(at: bodies) }

    var next: Int64 = 1_764_000_000_000
    var acknowledged: [Int64] = []
    /// Posts a batch of 200 fixes; the fixes of a 200 answer are acknowledged.
    func post() async throws -> (status: Int, retryAfter: String, body: String) {
      let fixes = try (0..<200).map { index in
        try LocationFix(
          timestamp: next + Int64(index) * 1000, latitude: 50.45 + Double(index) * 0.0001, longitude: 30.52,
          horizontalAccuracy: 5)
      }
      next += 200_000
      try JSONEncoder().encode(FixBatch(deviceId: "walker-phone", fixes: fixes)).write(to: bodies)
      let answer = try await Self.curl([
        "-X", "POST", "-H", "Content-Type: application/json", "-H", "Authorization: Bearer \(session.token)",
        "--data-binary", "@\(bodies.path)", "\(server.url)/v1/fixes",
      ])
      if answer.status == 200 { acknowledged += fixes.map(\.timestamp) }
      return answer
    }
    /// The whole history, a page at a time. A page answered 503 with `Retry-After` (a deadline passed: on a busy
    /// machine a read may wait for a connection past it) is asked again through the suite's one waiting helper, for
    /// up to 10 s; any other answer ends the read with its status.
    func history() async throws -> (status: Int, timestamps: Set<Int64>) {
      var stored = Set<Int64>()
      var cursor: String?
      while true {
        var page = (status: 0, retryAfter: "", body: "")
        try await GeofenceQueueTests.waitFor("a history page not refused for a while", timeout: .seconds(10)) {
          page = try await Self.curl([
            "-H", "Authorization: Bearer \(session.token)",
            "\(server.url)/v1/history?limit=1000" + (cursor.map { "&cursor=\($0)" } ?? ""),
          ])
          return !(page.status == 503 && Int(page.retryAfter) != nil)
        }
        guard page.status == 200 else { return (page.status, stored) }
        let decoded = try JSONDecoder().decode(HistoryPage.self, from: Data(page.body.utf8))
        stored.formUnion(decoded.fixes.map(\.timestamp))
        guard let nextCursor = decoded.nextCursor else { return (200, stored) }
        cursor = nextCursor
      }
    }
    for _ in 0..<5 { #expect(try await post().status == 200) }

    // The filler takes every byte left; writes go on until the database needs a page more than it has.
    let filler = mountPoint.appendingPathComponent("filler")
    #expect(FileManager.default.createFile(atPath: filler.path, contents: nil))
    let handle = try FileHandle(forWritingTo: filler)
    let chunk = Data(count: 64 * 1024)
    while (try? handle.write(contentsOf: chunk)) != nil {}
    try? handle.close()
    var refused: (status: Int, retryAfter: String, body: String)?
    var acceptedOnAFullDisk = 0
    for _ in 0..<500 {
      let answer = try await post()
      if answer.status == 200 {
        acceptedOnAFullDisk += 1
        continue
      }
      refused = answer
      break
    }
    let full = try #require(refused, "every upload succeeded on the full disk")
    print("full disk: \(acceptedOnAFullDisk) uploads stored in the space left, then \(full.status) \(full.body)")
    #expect(full.status == 503, "\(full)")
    #expect(full.body.contains(#""code":"unavailable""#), "\(full)")
    #expect(Int(full.retryAfter) ?? 0 > 0, "no Retry-After: \(full)")
    for _ in 0..<3 {
      let again = try await post()
      #expect(again.status == 503 && Int(again.retryAfter) != nil, "\(again)")
    }
    let signUp = try await Self.curl([
      "-X", "POST", "-H", "Content-Type: application/json", "--data",
      #"{"email":"runner@example.com","password":"correct horse"}"#, "\(server.url)/v1/auth/register",
    ])
    // A sign-up writes a few rows: it may still fit in a page the log frees, else it waits like the uploads.
    print("a sign-up on the full disk: \(signUp.status)")
    #expect(
      signUp.status == 201 || (signUp.status == 503 && Int(signUp.retryAfter) != nil),
      "a sign-up on the full disk: \(signUp)")

    // Reads keep working, and hold everything acknowledged so far.
    let read = try await history()
    #expect(read.status == 200, "the server's last lines: \(server.child.output.value.suffix(3_000))")
    #expect(read.timestamps.isSuperset(of: acknowledged), "\(acknowledged.count - read.timestamps.count) missing")

    // Space returns: the next uploads succeed, with no restart.
    try FileManager.default.removeItem(at: filler)
    let freed = ContinuousClock.now
    var recovered: Duration?
    for _ in 0..<200 {
      if try await post().status == 200 {
        recovered = ContinuousClock.now - freed
        break
      }
      try await Task.sleep(for: .milliseconds(50))
    }
    let recovery = try #require(recovered, "uploads still refused 10 s after the space returned")
    print("space returned: the first upload was stored after \(recovery)")
    for _ in 0..<5 { #expect(try await post().status == 200) }
    let after = try await history()
    #expect(
      after.timestamps == Set(acknowledged), "stored \(after.timestamps.count), acknowledged \(acknowledged.count)")
    print("\(acknowledged.count) fixes acknowledged, \(after.timestamps.count) stored")

    server.child.terminate(with: SIGTERM)
    #expect(await server.child.wait() == 0, "\(server.child.output.value)")
    let admin = try #require(builtExecutable("meridian-admin"))
    var environment = ProcessInfo.processInfo.environment
    environment["MERIDIAN_DATABASE"] = nil
    environment["MERIDIAN_DATABASE_URL"] = nil
    let check = try await ChildProcess.run(admin, ["db", "check", "--database", database], environment: environment)
    print("db check: \(check.output)")
    #expect(check.status == 0, "\(check.output)")
  }
}
