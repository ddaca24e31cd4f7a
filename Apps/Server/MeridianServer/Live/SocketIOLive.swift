import DomainKit
import Foundation
import Hummingbird
import RealtimeKit
import RealtimeKitHummingbird
import RealtimeSocketIO
import ServiceLifecycle
import Synchronization

/// Live positions for Socket.IO v5 clients (the seed app's protocol) on `/socket.io/`: a transport adapter over the
/// same hub as `/ws`, so the same authentication, the same subscribe rules and the same revocations apply.
///
/// A client joins the namespace `/` and signs in with its bearer token, either in the `CONNECT` auth object
/// (`{"token": "..."}`) or by emitting `listen user` with the token (a string, or `{"token": "..."}`). Each signed-in
/// socket is one hub connection: it sends `hello` with the token, then subscribes, for every person the account may
/// see now, to the channel that carries that person's fixes as the account may see them (`seen_<precision>:<id>`,
/// ``SharingFeature/visibleChannels(viewer:)``: coarsened, privacy zones applied) and to its own `sharing:<id>`, where
/// a person it may see again (or at another precision) is announced and watched at once on their one channel; a
/// channel revoked (a grant that ran out) is replaced by the person's coarser one, when the viewer still has it. Every event on those
/// channels reaches the client as a `message` event whose one argument is the hub's payload (``LiveLocation``'s
/// JSON). A refused token answers
/// `CONNECT_ERROR` (in `CONNECT`) or an `unauthorized` event and `DISCONNECT` (in `listen user`).
final class SocketIOLive: SocketIONamespace {
  let hub: RealtimeHub
  /// The account a bearer token signs in, the hub's own rule (``LiveUpdates/account(forToken:)``).
  let account: @Sendable (_ token: String) async throws -> UserID?
  /// The channel of each person `viewer` may see now, carrying their fixes as the viewer may see them.
  let visibleChannels: @Sendable (_ viewer: UserID) async throws -> [UserID: ChannelName]
  /// The channel of one person, nil when the viewer may not see them now.
  let visibleChannel: @Sendable (_ viewer: UserID, _ person: UserID) async throws -> ChannelName?
  private let listeners = Mutex<[ObjectIdentifier: SocketIOListener]>([:])

  init(
    hub: RealtimeHub, account: @escaping @Sendable (String) async throws -> UserID?,
    visibleChannels: @escaping @Sendable (UserID) async throws -> [UserID: ChannelName],
    visibleChannel: @escaping @Sendable (UserID, UserID) async throws -> ChannelName?
  ) {
    self.hub = hub
    self.account = account
    self.visibleChannels = visibleChannels
    self.visibleChannel = visibleChannel
  }

  /// The name of the event a client signs in with.
  static let listenEvent = "listen user"

  func connect(_ socket: SocketIOSocket, auth: JSONValue?) async -> SocketIOConnectAnswer {
    guard let token = auth?["token"]?.stringValue else { return .accept }
    return await listen(socket, token: token) ? .accept : .refuse(message: "unauthorized")
  }

  func receive(_ event: String, _ arguments: [JSONValue], ack: Int?, on socket: SocketIOSocket) async {
    guard event == Self.listenEvent else { return }
    let token = arguments.first?.stringValue ?? arguments.first?["token"]?.stringValue
    if let token, await listen(socket, token: token) {
      if let ack { socket.acknowledge(ack, with: [["ok": true]]) }
      return
    }
    if let ack { socket.acknowledge(ack, with: [["error": "unauthorized"]]) }
    socket.emit("unauthorized", [["message": "the token is missing, invalid or expired"]])
    await socket.disconnect(reason: "unauthorized")
  }

  func heartbeat(_ socket: SocketIOSocket) async {
    listeners.withLock { $0[ObjectIdentifier(socket)] }?.ping()
  }

  func disconnected(_ socket: SocketIOSocket, reason: String) async {
    listeners.withLock { $0.removeValue(forKey: ObjectIdentifier(socket)) }?.finish()
  }

