import DomainKit
import Foundation
import Logging
import MeridianAPI
import MeridianStoreSQLite
import MeridianStoreTesting
import MeridianTestSupport
import MeridianTracker
import MeridianTrackerStore
import NetworkingKit
import NetworkingKitAsyncHTTPClient
import RealtimeKit
import Testing

/// The tracker's library against a real server: record, queue, upload, acknowledge.
@Suite("Tracker upload to a real server")
struct TrackerUploadTests {
  static let exampleTrack = exampleFile("kyiv-walk.gpx")

  /// A tracker store in the server's temporary directory, and an uploader signed in as a new user.
  static func tracker(_ server: TestServer, name: String) async throws -> (
    store: TrackerStore, uploader: Uploader, session: AuthSession, client: NetworkClient
  ) {
    let (session, client) = try await server.signUp(name)
    let store = try TrackerStore.open(at: server.directory.appendingPathComponent("\(name)-tracker.sqlite").path)
    let uploader = Uploader(store: store, client: client, deviceID: DeviceID("\(name)-tracker"), batchSize: 200)
    return (store, uploader, session, client)
  }

  /// Every fix the server holds for the signed-in user, oldest first.
  static func serverHistory(_ client: NetworkClient) async throws -> [LocationFix] {
    var fixes: [LocationFix] = []
    var cursor: String?
    repeat {
      let page = try await client.send(API.history, parameters: HistoryQuery(limit: 1000, cursor: cursor))
      fixes += page.fixes
      cursor = page.nextCursor
    } while cursor != nil
    return fixes.sorted { $0.timestamp < $1.timestamp }
  }

  @Test func aReplayedGPXTrackReachesTheServerExactlyOnce() async throws {
    try await TestServer.with { server in
      let (store, uploader, _, client) = try await Self.tracker(server, name: "walker")
      let agent = TrackerAgent(
        store: store, uploader: uploader, policy: ReportingPolicy(), logger: Logger(label: "tracker-test"))
      let source = FixSource.replay(Self.exampleTrack, format: .gpx, speed: 0, keepTimes: true)
      let summary = try await agent.run(source.fixes(defaultAccuracy: 5))
      let track = try FixSource.read(Self.exampleTrack, format: .gpx)
      #expect(summary.received == track.count)
      #expect(summary.recorded == track.count)
      // Foreground: every fix at least a second apart is sent (the example has one every two seconds).
      #expect(summary.queued == track.count)
      #expect(summary.uploaded == track.count)
      let stored = try await Self.serverHistory(client)
      #expect(stored.map(\.timestamp) == track.map(\.timestamp))
      #expect(stored.first?.latitude == track.first?.latitude)
      #expect(try await store.counts() == (history: track.count, queued: 0))

      // Running the same track again records nothing new and uploads nothing.
      let again = try await agent.run(source.fixes(defaultAccuracy: 5))
      #expect(again.recorded == 0 && again.uploaded == 0)
      #expect(try await Self.serverHistory(client).count == track.count)
    }
  }

  @Test func aLostAcknowledgementIsNotStoredTwice() async throws {
    try await TestServer.with { server in
      let (store, uploader, _, client) = try await Self.tracker(server, name: "ack")
      let fixes = try makeFixes(count: 50)
      for fix in fixes { try await store.record(fix, send: true, now: fix.timestamp) }
      // The server stores the first 20, but the answer never reaches the tracker (the outbox keeps them).
      let pending = try await store.pending(limit: 20)
      _ = try await client.send(API.postFixes, body: FixBatch(deviceId: uploader.deviceID, fixes: pending.map(\.fix)))
      let progress = try await uploader.drain()
      #expect(progress.acknowledged == 50)
      #expect(progress.duplicates == 20)
      #expect(try await Self.serverHistory(client).map(\.timestamp) == fixes.map(\.timestamp))
      #expect(try await store.counts().queued == 0)
    }
  }

