import Foundation
import RealtimeKit
import Synchronization

/// A client transport that connects straight to a ``RealtimeHub`` in the same process, without sockets.
///
/// It can cut every open connection (as a network loss would) and black-hole server messages (as a half-open TCP
/// connection would), so reconnect, resume and heartbeat logic can be tested in milliseconds.
public final class InMemoryRealtimeTransport: RealtimeClientTransport, Sendable {
  private struct State {
    var open: [UUID: InMemoryServerSide] = [:]
    var dropsServerMessages = false
    var refusesConnections = false
  }

  private let hub: RealtimeHub
  private let state = Mutex(State())

  /// Creates a transport to `hub`.
  public init(hub: RealtimeHub) { self.hub = hub }

  /// Opens a connection served by the hub.
  public func connect() async throws -> RealtimeClientConnection {
    let socket = try connectRaw()
    return RealtimeClientConnection(
      inbound: socket.inbound,
      send: { text in socket.send(.text(text)) },
      close: { code in socket.close(code) }
    )
  }

  /// Opens a connection whose client side sends raw messages (including binary and malformed ones).
  public func connectRaw() throws -> InMemoryRealtimeSocket {
    let refused = state.withLock { $0.refusesConnections }
    if refused { throw URLError(.cannotConnectToHost) }
    let (toServer, toServerSink) = AsyncStream<RealtimeInboundMessage>.makeStream()
    let (toClient, toClientSink) = AsyncStream<RealtimeClientInbound>.makeStream()
    let key = UUID()
    let server = InMemoryServerSide(toClient: toClientSink, toServer: toServerSink) { [weak self] in
      guard let self else { return false }
      return self.state.withLock { $0.dropsServerMessages }
    }
    state.withLock { $0.open[key] = server }
    let hub = self.hub
    Task {
      try? await hub.serve(connection: server, inbound: toServer)
      server.finish(code: nil, reason: "server ended the connection")
      self.state.withLock { _ = $0.open.removeValue(forKey: key) }
    }
    return InMemoryRealtimeSocket(inbound: toClient, server: server)
  }

  /// Drops every open connection without a close handshake.
  public func cutAll() {
    let servers = state.withLock { Array($0.open.values) }
    for server in servers { server.finish(code: nil, reason: "cut") }
  }

  /// While `true`, server messages are silently lost (a half-open connection).
  public func setDropsServerMessages(_ value: Bool) { state.withLock { $0.dropsServerMessages = value } }

  /// While `true`, new connections fail (the server is unreachable).
  public func setRefusesConnections(_ value: Bool) { state.withLock { $0.refusesConnections = value } }

  /// The number of connections currently open through this transport.
  public var openConnectionCount: Int { state.withLock { $0.open.count } }
}

/// The client end of an in-memory connection, for tests that speak the protocol by hand.
public struct InMemoryRealtimeSocket: Sendable {
  /// What the server sent; ends with `.closed` carrying the server's close code.
  public let inbound: AsyncStream<RealtimeClientInbound>
  let server: InMemoryServerSide

  /// Sends a message to the server.
  public func send(_ message: RealtimeInboundMessage) { server.receive(message) }

  /// Closes from the client side.
  public func close(_ code: RealtimeCloseCode) { server.finish(code: code, reason: "client closed") }
}

final class InMemoryServerSide: RealtimeServerConnection, Sendable {
  private let toClient: AsyncStream<RealtimeClientInbound>.Continuation
  private let toServer: AsyncStream<RealtimeInboundMessage>.Continuation
  private let dropping: @Sendable () -> Bool
  private let finished = Mutex(false)

  init(
    toClient: AsyncStream<RealtimeClientInbound>.Continuation,
    toServer: AsyncStream<RealtimeInboundMessage>.Continuation,
    dropping: @escaping @Sendable () -> Bool
  ) {
    self.toClient = toClient
    self.toServer = toServer
    self.dropping = dropping
  }

  func receive(_ message: RealtimeInboundMessage) {
    guard !finished.withLock({ $0 }) else { return }
    toServer.yield(message)
  }

  func send(_ text: String) async throws {
    guard !finished.withLock({ $0 }) else { throw CancellationError() }
    if dropping() { return }
    toClient.yield(.text(text))
  }

  func close(code: RealtimeCloseCode, reason: String) async { finish(code: code, reason: reason) }

  func abort() async { finish(code: nil, reason: "aborted") }

  func finish(code: RealtimeCloseCode?, reason: String) {
    let first = finished.withLock { finished in
      defer { finished = true }
      return !finished
    }
    guard first else { return }
    toClient.yield(.closed(code: code, reason: reason))
    toClient.finish()
    toServer.finish()
  }
}
