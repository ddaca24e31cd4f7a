import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import MeridianServer
import MeridianStoreTesting
import MeridianTestSupport
import MeridianTracker
import NetworkingKit
import NetworkingKitAsyncHTTPClient
import RealtimeKit
import RealtimeKitTesting
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Two server nodes on one PostgreSQL database (issue 21 §4): live updates and visibility changes cross nodes, a
/// client resumes on the other node, and the tracker delivers through node B once node A is killed. Each test makes
/// its own database on the cluster of `Tools/postgres start`, and fails when the cluster can't be started.
@Suite("Two server nodes on one PostgreSQL database", .serialized)
struct TwoNodeTests {
  /// Two in-process nodes on a fresh database; both are stopped and the database dropped whatever `body` does.
  static func withTwoNodes(_ body: (TestServer, TestServer) async throws -> Void) async throws {
    let database = try await PostgresTestDatabase.create()
    do {
      let a = try await TestServer.start { $0.database = .postgres(url: database.url) }
      do {
        let b = try await TestServer.start { $0.database = .postgres(url: database.url) }
        do {
          try await body(a, b)
        } catch {
          try? await b.stop()
          throw error
        }
        try await b.stop()
      } catch {
        try? await a.stop()
        throw error
      }
      try await a.stop()
    } catch {
      await database.drop()
      throw error
    }
    await database.drop()
  }

  /// Anna shares with Bob (friends); Carol is a friend too but blacklisted. Signed up on node `a`.
  static func people(on a: TestServer) async throws -> (
    anna: (session: AuthSession, client: NetworkClient), bob: AuthSession, carol: AuthSession
  ) {
    let anna = try await a.signUp("anna")
    let (bob, _) = try await a.signUp("bob")
    let (carol, _) = try await a.signUp("carol")
    let groups = try await anna.client.send(API.groups).groups
    let friends = try #require(groups.first { $0.kind == .friends })
    let blacklist = try #require(groups.first { $0.kind == .blacklist })
    for user in [bob.userId, carol.userId] {
      _ = try await anna.client.send(API.addMember, parameters: GroupMemberRef(groupID: friends.id, userID: user))
    }
    _ = try await anna.client.send(
      API.addMember, parameters: GroupMemberRef(groupID: blacklist.id, userID: carol.userId))
    return (anna, bob, carol)
  }

  @Test func fixesUploadedToNodeAReachAFriendOnNodeBAndNotABlacklistedUser() async throws {
    try await Self.withTwoNodes { a, b in
      let (anna, bobSession, carolSession) = try await Self.people(on: a)
      let annaChannel = try ChannelName.of(user: anna.session.userId)
      let bob = await LiveWatcher(server: b, token: bobSession.token)
      let carol = await LiveWatcher(server: b, token: carolSession.token)
      let annaLive = await LiveWatcher(server: a, token: anna.session.token)
      defer {
        Task {
          await bob.stop()
          await carol.stop()
          await annaLive.stop()
        }
      }
      #expect(try await bob.subscribe(annaChannel))
      #expect(try await !carol.subscribe(annaChannel))

      // Uploaded to node A over HTTP, then published over node A's socket: both reach Bob on node B, once each.
      let overHTTP = try makeFixes(count: 3)
      _ = try await anna.client.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: overHTTP))
      let overSocket = try makeFixes(count: 2, start: 1_700_000_100_000)
      _ = try await annaLive.client.publish(
        JSONValue(encoding: FixBatch(deviceId: "anna-phone", fixes: overSocket)), to: annaChannel, id: "batch-1")
      try await bob.wait("both uploads on node B") { _ in try await bob.locations(on: annaChannel).count == 2 }
      let seen = try await bob.locations(on: annaChannel).map { $0.fixes.map(\.timestamp) }
      #expect(seen == [overHTTP.map(\.timestamp), overSocket.map(\.timestamp)])