  @Test func thePolicyResumesFromTheLastSentFixAfterARestart() async throws {
    try await TestServer.with { server in
      let (store, uploader, _, _) = try await Self.tracker(server, name: "restarter")
      let policy = ReportingPolicy(appState: .background, profile: .high)
      func run(_ fixes: [LocationFix]) async throws -> TrackerAgent.Summary {
        // A new agent each time, as after a restart: only the database remembers.
        let agent = TrackerAgent(store: store, uploader: uploader, policy: policy, logger: Logger(label: "restart"))
        let source = AsyncThrowingStream<LocationFix, any Error> { continuation in
          for fix in fixes { continuation.yield(fix) }
          continuation.finish()
        }
        return try await agent.run(source)
      }
      func fix(_ index: Int, metresNorth: Double) throws -> LocationFix {
        try LocationFix(
          timestamp: 1_700_000_000_000 + Int64(index) * 5000, latitude: 50.45 + metresNorth / 111_195,
          longitude: 30.52, horizontalAccuracy: 5)
      }
      #expect(try await run([fix(0, metresNorth: 0)]).queued == 1)
      let sent = try #require(try await store.value(TrackerStore.lastSentKey))
      #expect(try JSONDecoder().decode(LocationFix.self, from: Data(sent.utf8)).timestamp == 1_700_000_000_000)
      // 6 m from the last sent fix: background mode keeps it local, although this agent never saw that fix.
      #expect(try await run([fix(1, metresNorth: 6)]).queued == 0)
      // 11 m from it: sent.
      #expect(try await run([fix(2, metresNorth: 11)]).queued == 1)
    }
  }

  /// A source yielding `fixes` `interval` apart.
  static func paced(_ fixes: [LocationFix], interval: Duration) -> AsyncThrowingStream<LocationFix, any Error> {
    AsyncThrowingStream { continuation in
      let feeding = Task {
        for fix in fixes {
          continuation.yield(fix)
          try? await Task.sleep(for: interval)
        }
        continuation.finish()
      }
      continuation.onTermination = { _ in feeding.cancel() }
    }
  }

  /// A live link for `session`, connected (or not, with a wrong token) before it is returned.
  static func link(_ server: TestServer, _ session: AuthSession, client: NetworkClient, device: DeviceID) async throws
    -> LiveLink
  {
    let link = LiveLink(
      session: TrackerSession(
        server: "http://127.0.0.1:\(server.port)", token: session.token, userId: session.userId, deviceId: device),
      client: client)
    await link.start()
    return link
  }

  /// An agent whose uploader is `plain`'s with the live socket `link`, at medium accuracy (every fix of
  /// `makeFixes`, 5…24 m, is sent).
  static func agent(_ store: TrackerStore, uploading plain: Uploader, over link: LiveLink) -> TrackerAgent {
    TrackerAgent(
      store: store,
      uploader: Uploader(store: store, client: plain.client, deviceID: plain.deviceID, batchSize: 200, live: link),
      policy: ReportingPolicy(profile: .medium), logger: Logger(label: "tracker-test"))
  }

