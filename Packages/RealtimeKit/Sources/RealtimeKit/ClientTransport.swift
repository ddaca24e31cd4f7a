/// One message a client connection receives.
public enum RealtimeClientInbound: Sendable, Hashable {
  /// A text message.
  case text(String)
  /// The connection ended; `code` is the close code the server sent, if any.
  case closed(code: RealtimeCloseCode?, reason: String?)
}

/// An open client connection, as a transport hands it to ``RealtimeClient``.
public struct RealtimeClientConnection: Sendable {
  /// Messages from the server; ends with ``RealtimeClientInbound/closed(code:reason:)`` when the connection ends.
  public var inbound: AsyncStream<RealtimeClientInbound>
  /// Queues one text message for sending, in call order.
  public var send: @Sendable (String) async throws -> Void
  /// Closes the connection with a close code.
  public var close: @Sendable (RealtimeCloseCode) async -> Void

  /// Creates a connection from its parts.
  public init(
    inbound: AsyncStream<RealtimeClientInbound>,
    send: @escaping @Sendable (String) async throws -> Void,
    close: @escaping @Sendable (RealtimeCloseCode) async -> Void
  ) {
    self.inbound = inbound
    self.send = send
    self.close = close
  }
}

/// Opens connections to a `meridian.v1` server (a WebSocket client, or an in-memory hub in tests).
public protocol RealtimeClientTransport: Sendable {
  /// Opens a new connection; throws when the server cannot be reached.
  func connect() async throws -> RealtimeClientConnection
}
