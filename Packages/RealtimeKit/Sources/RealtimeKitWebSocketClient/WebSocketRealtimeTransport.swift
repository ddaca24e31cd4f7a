import Foundation
import HTTPTypes
import Logging
import NIOCore
import NIOPosix
import NIOWebSocket
import RealtimeKit
import Synchronization
import WSClient
import WSCompression

/// A ``RealtimeKit/RealtimeClientTransport`` over a WebSocket (swift-websocket's `WebSocketClient`), offering the
/// `meridian.v1` subprotocol.
///
/// ```swift
/// let transport = WebSocketRealtimeTransport(url: "ws://127.0.0.1:8080/ws")
/// let client = RealtimeClient(transport: transport, configuration: configuration)
/// ```
public struct WebSocketRealtimeTransport: RealtimeClientTransport {
  /// The server's socket URL, `ws://` or `wss://`.
  public var url: String
  /// Whether to offer permessage-deflate (RFC 7692).
  public var perMessageDeflate: Bool
  /// The largest message accepted from the server.
  public var maxMessageBytes: Int
  /// The event loops to run connections on.
  public var eventLoopGroup: any EventLoopGroup
  /// Logger for the socket layer.
  public var logger: Logger

  /// Creates a transport.
  public init(
    url: String,
    perMessageDeflate: Bool = false,
    maxMessageBytes: Int = 1 << 22,
    eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
    logger: Logger = Logger(label: "meridian.realtime.client")
  ) {
    self.url = url
    self.perMessageDeflate = perMessageDeflate
    self.maxMessageBytes = maxMessageBytes
    self.eventLoopGroup = eventLoopGroup
    self.logger = logger
  }

  enum Outgoing: Sendable {
    case text(String)
    case close(RealtimeCloseCode)
  }

  /// Connects and completes the WebSocket handshake; throws when the server cannot be reached or refuses the upgrade.
  public func connect() async throws -> RealtimeClientConnection {
    let (inbound, inboundSink) = AsyncStream<RealtimeClientInbound>.makeStream()
    let (outgoing, outgoingSink) = AsyncStream<Outgoing>.makeStream()
    let opened = OpenSignal()
    var headers = HTTPFields()
    headers[.secWebSocketProtocol] = RealtimeProtocol.subprotocol
    let maxBytes = maxMessageBytes
    let configuration = WebSocketClientConfiguration(
      maxFrameSize: maxBytes,
      additionalHeaders: headers,
      extensions: perMessageDeflate ? [.perMessageDeflate(maxDecompressedFrameSize: maxBytes)] : [],
      closeTimeout: .seconds(2),
      validateUTF8: true
    )
    let (url, group, logger) = (self.url, eventLoopGroup, self.logger)
    Task {
      var code: RealtimeCloseCode?
      var reason: String?
      do {
        let closeFrame = try await WebSocketClient.connect(
          url: url,
          configuration: configuration,
          eventLoopGroup: group,
          logger: logger
        ) { wsInbound, wsOutbound, _ in
          opened.open(nil)
          try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask {
              for await item in outgoing {
                switch item {
                case .text(let text):
                  try await wsOutbound.write(.text(text))
                case .close(let code):
                  try await wsOutbound.close(WebSocketErrorCode(codeNumber: Int(code.rawValue)), reason: nil)
                  return
                }
              }
            }
            tasks.addTask {
              for try await message in wsInbound.messages(maxSize: maxBytes) {
                if case .text(let text) = message { inboundSink.yield(.text(text)) }
              }
            }
            _ = try await tasks.next()
            tasks.cancelAll()
          }
        }
        code = closeFrame.map { RealtimeCloseCode(rawValue: UInt16(webSocketErrorCode: $0.closeCode)) }
        reason = closeFrame?.reason
      } catch {
        opened.open(error)
        reason = String(describing: error)
      }
      opened.open(nil)
      inboundSink.yield(.closed(code: code, reason: reason))
      inboundSink.finish()
      outgoingSink.finish()
    }
    try await opened.wait()
    return RealtimeClientConnection(
      inbound: inbound,
      send: { text in outgoingSink.yield(.text(text)) },
      close: { code in outgoingSink.yield(.close(code)) }
    )
  }
}

/// Signals once that the handshake finished (or failed).
final class OpenSignal: Sendable {
  private struct State {
    var result: Result<Void, any Error>?
    var waiter: CheckedContinuation<Void, any Error>?
  }

  private let state = Mutex(State())

  func open(_ error: (any Error)?) {
    let waiter: CheckedContinuation<Void, any Error>? = state.withLock { state in
      guard state.result == nil else { return nil }
      state.result = error.map { .failure($0) } ?? .success(())
      defer { state.waiter = nil }
      return state.waiter
    }
    if let waiter { waiter.resume(with: error.map { .failure($0) } ?? .success(())) }
  }

  func wait() async throws {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
      let ready: Result<Void, any Error>? = state.withLock { state in
        if let result = state.result { return result }
        state.waiter = continuation
        return nil
      }
      if let ready { continuation.resume(with: ready) }
    }
  }
}
