import Foundation
import RealtimeKit
import RealtimeKitTesting
import Synchronization
import Testing

@testable import RealtimeSocketIO

/// A WebSocket that records what the server sends.
final class RecordingSocket: RealtimeServerConnection {
  let sent = Mutex<[String]>([])
  let closed = Mutex(false)
  func send(_ text: String) async throws { sent.withLock { $0.append(text) } }
  func close(code: RealtimeCloseCode, reason: String) async { closed.withLock { $0 = true } }
  func abort() async { closed.withLock { $0 = true } }
}

/// A namespace that joins clients whose auth token is "good", answers `echo` with its arguments, and notes events;
/// it handles an event only once its `gate` lets it (open unless a test closes it).
final class EchoNamespace: SocketIONamespace {
  let log = Mutex<[String]>([])
  let gate = Gate()
  func connect(_ socket: SocketIOSocket, auth: JSONValue?) async -> SocketIOConnectAnswer {
    // What a namespace emits while it decides (a subscription's first event) follows the CONNECT answer.
    socket.emit("welcome", [])
    return auth?["token"]?.stringValue == "good" ? .accept : .refuse(message: "Not authorized")
  }
  func receive(_ event: String, _ arguments: [JSONValue], ack: Int?, on socket: SocketIOSocket) async {
    log.withLock { $0.append(event) }
    await gate.pass()
    if let ack { socket.acknowledge(ack, with: arguments) } else { socket.emit(event, arguments) }
  }
  func heartbeat(_ socket: SocketIOSocket) async { log.withLock { $0.append("heartbeat") } }
  func disconnected(_ socket: SocketIOSocket, reason: String) async { log.withLock { $0.append("left: \(reason)") } }
}

/// The Engine.IO session state machine and the Socket.IO layer, driven as the protocols' sample sessions are, with
/// the heartbeat's clock in the test's hands.
@Suite struct EngineIOSessionTests {
  final class Clock: Sendable {
    let start = ContinuousClock.now
    let offset = Mutex(Duration.zero)
    var now: ContinuousClock.Instant { start + offset.withLock { $0 } }
    func advance(_ by: Duration) { offset.withLock { $0 += by } }
  }

  static func withServer(
    _ configuration: EngineIOConfiguration = .init(pingInterval: .seconds(25), pingTimeout: .seconds(20)),
    _ body: (EngineIOServer, EchoNamespace, Clock) async throws -> Void
  ) async throws {
    let namespace = EchoNamespace()
    let clock = Clock()
    let server = EngineIOServer(
      configuration: configuration, application: SocketIOServer(namespaces: ["/": namespace]), now: { clock.now })
    let running = Task { await server.run() }
    defer { running.cancel() }
    try await body(server, namespace, clock)
  }

  static func get(_ server: EngineIOServer, sid: String? = nil) async -> EngineIOResponse {
    var query = ["EIO": "4", "transport": "polling", "t": "N8hyd6w"]
    query["sid"] = sid
    return await server.handle(EngineIORequest(method: .get, query: query))
  }

  static func post(_ server: EngineIOServer, sid: String, _ body: String) async -> EngineIOResponse {
    await server.handle(
      EngineIORequest(method: .post, query: ["EIO": "4", "transport": "polling", "sid": sid], body: body))
  }

  /// Polls until `count` packets arrived (a poll answers with what is waiting, which may be fewer).
  static func packets(_ server: EngineIOServer, sid: String, count: Int) async throws -> [EngineIOPacket] {
    var packets: [EngineIOPacket] = []
    while packets.count < count { packets += try EngineIOPayload.decode(await get(server, sid: sid).body) }
    return packets
  }