      // Carol, blacklisted, got nothing of Anna's, on either channel she could try.
      let carolEvents = await carol.items.filter { if case .event = $0 { return true } else { return false } }
      #expect(carolEvents.isEmpty, "\(carolEvents)")
      #expect(try await !carol.subscribe(annaChannel))
    }
  }

  /// Precision and privacy zones (issue 39 §2, §3) across nodes: a zone drawn on node B closes the raw channel to Bob
  /// on node B at once; fixes posted to node A reach him on node B coarsened and, inside the zone, as "in a private
  /// zone" only.
  @Test func aZoneDrawnOnNodeBAndAGroupsPrecisionHoldForFixesPostedToNodeA() async throws {
    try await Self.withTwoNodes { a, b in
      let (anna, bobSession, _) = try await Self.people(on: a)
      let annaID = anna.session.userId
      let bob = await LiveWatcher(server: b, token: bobSession.token)
      defer { Task { await bob.stop() } }
      #expect(try await bob.subscribe(try ChannelName.of(user: annaID)))
      // Friends see Anna at about 1 km; she draws a zone through node B.
      let friends = try #require(try await anna.client.send(API.groups).groups.first { $0.kind == .friends })
      var visibility = friends.visibility
      visibility.precision = .approximate
      _ = try await anna.client.send(
        API.updateGroup, parameters: GroupRef(id: friends.id), body: GroupUpdate(visibility: visibility))
      let home = Coordinate(uncheckedLatitude: 50.40, longitude: 30.40)
      _ = try await b.client(token: anna.session.token).send(
        API.createPrivacyZone,
        body: PrivacyZoneBody(name: "Home", latitude: home.latitude, longitude: home.longitude, radius: 200))
      try await bob.wait("the raw channel revoked", until: isRevoked(try ChannelName.of(user: annaID)))
      let channel = try #require(ChannelName("seen_approximate:\(annaID.rawValue)"))
      #expect(try await bob.subscribe(channel))

      let time = GeofenceTests.now() - 60_000
      let outside = try makeFixes(count: 1, start: time)
      let inside = try LocationFix(timestamp: time + 1_000, latitude: 50.4001, longitude: 30.4001)
      _ = try await anna.client.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: outside))
      _ = try await anna.client.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: [inside]))
      try await bob.wait("both batches on node B") { _ in try await bob.locations(on: channel).count == 2 }
      let seen = try await bob.locations(on: channel)
      let cell = try GeohashCell(outside[0].coordinate, bits: 30).center
      #expect(seen[0].fixes.map(\.latitude) == [cell.latitude] && seen[0].fixes.map(\.longitude) == [cell.longitude])
      #expect(seen[1].fixes.isEmpty && seen[1].privateZoneAt == inside.timestamp)
      #expect(try await bob.locations(on: try ChannelName.of(user: annaID)).isEmpty)

      // A zone that stores nothing, drawn on node B, holds for a fix posted to node A as soon as node A heard of it
      // (its zones were read there a moment ago: the change reached its ingest path through the live signal, within
      // the 5 s its cache of her zones would otherwise keep them).
      let annaOnA = await LiveWatcher(server: a, token: anna.session.token)
      defer { Task { await annaOnA.stop() } }
      #expect(try await annaOnA.subscribe(try ChannelName.of(user: annaID)))
      let away = Coordinate(uncheckedLatitude: 50.30, longitude: 30.30)
      let annaOnB = try b.client(token: anna.session.token)
      _ = try await annaOnB.send(
        API.createPrivacyZone,
        body: PrivacyZoneBody(
          name: "Kim's", latitude: away.latitude, longitude: away.longitude, radius: 200, store: false))
      // The acknowledgement: a fix posted to node B after the zone reaches Anna's socket on node A. Node A hears the
      // nodes' signals in the order they were committed and acts on each before the next: the zone's signal, then the
      // commit of this fix, which it fans out.
      let marker = try LocationFix(timestamp: time + 1_500, latitude: 50.45, longitude: 30.52)
      _ = try await annaOnB.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: [marker]))
      try await annaOnA.wait("the fix posted to node B after the zone, on node A") { _ in
        try await annaOnA.locations(on: try ChannelName.of(user: annaID)).contains {
          $0.fixes.map(\.timestamp) == [marker.timestamp]
        }
      }
      let atKims = try LocationFix(timestamp: time + 2_000, latitude: away.latitude, longitude: away.longitude)
      let receipt = try await anna.client.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: [atKims]))
      #expect(receipt.withheld == 1 && receipt.accepted == 0)
    }
  }

  @Test func aFenceDrawnOnNodeBIsInNodeAsIndexAsSoonAsNodeAHeardOfIt() async throws {
    try await Self.withTwoNodes { a, b in
      let (anna, _, _) = try await Self.people(on: a)
      let annaID = anna.session.userId
      let now = { Timestamp.milliseconds(Date()) }
      // Node A reads Anna's fences (none) and would keep that for its index's lifetime of a minute.
      #expect(try await a.app.geofenceIndex.fences(owners: [annaID], now: now()).isEmpty)
      let annaOnB = try b.client(token: anna.session.token)
      let fence = try await annaOnB.send(
        API.createGeofence, body: NewGeofence(name: "Home", shape: .circle(center: GeofenceTests.home, radius: 100)))
      // The acknowledgement: a fix posted to node B after the fence reaches Anna's socket on node A, which acts on the
      // nodes' signals in the order they were committed.
      let annaOnA = await LiveWatcher(server: a, token: anna.session.token)
      defer { Task { await annaOnA.stop() } }
      #expect(try await annaOnA.subscribe(try ChannelName.of(user: annaID)))
      let marker = try LocationFix(timestamp: GeofenceTests.now() - 1_000, latitude: 50.45, longitude: 30.52)
      _ = try await annaOnB.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: [marker]))
      try await annaOnA.wait("the fix posted to node B after the fence, on node A") { _ in
        try await annaOnA.locations(on: try ChannelName.of(user: annaID)).contains {
          $0.fixes.map(\.timestamp) == [marker.timestamp]
        }
      }
      #expect(try await a.app.geofenceIndex.fences(owners: [annaID], now: now()).map(\.id) == [fence.id])
      // Deleted on node B: gone from node A's index too, once heard.
      _ = try await annaOnB.send(API.deleteGeofence, parameters: GeofenceRef(id: fence.id))
      let second = try LocationFix(timestamp: marker.timestamp + 500, latitude: 50.45, longitude: 30.52)
      _ = try await annaOnB.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: [second]))
      try await annaOnA.wait("the fix posted to node B after the deletion, on node A") { _ in
        try await annaOnA.locations(on: try ChannelName.of(user: annaID)).contains {
          $0.fixes.map(\.timestamp) == [second.timestamp]
        }
      }
      #expect(try await a.app.geofenceIndex.fences(owners: [annaID], now: now()).isEmpty)
    }
  }

  @Test func aUserDeletedByAnOperatorOnNodeBLeavesNodeAsIndexAsSoonAsNodeAHeardOfIt() async throws {
    try await Self.withTwoNodes { a, b in
      let (anna, bob, _) = try await Self.people(on: a)
      let annaID = anna.session.userId
      let now = { Timestamp.milliseconds(Date()) }
      let fence = try await anna.client.send(
        API.createGeofence, body: NewGeofence(name: "Home", shape: .circle(center: GeofenceTests.home, radius: 100)))
      #expect(try await a.app.geofenceIndex.fences(owners: [annaID], now: now()).map(\.id) == [fence.id])
      let admin = try b.client(token: ServerConfiguration.developmentAdminToken)
      _ = try await admin.send(API.adminDeleteUser, parameters: AdminUserDeletionQuery(user: annaID.rawValue))
      // The acknowledgement: Bob's fix posted to node B after the deletion reaches his socket on node A, which acts on
      // the nodes' signals in the order they were committed.
      let bobOnA = await LiveWatcher(server: a, token: bob.token)
      defer { Task { await bobOnA.stop() } }
      let bobChannel = try ChannelName.of(user: bob.userId)
      #expect(try await bobOnA.subscribe(bobChannel))
      let marker = try LocationFix(timestamp: GeofenceTests.now() - 1_000, latitude: 50.45, longitude: 30.52)
      _ = try await b.client(token: bob.token).send(
        API.postFixes, body: FixBatch(deviceId: "bob-phone", fixes: [marker]))
      try await bobOnA.wait("Bob's fix posted to node B after the deletion, on node A") { _ in
        try await bobOnA.locations(on: bobChannel).contains { $0.fixes.map(\.timestamp) == [marker.timestamp] }
      }
      // Without the signal node A would keep Anna's fence for its index's lifetime of a minute.
      #expect(try await a.app.geofenceIndex.fences(owners: [annaID], now: now()).isEmpty)
    }
  }

  @Test func pausingOnNodeBEndsTheLiveViewOnBothNodesAndNodeAFansOutNothingMore() async throws {
    try await Self.withTwoNodes { a, b in
      let (anna, bobSession, _) = try await Self.people(on: a)
      let (dave, _) = try await a.signUp("dave")
      let friends = try #require(try await anna.client.send(API.groups).groups.first { $0.kind == .friends })
      _ = try await anna.client.send(
        API.addMember, parameters: GroupMemberRef(groupID: friends.id, userID: dave.userId))
      let annaChannel = try ChannelName.of(user: anna.session.userId)
      let bobOnB = await LiveWatcher(server: b, token: bobSession.token)
      let daveOnA = await LiveWatcher(server: a, token: dave.token)
      defer {
        Task {
          await bobOnB.stop()
          await daveOnA.stop()
        }
      }
      #expect(try await bobOnB.subscribe(annaChannel))
      #expect(try await daveOnA.subscribe(annaChannel))
      let before = try makeFixes(count: 1)
      _ = try await anna.client.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: before))
      for watcher in [bobOnB, daveOnA] {
        try await watcher.wait("the fix before the pause") { _ in
          try await watcher.locations(on: annaChannel).count == 1
        }
      }

      // Anna pauses through node B: both subscriptions end as revoked, on B and on A.
      let annaOnB = try b.client(token: anna.session.token)
      _ = try await annaOnB.send(API.pauseSharing)
      try await bobOnB.wait("revocation on node B", until: isRevoked(annaChannel))
      try await daveOnA.wait("revocation on node A", until: isRevoked(annaChannel))
      #expect(try await !bobOnB.subscribe(annaChannel))
      #expect(try await !daveOnA.subscribe(annaChannel))

      // The paused fix reaches nobody but Anna herself; after resuming, the next fix arrives and the paused one
      // never does. A node decides who sees a fix when it fans it out (milliseconds after the commit), so the test
      // resumes once both nodes have fanned the paused fix out — to Anna's own sockets on each node.
      let selfOnA = await LiveWatcher(server: a, token: anna.session.token)
      let selfOnB = await LiveWatcher(server: b, token: anna.session.token)
      defer {
        Task {
          await selfOnA.stop()
          await selfOnB.stop()
        }
      }
      #expect(try await selfOnA.subscribe(annaChannel))
      #expect(try await selfOnB.subscribe(annaChannel))
      let paused = try makeFixes(count: 1, start: 1_700_000_100_000)
      _ = try await anna.client.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: paused))
      for watcher in [selfOnA, selfOnB] {
        try await watcher.wait("the paused fix, fanned out to its owner") { _ in
          try await watcher.locations(on: annaChannel).contains { $0.fixes.map(\.timestamp) == paused.map(\.timestamp) }
        }
      }
      _ = try await annaOnB.send(API.resumeSharing)
      #expect(try await bobOnB.subscribe(annaChannel))
      #expect(try await daveOnA.subscribe(annaChannel))
      let after = try makeFixes(count: 1, start: 1_700_000_200_000)
      _ = try await anna.client.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: after))
      for watcher in [bobOnB, daveOnA] {
        try await watcher.wait("the fix after resuming") { _ in
          try await watcher.locations(on: annaChannel).count == 2
        }
        let seen = try await watcher.locations(on: annaChannel).map { $0.fixes.map(\.timestamp) }
        #expect(seen == [before.map(\.timestamp), after.map(\.timestamp)])
      }
    }
  }

  @Test func aClientThatLeavesNodeAResumesOnNodeBWithExactlyTheEventsItMissed() async throws {
    try await Self.withTwoNodes { a, b in
      let (anna, bobSession, _) = try await Self.people(on: a)
      let annaChannel = try ChannelName.of(user: anna.session.userId)
      func upload(_ index: Int) async throws -> [Int64] {
        let fixes = try makeFixes(count: 2, start: 1_700_000_000_000 + Int64(index) * 100_000)
        _ = try await anna.client.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: fixes))
        return fixes.map(\.timestamp)
      }
      // A second viewer on node B tells when node B has read the log as far as node A wrote it.
      let witness = await LiveWatcher(server: b, token: bobSession.token)
      let bobOnA = await LiveWatcher(server: a, token: bobSession.token)
      defer {
        Task {
          await witness.stop()
          await bobOnA.stop()
        }
      }
      #expect(try await witness.subscribe(annaChannel))
      #expect(try await bobOnA.subscribe(annaChannel))
      let seenOnA = [try await upload(0), try await upload(1)]
      try await bobOnA.wait("two events on node A") { _ in try await bobOnA.locations(on: annaChannel).count == 2 }
      let position = try #require(await bobOnA.client.position(of: annaChannel))
      await bobOnA.stop()

      // Missed while away: three uploads to node A.
      let missed = [try await upload(2), try await upload(3), try await upload(4)]
      try await witness.wait("node B read the missed events") { _ in
        try await witness.locations(on: annaChannel).count == 5
      }

      // Bob resumes on node B from his last offset: exactly the three missed events, no reload, then live ones.
      let bobOnB = await LiveWatcher(server: b, token: bobSession.token)
      defer { Task { await bobOnB.stop() } }
      await bobOnB.client.subscribe(annaChannel, resumingFrom: position)
      try await bobOnB.wait("the replay on node B") { _ in try await bobOnB.locations(on: annaChannel).count == 3 }
      let live = try await upload(5)
      try await bobOnB.wait("the live event after the replay") { _ in
        try await bobOnB.locations(on: annaChannel).count == 4
      }
      let seenOnB = try await bobOnB.locations(on: annaChannel).map { $0.fixes.map(\.timestamp) }
      #expect(seenOnB == missed + [live])
      #expect(seenOnA == (try await witness.locations(on: annaChannel)).prefix(2).map { $0.fixes.map(\.timestamp) })
      let reloads = await bobOnB.items.filter { if case .reload = $0 { return true } else { return false } }
      #expect(reloads.isEmpty, "node B could not replay: \(reloads)")
    }
  }

  @Test func killDashNineOfNodeAMidUploadLosesNothingAndTheTrackerFinishesThroughNodeBExactlyOnce() async throws {
    let database = try await PostgresTestDatabase.create()
    defer { Task { await database.drop() } }
    let nodeA = try await ServerProcess.start(database: database.url)
    let nodeB = try await ServerProcess.start(database: database.url)
    defer {
      nodeA.child.terminate()
      nodeB.child.terminate()
    }
    let tracker = try #require(builtExecutable("meridian-tracker"))
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("two-nodes-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: directory) }
    let state = try await TrackerEndToEndTests.login(nodeA.url, email: "walker@example.com", directory: directory)
    let transport = AsyncHTTPClientTransport()
    defer { Task { try? await transport.shutdown() } }
    let walker = try await nodeB.client(transport: transport).send(
      API.login, body: EmailCredentials(email: "walker@example.com", password: "correct horse"))
    let history = try nodeB.client(transport: transport, token: walker.token)

    // The 33-minute walk replayed 400 times faster (5 s), one fix per upload, given both nodes, A first.
    let run = try ChildProcess(
      tracker,
      [
        "run", "--state", state.path, "--server", nodeA.url, "--server", nodeB.url, "--gpx",
        TrackerEndToEndTests.track.path, "--keep-times", "--batch-size", "1", "--speed", "400",
      ])
    var storedBeforeKill: [LocationFix] = []
    for _ in 0..<500 where storedBeforeKill.count < 20 {
      storedBeforeKill = try await TrackerUploadTests.serverHistory(history)
      try await Task.sleep(for: .milliseconds(10))
    }
    nodeA.child.terminate(with: SIGKILL)
    _ = await nodeA.child.wait()
    #expect(storedBeforeKill.count >= 20, "the tracker didn't upload to node A: \(run.output.value)")

    // 5 s of walk after the switch; the bound is for a machine busy with other work, and says what the tracker did.
    let status: Int32
    do {
      status = try await withTimeout(.seconds(120)) { await run.wait() }
    } catch {
      Issue.record("the tracker had not finished 120 s after node A's end: \(run.output.value)")
      run.terminate()
      throw error
    }
    #expect(status == 0, "\(run.output.value)")
    let expected = try FixSource.read(TrackerEndToEndTests.track, format: .gpx).map(\.timestamp)
    let stored = try await TrackerUploadTests.serverHistory(history)
    // Every fix acknowledged by node A before it died is there, and the whole walk is stored once per device and
    // time: the rest went through node B, and nothing re-sent across the switch was stored twice.
    #expect(Set(storedBeforeKill.map(\.timestamp)).isSubset(of: stored.map(\.timestamp)))
    let perFix = Dictionary(grouping: stored) { "\($0.deviceID?.rawValue ?? "")@\($0.timestamp)" }
    #expect(perFix.values.filter { $0.count > 1 }.isEmpty)
    #expect(stored.map(\.timestamp) == expected, "\(stored.count) stored of \(expected.count)")
    // The kill came mid-upload: node A had stored part of the walk, not all of it.
    #expect(storedBeforeKill.count < expected.count)
  }
}

