import Foundation
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
  /// How long the HTTP server waits for clients before it closes their connections. Applies until a connection is
  /// upgraded to a WebSocket; the hub's hello and heartbeat timeouts apply then.
  public var timeouts: HTTPTimeouts
  /// Other WebSocket endpoints of the same server (such as Engine.IO's `/socket.io/`), asked before the hub's path.
  /// Served without permessage-deflate only: with ``perMessageDeflate`` on they are not offered.
  public var endpoints: [RealtimeWebSocketEndpoint]

  /// Creates a configuration.
  public init(
    path: String = RealtimeProtocol.path,
    perMessageDeflate: Bool = false,
    closeTimeout: Duration = .seconds(5),
    http1: HTTP1Channel.Configuration = .init(),
    timeouts: HTTPTimeouts = .init(),
    endpoints: [RealtimeWebSocketEndpoint] = []
  ) {
    self.path = path
    self.perMessageDeflate = perMessageDeflate
    self.closeTimeout = closeTimeout
    self.http1 = http1
    self.timeouts = timeouts
    self.endpoints = endpoints
  }

  /// How long the HTTP server waits for a client.
  public struct HTTPTimeouts: Sendable, Hashable {
    /// How long a connection may stay open with no request in progress: a new connection before its first byte, or
    /// a keep-alive connection after a response. The server then closes it without a response.
    public var idle: Duration
    /// How long a client may take to send a request's line and headers, from their first byte. The server then
    /// answers `408 Request Timeout` and closes the connection.
    public var header: Duration
    /// How long a client may take to send a request's body, from the end of its headers. The server then answers
    /// `408 Request Timeout` (or, if the application has started a response, just closes the connection).
    public var body: Duration

    /// Creates timeouts; the defaults are 60 s idle, 10 s for the headers and 60 s for the body.
    public init(idle: Duration = .seconds(60), header: Duration = .seconds(10), body: Duration = .seconds(60)) {
      self.idle = idle
      self.header = header
      self.body = body
    }
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
    let timeouts = configuration.timeouts
    let channelConfiguration = HTTP1WebSocketUpgradeChannel.Configuration(http1: configuration.http1, ws: ws)
    return HTTPServerBuilder { responder in
      let base = HTTP1WebSocketUpgradeChannel(responder: responder, configuration: channelConfiguration) {
        request,
        channel,
        _ in
        guard RealtimeUpgrade.accepts(request, path: path) else { return .dontUpgrade }
        // The HTTP timeouts end before the upgrade removes the request decoder.
        try? await channel.pipeline.removeHandler(name: HTTPRequestTimeoutHandler.name).get()
        return .upgrade([.secWebSocketProtocol: RealtimeProtocol.subprotocol]) { inbound, outbound, _ in
          let connection = HummingbirdRealtimeConnection(outbound: outbound, channel: channel)
          try await hub.serve(
            connection: connection, inbound: inbound.messages(maxSize: maxBytes).map(RealtimeUpgrade.map))
        }
      }
      return RealtimeDeflateHTTP1Channel(base: base, timeouts: timeouts)
    }
  }
}

/// A WebSocket endpoint served beside the hub's by ``Hummingbird/HTTPServerBuilder/realtime(hub:configuration:)``:
/// upgrades of `GET <path>?<query>` that ``accepts`` are handed to ``open``, with no subprotocol.
public struct RealtimeWebSocketEndpoint: Sendable {
  /// The path (a trailing `/` is ignored on both sides).
  public var path: String
  /// The largest message accepted; a larger one closes the socket with 1009.
  public var maxMessageBytes: Int
  /// Whether to upgrade a request with this query (decoded, the last value of a repeated name). Runs on the event
  /// loop: it must not block.
  public var accepts: @Sendable (_ query: [String: String]) -> Bool
  /// Attaches an upgraded socket; the socket's messages go to what it returns (nil closes the socket). When its
  /// `receive` returns false the socket is not read until `resume` is called (from any thread), as for the hub's
  /// connections (``RealtimeKit/RealtimeHub/open(connection:resume:)``).
  public var open: Open

  /// What ``open`` is.
  public typealias Open =
    @Sendable (
      _ query: [String: String], _ connection: any RealtimeServerConnection, _ resume: @escaping @Sendable () -> Void
    ) -> (any RealtimeMessageReceiver)?

  /// Creates an endpoint.
  public init(
    path: String, maxMessageBytes: Int, accepts: @escaping @Sendable (_ query: [String: String]) -> Bool,
    open: @escaping Open
  ) {
    self.path = path
    self.maxMessageBytes = maxMessageBytes
    self.accepts = accepts
    self.open = open
  }

  /// The endpoint of `endpoints` that takes an upgrade of `uri`, with the uri's query.
  static func matching(_ uri: String, in endpoints: [RealtimeWebSocketEndpoint]) -> (
    RealtimeWebSocketEndpoint, [String: String]
  )? {
    guard !endpoints.isEmpty else { return nil }
    let parts = uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
    func trimmed(_ path: some StringProtocol) -> Substring {
      var path = Substring(path)
      while path.count > 1, path.hasSuffix("/") { path = path.dropLast() }
      return path
    }
    let path = trimmed(parts.first ?? "")
    guard let endpoint = endpoints.first(where: { trimmed($0.path) == path }) else { return nil }
    let query = parts.count > 1 ? queryParameters(String(parts[1])) : [:]
    return endpoint.accepts(query) ? (endpoint, query) : nil
  }

  /// The decoded parameters of a query string; the last value of a repeated name.
  public static func queryParameters(_ query: String) -> [String: String] {
    var parameters: [String: String] = [:]
    for pair in query.split(separator: "&") {
      let nameAndValue = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
      func decoded(_ text: Substring) -> String {
        let spaced = text.replacingOccurrences(of: "+", with: " ")
        return spaced.removingPercentEncoding ?? spaced
      }
      parameters[decoded(nameAndValue[0])] = nameAndValue.count > 1 ? decoded(nameAndValue[1]) : ""
    }
    return parameters
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