  /// Opens a polling session and returns its id.
  static func handshake(_ server: EngineIOServer) async throws -> String {
    let open = await get(server)
    #expect(open.status == 200 && open.contentType == "text/plain; charset=UTF-8")
    let json = try #require(open.body.first == "0" ? open.body.dropFirst() : nil)
    let handshake = try JSONValue.parse(Data(json.utf8))
    #expect(handshake["upgrades"] == ["websocket"])
    #expect(handshake["pingInterval"] == 25000 && handshake["pingTimeout"] == 20000)
    #expect(handshake["maxPayload"] == .int(Int64(server.configuration.maxPayload)))
    return try #require(handshake["sid"]?.stringValue)
  }

  /// Attaches `socket` as an accepted WebSocket upgrade with `query` would be; `resume` is the transport's.
  static func openWebSocket(
    _ server: EngineIOServer, query: [String: String], _ socket: RecordingSocket,
    resume: @escaping @Sendable () -> Void = {}
  ) throws -> any RealtimeMessageReceiver {
    let receiver = server.openWebSocket(query: query, connection: socket, resume: resume)
    return try #require(receiver)
  }

  /// A connected polling session whose WebSocket upgrade answered the probe (`3probe`), not yet upgraded.
  static func probedSession(_ server: EngineIOServer) async throws -> (
    sid: String, socket: RecordingSocket, receiver: any RealtimeMessageReceiver
  ) {
    let sid = try await handshake(server)
    _ = await post(server, sid: sid, #"40{"token":"good"}"#)
    _ = try await packets(server, sid: sid, count: 2)  // CONNECT, welcome
    let socket = RecordingSocket()
    let receiver = try openWebSocket(server, query: ["EIO": "4", "transport": "websocket", "sid": sid], socket)
    _ = receiver.receive(.text("2probe"))
    try await wait("the probe's answer") { socket.sent.withLock { $0 } == ["3probe"] }
    return (sid, socket, receiver)
  }

  /// Where the answer of a poll under way goes once it comes.
  final class PollAnswer: Sendable {
    let response = Mutex<EngineIOResponse?>(nil)
  }

  /// A poll under way and its answer, waited for with ``wait(_:until:)``, not awaited: a poll that never ends then
  /// fails the test instead of hanging it.
  static func startPoll(_ server: EngineIOServer, sid: String) -> (answer: PollAnswer, task: Task<Void, Never>) {
    let answer = PollAnswer()
    let task = Task {
      let response = await get(server, sid: sid)
      answer.response.withLock { $0 = response }
    }
    return (answer, task)
  }

  static func wait(_ what: String, until condition: () -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(10)
    while !condition() {
      guard ContinuousClock.now < deadline else {
        Issue.record("timed out waiting for \(what)")
        throw CancellationError()
      }
      try await Task.sleep(for: .milliseconds(5))
    }
  }

  @Test func theSampleSessionOverPolling() async throws {
    try await Self.withServer { server, namespace, _ in
      let sid = try await Self.handshake(server)
      #expect(await Self.post(server, sid: sid, #"40{"token":"good"}"#).body == "ok")
      let joined = try await Self.packets(server, sid: sid, count: 2)
      guard case .message(let first) = joined.first else { throw CancellationError() }
      let connect = try SocketIOPacket(decoding: first)
      #expect(connect.kind == .connect && connect.data?["sid"] != nil)
      #expect(joined.dropFirst() == [.message(#"2["welcome"]"#)])
      // Two events in one POST; answered in order in the next poll (one payload).
      #expect(await Self.post(server, sid: sid, "42[\"hello\"]\u{1e}421[\"world\",1]").body == "ok")
      var received: [EngineIOPacket] = []
      while received.count < 2 { received += try EngineIOPayload.decode(await Self.get(server, sid: sid).body) }
      #expect(received == [.message(#"2["hello"]"#), .message("31[1]")])
      #expect(namespace.log.withLock { $0 } == ["hello", "world"])
    }
  }

  @Test func aRefusedConnectIsAConnectError() async throws {
    try await Self.withServer { server, _, _ in
      let sid = try await Self.handshake(server)
      _ = await Self.post(server, sid: sid, #"40{"token":"bad"}"#)
      #expect(await Self.get(server, sid: sid).body == #"44{"message":"Not authorized"}"#)
      _ = await Self.post(server, sid: sid, "40/admin,")
      #expect(await Self.get(server, sid: sid).body == #"44/admin,{"message":"Invalid namespace"}"#)
    }
  }

  @Test func theUpgradeToAWebSocket() async throws {
    try await Self.withServer { server, namespace, _ in
      let sid = try await Self.handshake(server)
      _ = await Self.post(server, sid: sid, #"40{"token":"good"}"#)
      _ = try await Self.packets(server, sid: sid, count: 2)  // CONNECT, welcome
      // A poll waits; the probe ends it with a noop.
      async let pending = Self.get(server, sid: sid)
      let query = ["EIO": "4", "transport": "websocket", "sid": sid]
      #expect(server.acceptsWebSocket(query: query))
      let socket = RecordingSocket()
      let receiver = try Self.openWebSocket(server, query: query, socket)
      _ = receiver.receive(.text("2probe"))
      #expect(await pending.body == "6")
      #expect(socket.sent.withLock { $0 } == ["3probe"])
      _ = receiver.receive(.text("5"))
      _ = receiver.receive(.text(#"42["over the socket"]"#))
      try await Self.wait("the event over the socket") {
        socket.sent.withLock { $0 } == ["3probe", #"42["over the socket"]"#]
      }
      // Polling is over for this session.
      #expect(await Self.get(server, sid: sid).status == 400)
      receiver.finish()
      try await Self.wait("the session's end") { server.sessionCount == 0 }
      try await Self.wait("the namespace's disconnect") {
        namespace.log.withLock { $0.last } == "left: transport close"
      }
    }
  }

  /// A poll that reaches the server after the probe was answered (the client sent both at once) is answered with a
  /// `noop` at once, as is one that arrives while the probe is being answered: the client waits for its poll to end
  /// before it completes the upgrade, and a poll left waiting held the upgrade until the next ping.
  @Test func aPollArrivingAfterTheProbeIsEndedWithANoop() async throws {
    try await Self.withServer { server, _, _ in
      let (sid, socket, receiver) = try await Self.probedSession(server)
      let (answer, late) = Self.startPoll(server, sid: sid)
      defer { late.cancel() }
      try await Self.wait("the late poll's answer") { answer.response.withLock { $0 } != nil }
      #expect(answer.response.withLock { $0?.body } == "6")
      _ = receiver.receive(.text("5"))
      _ = receiver.receive(.text(#"42["over the socket"]"#))
      try await Self.wait("the event over the socket") {
        socket.sent.withLock { $0 } == ["3probe", #"42["over the socket"]"#]
      }
    }
  }

  /// A WebSocket that answered the probe and never completes the upgrade is turned away after the upgrade timeout
  /// (a `noop`, then its close): polls wait for packets again instead of being answered at once for ever.
  @Test func anUpgradeNotCompletedInTimeIsAbandoned() async throws {
    try await Self.withServer { server, _, clock in
      let (sid, socket, receiver) = try await Self.probedSession(server)
      #expect(await Self.get(server, sid: sid).body == "6")
      clock.advance(.seconds(9))
      server.sweep(at: clock.now)
      #expect(await Self.get(server, sid: sid).body == "6")
      clock.advance(.seconds(1))
      server.sweep(at: clock.now)
      try await Self.wait("the socket turned away") { socket.closed.withLock { $0 } }
      #expect(socket.sent.withLock { $0 } == ["3probe", "6"])
      // Polling goes on: a poll waits for the next packet, here the namespace's echo.
      let (answer, poll) = Self.startPoll(server, sid: sid)
      defer { poll.cancel() }
      let session = try #require(server.sessions.withLock { $0[sid] })
      try await Self.wait("the poll waiting for a packet") { session.isPollWaiting }
      #expect(answer.response.withLock { $0 } == nil)
      _ = await Self.post(server, sid: sid, #"42["still polling"]"#)
      try await Self.wait("the echo over the poll") { answer.response.withLock { $0 } != nil }
      #expect(answer.response.withLock { $0?.body } == #"42["still polling"]"#)
    }
  }

  @Test func aWebSocketOnlySessionStartsWithItsHandshake() async throws {
    try await Self.withServer { server, _, _ in
      let socket = RecordingSocket()
      let receiver = try Self.openWebSocket(server, query: ["EIO": "4", "transport": "websocket"], socket)
      _ = receiver.receive(.text(#"40{"token":"good"}"#))
      try await Self.wait("open and connect") { socket.sent.withLock { $0.count } == 3 }
      let sent = socket.sent.withLock { $0 }
      #expect(sent[0].hasPrefix("0{\"sid\":") && sent[0].contains(#""upgrades":[]"#))
      #expect(sent[1].hasPrefix("40{\"sid\":") && sent[2] == #"42["welcome"]"#)
    }
  }

  @Test func theServerPingsAndClosesASessionThatMissesAPong() async throws {
    try await Self.withServer { server, namespace, clock in
      let sid = try await Self.handshake(server)
      _ = await Self.post(server, sid: sid, #"40{"token":"good"}"#)
      _ = try await Self.packets(server, sid: sid, count: 2)  // CONNECT, welcome
      clock.advance(.seconds(25))
      server.sweep(at: clock.now)
      #expect(await Self.get(server, sid: sid).body == "2")
      #expect(await Self.post(server, sid: sid, "3").body == "ok")
      try await Self.wait("the heartbeat") { namespace.log.withLock { $0 } == ["heartbeat"] }
      // The next ping is due an interval after the pong; unanswered, the session ends after the timeout.
      clock.advance(.seconds(24))
      server.sweep(at: clock.now)
      clock.advance(.seconds(1))
      server.sweep(at: clock.now)
      #expect(await Self.get(server, sid: sid).body == "2")
      clock.advance(.seconds(19))
      server.sweep(at: clock.now)
      #expect(server.sessionCount == 1)
      clock.advance(.seconds(1))
      server.sweep(at: clock.now)
      #expect(server.sessionCount == 0)
      try await Self.wait("the disconnect") { namespace.log.withLock { $0.last } == "left: ping timeout" }
      #expect(await Self.get(server, sid: sid).body == #"{"code":1,"message":"Session ID unknown"}"#)
    }
  }

  @Test func badRequestsAreAnsweredAndCloseTheirSession() async throws {
    try await Self.withServer(.init(maxPayload: 100)) { server, _, _ in
      #expect(
        await server.handle(EngineIORequest(method: .get, query: ["EIO": "3", "transport": "polling"])).status == 400)
      #expect(await server.handle(EngineIORequest(method: .get, query: ["EIO": "4", "transport": "x"])).status == 400)
      #expect(
        await server.handle(EngineIORequest(method: .post, query: ["EIO": "4", "transport": "polling"])).status == 400)
      #expect(await Self.get(server, sid: "nope").status == 400)
      for body in ["", "4hello\u{1e}bAQIDBA==", "9", String(repeating: "4", count: 101)] {
        let sid = try await Self.handshake(server)
        let answer = await Self.post(server, sid: sid, body)
        #expect(answer.status == (body.count > 100 ? 413 : 400))
        #expect(server.sessionCount == 0)
      }
      // A Socket.IO packet that breaks the protocol closes the session too, as does anything before CONNECT.
      for message in ["42[]", "4x", #"42["early"]"#] {
        let sid = try await Self.handshake(server)
        if message != #"42["early"]"# { _ = await Self.post(server, sid: sid, #"40{"token":"good"}"#) }
        _ = await Self.post(server, sid: sid, message)
        try await Self.wait("the close after \(message)") { server.sessionCount == 0 }
      }
    }
  }

  @Test func twoPollsAtOnceCloseTheSession() async throws {
    try await Self.withServer { server, _, _ in
      let sid = try await Self.handshake(server)
      async let first = Self.get(server, sid: sid)
      try await Self.wait("the first poll to wait") {
        server.sessions.withLock { $0[sid] }?.state.withLock { $0.pollPending } ?? false
      }
      #expect(await Self.get(server, sid: sid).status == 400)
      #expect(await first.body == "1")
      #expect(server.sessionCount == 0)
    }
  }

  @Test func aClientThatTakesNothingIsClosedAtTheBufferLimit() async throws {
    try await Self.withServer(.init(maxBufferedPackets: 3)) { server, _, _ in
      let sid = try await Self.handshake(server)
      let session = try #require(server.sessions.withLock { $0[sid] })
      #expect(session.send("a") && session.send("b") && session.send("c"))
      #expect(!session.send("d"))
      #expect(session.isClosed && server.sessionCount == 0)
    }
  }

  @Test func aSessionNotEstablishedInTimeIsClosed() async throws {
    try await Self.withServer(.init(establishTimeout: .seconds(10))) { server, _, clock in
      let signedIn = try await Self.handshake(server)
      let silent = try await Self.handshake(server)
      try #require(server.sessions.withLock { $0[signedIn] }).establish()
      clock.advance(.seconds(9))
      server.sweep(at: clock.now)
      #expect(server.sessionCount == 2)
      clock.advance(.seconds(1))
      server.sweep(at: clock.now)
      #expect(server.sessions.withLock { Array($0.keys) } == [signedIn])
      #expect(await Self.get(server, sid: silent).status == 400)
    }
  }

  /// A client that sends far more than the session's queue holds while the application stalls on its first event
  /// is slowed down, not dropped: its next `POST` is answered once there is room, and nothing is lost.
  @Test func aPollingClientFasterThanTheApplicationWaitsForRoom() async throws {
    try await Self.withServer(.init(maxQueuedMessages: 4)) { server, namespace, _ in
      let sid = try await Self.handshake(server)
      _ = await Self.post(server, sid: sid, #"40{"token":"good"}"#)
      _ = try await Self.packets(server, sid: sid, count: 2)  // CONNECT, welcome
      let session = try #require(server.sessions.withLock { $0[sid] })
      namespace.gate.close()
      let count = 40
      // One POST at a time, as a client sends them.
      let posting = Task {
        var answers: [String] = []
        for number in 0..<count { answers.append(await Self.post(server, sid: sid, #"42["n",\#(number)]"#).body) }
        return answers
      }
      try await Self.wait("the application stalled on the first event and a POST waiting for room") {
        namespace.log.withLock { $0 } == ["n"] && session.inbox.withLock { !$0.posts.isEmpty }
      }
      #expect(!session.isClosed)
      namespace.gate.open()
      #expect(await posting.value == Array(repeating: "ok", count: count))
      // Every event, in order: the namespace echoes each one back.
      let echoed = try await Self.packets(server, sid: sid, count: count)
      #expect(echoed == (0..<count).map { .message(#"2["n",\#($0)]"#) })
      #expect(!session.isClosed && server.sessionCount == 1)
    }
  }

  /// The same over a WebSocket: the transport is told to stop reading while the queue is full, and to read again
  /// once it is half empty; nothing is lost.
  @Test func aWebSocketClientFasterThanTheApplicationIsNotReadUntilThereIsRoom() async throws {
    try await Self.withServer(.init(maxQueuedMessages: 4)) { server, namespace, _ in
      let (resumes, resumed) = AsyncStream.makeStream(of: Void.self)
      let socket = RecordingSocket()
      let receiver = try Self.openWebSocket(
        server, query: ["EIO": "4", "transport": "websocket"], socket, resume: { resumed.yield() })
      #expect(receiver.receive(.text(#"40{"token":"good"}"#)))
      try await Self.wait("open and connect") { socket.sent.withLock { $0.count } == 3 }
      namespace.gate.close()
      // A transport as RealtimeWebSocketHandler is: it reads on while there is room, else waits to be resumed.
      let count = 40
      var holds = 0
      var readAgain = resumes.makeAsyncIterator()
      for number in 0..<count where !receiver.receive(.text(#"42["n",\#(number)]"#)) {
        holds += 1
        if holds == 1 {
          // Full while the application stalls on the first event: held, not closed.
          try await Self.wait("the application stalled on the first event") { namespace.log.withLock { $0 } == ["n"] }
          #expect(server.sessionCount == 1 && !server.sessions.withLock { $0.values.contains { $0.isClosed } })
          namespace.gate.open()
        }
        await readAgain.next()
      }
      #expect(holds >= 1)
      try await Self.wait("every event echoed") { socket.sent.withLock { $0.count } == 3 + count }
      #expect(socket.sent.withLock { Array($0.dropFirst(3)) } == (0..<count).map { #"42["n",\#($0)]"# })
      #expect(server.sessionCount == 1 && !socket.closed.withLock { $0 })
    }
  }

  /// Once `run()` stopped (the server shuts down), its sessions are closed without a `close` packet and no new one
  /// is opened: a client reconnecting meanwhile is refused and tries again, rather than getting a session nobody
  /// serves (python-socketio, whose upgrade probe was then answered by the socket's close, never connected again).
  @Test func aStoppedServerClosesItsSessionsAndRefusesNewOnes() async throws {
    let server = EngineIOServer(application: SocketIOServer(namespaces: ["/": EchoNamespace()]))
    let running = Task { await server.run() }
    let sid = try await Self.handshake(server)
    let poll = Task { await Self.get(server, sid: sid) }
    try await Self.wait("the poll to wait") {
      server.sessions.withLock { $0[sid] }?.state.withLock { $0.pollPending } ?? false
    }
    running.cancel()
    await running.value
    // The waiting poll is refused, not answered with a `close` packet: the client takes it for a lost connection.
    #expect(await poll.value.status == 400)
    #expect(server.sessionCount == 0 && server.isStopped)
    let refused = await Self.get(server)
    #expect(refused.status == 503 && refused.body == #"{"code":3,"message":"Server shutting down"}"#)
    #expect(!server.acceptsWebSocket(query: ["EIO": "4", "transport": "websocket"]))
    #expect(
      server.openWebSocket(query: ["EIO": "4", "transport": "websocket"], connection: RecordingSocket()) {} == nil)
    #expect(server.sessionCount == 0)
  }

  /// A WebSocket that came to upgrade a session is answered with a `noop` before its close when the session closes
  /// before the probe is answered, or had closed when the socket was attached: python-engineio's client, whose probe
  /// got nothing but the close, stayed "connected" and never reconnected; a `noop` is a failed upgrade to it.
  @Test func anUpgradeOfAClosingSessionIsTurnedAwayWithANoop() async throws {
    try await Self.withServer { server, _, _ in
      let sid = try await Self.handshake(server)
      let session = try #require(server.sessions.withLock { $0[sid] })
      let query = ["EIO": "4", "transport": "websocket", "sid": sid]
      let underWay = RecordingSocket()
      _ = try Self.openWebSocket(server, query: query, underWay)
      session.close(reason: "server shutting down", tellingClient: false)
      let late = RecordingSocket()
      _ = try Self.openWebSocket(server, query: query, late)
      for socket in [underWay, late] {
        try await Self.wait("the noop and the close") { socket.closed.withLock { $0 } }
        #expect(socket.sent.withLock { $0 } == ["6"])
      }
    }
  }
}
