import RealtimeKit
import Synchronization

/// How a namespace answers a client's `CONNECT`.
public enum SocketIOConnectAnswer: Sendable, Hashable {
  /// Joined: the client gets `CONNECT` with the socket's id.
  case accept
  /// Refused: the client gets `CONNECT_ERROR` with `{"message": message}`.
  case refuse(message: String)
}

/// What an app serves on one Socket.IO namespace.
public protocol SocketIONamespace: Sendable {
  /// A client asks to join, with the `auth` object of its `CONNECT` (nil without one).
  func connect(_ socket: SocketIOSocket, auth: JSONValue?) async -> SocketIOConnectAnswer
  /// An event from a joined client; `ack` is the id to answer with ``SocketIOSocket/acknowledge(_:with:)`` when the
  /// client asked for an answer.
  func receive(_ event: String, _ arguments: [JSONValue], ack: Int?, on socket: SocketIOSocket) async
  /// The client's session answered a heartbeat.
  func heartbeat(_ socket: SocketIOSocket) async
  /// The socket left the namespace: its client disconnected it, its session closed, or the app did. Called once.
  func disconnected(_ socket: SocketIOSocket, reason: String) async
}

/// A client joined to a namespace.
public final class SocketIOSocket: Sendable {
  /// The socket's id, sent to the client in `CONNECT` (not the Engine.IO session id).
  public let id: String
  /// The namespace.
  public let namespace: String
  /// The Engine.IO session carrying it.
  public let session: EngineIOSession
  let server: SocketIOServer
  /// Until the client has its `CONNECT` answer, what the app emits waits here, so that it follows that answer (at
  /// most the session's buffer limit; a refused connect drops it).
  private let held = Mutex<[String]?>([])

  init(namespace: String, session: EngineIOSession, server: SocketIOServer) {
    id = EngineIOServer.newID()
    self.namespace = namespace
    self.session = session
    self.server = server
  }

  /// Sends the event `name` with `arguments`; false when the session is closed (or was, its client being too slow).
  /// Emitted while the namespace's `connect` decides, it is sent right after the `CONNECT` answer.
  @discardableResult
  public func emit(_ name: String, _ arguments: [JSONValue]) -> Bool {
    send(SocketIOPacket.event(name, arguments, namespace: namespace).encoded)
  }

  private func send(_ message: String) -> Bool {
    held.withLock { held in
      guard held != nil else { return session.send(message) }
      guard held!.count < session.configuration.maxBufferedPackets else { return false }
      held!.append(message)
      return true
    }
  }

  /// Sends the `CONNECT` answer, then what was emitted while it was decided; from now on emits go out at once.
  func joined() {
    held.withLock { held in
      session.send(SocketIOPacket(.connect, namespace: namespace, data: ["sid": .string(id)]).encoded)
      for message in held ?? [] { session.send(message) }
      held = nil
    }
  }

  /// Answers the client's event `id`.
  public func acknowledge(_ id: Int, with arguments: [JSONValue]) {
    _ = send(SocketIOPacket(.ack, namespace: namespace, data: .array(arguments), id: id).encoded)
  }

  /// Disconnects the client from the namespace (`DISCONNECT`); its session stays open for other namespaces.
  public func disconnect(reason: String = "server namespace disconnect") async {
    guard server.remove(self) else { return }
    session.send(SocketIOPacket(.disconnect, namespace: namespace).encoded)
    await server.namespaces[namespace]?.disconnected(self, reason: reason)
  }
}

/// The server side of Socket.IO v5 over an ``EngineIOServer``: namespaces, `CONNECT` with an auth payload and
/// `CONNECT_ERROR`, events and acknowledgements, `DISCONNECT`. A packet that breaks the protocol (not a Socket.IO
/// packet, binary, a first packet other than `CONNECT`, an event without a name) closes its session.
public final class SocketIOServer: EngineIOApplication {
  let namespaces: [String: any SocketIONamespace]
  /// The sockets of each session, by namespace.
  private let sockets = Mutex<[String: [String: SocketIOSocket]]>([:])

  /// A server of `namespaces` (by name, such as `/`); a `CONNECT` to another is refused.
  public init(namespaces: [String: any SocketIONamespace]) {
    self.namespaces = namespaces
  }

  /// The sockets joined now, in every namespace.
  public var socketCount: Int { sockets.withLock { $0.values.reduce(0) { $0 + $1.count } } }

  public func received(_ message: String, from session: EngineIOSession) async {
    let packet: SocketIOPacket
    do {
      packet = try SocketIOPacket(decoding: message)
    } catch {
      return session.close(reason: "\(error)")
    }
    let (socket, joinedAny) = sockets.withLock { ($0[session.id]?[packet.namespace], $0[session.id] != nil) }
    // The protocol's first packet is a CONNECT: anything else before a namespace is joined closes the session.
    if packet.kind != .connect && !joinedAny { return session.close(reason: "a packet before CONNECT") }
    switch packet.kind {
    case .connect:
      await connect(packet, on: session, existing: socket)
    case .event:
      guard let socket, let event = packet.event else { return }
      await namespaces[socket.namespace]?.receive(event.name, event.arguments, ack: packet.id, on: socket)
    case .ack:
      break  // this server asks for no acknowledgements
    case .disconnect:
      guard let socket, remove(socket) else { return }
      await namespaces[socket.namespace]?.disconnected(socket, reason: "client namespace disconnect")
    case .connectError, .binaryEvent, .binaryAck:
      session.close(reason: "unexpected packet type \(packet.kind.rawValue)")
    }
  }

  private func connect(_ packet: SocketIOPacket, on session: EngineIOSession, existing: SocketIOSocket?) async {
    guard existing == nil else { return }
    guard let namespace = namespaces[packet.namespace] else {
      session.send(Self.connectError(packet.namespace, "Invalid namespace"))
      return
    }
    let socket = SocketIOSocket(namespace: packet.namespace, session: session, server: self)
    switch await namespace.connect(socket, auth: packet.data) {
    case .accept:
      let added = sockets.withLock { sockets in
        guard !session.isClosed else { return false }
        sockets[session.id, default: [:]][packet.namespace] = socket
        return true
      }
      guard added else { return await namespace.disconnected(socket, reason: "transport close") }
      socket.joined()
    case .refuse(let message):
      session.send(Self.connectError(packet.namespace, message))
    }
  }

  static func connectError(_ namespace: String, _ message: String) -> String {
    SocketIOPacket(.connectError, namespace: namespace, data: ["message": .string(message)]).encoded
  }

  /// Forgets `socket`; true if it was joined.
  func remove(_ socket: SocketIOSocket) -> Bool {
    sockets.withLock { sockets in
      guard sockets[socket.session.id]?[socket.namespace] === socket else { return false }
      sockets[socket.session.id]?[socket.namespace] = nil
      if sockets[socket.session.id]?.isEmpty == true { sockets[socket.session.id] = nil }
      return true
    }
  }

  public func heartbeat(_ session: EngineIOSession) async {
    for socket in sockets.withLock({ Array(($0[session.id] ?? [:]).values) }) {
      await namespaces[socket.namespace]?.heartbeat(socket)
    }
  }

  public func closed(_ session: EngineIOSession, reason: String) async {
    let left = sockets.withLock { $0.removeValue(forKey: session.id).map { Array($0.values) } ?? [] }
    for socket in left { await namespaces[socket.namespace]?.disconnected(socket, reason: reason) }
  }
}