  /// Signs `socket` in with `token` and subscribes it; returns once the hub answered every subscription, false when
  /// the token is refused. A socket already listening stays as it is.
  private func listen(_ socket: SocketIOSocket, token: String) async -> Bool {
    if listeners.withLock({ $0[ObjectIdentifier(socket)] }) != nil { return true }
    guard let viewer = try? await account(token), let people = try? await visibleChannels(viewer),
      let sharing = LiveUpdates.sharingChannel(viewer)
    else { return false }
    let channels = people.values.sorted() + [sharing]
    let visibleChannel = visibleChannel
    let listener = SocketIOListener(socket: socket, pending: Set(channels)) { person in
      try? await visibleChannel(viewer, person)
    }
    let added = listeners.withLock { listeners in
      guard listeners[ObjectIdentifier(socket)] == nil else { return false }
      listeners[ObjectIdentifier(socket)] = listener
      return true
    }
    guard added else { return true }
    let inbound = hub.open(connection: listener, resume: {})
    // Signed in: the session may stay (a client that never signs in is closed after the hub's hello timeout).
    socket.session.establish()
    return await listener.start(
      inbound,
      hello: Hello(
        token: token, clientName: "socket.io", clientVersion: "5",
        resume: channels.map { SubscribeRequest(channel: $0) }))
  }
}

/// One Socket.IO socket's hub connection: what the hub sends it arrives here and goes out as Socket.IO events.
final class SocketIOListener: RealtimeServerConnection {
  private struct State {
    var inbound: RealtimeInbound?
    /// The subscriptions the hub has not answered yet.
    var pending: Set<ChannelName>
    /// ``start(_:hello:)`` waiting for those answers (true) or a refusal (false).
    var started: CheckedContinuation<Bool, Never>?
    var ended = false
  }

  let socket: SocketIOSocket
  /// The channel of a person the viewer may see now (nil when the viewer may not).
  private let channel: @Sendable (_ person: UserID) async -> ChannelName?
  private let state: Mutex<State>

  init(
    socket: SocketIOSocket, pending: Set<ChannelName>,
    channel: @escaping @Sendable (_ person: UserID) async -> ChannelName?
  ) {
    self.socket = socket
    self.channel = channel
    state = Mutex(State(pending: pending))
  }

  /// Sends `hello` (with the subscriptions) and waits for the hub's answers: true once every subscription is
  /// answered, false if the hub closes the connection first (a refused token).
  func start(_ inbound: RealtimeInbound, hello: Hello) async -> Bool {
    await withCheckedContinuation { continuation in
      let ended = state.withLock { state in
        state.inbound = inbound
        state.started = continuation
        return state.ended
      }
      if ended {
        answer(false)
        return
      }
      _ = inbound.receive(.text(RealtimeCodec.encode(.hello(hello))))
    }
  }

  /// Ends ``start(_:hello:)``'s wait with `result`; false when it was not waiting.
  @discardableResult
  private func answer(_ result: Bool) -> Bool {
    let started = state.withLock { state in
      defer { state.started = nil }
      return state.started
    }
    started?.resume(returning: result)
    return started != nil
  }

  /// The client's session is alive: so is its hub connection (the hub closes silent ones).
  func ping() {
    state.withLock { $0.inbound }?.receive(.text(RealtimeCodec.encode(.ping)))
  }

  /// The socket left: its hub connection ends.
  func finish() {
    let inbound = state.withLock { state in
      state.ended = true
      return state.inbound
    }
    inbound?.finish()
    answer(false)
  }

  private func answered(_ channel: ChannelName) {
    let done = state.withLock { state in
      state.pending.remove(channel)
      return state.pending.isEmpty
    }
    if done { answer(true) }
  }

  private func subscribe(_ channel: ChannelName) {
    state.withLock { $0.inbound }?.receive(.text(RealtimeCodec.encode(.subscribe(SubscribeRequest(channel: channel)))))
  }

  private func unsubscribe(_ channel: ChannelName) {
    state.withLock { $0.inbound }?.receive(.text(RealtimeCodec.encode(.unsubscribe(channel))))
  }

