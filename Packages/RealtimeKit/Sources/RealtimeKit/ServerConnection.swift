/// The transport side of one server connection (a WebSocket, or an in-memory pipe in tests).
///
/// Implementations only move text; the protocol is in ``RealtimeHub``.
public protocol RealtimeServerConnection: Sendable {
  /// Sends one text message. Called from one task at a time, in order.
  func send(_ text: String) async throws
  /// Starts the close handshake with `code`.
  func close(code: RealtimeCloseCode, reason: String) async
  /// Drops the connection without a handshake (used when a slow consumer does not take its close frame).
  func abort() async
}

/// One message received by a server connection.
public enum RealtimeInboundMessage: Sendable, Hashable {
  /// A text message.
  case text(String)
  /// A binary message, which the protocol forbids.
  case binary(byteCount: Int)
}

/// The authenticated identity behind a connection, as the app's authentication hook returns it.
public struct RealtimePrincipal: Sendable, Hashable {
  /// The app's user id; publish ids are deduplicated per principal id.
  public var id: String
  /// Free-form attributes the app wants to carry to its authorization hook (roles, device id, ...).
  public var attributes: [String: String]
  /// The connections this principal may hold at once, instead of the hub's
  /// ``RealtimeHubConfiguration/maxConnectionsPerPrincipal``; nil keeps the hub's.
  public var maxConnections: Int?

  /// Creates a principal.
  public init(id: String, attributes: [String: String] = [:], maxConnections: Int? = nil) {
    self.id = id
    self.attributes = attributes
    self.maxConnections = maxConnections
  }
}

/// What a principal asks to do with a channel; passed to the authorization hook.
public enum RealtimeAccess: Sendable, Hashable {
  /// Receive the channel's events.
  case subscribe
  /// Publish to the channel.
  case publish
}

/// Where a transport adapter hands the messages of one connection: a hub's connection (``RealtimeInbound``), or
/// another protocol served on the same WebSocket server.
public protocol RealtimeMessageReceiver: Sendable {
  /// Queues a received message; `false` asks the transport to stop reading until it is told to resume.
  func receive(_ message: RealtimeInboundMessage) -> Bool
  /// The connection ended. Called once.
  func finish()
}