/// A `meridian-server` process (the built executable) on an OS-chosen port.
struct ServerProcess {
  let child: ChildProcess
  let port: Int
  var url: String { "http://127.0.0.1:\(port)" }

  /// Starts the server on `database` (with `environment` added to this process's) and waits for the port it logs.
  static func start(database: String, environment: [String: String] = [:]) async throws -> ServerProcess {
    let executable = try #require(builtExecutable("meridian-server"), "build meridian-server first")
    let child = try ChildProcess(
      executable, ["--port", "0", "--database", database, "--bcrypt-cost", "4", "--log-level", "notice"],
      environment: environment.isEmpty
        ? nil : ProcessInfo.processInfo.environment.merging(environment) { _, added in added })
    for _ in 0..<400 {
      if let match = child.output.value.firstMatch(of: /port=(\d+)/), let port = Int(match.1) {
        return ServerProcess(child: child, port: port)
      }
      if !child.isRunning { break }
      try await Task.sleep(for: .milliseconds(50))
    }
    child.terminate()
    throw ServerProcessError(message: "meridian-server logged no port: \(child.output.value)")
  }

  /// A client of this node.
  func client(transport: AsyncHTTPClientTransport, token: String? = nil) throws -> NetworkClient {
    var configuration = NetworkClient.Configuration()
    configuration.retryBudgets = nil
    return try NetworkClient(
      baseURL: try #require(URL(string: url)), transport: transport,
      credentials: BearerTokenCredentials(token: token) { _ in nil }, configuration: configuration)
  }
}

struct ServerProcessError: Error, CustomStringConvertible {
  let message: String
  var description: String { message }
}
