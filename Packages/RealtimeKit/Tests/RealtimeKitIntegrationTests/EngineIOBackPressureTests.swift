import Foundation
import Logging
import RealtimeKit
import RealtimeKitHummingbird
import RealtimeSocketIO
import Synchronization
import Testing
import WSClient

/// A namespace that joins everyone and echoes each event, once the test lets it: it holds the first event it gets
/// (and says so on ``stalled``) until ``proceed()``.
final class StallingNamespace: SocketIONamespace {
  private let state = Mutex<(stalling: Bool, held: CheckedContinuation<Void, Never>?)>((true, nil))
  private let stalledContinuation: AsyncStream<Void>.Continuation
  /// One element when the first event is held.
  let stalled: AsyncStream<Void>

  init() { (stalled, stalledContinuation) = AsyncStream.makeStream() }

  func connect(_ socket: SocketIOSocket, auth: JSONValue?) async -> SocketIOConnectAnswer { .accept }

  func receive(_ event: String, _ arguments: [JSONValue], ack: Int?, on socket: SocketIOSocket) async {
    await withCheckedContinuation { continuation in
      let stalling = state.withLock { state in
        if state.stalling { state.held = continuation }
        return state.stalling
      }
      if stalling { stalledContinuation.yield() } else { continuation.resume() }
    }
    socket.emit(event, arguments)
  }

  /// Lets the held event and every later one through.
  func proceed() {
    let held = state.withLock { state in
      state.stalling = false
      defer { state.held = nil }
      return state.held
    }
    held?.resume()
  }

  func heartbeat(_ socket: SocketIOSocket) async {}
  func disconnected(_ socket: SocketIOSocket, reason: String) async {}
}

/// Passes a socket's messages on, and says on ``held`` each time its receiver asks the transport to stop reading.
struct HoldReporter: RealtimeMessageReceiver {
  let base: any RealtimeMessageReceiver
  let reportHold: AsyncStream<Void>.Continuation

  func receive(_ message: RealtimeInboundMessage) -> Bool {
    let room = base.receive(message)
    if !room { reportHold.yield() }
    return room
  }

  func finish() { base.finish() }
}

/// Engine.IO's back-pressure through the server's NIO WebSocket handler: a client that writes far more than its
/// session's queue holds while the application stalls has its socket's reads held, then resumed, and loses nothing.
@Suite struct EngineIOBackPressureTests {
  @Test(.timeLimit(.minutes(1)))
  func aWebSocketClientFasterThanTheApplicationIsHeldNotDropped() async throws {
    let namespace = StallingNamespace()
    let engine = EngineIOServer(
      configuration: EngineIOConfiguration(maxQueuedMessages: 4),
      application: SocketIOServer(namespaces: ["/": namespace]))
    let (holds, reportHold) = AsyncStream.makeStream(of: Void.self)
    let endpoint = RealtimeWebSocketEndpoint(
      path: "/socket.io", maxMessageBytes: 1 << 16, accepts: { engine.acceptsWebSocket(query: $0) },
      open: { query, connection, resume in
        engine.openWebSocket(query: query, connection: connection, resume: resume).map {
          HoldReporter(base: $0, reportHold: reportHold)
        }
      })
    let running = Task { await engine.run() }
    defer { running.cancel() }
    try await withServer(makeHub(), configuration: RealtimeWebSocketConfiguration(endpoints: [endpoint])) { port in
      var logger = Logger(label: "engine.io-client")
      logger.logLevel = .critical
      let count = 300
      _ = try await WebSocketClient.connect(
        url: "ws://127.0.0.1:\(port)/socket.io/?EIO=4&transport=websocket", logger: logger
      ) { inbound, outbound, _ in
        var messages = inbound.messages(maxSize: 1 << 16).makeAsyncIterator()
        guard case .text(let open)? = try await messages.next(), open.hasPrefix("0") else {
          Issue.record("no open packet")
          return
        }
        try await outbound.write(.text("40"))
        guard case .text(let connected)? = try await messages.next(), connected.hasPrefix("40") else {
          Issue.record("no CONNECT answer")
          return
        }
        // All at once, far more than the queue holds (in several reads: a connection's first reads are 512 bytes).
        for number in 0..<count { try await outbound.write(.text(#"42["n",\#(number)]"#)) }
        var stalled = namespace.stalled.makeAsyncIterator()
        var held = holds.makeAsyncIterator()
        await stalled.next()
        await held.next()
        // The application stalls on the first event and the socket is not read: the session is still open.
        #expect(engine.sessionCount == 1)
        namespace.proceed()
        var echoed: [String] = []
        while echoed.count < count, case .text(let text)? = try await messages.next() {
          if text != "2" { echoed.append(text) }  // pings aside
        }
        #expect(echoed == (0..<count).map { #"42["n",\#($0)]"# })
        #expect(engine.sessionCount == 1)
        try await outbound.close(.normalClosure, reason: nil)
      }
    }
  }
}