  @Test func withTheLiveSocketFixesGoOverItDurablyAndAFriendSeesEachOnce() async throws {
    try await TestServer.with { server in
      let (store, plain, session, client) = try await Self.tracker(server, name: "socket")
      let (bobSession, _) = try await server.signUp("bob")
      let friends = try #require(try await client.send(API.groups).groups.first { $0.kind == .friends })
      _ = try await client.send(
        API.addMember, parameters: GroupMemberRef(groupID: friends.id, userID: bobSession.userId))
      let channel = try ChannelName.of(user: session.userId)
      let bob = await LiveWatcher(server: server, token: bobSession.token)
      let link = try await Self.link(server, session, client: client, device: plain.deviceID)
      defer {
        Task {
          await bob.stop()
          await link.stop()
        }
      }
      #expect(try await bob.subscribe(channel))
      let deadline = ContinuousClock.now + .seconds(10)
      while await !link.isConnected, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
      #expect(await link.isConnected)

      let agent = Self.agent(store, uploading: plain, over: link)
      // Slower than the server's publish rate (20 per second), so that almost every fix can take the socket.
      let fixes = try makeFixes(count: 40)
      let summary = try await agent.run(Self.paced(fixes, interval: .milliseconds(70)))
      #expect(summary.uploaded == 40)
      // Most go over the socket; under load some are left to HTTP (the client keeps under the publish rate).
      #expect(summary.uploadedOverSocket > 0, "\(summary)")
      #expect(try await Self.serverHistory(client).map(\.timestamp) == fixes.map(\.timestamp))
      #expect(try await store.counts().queued == 0)
      try await bob.wait("every fix, live") { _ in
        try await bob.locations(on: channel).flatMap(\.fixes).count >= 40
      }
      let seen = try await bob.locations(on: channel).flatMap(\.fixes).map(\.timestamp)
      #expect(seen == fixes.map(\.timestamp))
      #expect(try await ConnectionReport.load(from: store)?.state == .stopped)
    }
  }

  @Test func aRefusedSocketLeavesEverythingToHTTP() async throws {
    try await TestServer.with { server in
      let (store, plain, session, client) = try await Self.tracker(server, name: "refused")
      var wrong = session
      wrong.token = "not-a-token"
      let link = try await Self.link(server, wrong, client: client, device: plain.deviceID)
      defer { Task { await link.stop() } }
      let fixes = try makeFixes(count: 20)
      let summary = try await Self.agent(store, uploading: plain, over: link).run(
        Self.paced(fixes, interval: .milliseconds(20)))
      #expect(summary.uploaded == 20 && summary.uploadedOverSocket == 0)
      #expect(try await Self.serverHistory(client).map(\.timestamp) == fixes.map(\.timestamp))
    }
  }

  @Test func theSocketResumesAfterAServerRestartAndTheBacklogArrivesOnce() async throws {
    var server = try await TestServer.start()
    let (store, plain, session, _) = try await Self.tracker(server, name: "restart")
    // The tracker's HTTP client outlives the server.
    let transport = AsyncHTTPClientTransport()
    let client = try server.client(token: session.token, transport: transport)
    let link = try await Self.link(server, session, client: client, device: plain.deviceID)
    let uploader = Uploader(store: store, client: client, deviceID: plain.deviceID, batchSize: 200, live: link)
    func connected() async throws -> Bool {
      let deadline = ContinuousClock.now + .seconds(20)
      while await !link.isConnected, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
      return await link.isConnected
    }
    func record(_ fixes: [LocationFix]) async throws {
      for fix in fixes { try await store.record(fix, send: true, now: fix.timestamp) }
    }
    // Uploads a batch at least one publish interval (50 ms) after the last, so the socket can take it.
    func drain() async throws -> Uploader.Progress {
      try await Task.sleep(for: .milliseconds(60))
      return try await uploader.drain()
    }
    let fixes = try makeFixes(count: 15)
    do {
      #expect(try await connected())
      try await record(Array(fixes[0..<5]))
      #expect(try await drain().overSocket == 5)

      // The server goes away: recording goes on, uploading fails and everything stays queued.
      try await server.stop(keepingFiles: true)
      try await record(Array(fixes[5..<10]))
      await #expect(throws: (any Error).self) { try await uploader.drain() }
      #expect(try await store.counts().queued == 5)

      // Back on the same port and database: the socket reconnects by itself and carries the backlog, then new fixes.
      server = try await server.restarted()
      #expect(try await connected())
      #expect(try await drain().overSocket == 5)
      try await record(Array(fixes[10..<15]))
      #expect(try await drain().overSocket == 5)
      #expect(try await Self.serverHistory(client).map(\.timestamp) == fixes.map(\.timestamp))
      #expect(try await store.counts().queued == 0)
    } catch {
      Issue.record(error)
    }
    await link.stop()
    try await transport.shutdown()
    try await server.stop()
  }
}
