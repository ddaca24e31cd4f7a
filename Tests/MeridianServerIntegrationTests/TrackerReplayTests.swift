import DomainKit
import Foundation
import MeridianAPI
import MeridianStoreSQLite
import MeridianTestSupport
import MeridianTracker
import NetworkingKit
import Testing

/// Replays with the real `meridian-tracker` binary and a real server: a replay changes only the pacing, every fix
/// keeps its recorded spacing, and the reporting policy judges fixes by their own times.
@Suite("meridian-tracker replays keep every fix", .serialized)
struct TrackerReplayTests {
  /// One degree of latitude on the 6,371,008.8 m sphere, metres.
  static let metresPerDegree = 111_195.08

  /// A signed-in tracker: a new account (signed up over the API) and a state directory holding its session.
  struct Tracker: Sendable {
    let state: URL
    let session: AuthSession
    let client: NetworkClient

    /// `run` in this state with `arguments`.
    func run(_ arguments: [String]) -> [String] { ["run", "--state", state.path] + arguments }

    /// The timestamps the server holds for the account, oldest first.
    func stored() async throws -> [Int64] { try await TrackerUploadTests.serverHistory(client).map(\.timestamp) }
  }

  static func tracker(_ server: TestServer, _ name: String, via url: String? = nil) async throws -> Tracker {
    let (session, client) = try await server.signUp(name)
    let state = server.directory.appendingPathComponent("tracker-\(name)")
    try TrackerStateDirectory(path: state.path).save(
      TrackerSession(
        server: url ?? "http://127.0.0.1:\(server.port)", token: session.token, userId: session.userId,
        deviceId: DeviceID("\(name)-device")))
    return Tracker(state: state, session: session, client: client)
  }

  /// Writes a GPX 1.1 track (the schema's `trk`/`trkseg`/`trkpt` with `time` in UTC) of `count` points `seconds`
  /// apart from `start`, each `metres` north of the last along the meridian 30.52° E; returns the recorded times.
  @discardableResult
  static func writeGPX(
    _ url: URL, count: Int, metres: Double, seconds: Int = 1, start: Int64 = 1_748_764_800_000
  ) throws -> [Int64] {
    let times = (0..<count).map { start + Int64($0 * seconds) * 1000 }
    let points = times.enumerated().map { index, time in
      let latitude = 50.45 + Double(index) * metres / metresPerDegree
      return #"      <trkpt lat="\#(String(format: "%.8f", latitude))" lon="30.52"><time>"#
        + "\(Timestamp.formatISO8601(time))</time></trkpt>"
    }
    let text = """
      <?xml version="1.0" encoding="UTF-8"?>
      <gpx version="1.1" creator="TrackerReplayTests" xmlns="http://www.topografix.com/GPX/1/1">
        <trk><name>test</name><trkseg>
      \(points.joined(separator: "\n"))
        </trkseg></trk>
      </gpx>

      """
    try text.write(to: url, atomically: true, encoding: .utf8)
    return times
  }

  /// The fixes' spacing, milliseconds.
  static func gaps(_ times: [Int64]) -> [Int64] { zip(times, times.dropFirst()).map { $1 - $0 } }

