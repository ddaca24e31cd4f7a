import DomainKit
import Foundation
import GRDB
import MeridianAdmin
import MeridianServer
import MeridianStore
import MeridianStoreSQLite
import MeridianTestSupport
import PersistenceKit
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The built `meridian-tracker` next to the test bundle (a product of the same package).
let trackerExecutable = builtExecutable("meridian-tracker")

/// The 998-fix walk the tracker replays.
let kyivWalk = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
  .deletingLastPathComponent().appendingPathComponent("Tools/examples/kyiv-walk.gpx")

@Suite("meridian-admin against a running server while meridian-tracker streams")
struct AdminTrackerStreamTests {
  static let token = "admin-tracker-tests-secret"

  @Test func backupAndRetentionWhileATrackerStreamsIntoTheServer() async throws {
    let tracker = try #require(trackerExecutable, "meridian-tracker is not built; run swift build --build-tests")
    let sandbox = try AdminSandbox()
    let server = try await InProcessServer.start(database: sandbox.database, adminToken: Self.token)
    do {
      try await run(tracker, sandbox, server)
    } catch {
      try await server.stop()
      throw error
    }
    try await server.stop()
  }

  private func run(_ tracker: URL, _ sandbox: AdminSandbox, _ server: InProcessServer) async throws {
    // Old history for retention to delete: 2,000 fixes of another user, 400 days old.
    let store = try sandbox.store()
    let day: Int64 = 86_400_000
    let now = Timestamp.milliseconds(Date())
    let old = try await seedUser(store, email: "old@example.com")
    try await seedFixes(
      store, user: old, device: "old-phone", fixes: try makeFixes(count: 2000, start: now - 400 * day, device: "old"))

    let state = sandbox.path("tracker-state")
    let login = try ChildProcess(
      tracker,
      [
        "login", "--state", state, "--server", server.url, "--email", "walker@example.com", "--password-stdin",
        "--create",
      ],
      input: "correct horse\n")
    #expect(await login.wait() == 0, "\(login.output.value)")
    let walker = try #require(
      try await store.database.read { db in
        try String.fetchOne(db, sql: "SELECT user_id FROM credentials WHERE value = 'walker@example.com'")
      })
    let expected = try HistoryTransfer.read(kyivWalk, format: .gpx).map(\.timestamp).sorted()
    #expect(expected.count == 998)
    func stored() async throws -> [Int64] {
      try await store.database.read { db in
        try Int64.fetchAll(
          db, sql: "SELECT timestamp FROM fixes WHERE user_id = ? ORDER BY timestamp", arguments: [walker])
      }
    }

    // The walk's 33 minutes in about 50 s, five fixes a request: it is still streaming through the backup and the
    // retention below even on a loaded machine; then it is stopped and a second run uploads the rest at once.
    let run = ["run", "--state", state, "--gpx", kyivWalk.path, "--keep-times", "--batch-size", "5"]
    let streaming = try ChildProcess(tracker, run + ["--speed", "40"])
    var beforeBackup: [Int64] = []
    for _ in 0..<1000 {
      beforeBackup = try await stored()
      if beforeBackup.count >= 50 { break }
      try await Task.sleep(for: .milliseconds(10))
    }
    #expect(beforeBackup.count >= 50, "the tracker uploaded nothing: \(streaming.output.value)")

    // Every fix the server committed (so every one it acknowledged) before the backup started is in the backup.
    let backupPath = sandbox.path("backup.sqlite")
    let backup = try await sandbox.admin(["db", "backup", backupPath, "--json"])
    let afterBackup = try await stored()
    #expect(backup.status == 0, "\(backup)")
    #expect(try backup.object()["integrity"] as? String == "ok")
    #expect(streaming.isRunning, "the tracker finished before the backup did; nothing streamed during it")
    let check = try await sandbox.admin(["db", "check", "--json"], database: backupPath)
    #expect(check.status == 0, "\(check)")
    #expect(try check.object()["ok"] as? Bool == true)
    let copy = try SQLiteDatabase.open(at: backupPath)
    let copied = try await copy.read { db in
      try Int64.fetchAll(db, sql: "SELECT timestamp FROM fixes WHERE user_id = ?", arguments: [walker])
    }
    try copy.close()
    let lost = Set(beforeBackup).subtracting(copied)
    #expect(lost.isEmpty, "\(lost.count) fixes the server held before the backup are missing from it")
    #expect(Set(copied).isSubset(of: Set(afterBackup)))

    // Retention while the tracker keeps uploading: exactly the old history goes, the tracker never fails.
    let retention = try await sandbox.admin([
      "retention", "apply", "--older-than", "365d", "--batch-size", "200", "--yes", "--json",
    ])
    #expect(streaming.isRunning, "the tracker finished before retention did; nothing streamed during it")
    #expect(retention.status == 0, "\(retention)")
    #expect(try retention.object()["deleted"] as? Int == 2000, "\(retention)")
    #expect((try retention.object()["batches"] as? Int ?? 0) >= 10)

    streaming.terminate()
    _ = await streaming.wait()
    let rest = try ChildProcess(tracker, run + ["--speed", "0"])
    #expect(await rest.wait() == 0, "\(rest.output.value)")
    #expect(try await stored() == expected, "every fix of the walk, once")
    let oldLeft = try await store.database.read { db in
      try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM fixes WHERE user_id = ?", arguments: [old.rawValue])
    }
    #expect(oldLeft == 0)
    let final = try await sandbox.admin(["db", "check", "--json"])
    #expect(final.status == 0, "\(final)")
  }
}
