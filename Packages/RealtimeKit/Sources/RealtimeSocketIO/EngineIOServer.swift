import RealtimeKit
import Synchronization

/// What runs above Engine.IO (``SocketIOServer``): it is handed each session's messages in order.
public protocol EngineIOApplication: Sendable {
  /// A `message` packet's data; the session's next packet waits until this returns.
  func received(_ message: String, from session: EngineIOSession) async
  /// The client answered a ping: the session is alive.
  func heartbeat(_ session: EngineIOSession) async
  /// The session ended (after its last message was handled).
  func closed(_ session: EngineIOSession, reason: String) async
}

/// An HTTP request for the Engine.IO path, as a transport adapter hands it over.
public struct EngineIORequest: Sendable {
  /// The HTTP methods the protocol uses.
  public enum Method: Sendable { case get, post, other }
  /// The method.
  public var method: Method
  /// The query parameters (`EIO`, `transport`, `sid`, ...); the last value of a repeated one.
  public var query: [String: String]
  /// The body of a `POST`.
  public var body: String?
  /// The body was longer than ``EngineIOConfiguration/maxPayload`` and was not read.
  public var bodyExceedsLimit: Bool

  /// Creates a request.
  public init(method: Method, query: [String: String], body: String? = nil, bodyExceedsLimit: Bool = false) {
    self.method = method
    self.query = query
    self.body = body
    self.bodyExceedsLimit = bodyExceedsLimit
  }
}

/// The answer to an ``EngineIORequest``.
public struct EngineIOResponse: Sendable, Hashable {
  /// The HTTP status.
  public var status: Int
  /// The body: a payload, `ok`, or an error's JSON (`{"code":1,"message":"Session ID unknown"}`).
  public var body: String
  /// The body's media type.
  public var contentType: String

  static func text(_ body: String) -> EngineIOResponse {
    EngineIOResponse(status: 200, body: body, contentType: "text/plain; charset=UTF-8")
  }

  static func error(_ status: Int, _ code: Int, _ message: String) -> EngineIOResponse {
    EngineIOResponse(
      status: status, body: #"{"code":\#(code),"message":"\#(message)"}"#, contentType: "application/json")
  }
}

/// The server side of Engine.IO v4: handshakes, HTTP long-polling, WebSocket sessions and the upgrade from one to the
/// other, heartbeats driven by the server, bounded queues. Transport-independent: an HTTP adapter calls
/// ``handle(_:)`` for requests on the Engine.IO path and ``openWebSocket(query:connection:resume:)`` for accepted WebSocket
/// upgrades. ``run()`` handles the sessions' messages and sends the pings; cancelling it closes every session.
public final class EngineIOServer: Sendable {
  /// The settings.
  public let configuration: EngineIOConfiguration
  let application: any EngineIOApplication
  let sessions = Mutex<[String: EngineIOSession]>([:])
  let now: @Sendable () -> ContinuousClock.Instant
  private let jobs: AsyncStream<@Sendable () async -> Void>
  private let jobsContinuation: AsyncStream<@Sendable () async -> Void>.Continuation
  private let nextWebSocketID = Atomic<UInt64>(0)
  /// Set, under `sessions`' lock, once ``run()`` stops: no session is opened any more.
  private let stopped = Atomic<Bool>(false)

  /// Creates a server handing messages to `application`; `now` is the clock of the heartbeats (tests pass their own
  /// and call ``sweep(at:)``).
  public init(
    configuration: EngineIOConfiguration = .init(), application: any EngineIOApplication,
    now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }
  ) {
    self.configuration = configuration
    self.application = application
    self.now = now
    (jobs, jobsContinuation) = AsyncStream.makeStream()
  }

  /// The number of open sessions.
  public var sessionCount: Int { sessions.withLock { $0.count } }

  /// Whether ``run()`` has stopped: handshakes are refused (`503`) and WebSocket upgrades not accepted.
  public var isStopped: Bool { stopped.load(ordering: .relaxed) }

  // MARK: HTTP long-polling

