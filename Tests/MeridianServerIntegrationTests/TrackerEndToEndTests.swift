import DomainKit
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import MeridianAPI
import MeridianStoreTesting
import MeridianTestSupport
import MeridianTracker
import NetworkingKit
import NetworkingKitAsyncHTTPClient
import Testing

private let trackerExecutable = builtExecutable("meridian-tracker")

/// The real `meridian-tracker` binary against a real server: replays, outages, `kill -9`, watching friends.
@Suite("The meridian-tracker executable", .serialized)
struct TrackerEndToEndTests {
  static let track = TrackerUploadTests.exampleTrack

  /// Signs the tracker in through its own `login` command; returns the state directory.
  static func login(_ server: String, email: String, directory: URL) async throws -> URL {
    let executable = try #require(trackerExecutable)
    let state = directory.appendingPathComponent("tracker-\(email)")
    let arguments = [
      "login", "--state", state.path, "--server", server, "--email", email, "--password-stdin", "--create",
    ]
    let login = try await ChildProcess.run(executable, arguments, input: "correct horse\n")
    #expect(login.status == 0, "\(login.output)")
    let mode =
      try FileManager.default.attributesOfItem(atPath: state.appendingPathComponent("session.json").path)[
        .posixPermissions] as? Int
    #expect(mode == 0o600)
    return state
  }

  static func history(_ server: TestServer, email: String) async throws -> [Int64] {
    let session = try await server.client().send(
      API.login, body: EmailCredentials(email: email, password: "correct horse"))
    return try await TrackerUploadTests.serverHistory(try server.client(token: session.token)).map(\.timestamp)
  }

  @Test
  func killDashNineDuringUploadLosesAndDoublesNothing() async throws {
    let executable = try #require(trackerExecutable)
    try await TestServer.with { server in
      let state = try await Self.login(
        "http://127.0.0.1:\(server.port)", email: "walker@example.com", directory: server.directory)
      let run = ["run", "--state", state.path, "--gpx", Self.track.path, "--keep-times", "--batch-size", "1"]
      // Paced (the 33-minute walk in 100 s), so that the kill surely lands while the walk is still being replayed
      // and uploaded, however loaded the machine.
      let first = try ChildProcess(executable, run + ["--speed", "20"])
      // Kill it as soon as the server holds some of the fixes, mid-upload.
      var stored = 0
      for _ in 0..<400 {
        stored = try await Self.history(server, email: "walker@example.com").count
        if stored > 0 { break }
        try await Task.sleep(for: .milliseconds(10))
      }
      first.terminate()
      _ = await first.wait()
      let expected = try FixSource.read(Self.track, format: .gpx).map(\.timestamp)
      #expect(stored > 0)

      // A restart uploads the rest: every fix exactly once.
      let second = try await ChildProcess.run(executable, run + ["--speed", "0"])
      #expect(second.status == 0, "\(second.output)")
      // The restart found fixes still queued: the kill came mid-upload, not after it.
      let uploaded = second.output.firstMatch(of: /uploaded (\d+)/).flatMap { Int($0.1) }
      #expect((uploaded ?? 0) > 0, "\(second.output)")
      #expect(try await Self.history(server, email: "walker@example.com") == expected)
      let status = try await ChildProcess.run(executable, ["status", "--state", state.path, "--json"])
      let report = try JSONSerialization.jsonObject(with: Data(status.output.utf8)) as? [String: Any]
      #expect(report?["queued"] as? Int == 0)
      #expect(report?["history"] as? Int == expected.count)
      let history = state.appendingPathComponent("history.sqlite").path
      #expect(try FileManager.default.attributesOfItem(atPath: history)[.posixPermissions] as? Int == 0o600)
    }
  }

  @Test
  func aProxyThatFailsAndLosesAnswersStillGetsEveryFixExactlyOnce() async throws {
    let executable = try #require(trackerExecutable)
    try await TestServer.with { server in
      let state = try await Self.login(
        "http://127.0.0.1:\(server.port)", email: "walker@example.com", directory: server.directory)
      // From now on the tracker talks to the server through the proxy.
      let proxy = try await FlakyProxy.start(upstream: server.port)
      let directory = TrackerStateDirectory(path: state.path)
      var session = try #require(try directory.loadSession())
      session.server = "http://127.0.0.1:\(proxy.port)"
      try directory.save(session)
      let run = try await ChildProcess.run(
        executable,
        ["run", "--state", state.path, "--gpx", Self.track.path, "--speed", "0", "--keep-times", "--batch-size", "100"])
      #expect(run.status == 0, "\(run.output)")
      let expected = try FixSource.read(Self.track, format: .gpx).map(\.timestamp)
      #expect(try await Self.history(server, email: "walker@example.com") == expected)
      let counts = await proxy.counts
      #expect(counts.refused > 0 && counts.answersLost > 0, "\(counts)")
      try await proxy.stop()
    }
  }