  @Test(arguments: ["20", "0"])
  func a400PointTrackThroughALinkThatDropsConnectionsAndAnswers503LeavesExactly400Fixes(speed: String) async throws {
    let executable = try #require(builtExecutable("meridian-tracker"))
    try await TestServer.with { server in
      // tracker → drops connections → answers 503, loses answers → server
      let flaky = try await FlakyProxy.start(upstream: server.port)
      let dropping = try await DroppingProxy.start(upstream: flaky.port)
      let tracker = try await Self.tracker(server, "replay\(speed)", via: "http://127.0.0.1:\(dropping.port)")
      let file = server.directory.appendingPathComponent("track.gpx")
      let recorded = try Self.writeGPX(file, count: 400, metres: 2)
      let before = Timestamp.milliseconds(Date())
      // A small batch size makes many requests, so that every kind of failure happens.
      let run = tracker.run(["--gpx", file.path, "--speed", speed, "--batch-size", "20", "--no-live-socket"])
      let first = try await ChildProcess.run(executable, run)
      let after = Timestamp.milliseconds(Date())
      #expect(first.status == 0, "\(first.output)")
      #expect(first.output.contains("uploaded 400"), "\(first.output)")
      #expect(first.output.contains("Nothing is queued"), "\(first.output)")
      let stored = try await tracker.stored()
      #expect(stored.count == 400)
      // Every fix keeps its recorded spacing; the track ends no later than the run did, and not before it began.
      #expect(Self.gaps(stored) == Self.gaps(recorded))
      #expect(
        (stored.last ?? 0) <= after && (stored.last ?? 0) >= before, "\((stored.last ?? 0) - before) ms after the start"
      )
      let dropped = dropping.counts
      let refused = await flaky.counts
      #expect(dropped.dropped > 0 && dropped.answersCut > 0, "\(dropped)")
      #expect(refused.refused > 0, "\(refused)")

      // The same file again stores nothing new, and says so.
      let again = try await ChildProcess.run(executable, run)
      #expect(again.status == 0, "\(again.output)")
      #expect(again.output.contains("all 400 are in the history already"), "\(again.output)")
      #expect(again.output.contains("Nothing new"), "\(again.output)")
      #expect(try await tracker.stored() == stored)
      await dropping.stop()
      try await flaky.stop()
    }
  }

  /// 200 fixes a second apart, each 3 m north of the last: foreground sends every one, background (10 m) every 4th
  /// (12 m; 9 m is too close), closed (100 m) every 34th (102 m; 99 m is too close) — 200, 50 and 6 — at any speed.
  @Test(arguments: [("foreground", 1), ("background", 4), ("closed", 34)])
  func thePolicyJudgesFixesByTheirOwnTimes(mode: String, every: Int) async throws {
    let executable = try #require(builtExecutable("meridian-tracker"))
    try await TestServer.with { server in
      let tracker = try await Self.tracker(server, "policy-\(mode)")
      let file = server.directory.appendingPathComponent("policy.gpx")
      try Self.writeGPX(file, count: 200, metres: 3)
      // 100 times faster: the 200 s track in 2 s (fixes 10 ms apart in real time, 1 s apart in their times).
      let run = try await ChildProcess.run(
        executable, tracker.run(["--gpx", file.path, "--speed", "100", "--mode", mode]))
      #expect(run.status == 0, "\(run.output)")
      let expected = (199 / every) + 1
      let stored = try await tracker.stored()
      #expect(stored.count == expected, "\(run.output.suffix(600))")
      #expect(Self.gaps(stored).allSatisfy { $0 == Int64(every) * 1000 })
      #expect(run.output.contains("received 200, recorded 200, queued \(expected), uploaded \(expected)"))
    }
  }

  @Test func csvGeoJSONAndSimulatedTripsKeepTheirSpacingAndOwnTimesStayWithKeepTimes() async throws {
    let executable = try #require(builtExecutable("meridian-tracker"))
    try await TestServer.with { server in
      let start: Int64 = 1_748_764_800_000
      let times = (0..<60).map { start + Int64($0) * 1000 }
      func latitude(_ index: Int) -> Double { 50.45 + Double(index) * 2 / Self.metresPerDegree }
      // CSV as many exports write it (`time`, `lat`, `lon`), and GeoJSON as togeojson writes a track: one LineString,
      // positions [longitude, latitude], the times in properties.coordTimes.
      let csv = server.directory.appendingPathComponent("track.csv")
      try (["time,lat,lon"] + times.indices.map { "\(Timestamp.formatISO8601(times[$0])),\(latitude($0)),30.52" })
        .joined(separator: "\n").write(to: csv, atomically: true, encoding: .utf8)
      let geojson = server.directory.appendingPathComponent("track.geojson")
      let positions = times.indices.map { "[30.52,\(latitude($0))]" }.joined(separator: ",")
      let coordTimes = times.map { "\"\(Timestamp.formatISO8601($0))\"" }.joined(separator: ",")
      try
        #"{"type":"Feature","properties":{"coordTimes":[\#(coordTimes)]},"geometry":{"type":"LineString","coordinates":[\#(positions)]}}"#
        .write(to: geojson, atomically: true, encoding: .utf8)
      for (flag, file) in [("--csv", csv), ("--geojson", geojson)] {
        let tracker = try await Self.tracker(server, "format\(flag)")
        let run = try await ChildProcess.run(executable, tracker.run([flag, file.path, "--speed", "50"]))
        #expect(run.status == 0, "\(run.output)")
        let stored = try await tracker.stored()
        #expect(stored.count == 60 && Self.gaps(stored).allSatisfy { $0 == 1000 }, "\(flag): \(stored.count)")
      }

      // --keep-times: the file's own times.
      let own = try await Self.tracker(server, "own-times")
      let run = try await ChildProcess.run(executable, own.run(["--csv", csv.path, "--speed", "0", "--keep-times"]))
      #expect(run.status == 0, "\(run.output)")
      #expect(try await own.stored() == times)

      // A simulated walk of 50 m: a fix a second of simulated time, every one sent at 100 times the speed.
      let walker = try await Self.tracker(server, "simulated")
      let simulated = try await ChildProcess.run(
        executable, walker.run(["--simulate", "walk", "--route", "50.4501,30.5234;50.4505,30.5234", "--speed", "100"]))
      #expect(simulated.status == 0, "\(simulated.output)")
      let trip = try await walker.stored()
      #expect(trip.count >= 30 && Self.gaps(trip).dropLast().allSatisfy { $0 == 1000 }, "\(trip.count)")
      #expect(trip.last ?? .max <= Timestamp.milliseconds(Date()))
    }
  }

  @Test func aFriendsWatchPrintsEveryMoveAndTheLastOneWithinSecondsOfItsUpload() async throws {
    let executable = try #require(builtExecutable("meridian-tracker"))
    try await TestServer.with { server in
      let walker = try await Self.tracker(server, "walker")
      let friend = try await Self.tracker(server, "friend")
      let friends = try #require(try await walker.client.send(API.groups).groups.first { $0.kind == .friends })
      _ = try await walker.client.send(
        API.addMember, parameters: GroupMemberRef(groupID: friends.id, userID: friend.session.userId))
      let watch = try ChildProcess(executable, ["watch", "--state", friend.state.path, "--json"])
      // The watch says when the walker's updates reach it.
      let subscribed = #"{"subscribed":"\#(walker.session.userId.rawValue)"}"#
      for _ in 0..<2000 where !watch.output.value.contains(subscribed) {
        try await Task.sleep(for: .milliseconds(10))
      }
      #expect(watch.output.value.contains(subscribed), "\(watch.output.value)")
      let file = server.directory.appendingPathComponent("walk.gpx")
      try Self.writeGPX(file, count: 20, metres: 2)
      // Ten times faster: the 19 s walk in about 2 s.
      let run = try await ChildProcess.run(executable, walker.run(["--gpx", file.path, "--speed", "10"]))
      #expect(run.status == 0, "\(run.output)")
      let stored = try await walker.stored()
      #expect(stored.count == 20)
      // The run ends once the server acknowledged the last fix; the friend sees it within seconds.
      let uploaded = ContinuousClock.now
      func seen() -> [Int64] {
        watch.standardOutput.value.split(separator: "\n").compactMap {
          try? JSONDecoder().decode(LiveLocation.self, from: Data($0.utf8))
        }.flatMap(\.fixes).map(\.timestamp)
      }
      while seen().last != stored.last, ContinuousClock.now - uploaded < .seconds(10) {
        try await Task.sleep(for: .milliseconds(20))
      }
      #expect(ContinuousClock.now - uploaded < .seconds(5), "\(watch.output.value)")
      #expect(seen() == stored)
      watch.terminate(with: SIGINT)
      #expect(await watch.wait() == 130)
      #expect(watch.standardError.value.contains("Interrupted: stopped watching."))
    }
  }

  @Test func twoTracksReplayedOneAfterTheOtherAreBothKeptWhole() async throws {
    let executable = try #require(builtExecutable("meridian-tracker"))
    try await TestServer.with { server in
      let tracker = try await Self.tracker(server, "two-tracks")
      // Two walks recorded a month apart; each lands just before its replay ends, so the second overlaps the first
      // in time. The policy judges each on its own, and no fix takes another's time.
      let first = server.directory.appendingPathComponent("june.gpx")
      let second = server.directory.appendingPathComponent("july.gpx")
      try Self.writeGPX(first, count: 400, metres: 2)
      try Self.writeGPX(second, count: 400, metres: 2, start: 1_751_360_400_000)
      for (file, speed) in [(first, "0"), (second, "100")] {
        let run = try await ChildProcess.run(executable, tracker.run(["--gpx", file.path, "--speed", speed]))
        #expect(run.status == 0 && run.output.contains("uploaded 400"), "\(run.output.suffix(400))")
      }
      #expect(try await tracker.stored().count == 800)
      let export = server.directory.appendingPathComponent("both.gpx")
      let exported = try await ChildProcess.run(
        executable, ["history", "export", "--state", tracker.state.path, "--output", export.path])
      #expect(exported.status == 0, "\(exported.output)")
      var points = 0
      try GPX.read(contentsOf: export) { _ in points += 1 }
      #expect(points == 800)
      // Either one again: nothing new.
      let again = try await ChildProcess.run(executable, tracker.run(["--gpx", first.path, "--speed", "0"]))
      #expect(again.output.contains("received 400, recorded 0, queued 0, uploaded 0"), "\(again.output.suffix(400))")
      #expect(try await tracker.stored().count == 800)
    }
  }

  @Test func theBundledWalkIsUploadedWhole() async throws {
    let executable = try #require(builtExecutable("meridian-tracker"))
    try await TestServer.with { server in
      // What Tools/run does, at once instead of ten times faster.
      let demo = try await Self.tracker(server, "demo")
      let walk = TrackerUploadTests.exampleTrack
      let run = try await ChildProcess.run(executable, demo.run(["--gpx", walk.path, "--speed", "0"]))
      #expect(run.status == 0, "\(run.output)")
      #expect(run.output.contains("received 998, recorded 998, queued 998, uploaded 998"), "\(run.output.suffix(400))")
      #expect(run.output.contains("Nothing is queued: every fix the reporting policy sent is on the server."))
      let recorded = try FixSource.read(walk, format: .gpx).map(\.timestamp)
      let stored = try await demo.stored()
      #expect(stored.count == 998 && Self.gaps(stored) == Self.gaps(recorded))
    }
  }
}
