import DomainKit
import Foundation
import MeridianAPI
import MeridianTestSupport
import MeridianTracker
import NIOCore
import NIOPosix
import Synchronization
import Testing

/// Every way a `meridian-tracker` command can end — a bad file, a source failing mid-run, an unreachable server, a
/// rejected token, Ctrl-C — ends with one clear sentence and its exit status, never a crash (a client that is not
/// shut down traps in AsyncHTTPClient's deinit in debug builds, which these tests and the binary they run are). Each
/// path runs 50 times in a row: in this process where no signal is needed, as quick child processes where one is.
@Suite("meridian-tracker exits cleanly on every path", .serialized)
struct TrackerExitPathTests {
  static let rounds = 50
  /// Child processes at a time, so that a loaded machine's waits overlap.
  static let width = 5

  /// Runs `body` for every round, ``width`` rounds at a time.
  static func inRounds(_ body: @escaping @Sendable (Int) async throws -> Void) async throws {
    try await withThrowingTaskGroup(of: Void.self) { group in
      for round in 0..<rounds {
        if round >= width { try await group.next() }
        group.addTask { try await body(round) }
      }
      try await group.waitForAll()
    }
  }

  /// A state directory in `directory` signed in to `server` with `token`.
  static func state(_ directory: URL, _ name: String, server: String, token: String, user: UserID = "nobody") throws
    -> String
  {
    let state = directory.appendingPathComponent(name).path
    try TrackerStateDirectory(path: state).save(
      TrackerSession(server: server, token: token, userId: user, deviceId: DeviceID("\(name)-device")))
    return state
  }

  /// A port on 127.0.0.1 that nothing listens on: bound by the OS, then closed.
  static func closedPort() async throws -> Int {
    let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
      .bind(host: "127.0.0.1", port: 0).get()
    let port = try #require(channel.localAddress?.port)
    try await channel.close()
    return port
  }