  @Test
  func aFriendsWatchSeesTheMovesAndABlacklistedUsersDoesNot() async throws {
    let executable = try #require(trackerExecutable)
    try await TestServer.with { server in
      let url = "http://127.0.0.1:\(server.port)"
      let (anna, annaClient) = try await server.signUp("anna")
      let bobState = try await Self.login(url, email: "bob@example.com", directory: server.directory)
      let carolState = try await Self.login(url, email: "carol@example.com", directory: server.directory)
      let bob = try #require(try TrackerStateDirectory(path: bobState.path).loadSession())
      let carol = try #require(try TrackerStateDirectory(path: carolState.path).loadSession())
      let groups = try await annaClient.send(API.groups).groups
      let friends = try #require(groups.first { $0.kind == .friends })
      let blacklist = try #require(groups.first { $0.kind == .blacklist })
      _ = try await annaClient.send(API.addMember, parameters: GroupMemberRef(groupID: friends.id, userID: bob.userId))
      _ = try await annaClient.send(
        API.addMember, parameters: GroupMemberRef(groupID: friends.id, userID: carol.userId))
      _ = try await annaClient.send(
        API.addMember, parameters: GroupMemberRef(groupID: blacklist.id, userID: carol.userId))

      let bobWatch = try ChildProcess(executable, ["watch", "--state", bobState.path, "--json", "--count", "2"])
      let carolWatch = try ChildProcess(executable, ["watch", "--state", carolState.path, "--json"])
      // Both say whom they watch before anything moves, and Bob when Anna's updates reach him.
      for watch in [bobWatch, carolWatch] {
        for _ in 0..<500 where !watch.output.value.contains("watching") {
          try await Task.sleep(for: .milliseconds(10))
        }
      }
      for _ in 0..<2000 where !bobWatch.output.value.contains(#"{"subscribed":"\#(anna.userId.rawValue)"}"#) {
        try await Task.sleep(for: .milliseconds(10))
      }
      try await Task.sleep(for: .milliseconds(100))  // Carol's refused subscription has no confirmation to wait for
      let moves = try makeFixes(count: 2)
      for fix in moves {
        _ = try await annaClient.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: [fix]))
      }
      let bobStatus = await bobWatch.wait()
      #expect(bobStatus == 0, "\(bobWatch.output.value)")
      let lines = bobWatch.output.value.split(separator: "\n").compactMap { line in
        try? JSONDecoder().decode(LiveLocation.self, from: Data(line.utf8))
      }
      #expect(lines.map(\.userId) == [anna.userId, anna.userId])
      #expect(lines.flatMap(\.fixes).map(\.timestamp) == moves.map(\.timestamp))

      carolWatch.terminate(with: SIGTERM)
      #expect(await carolWatch.wait() == 143, "\(carolWatch.output.value)")
      #expect(carolWatch.output.value.contains(#""watching":[]"#), "\(carolWatch.output.value)")
      #expect(!carolWatch.output.value.contains(anna.userId.rawValue), "\(carolWatch.output.value)")
    }
  }
}

/// An HTTP proxy in front of a server that refuses every third request with 503 and, for every third request it
/// forwards, throws the server's answer away and answers 502: the server stored the batch, the client never heard.
actor FlakyProxy {
  struct Counts: Sendable, CustomStringConvertible {
    var forwarded = 0
    var refused = 0
    var answersLost = 0
    var description: String { "forwarded \(forwarded), refused \(refused), answers lost \(answersLost)" }
  }

  private(set) var counts = Counts()
  private var requests = 0
  nonisolated let port: Int
  private let app: LocalApp
  private let transport: AsyncHTTPClientTransport

  private init(app: LocalApp, transport: AsyncHTTPClientTransport) {
    self.port = app.port
    self.app = app
    self.transport = transport
  }

  enum Action { case refuse, loseAnswer, forward }

  func next() -> Action {
    requests += 1
    switch requests % 3 {
    case 1:
      counts.refused += 1
      return .refuse
    case 2 where (counts.forwarded + counts.answersLost) % 3 == 2:
      counts.answersLost += 1
      return .loseAnswer
    default:
      counts.forwarded += 1
      return .forward
    }
  }

  static func start(upstream: Int) async throws -> FlakyProxy {
    let transport = AsyncHTTPClientTransport()
    let holder = ProxyHolder()
    let router = Router()
    router.on("**", method: .post) { request, _ in try await holder.handle(request, upstream: upstream, transport) }
    router.on("**", method: .get) { request, _ in try await holder.handle(request, upstream: upstream, transport) }
    var logger = Logger(label: "flaky-proxy")
    logger.logLevel = .critical
    let proxy = FlakyProxy(app: try await LocalApp.start(router: router, logger: logger), transport: transport)
    await holder.set(proxy)
    return proxy
  }

  func stop() async throws {
    await app.stop()
    try await transport.shutdown()
  }
}

/// Lets the router's closures reach the proxy actor created after them.
actor ProxyHolder {
  private var proxy: FlakyProxy?
  func set(_ proxy: FlakyProxy) { self.proxy = proxy }

  func handle(_ request: Request, upstream: Int, _ transport: AsyncHTTPClientTransport) async throws -> Response {
    guard let proxy else { return Response(status: .serviceUnavailable) }
    let action = await proxy.next()
    if action == .refuse {
      return Response(status: .serviceUnavailable, headers: [.retryAfter: "0"])
    }
    let body = Data(try await request.body.collect(upTo: 16 << 20).readableBytesView)
    var head = HTTPRequest(
      method: request.method, scheme: "http", authority: "127.0.0.1:\(upstream)", path: request.uri.description)
    for field in request.headers where field.name != .contentLength {
      head.headerFields.append(field)
    }
    let answer = try await transport.send(
      head, body: body.isEmpty ? nil : body, options: TransportOptions(timeout: .seconds(20), maxResponseBytes: 1 << 22)
    )
    if action == .loseAnswer { return Response(status: .badGateway) }
    var headers = HTTPFields()
    for field in answer.head.headerFields where field.name != .contentLength && field.name != .transferEncoding {
      headers.append(field)
    }
    return Response(
      status: answer.head.status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: answer.body)))
  }
}