  /// Answers a request on the Engine.IO path: a handshake (`GET` without `sid`), a poll (`GET`) or a send (`POST`).
  /// A malformed request is answered `400` with the protocol's error JSON, and closes its session.
  public func handle(_ request: EngineIORequest) async -> EngineIOResponse {
    guard request.query["EIO"] == "4" else { return .error(400, 5, "Unsupported protocol version") }
    guard request.query["transport"] == "polling" else { return .error(400, 0, "Transport unknown") }
    guard let sid = request.query["sid"] else {
      guard request.method == .get else { return .error(400, 2, "Bad handshake method") }
      guard let session = open(.polling) else {
        return .error(503, 3, isStopped ? "Server shutting down" : "Too many sessions")
      }
      return .text(EngineIOPacket.open(session.handshake(upgrades: ["websocket"]).json).encoded)
    }
    guard let session = sessions.withLock({ $0[sid] }) else { return .error(400, 1, "Session ID unknown") }
    switch request.method {
    case .get:
      guard session.isPolling else { return .error(400, 3, "Bad request") }
      guard let packets = await session.poll() else { return .error(400, 3, "Bad request") }
      return .text(EngineIOPayload.encode(packets))
    case .post:
      let body = request.body ?? ""
      guard !request.bodyExceedsLimit, body.utf8.count <= configuration.maxPayload else {
        session.close(reason: "payload too large")
        return .error(413, 3, "Payload too large")
      }
      let packets: [EngineIOPacket]
      do {
        packets = try EngineIOPayload.decode(body)
      } catch {
        session.close(reason: "\(error)")
        return .error(400, 3, "Bad request")
      }
      // Answered once the session has room for it: a client sending faster than the application takes its
      // messages waits (it sends one POST at a time).
      guard await session.deliver(.polled(packets)) else { return .error(400, 1, "Session ID unknown") }
      return .text("ok")
    case .other:
      return .error(400, 2, "Bad handshake method")
    }
  }

  // MARK: WebSocket

  /// Whether a WebSocket upgrade with this query may be accepted: Engine.IO v4, `transport=websocket`, and either no
  /// `sid` (a WebSocket-only session) or the `sid` of an open polling session (an upgrade).
  public func acceptsWebSocket(query: [String: String]) -> Bool {
    guard query["EIO"] == "4", query["transport"] == "websocket", !isStopped else { return false }
    guard let sid = query["sid"] else { return true }
    return sessions.withLock { $0[sid] }?.isPolling ?? false
  }

  /// Attaches an accepted WebSocket: a new session, or the probe of an upgrade of the session `sid`. Returns what
  /// the adapter hands the socket's messages to, or nil (the adapter closes the socket) when the query is not
  /// accepted any more. An upgrade whose session closed meanwhile is turned away by the server itself: a `noop`,
  /// then the close (as are the upgrades under way when a session closes).
  ///
  /// Back-pressure: when the session's queue is full (``EngineIOConfiguration/maxQueuedMessages``) the receiver's
  /// `receive` returns false and the adapter stops reading the socket until it calls `resume` (from any thread).
  public func openWebSocket(
    query: [String: String], connection: any RealtimeServerConnection, resume: @escaping @Sendable () -> Void
  ) -> (any RealtimeMessageReceiver)? {
    let socket = EngineIOSession.WebSocket(
      id: nextWebSocketID.wrappingAdd(1, ordering: .relaxed).newValue, connection: connection)
    if let sid = query["sid"], query["EIO"] == "4", query["transport"] == "websocket" {
      // An upgrade: its session may have closed since the upgrade was accepted (a server shutting down).
      guard let session = sessions.withLock({ $0[sid] }), session.addCandidate(socket) else {
        socket.turnAway(reason: "session closed")
        return EngineIOTurnedAwayReceiver()
      }
      return EngineIOWebSocketReceiver(session: session, socket: socket, resume: resume)
    }
    guard acceptsWebSocket(query: query), let session = open(.webSocket(socket)) else { return nil }
    _ = session.enqueue(.open(session.handshake(upgrades: []).json))
    startWriter(session, socket)
    return EngineIOWebSocketReceiver(session: session, socket: socket, resume: resume)
  }

  // MARK: Sessions

  private func open(_ transport: EngineIOSession.Transport) -> EngineIOSession? {
    let session = EngineIOSession(
      id: Self.newID(), transport: transport, configuration: configuration, now: now()
    ) { [weak self] session, reason in
      self?.sessions.withLock { _ = $0.removeValue(forKey: session.id) }
    }
    let admitted = sessions.withLock { sessions in
      guard !stopped.load(ordering: .relaxed), sessions.count < configuration.maxSessions else { return false }
      sessions[session.id] = session
      return true
    }
    guard admitted else { return nil }
    jobsContinuation.yield { [self] in await process(session) }
    return session
  }

  /// A random session id: 20 characters of base64url (120 bits).
  static func newID() -> String {
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    var generator = SystemRandomNumberGenerator()
    return String((0..<20).map { _ in alphabet[Int(generator.next(upperBound: UInt8(64)))] })
  }