  func send(_ text: String) async throws {
    guard let frame = try? RealtimeCodec.decodeServerFrame(text) else { return }
    switch frame {
    case .subscribed(let position), .reload(let position):
      answered(position.channel)
    case .unsubscribed(let channel, let reason):
      answered(channel)
      // Sight revoked on this channel: the viewer may still see the person at a coarser precision (a grant that
      // ran out while a group remains).
      if reason == .revoked, LiveUpdates.seenPrecision(channel.namespace) != nil {
        await watch(UserID(channel.id), revoked: channel)
      }
    case .error(let error):
      if let channel = error.channel.flatMap(ChannelName.init) { answered(channel) }
    case .event(let event) where LiveUpdates.seenPrecision(event.channel.namespace) != nil:
      socket.emit("message", [event.payload])
    case .event(let event) where event.channel.namespace == LiveUpdates.sharingNamespace:
      // A person the viewer may see again (a resume, added to a group, another precision): watched at once.
      if event.payload["type"]?.stringValue == "sharing.visible", let user = event.payload["userId"]?.stringValue {
        await watch(UserID(user), revoked: nil)
      }
    default:
      break
    }
  }

  /// Watches `person` on the one channel of the precision the viewer has now: subscribes to it and leaves any other
  /// `seen_…` channel of the person (a finer one was revoked; a coarser one would deliver every fix twice, the
  /// coarse copy last).
  private func watch(_ person: UserID, revoked: ChannelName?) async {
    let current = await channel(person)
    let others = LiveUpdates.seenPrecisions.compactMap { LiveUpdates.seenChannel(person, $0) }
      .filter { $0 != current && $0 != revoked }
    for other in others { unsubscribe(other) }
    if let current, current != revoked { subscribe(current) }
  }

  /// The hub closed the connection. A refused or revoked sign-in leaves the namespace (`unauthorized`, then
  /// `DISCONNECT`: the client does not retry the token); anything else (the server shutting down, a heartbeat
  /// timeout) closes the Engine.IO session, so that the client reconnects as after a network failure.
  func close(code: RealtimeCloseCode, reason: String) async {
    // Refused while signing in: the sign-in answers (CONNECT_ERROR, or `unauthorized` for `listen user`).
    if answer(false) { return }
    switch code {
    case .unauthorized, .protocolViolation, .tooManyConnections:
      socket.emit("unauthorized", [["message": .string(reason)]])
      await socket.disconnect(reason: reason)
    default:
      socket.session.close(reason: reason, tellingClient: false)
    }
  }

  func abort() async {
    answer(false)
    socket.session.close(reason: "aborted", tellingClient: false)
  }
}

extension SocketIOLive {
  /// The Engine.IO path Socket.IO clients use by default.
  static let path = "/socket.io"

  /// The WebSocket endpoint of `engine` for the HTTP server.
  static func webSocketEndpoint(_ engine: EngineIOServer) -> RealtimeWebSocketEndpoint {
    RealtimeWebSocketEndpoint(
      path: path, maxMessageBytes: engine.configuration.maxPayload,
      accepts: { engine.acceptsWebSocket(query: $0) },
      open: { engine.openWebSocket(query: $0, connection: $1, resume: $2) })
  }

  /// Serves `engine`'s HTTP long-polling on `router` (`GET` and `POST /socket.io/`).
  static func register(_ engine: EngineIOServer, on router: Router<MeridianRequestContext>) {
    let limit = engine.configuration.maxPayload
    for method in [HTTPRequest.Method.get, .post] {
      router.on(RouterPath(path), method: method) { request, _ -> Response in
        let query = RealtimeWebSocketEndpoint.queryParameters(request.uri.query ?? "")
        var call = EngineIORequest(method: method == .get ? .get : .post, query: query)
        if method == .post {
          do {
            call.body = String(decoding: try await request.body.collect(upTo: limit).readableBytesView, as: UTF8.self)
          } catch {
            call.bodyExceedsLimit = true
          }
        }
        let answer = await engine.handle(call)
        return Response(
          status: HTTPResponse.Status(code: answer.status),
          headers: [.contentType: answer.contentType, .cacheControl: "no-store"],
          body: ResponseBody(byteBuffer: ByteBuffer(string: answer.body)))
      }
    }
  }
}

/// Runs an ``RealtimeSocketIO/EngineIOServer`` as a service: its sessions' messages and pings while running; on
/// graceful shutdown every session is closed, and its clients reconnect to the next server.
struct EngineIOService: Service {
  let engine: EngineIOServer

  func run() async throws {
    await cancelWhenGracefulShutdown { await engine.run() }
  }
}