  static func withDirectory(_ body: (URL) async throws -> Void) async throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tracker-exit-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    try await body(directory)
  }

  @Test(.timeLimit(.minutes(1)))
  func aTruncatedTrackNamesItsBadLine() async throws {
    let executable = try #require(builtExecutable("meridian-tracker"))
    try await Self.withDirectory { directory in
      let whole = directory.appendingPathComponent("whole.gpx")
      try TrackerReplayTests.writeGPX(whole, count: 400, metres: 2)
      // Cut in the middle of point 150's line (line 154: three lines of header come first), inside an attribute.
      let text = try String(contentsOf: whole, encoding: .utf8)
      let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
      let cut = lines[..<153].joined(separator: "\n") + "\n" + lines[153].prefix(30)
      let truncated = directory.appendingPathComponent("truncated.gpx")
      try cut.write(to: truncated, atomically: true, encoding: .utf8)
      let state = try Self.state(directory, "truncated", server: "http://127.0.0.1:9", token: "t")
      let arguments = ["run", "--state", state, "--gpx", truncated.path, "--speed", "0"]
      func check(_ status: Int32, _ message: String) {
        #expect(status == 1, "\(message)")
        let line = message.firstMatch(of: /line (\d+)/).flatMap { Int($0.1) }
        #expect(message.contains("truncated.gpx") && (152...156).contains(line ?? 0), "\(message)")
      }
      for _ in 0..<Self.rounds {
        let (status, message) = await MeridianTrackerCommand.execute(arguments)
        check(status, message ?? "")
      }
      // And the binary says the same on standard error.
      for _ in 0..<5 {
        let child = try ChildProcess(executable, arguments)
        check(await child.wait(), child.standardError.value)
      }
      // Nothing was recorded from the broken file.
      let status = try await ChildProcess.run(executable, ["status", "--state", state, "--json"])
      #expect(status.output.contains(#""history":0"#), "\(status.output)")
    }
  }

  @Test(.timeLimit(.minutes(1)))
  func aSourceThatFailsMidRunStopsTheUploadsAndNamesTheLine() async throws {
    let executable = try #require(builtExecutable("meridian-tracker"))
    try await TestServer.with { server in
      let (session, _) = try await server.signUp("stdin")
      // Five at a time, each in its own state directory.
      let states = try (0..<Self.width).map { lane in
        try Self.state(
          server.directory, "stdin\(lane)", server: "http://127.0.0.1:\(server.port)", token: session.token,
          user: session.userId)
      }
      try await Self.inRounds { round in
        // 30 good fixes (queued and being uploaded), then a line that is not JSON.
        let start = Timestamp.milliseconds(Date()) - 60_000 + Int64(round) * 30
        let lines = (0..<30).map { #"{"timestamp":\#(start + Int64($0)),"latitude":50.45,"longitude":30.52}"# }
        let child = try ChildProcess(
          executable, ["run", "--state", states[round % Self.width], "--stdin"],
          input: (lines + ["{not json"]).joined(separator: "\n"))
        let status = await child.wait()
        #expect(status == 1, "round \(round): \(child.output.value)")
        #expect(
          child.standardError.value.contains("standard input, line 31: not a JSON object"),
          "round \(round): \(child.output.value)")
        #expect(!child.output.value.contains("Fatal error"), "round \(round)")
      }
    }
  }

  @Test(.timeLimit(.minutes(1)))
  func anUnreachableServerGivesUpWithTheFixesQueued() async throws {
    try await Self.withDirectory { directory in
      let track = directory.appendingPathComponent("short.gpx")
      try TrackerReplayTests.writeGPX(track, count: 5, metres: 5)
      let port = try await Self.closedPort()
      let state = try Self.state(directory, "offline", server: "http://127.0.0.1:\(port)", token: "t")
      let arguments = ["run", "--state", state, "--gpx", track.path, "--speed", "0", "--give-up-after", "0"]
      for round in 0..<Self.rounds {
        let (status, message) = await MeridianTrackerCommand.execute(arguments)
        #expect(status == 1, "round \(round): \(message ?? "")")
        #expect(
          message?.contains("gave up uploading: the server can't be reached") == true
            && message?.contains("5 fixes stay queued") == true, "round \(round): \(message ?? "")")
      }
      let login = await MeridianTrackerCommand.execute([
        "login", "--state", directory.appendingPathComponent("login").path, "--server", "http://127.0.0.1:\(port)",
        "--phone", "+380501234567", "--code", "123456",
      ])
      #expect(login.status == 1 && login.message?.contains("the server can't be reached") == true, "\(login)")
      let watch = await MeridianTrackerCommand.execute(["watch", "--state", state])
      #expect(watch.status == 1 && watch.message?.contains("the server can't be reached") == true, "\(watch)")
    }
  }

  @Test(.timeLimit(.minutes(1)))
  func aRejectedTokenStopsWithLogInAgain() async throws {
    try await TestServer.with { server in
      let track = server.directory.appendingPathComponent("short.gpx")
      try TrackerReplayTests.writeGPX(track, count: 5, metres: 5)
      let (session, _) = try await server.signUp("revoked")
      let state = try Self.state(
        server.directory, "revoked", server: "http://127.0.0.1:\(server.port)", token: "not-\(session.token)",
        user: session.userId)
      for round in 0..<Self.rounds {
        let (status, message) = await MeridianTrackerCommand.execute([
          "run", "--state", state, "--gpx", track.path, "--speed", "0",
        ])
        #expect(status == 1, "round \(round): \(message ?? "")")
        // The rejection stops recording at once: 1 to 5 of the fixes were queued by then.
        let queued = message?.firstMatch(of: /(\d+) fixes stay queued/).flatMap { Int($0.1) }
        #expect(
          message?.contains("the server rejected the saved token; run `meridian-tracker login` again") == true
            && (1...5).contains(queued ?? 0), "round \(round): \(message ?? "")")
      }
      let watch = await MeridianTrackerCommand.execute(["watch", "--state", state])
      #expect(watch.status == 1 && watch.message?.contains("rejected the saved token") == true, "\(watch)")
    }
  }

  @Test(.timeLimit(.minutes(1)))
  func ctrlCDuringAnUploadStopsCleanlyAndLosesNothing() async throws {
    let executable = try #require(builtExecutable("meridian-tracker"))
    try await TestServer.with { server in
      let track = server.directory.appendingPathComponent("track.gpx")
      try TrackerReplayTests.writeGPX(track, count: 100, metres: 2)
      let interrupted = Mutex<TrackerReplayTests.Tracker?>(nil)
      try await Self.inRounds { round in
        // A new account each round (an account may have 20 devices).
        let tracker = try await TrackerReplayTests.tracker(server, "ctrlc\(round)")
        // 20 times faster: 5 s of replay, uploading as it goes.
        let child = try ChildProcess(
          executable, tracker.run(["--gpx", track.path, "--speed", "20", "--batch-size", "1"]))
        let deadline = ContinuousClock.now + .seconds(10)
        while try await tracker.stored().isEmpty, ContinuousClock.now < deadline {
          try await Task.sleep(for: .milliseconds(5))
        }
        child.terminate(with: SIGINT)
        let status = await child.wait()
        #expect(status == 130, "round \(round): \(child.output.value)")
        #expect(child.standardError.value.contains("Interrupted: "), "round \(round): \(child.output.value)")
        #expect(!child.output.value.contains("Fatal error"), "round \(round)")
        if round == 0 { interrupted.withLock { $0 = tracker } }
      }
      // The next run goes on where the interrupted one stopped: every fix on the server exactly once.
      let tracker = try #require(interrupted.withLock { $0 })
      let rest = try await ChildProcess.run(executable, tracker.run(["--gpx", track.path, "--speed", "0"]))
      #expect(rest.status == 0, "\(rest.output)")
      let stored = try await tracker.stored()
      #expect(stored.count == 100 && TrackerReplayTests.gaps(stored).allSatisfy { $0 == 1000 }, "\(stored.count)")
    }
  }
}