  private func startWriter(_ session: EngineIOSession, _ socket: EngineIOSession.WebSocket) {
    jobsContinuation.yield {
      while let packets = await session.next() {
        do {
          for packet in packets { try await socket.connection.send(packet.encoded) }
        } catch {
          session.close(reason: "transport error")
        }
      }
      await socket.connection.close(code: .normal, reason: "session closed")
    }
  }

  /// Handles a session's packets in order until it closes, then tells the application.
  private func process(_ session: EngineIOSession) async {
    while let item = await session.nextReceived() {
      switch item {
      case .polled(let packets):
        for packet in packets { await handle(packet, on: session, via: nil) }
      case .webSocket(let text, let socket):
        do {
          await handle(try EngineIOPacket(decoding: Substring(text)), on: session, via: socket)
        } catch {
          session.close(reason: "\(error)")
        }
      case .webSocketEnded(let socket):
        let current = session.state.withLock { state -> Bool in
          if state.probing?.id == socket.id { state.probing = nil }
          state.candidates[socket.id] = nil
          if case .webSocket(let attached) = state.transport { return attached.id == socket.id }
          return false
        }
        if current { session.close(reason: "transport close") }
      }
    }
    await application.closed(session, reason: session.state.withLock { $0.closeReason })
  }

  private func handle(_ packet: EngineIOPacket, on session: EngineIOSession, via socket: EngineIOSession.WebSocket?)
    async
  {
    guard !session.isClosed else { return }
    switch packet {
    case .pong:
      session.ponged(at: now())
      await application.heartbeat(session)
    case .message(let text):
      await application.received(text, from: session)
    case .close:
      session.close(reason: "client close")
    case .ping("probe") where socket != nil && session.isPolling:
      guard let socket else { return }
      do {
        try await socket.connection.send(EngineIOPacket.pong("probe").encoded)
      } catch {
        return
      }
      guard session.probed(socket, at: now()) else { return }
      session.releasePoll()
    case .upgrade where socket != nil:
      let upgraded = session.state.withLock { state -> Bool in
        guard let socket, state.probing?.id == socket.id else { return false }
        state.probing = nil
        state.transport = .webSocket(socket)
        return true
      }
      guard upgraded, let socket else { return session.close(reason: "upgrade without a probe") }
      startWriter(session, socket)
    default:
      session.close(reason: "unexpected packet \(packet.encoded.prefix(1))")
    }
  }

  /// Sends the pings due at `now`, closes the sessions whose pongs are late and abandons the upgrades overdue.
  public func sweep(at now: ContinuousClock.Instant) {
    for session in sessions.withLock({ Array($0.values) }) { session.sweep(at: now) }
  }

  /// Handles the sessions' messages and sends pings (every tenth of the ping interval) until cancelled; then closes
  /// every session (without a `close` packet, so that clients reconnect) and opens no more.
  public func run() async {
    let period = max(configuration.pingInterval / 10, .milliseconds(20))
    await withDiscardingTaskGroup { group in
      group.addTask { [jobs] in
        await withDiscardingTaskGroup { jobGroup in
          for await job in jobs { jobGroup.addTask { await job() } }
          jobGroup.cancelAll()
        }
      }
      while !Task.isCancelled {
        do {
          try await Task.sleep(for: period)
        } catch {
          break
        }
        sweep(at: now())
      }
      // No session is opened from now on: a client reconnecting while the server shuts down is refused (503) and
      // tries again, rather than getting a session nobody serves any more.
      let open = sessions.withLock { sessions in
        stopped.store(true, ordering: .relaxed)
        return Array(sessions.values)
      }
      for session in open { session.close(reason: "server shutting down", tellingClient: false) }
      jobsContinuation.finish()
    }
  }
}

/// Where the messages of a WebSocket that came to upgrade a closed session go: nowhere (it is being turned away).
struct EngineIOTurnedAwayReceiver: RealtimeMessageReceiver {
  func receive(_ message: RealtimeInboundMessage) -> Bool { true }
  func finish() {}
}

/// Where an Engine.IO WebSocket's messages go: its session's queue, which holds the socket's reads while it is full.
struct EngineIOWebSocketReceiver: RealtimeMessageReceiver {
  let session: EngineIOSession
  let socket: EngineIOSession.WebSocket
  /// Lets the transport read again.
  let resume: @Sendable () -> Void

  func receive(_ message: RealtimeInboundMessage) -> Bool {
    switch message {
    case .text(let text):
      return session.receive(.webSocket(text, socket), resume: resume)
    case .binary:
      session.close(reason: "\(EngineIOError.binaryUnsupported)")
      return true
    }
  }

  func finish() {
    _ = session.receive(.webSocketEnded(socket), resume: nil)
  }
}
