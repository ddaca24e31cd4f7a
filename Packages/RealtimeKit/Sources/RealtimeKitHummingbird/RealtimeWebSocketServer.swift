import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdWSCompression
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOWebSocket
import RealtimeKit
import ServiceLifecycle

/// How ``Hummingbird/HTTPServerBuilder/realtime(hub:configuration:)`` exposes a hub.
public struct RealtimeWebSocketConfiguration: Sendable {
  /// The path to accept upgrades on.
  public var path: String
  /// Whether to offer permessage-deflate (RFC 7692). It costs tens of kilobytes per connection, so it is off by
  /// default. With it on, connections are served by hummingbird-websocket's task-per-connection path (about 27 KB per
  /// idle connection before zlib's state) instead of the channel-handler path (about 10 KB).
  public var perMessageDeflate: Bool
  /// How long to wait for the client's answer to a close frame.
  public var closeTimeout: Duration
  /// The HTTP/1 settings of the server.
  public var http1: HTTP1Channel.Configuration

  /// Creates a configuration.
  public init(
    path: String = RealtimeProtocol.path,
    perMessageDeflate: Bool = false,
    closeTimeout: Duration = .seconds(5),
    http1: HTTP1Channel.Configuration = .init()
  ) {
    self.path = path
    self.perMessageDeflate = perMessageDeflate
    self.closeTimeout = closeTimeout
    self.http1 = http1
  }
}

extension HTTPServerBuilder {
  /// An HTTP/1 server that upgrades `GET <path>` offering the `meridian.v1` subprotocol to a WebSocket served by
  /// `hub`; every other request goes to the application's router.
  ///
  /// ```swift
  /// let app = Application(router: router, server: .realtime(hub: hub))
  /// ```
  public static func realtime(hub: RealtimeHub, configuration: RealtimeWebSocketConfiguration = .init())
    -> HTTPServerBuilder
  {
    let maxBytes = hub.configuration.limits.maxFrameBytes
    let ws = WebSocketServerConfiguration(
      maxFrameSize: maxBytes,
      extensions: configuration.perMessageDeflate ? [.perMessageDeflate(maxDecompressedFrameSize: maxBytes)] : [],
      autoPing: .disabled,
      closeTimeout: configuration.closeTimeout,
      validateUTF8: true
    )
    guard configuration.perMessageDeflate else {
      // Without compression, upgraded connections are served by a channel handler: no per-connection task or
      // `NIOAsyncChannel` (see `RealtimeHTTP1Channel`).
      return HTTPServerBuilder { responder in
        RealtimeHTTP1Channel(responder: responder, hub: hub, configuration: configuration)
      }
    }
    let path = configuration.path
    return .http1WebSocketUpgrade(configuration: .init(http1: configuration.http1, ws: ws)) {
      request,
      channel,
      _ in
      guard RealtimeUpgrade.accepts(request, path: path) else { return .dontUpgrade }
      return .upgrade([.secWebSocketProtocol: RealtimeProtocol.subprotocol]) { inbound, outbound, _ in
        let connection = HummingbirdRealtimeConnection(outbound: outbound, channel: channel)
        try await hub.serve(
          connection: connection, inbound: inbound.messages(maxSize: maxBytes).map(RealtimeUpgrade.map))
      }
    }
  }
}

/// Upgrade rules shared by the server builder.
enum RealtimeUpgrade {
  /// Whether the request targets `path` and offers `meridian.v1`.
  static func accepts(_ request: HTTPRequest, path: String) -> Bool {
    let offered = request.headerFields[values: .secWebSocketProtocol].flatMap { $0.split(separator: ",") }
    return accepts(uri: request.path ?? "", offered: offered.map(String.init), path: path)
  }

  /// Whether a request for `uri` offering the subprotocols `offered` (one per element) targets `path` with
  /// `meridian.v1`.
  static func accepts(uri: String, offered: [String], path: String) -> Bool {
    let requestPath =
      uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? uri
    guard requestPath == path else { return false }
    return offered.map { $0.trimmingCharacters(in: .whitespaces) }.contains(RealtimeProtocol.subprotocol)
  }

  @Sendable static func map(_ message: WebSocketMessage) -> RealtimeInboundMessage {
    switch message {
    case .text(let text): .text(text)
    case .binary(let buffer): .binary(byteCount: buffer.readableBytes)
    }
  }
}

/// A hub connection over a Hummingbird WebSocket.
struct HummingbirdRealtimeConnection: RealtimeServerConnection {
  let outbound: WebSocketOutboundWriter
  let channel: any Channel

  func send(_ text: String) async throws {
    try await outbound.write(.text(text))
  }

  func close(code: RealtimeCloseCode, reason: String) async {
    try? await outbound.close(WebSocketErrorCode(codeNumber: Int(code.rawValue)), reason: reason)
  }

  func abort() async {
    try? await channel.close()
  }
}

/// Runs a ``RealtimeKit/RealtimeHub`` as a service: enforces heartbeats while running and, on graceful shutdown,
/// closes every connection with 4004 (server shutting down) and waits for them to end.
///
/// List it **after** the Hummingbird application in the `ServiceGroup`, so that it shuts down first and clients see
/// 4004 rather than a plain close.
public struct RealtimeHubService: Service {
  /// The hub.
  public let hub: RealtimeHub

  /// Wraps a hub.
  public init(hub: RealtimeHub) { self.hub = hub }

  /// Runs until graceful shutdown or cancellation.
  public func run() async throws {
    await cancelWhenGracefulShutdown {
      await hub.run()
    }
  }
}
