import DomainKit
import Foundation
import HTTPTypes
import MeridianAPI
import MeridianServer
import MeridianStoreTesting
import MeridianTestSupport
import NetworkingKit
import RealtimeKit
import Synchronization
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The official Python Socket.IO client (`python-socketio`, PyPI) as a person's live map: signs in with a token
/// (`listen user`, or the `CONNECT` auth object), prints every event it gets as a JSON line, and reconnects on its
/// own after a lost connection (re-sending `listen user`). Each line also goes to a named pipe, the test's
/// acknowledgement of what happened (``ClientLines``).
/// Arguments: the server's URL, the token, `polling` (polling, then the upgrade), `polling-only` or `websocket`
/// (WebSocket only), `listen` or `auth`, the pipe's path.
let socketIOClientScript = #"""
  import json, logging, sys, threading, socketio

  url, token, transport, mode, pipe = sys.argv[1:6]
  transports = {"polling": ["polling", "websocket"], "polling-only": ["polling"]}.get(transport, ["websocket"])
  acknowledgements = open(pipe, "w", buffering=1)
  saying = threading.Lock()

  def say(**line):
      with saying:
          print(json.dumps(line), flush=True)
          acknowledgements.write(json.dumps(line) + "\n")

  # The clients' own log on standard error (the test prints it when a wait gives up).
  logging.basicConfig(level=logging.INFO, format="%(relativeCreated)d %(threadName)s %(name)s: %(message)s")
  sio = socketio.Client(
      reconnection=True, reconnection_delay=0.2, reconnection_delay_max=1,
      logger=logging.getLogger("socketio"), engineio_logger=logging.getLogger("engineio"))

  @sio.event
  def connect():
      say(event="connected", transport=sio.transport())
      if mode == "listen":
          sio.emit("listen user", token, callback=lambda answer: say(event="listening", answer=answer))
      else:
          say(event="listening", answer={"ok": True})

  @sio.on("message")
  def message(data):
      say(event="message", data=data)

  @sio.event
  def connect_error(data):
      say(event="refused", data=data)

  @sio.on("unauthorized")
  def unauthorized(data):
      say(event="unauthorized", data=data)

  @sio.event
  def disconnect(reason=None):
      say(event="disconnected", reason=str(reason))

  say(event="started")
  try:
      sio.connect(url, transports=transports, auth={"token": token} if mode == "auth" else None, wait_timeout=20)
  except socketio.exceptions.ConnectionError as error:
      say(event="connect_error", message=str(error))
      sys.exit(0)
  sio.wait()
  """#

/// One line the client printed.
struct SocketIOClientLine: Decodable {
  var event: String
  var transport: String?
  var data: JSONValue?
  var answer: JSONValue?
  var message: String?
}

/// The lines a child process writes to a named pipe, as it writes them: a thread of its own blocks reading the pipe
/// and wakes whoever waits for a line, so that a test waits for the child's acknowledgement without polling or
/// sleeping. The pipe's end (the child exited) ends every wait.
final class ClientLines: Sendable {
  private struct Waiter {
    let until: @Sendable ([String]) -> Bool
    let continuation: CheckedContinuation<Bool, Never>
  }

  private struct State {
    var lines: [String] = []
    var ended = false
    var waiters: [UUID: Waiter] = [:]
  }

  /// The pipe's path, for the child to open for writing.
  let path: String
  private let state = Mutex(State())

  /// Makes the pipe and starts reading it (the read waits for the child to open it).
  init() throws {
    path = FileManager.default.temporaryDirectory.appendingPathComponent("lines-\(UUID().uuidString)").path
    guard mkfifo(path, 0o600) == 0 else {
      throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
    }
    Thread.detachNewThread { [self] in readUntilEnd() }
  }

  /// The lines so far.
  var lines: [String] { state.withLock { $0.lines } }

  private func readUntilEnd() {
    let descriptor = open(path, O_RDONLY)
    var pending: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while descriptor >= 0 {
      let count = read(descriptor, &buffer, buffer.count)
      if count < 0 && errno == EINTR { continue }
      guard count > 0 else { break }
      pending += buffer[..<count]
      while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
        let line = String(decoding: pending[..<newline], as: UTF8.self)
        pending.removeSubrange(...newline)
        settle { $0.lines.append(line) }
      }
    }
    if descriptor >= 0 { close(descriptor) }
    settle { $0.ended = true }
  }

  /// Changes the state, then ends the waits it settles: those whose condition holds (true), or all once the pipe
  /// ended (false for those whose condition does not hold).
  private func settle(_ change: (inout State) -> Void) {
    let settled = state.withLock { state -> [(CheckedContinuation<Bool, Never>, Bool)] in
      change(&state)
      var settled: [(CheckedContinuation<Bool, Never>, Bool)] = []
      for (id, waiter) in state.waiters {
        let holds = waiter.until(state.lines)
        guard holds || state.ended else { continue }
        state.waiters[id] = nil
        settled.append((waiter.continuation, holds))
      }
      return settled
    }
    for (continuation, holds) in settled { continuation.resume(returning: holds) }
  }

  /// Waits until the lines satisfy `condition`: true once they do, false if the pipe ends first or after `timeout`.
  func wait(timeout: Duration, until condition: @escaping @Sendable ([String]) -> Bool) async -> Bool {
    let id = UUID()
    return await withTaskGroup(of: Bool.self) { group in
      group.addTask {
        await withCheckedContinuation { continuation in
          self.state.withLock { $0.waiters[id] = Waiter(until: condition, continuation: continuation) }
          self.settle { _ in }
        }
      }
      group.addTask {
        // A deadline for a client that never answers, not a pause: the wait ends with the line that satisfies it.
        try? await Task.sleep(for: timeout)
        let expired = self.state.withLock { $0.waiters.removeValue(forKey: id) }
        expired?.continuation.resume(returning: false)
        return false
      }
      let satisfied = await group.next() ?? false
      group.cancelAll()
      return satisfied
    }
  }

  /// Ends a read still waiting for a child that never opened the pipe, and removes the pipe.
  func remove() {
    let descriptor = open(path, O_WRONLY | O_NONBLOCK)
    if descriptor >= 0 { close(descriptor) }
    unlink(path)
  }
}

/// An official Socket.IO client the tests drive as a person's live map.
enum SocketIOClientKind: String, CaseIterable, Sendable {
  /// `python-socketio` (PyPI) in the `python3` on the PATH: ``socketIOClientScript``.
  case python
  /// `socket.io-client` (npm), its browser build in headless Chromium: ``socketIOBrowserClientScript``.
  case javascript

  /// Where `Tools/socketio-client-js` puts socket.io-client's browser build (`MERIDIAN_SOCKETIO_JS` or its default).
  static var javaScriptLibrary: String {
    ProcessInfo.processInfo.environment["MERIDIAN_SOCKETIO_JS"]
      ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(
        ".cache/meridian/socket.io-4.8.1.min.js"
      )
      .path
  }
}

/// At most four headless browsers at once: each takes about a core for a second to start, and the test process runs
/// up to 16 tests at once on two cores.
actor BrowserSlots {
  static let shared = BrowserSlots(limit: 4)
  private let limit: Int
  private var taken = 0
  private var waiting: [CheckedContinuation<Void, Never>] = []

  init(limit: Int) { self.limit = limit }

  /// Returns once a slot is free, taking it.
  func take() async {
    guard taken >= limit else {
      taken += 1
      return
    }
    await withCheckedContinuation { waiting.append($0) }
  }

  /// Gives a slot back (to the longest waiting, if any).
  func give() {
    if waiting.isEmpty { taken -= 1 } else { waiting.removeFirst().resume() }
  }
}

/// A running Socket.IO client of one of the ``SocketIOClientKind``s.
struct SocketIOClient {
  let process: ChildProcess
  let script: URL
  let said: ClientLines
  let kind: SocketIOClientKind

  /// Starts the client and waits until it says it started (python-socketio: at once; the browser: with the library
  /// loaded into a page of the server's origin).
  static func start(
    _ server: TestServer, token: String, transport: String, mode: String, client kind: SocketIOClientKind = .python
  ) async throws -> SocketIOClient {
    let library = SocketIOClientKind.javaScriptLibrary
    if kind == .javascript && !FileManager.default.fileExists(atPath: library) {
      Issue.record("no socket.io-client at \(library): run Tools/socketio-client-js (it fetches it from PyPI)")
      throw CancellationError()
    }
    let (source, python, extra) =
      switch kind {
      case .python: (socketIOClientScript, "python3", [String]())
      // Debian's python3, which has python3-selenium, before any other on the PATH (as Tests/browser/run chooses).
      case .javascript:
        (
          socketIOBrowserClientScript,
          FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") ? "/usr/bin/python3" : "python3", [library]
        )
      }
    let script = FileManager.default.temporaryDirectory.appendingPathComponent("socketio-client-\(UUID()).py")
    try source.write(to: script, atomically: true, encoding: .utf8)
    let said = try ClientLines()
    if kind == .javascript { await BrowserSlots.shared.take() }
    let process: ChildProcess
    do {
      process = try ChildProcess(
        URL(fileURLWithPath: "/usr/bin/env"),
        [python, script.path, "http://127.0.0.1:\(server.port)", token, transport, mode, said.path] + extra)
    } catch {
      if kind == .javascript { await BrowserSlots.shared.give() }
      said.remove()
      try? FileManager.default.removeItem(at: script)
      throw error
    }
    let client = SocketIOClient(process: process, script: script, said: said, kind: kind)
    do {
      try await client.wait(for: "started")
    } catch {
      await client.stop()
      throw error
    }
    return client
  }

  var lines: [SocketIOClientLine] { Self.decode(said.lines) }

  static func decode(_ lines: [String]) -> [SocketIOClientLine] {
    lines.compactMap { try? JSONDecoder().decode(SocketIOClientLine.self, from: Data($0.utf8)) }
  }

  /// The positions received, by whose.
  var messages: [LiveLocation] { lines.compactMap { try? $0.data?.decode(as: LiveLocation.self) } }

  /// Waits until the client said `count` lines of `event` (up to 120 s: a loaded machine is slow).
  func wait(for event: String, count: Int = 1) async throws {
    let said = await said.wait(timeout: .seconds(120)) { lines in
      Self.decode(lines).filter { $0.event == event }.count >= count
    }
    guard said else {
      let why = process.isRunning ? "not within 120 s" : "the client ended"
      Issue.record(
        "\(count) × \(event) from the Socket.IO client: \(why); it printed: \(process.output.value.suffix(8_000))")
      throw CancellationError()
    }
  }

  /// Ends the client (SIGTERM; SIGKILL when it still runs 20 s later, a browser stuck in its driver) and removes its
  /// files.
  func stop() async {
    process.terminate(with: SIGTERM)
    if (try? await waitUntil("the Socket.IO client's end", timeout: .seconds(20)) { !process.isRunning }) == nil {
      process.terminate()
    }
    _ = await process.wait()
    if kind == .javascript { await BrowserSlots.shared.give() }
    said.remove()
    try? FileManager.default.removeItem(at: script)
  }
}

@Suite("Socket.IO clients (python-socketio, and socket.io-client in Chromium)")
struct SocketIOTests {
  /// Runs `body` with a server of `engine`; `restart` gives a new server on the same port and database.
  static func withServer(
    _ engine: String,
    _ body: (_ server: TestServer, _ restart: (TestServer) async throws -> TestServer) async throws -> Void
  ) async throws {
    let database = engine == "postgres" ? try await PostgresTestDatabase.create() : nil
    let configure: (inout ServerConfiguration) -> Void = { configuration in
      if let database { configuration.database = .postgres(url: database.url) }
    }
    var current = try await TestServer.start(configure)
    do {
      try await body(current) { stopped in
        // Free at once: the old server's listener is closed when `stop` returns, and the port is bound with
        // SO_REUSEADDR (its connections' TIME_WAIT doesn't hold it).
        try await stopped.stop(keepingFiles: true)
        current = try await TestServer.start(directory: stopped.directory, port: stopped.port, configure)
        return current
      }
    } catch {
      try? await current.stop()
      await database?.drop()
      throw error
    }
    try? await current.stop()
    await database?.drop()
  }

  /// Anna; Boris, who shares his location with her (his friends group); Clara, who shares nothing with her.
  struct People {
    var anna: AuthSession
    var boris: AuthSession
    var clara: AuthSession
  }

  static func people(_ server: TestServer) async throws -> People {
    let (anna, _) = try await server.signUp("anna")
    let (boris, borisClient) = try await server.signUp("boris")
    let (clara, _) = try await server.signUp("clara")
    let friends = try #require(try await borisClient.send(API.groups).groups.first { $0.kind == .friends })
    _ = try await borisClient.send(API.addMember, parameters: GroupMemberRef(groupID: friends.id, userID: anna.userId))
    return People(anna: anna, boris: boris, clara: clara)
  }

  static func post(_ server: TestServer, as person: AuthSession, at time: Int64) async throws {
    _ = try await server.client(token: person.token).send(
      API.postFixes,
      body: FixBatch(deviceId: DeviceID("\(person.userId.rawValue)-phone"), fixes: try makeFixes(count: 1, start: time))
    )
  }

  /// A friend's fix reaches the client as a `message`; a fix of someone who doesn't share with Anna, posted before
  /// it, doesn't (events reach a socket in the order they were stored, so it would have come first).
  static func expectFriendsOnly(
    _ client: SocketIOClient, _ people: People, on server: TestServer, at time: Int64, already: Int = 0
  ) async throws {
    try await post(server, as: people.clara, at: time)
    try await post(server, as: people.boris, at: time)
    try await client.wait(for: "message", count: already + 1)
    let received = client.messages.dropFirst(already)
    #expect(received.map(\.userId) == [people.boris.userId])
    #expect(received.first?.fixes.map(\.timestamp) == [time])
  }

  /// How a client connects: which client, its transports, how it signs in, and the transport it ends up on.
  struct Way: Sendable, CustomTestStringConvertible {
    var client: SocketIOClientKind
    var transports: String
    var mode: String
    var transport: String

    var testDescription: String { "\(client.rawValue): \(transports), \(mode)" }
  }

  static let ways: [Way] = SocketIOClientKind.allCases.flatMap { client in
    [
      Way(client: client, transports: "polling", mode: "listen", transport: "websocket"),  // then the upgrade
      Way(client: client, transports: "websocket", mode: "auth", transport: "websocket"),  // the token in CONNECT
      Way(client: client, transports: "polling-only", mode: "auth", transport: "polling"),  // long-polling throughout
    ]
  }

  @Test(arguments: ["sqlite", "postgres"], Self.ways)
  func aClientReceivesFriendsPositionsOnly(_ engine: String, _ way: Way) async throws {
    try await Self.withServer(engine) { server, _ in
      let people = try await Self.people(server)
      let client = try await SocketIOClient.start(
        server, token: people.anna.token, transport: way.transports, mode: way.mode, client: way.client)
      defer { Task { await client.stop() } }
      try await client.wait(for: "listening")
      #expect(client.lines.first { $0.event == "connected" }?.transport == way.transport)
      #expect(client.lines.first { $0.event == "listening" }?.answer == ["ok": true])
      try await Self.expectFriendsOnly(client, people, on: server, at: 1_700_000_000_000)
    }
  }

  /// Socket.IO clients get what `/ws` clients get: each person on the channel of the precision the viewer sees them
  /// at (coarsened, the person's privacy zones applied), including someone who starts sharing while the client
  /// listens. They once subscribed to `user:<id>` only, which the hub grants only to exact viewers of people without
  /// a zone, so that a viewer of anyone else heard nothing.
  @Test(arguments: ["sqlite", "postgres"], SocketIOClientKind.allCases)
  func aClientSeesEachPersonAtItsPrecision(_ engine: String, _ kind: SocketIOClientKind) async throws {
    try await Self.withServer(engine) { server, _ in
      let people = try await Self.people(server)
      // Boris has a privacy zone away from his fixes; Dora shows Anna her location to about a kilometre.
      _ = try await server.client(token: people.boris.token).send(
        API.createPrivacyZone,
        body: PrivacyZoneBody(name: "Home", latitude: 50.30, longitude: 30.30, radius: 300, store: true))
      let (dora, doraClient) = try await server.signUp("dora")
      func showApproximately(_ client: NetworkClient) async throws {
        let group = try await client.send(
          API.createGroup,
          body: NewGroup(
            name: "Approximately", visibility: GroupVisibility(location: true, fields: [], precision: .approximate)))
        _ = try await client.send(
          API.addMember, parameters: GroupMemberRef(groupID: group.id, userID: people.anna.userId))
      }
      try await showApproximately(doraClient)
      let client = try await SocketIOClient.start(
        server, token: people.anna.token, transport: "websocket", mode: "auth", client: kind)
      defer { Task { await client.stop() } }
      try await client.wait(for: "listening")
      let time: Int64 = 1_700_000_000_000
      try await Self.post(server, as: people.boris, at: time)
      try await client.wait(for: "message")
      try await Self.post(server, as: dora, at: time)
      try await client.wait(for: "message", count: 2)
      let exact = try makeFixes(count: 1, start: time)[0]
      let first = client.messages
      #expect(first.map(\.userId) == [people.boris.userId, dora.userId])
      #expect(first[0].precision == nil && first[0].fixes.first?.latitude == exact.latitude)
      #expect(first[1].precision == .approximate)
      #expect(first[1].fixes.first.map { $0.latitude != exact.latitude || $0.longitude != exact.longitude } == true)

      // Someone who starts sharing while Anna listens is heard at their precision, once her socket has watched them
      // (on the announcement, after `addMember` answered): Eve posts until a fix of hers arrives.
      let (eve, eveClient) = try await server.signUp("eve")
      try await showApproximately(eveClient)
      let eveMessage = try await Self.postUntilHeard(client, server, as: eve, from: time + 10_000) { _ in true }
      #expect(eveMessage.precision == .approximate)
      // Dora now shows Anna her exact position (her friends group): Anna hears each of Dora's fixes once, exactly
      // (the approximate channel was left, else its copy would come after the exact one).
      let doraFriends = try #require(try await doraClient.send(API.groups).groups.first { $0.kind == .friends })
      _ = try await doraClient.send(
        API.addMember, parameters: GroupMemberRef(groupID: doraFriends.id, userID: people.anna.userId))
      _ = try await Self.postUntilHeard(client, server, as: dora, from: time + 100_000) { $0.precision == nil }
      let last = time + 200_000
      try await Self.post(server, as: dora, at: last)
      try await Self.post(server, as: people.boris, at: last)  // after Dora's in the store, so after any copy of hers
      _ = try await Self.postUntilHeard(client, server, as: people.boris, from: last + 1000) { _ in true }
      let doraLast = client.messages.filter { $0.userId == dora.userId && $0.fixes.first?.timestamp == last }
      #expect(doraLast.count == 1 && doraLast.first?.precision == nil, "\(doraLast)")
    }
  }

  /// Posts a fix of `person` a second apart from `time` on until the client receives one of them that satisfies
  /// `condition` (a subscription the server makes on its own, after an announcement, takes a moment); answers it.
  static func postUntilHeard(
    _ client: SocketIOClient, _ server: TestServer, as person: AuthSession, from time: Int64,
    _ condition: @escaping @Sendable (LiveLocation) -> Bool
  ) async throws -> LiveLocation {
    @Sendable func heard(_ lines: [String]) -> LiveLocation? {
      SocketIOClient.decode(lines).compactMap { try? $0.data?.decode(as: LiveLocation.self) }.first {
        $0.userId == person.userId && ($0.fixes.first?.timestamp ?? 0) >= time && condition($0)
      }
    }
    for attempt in 0..<60 {
      try await post(server, as: person, at: time + Int64(attempt) * 1000)
      if await client.said.wait(timeout: .seconds(2), until: { heard($0) != nil }) { break }
    }
    return try #require(heard(client.said.lines), "no fix of \(person.userId) heard: \(client.said.lines.suffix(10))")
  }

  @Test(arguments: ["sqlite", "postgres"], SocketIOClientKind.allCases)
  func aWrongTokenIsRefused(_ engine: String, _ kind: SocketIOClientKind) async throws {
    try await Self.withServer(engine) { server, _ in
      let inAuth = try await SocketIOClient.start(
        server, token: "not-a-token", transport: "polling", mode: "auth", client: kind)
      // python-socketio runs each event's handler on a thread of its own, so the lines come in any order: wait for
      // every one the test expects.
      try await inAuth.wait(for: "connect_error")
      try await inAuth.wait(for: "refused")
      #expect(inAuth.lines.contains { $0.event == "refused" && $0.data == ["message": "unauthorized"] })
      #expect(!inAuth.lines.contains { $0.event == "connected" })
      await inAuth.stop()
      let listening = try await SocketIOClient.start(
        server, token: "not-a-token", transport: "websocket", mode: "listen", client: kind)
      defer { Task { await listening.stop() } }
      try await listening.wait(for: "disconnected")
      try await listening.wait(for: "unauthorized")
      try await listening.wait(for: "listening")
      let lines = listening.lines
      #expect(lines.contains { $0.event == "listening" && $0.answer == ["error": "unauthorized"] })
      #expect(lines.contains { $0.event == "unauthorized" })
      #expect(listening.messages.isEmpty)
    }
  }

  /// The client reconnects on its own. Under the full server stage's load this once failed now and then: the
  /// client, reconnecting while the old server shut down, was given a session nobody served any more, and its
  /// upgrade probe was answered by nothing but the socket's close; python-engineio then stays "connected" and
  /// refuses every later attempt ("Client is not in a disconnected state"), silently. A stopped Engine.IO server now
  /// refuses new sessions (503) and answers a probe it can't serve with a `noop` (EngineIOSessionTests).
  @Test(arguments: ["sqlite", "postgres"], SocketIOClientKind.allCases)
  func theClientReconnectsAfterTheServerRestarts(_ engine: String, _ kind: SocketIOClientKind) async throws {
    try await Self.withServer(engine) { server, restart in
      let people = try await Self.people(server)
      let client = try await SocketIOClient.start(
        server, token: people.anna.token, transport: "polling", mode: "listen", client: kind)
      defer { Task { await client.stop() } }
      try await client.wait(for: "listening")
      try await Self.expectFriendsOnly(client, people, on: server, at: 1_700_000_000_000)
      let restarted = try await restart(server)
      try await client.wait(for: "disconnected")
      try await client.wait(for: "listening", count: 2)
      try await Self.expectFriendsOnly(client, people, on: restarted, at: 1_700_000_100_000, already: 1)
    }
  }

  /// Requests no client sends are answered with Engine.IO's errors, never a 500, and leave the server serving.
  @Test func badRequestsAreAnsweredWithEngineIOErrors() async throws {
    try await TestServer.with({ $0.maxBodyBytes = 1024 }) { server in
      func expect(_ method: HTTPRequest.Method, _ query: String, body: String? = nil, _ status: Int, _ code: Int)
        async throws
      {
        let answer = try await server.phoneAppRequest(method, "/socket.io/?\(query)", body: body.map { Data($0.utf8) })
        #expect(answer.head.status.code == status, "\(method) \(query)")
        let json = try JSONValue.parse(answer.body)
        #expect(json["code"] == .int(Int64(code)), "\(method) \(query)")
      }
      try await expect(.get, "EIO=3&transport=polling", 400, 5)
      try await expect(.get, "EIO=4&transport=websocket", 400, 0)  // no upgrade headers
      try await expect(.get, "EIO=4&transport=polling&sid=unknown", 400, 1)
      try await expect(.post, "EIO=4&transport=polling", body: "40", 400, 2)
      let open = try await server.phoneAppRequest(.get, "/socket.io/?EIO=4&transport=polling")
      let sid = try #require(
        try JSONValue.parse(Data(String(decoding: open.body, as: UTF8.self).dropFirst().utf8))["sid"]?.stringValue)
      try await expect(.post, "EIO=4&transport=polling&sid=\(sid)", body: String(repeating: "4", count: 2000), 413, 3)
      // That closed the session.
      try await expect(.get, "EIO=4&transport=polling&sid=\(sid)", 400, 1)
      let another = try await server.phoneAppRequest(.get, "/socket.io/?EIO=4&transport=polling")
      #expect(another.head.status == .ok && another.body.first == UInt8(ascii: "0"))
    }
  }
}
