/// Constants of the `meridian.v1` protocol.
public enum RealtimeProtocol {
  /// The WebSocket subprotocol, negotiated with `Sec-WebSocket-Protocol`.
  public static let subprotocol = "meridian.v1"
  /// The HTTP path servers mount the socket at.
  public static let path = "/ws"
}

/// A WebSocket close code used by the protocol (protocol §7).
public struct RealtimeCloseCode: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
  /// The numeric code sent in the WebSocket close frame.
  public let rawValue: UInt16
  /// Wraps a numeric close code.
  public init(rawValue: UInt16) { self.rawValue = rawValue }

  /// 1000: either side ended the session.
  public static let normal = RealtimeCloseCode(rawValue: 1000)
  /// 1007: a text message was not valid UTF-8.
  public static let invalidData = RealtimeCloseCode(rawValue: 1007)
  /// 1009: a message exceeded the frame size limit.
  public static let messageTooBig = RealtimeCloseCode(rawValue: 1009)
  /// 4001: bad, expired or missing token; do not reconnect before the token is renewed.
  public static let unauthorized = RealtimeCloseCode(rawValue: 4001)
  /// 4002: the peer broke the protocol.
  public static let protocolViolation = RealtimeCloseCode(rawValue: 4002)
  /// 4003: the client did not read fast enough and its send queue overflowed.
  public static let slowConsumer = RealtimeCloseCode(rawValue: 4003)
  /// 4004: the server is shutting down or restarting; reconnect with backoff.
  public static let serverShuttingDown = RealtimeCloseCode(rawValue: 4004)
  /// 4005: nothing was received for the heartbeat interval plus its timeout.
  public static let heartbeatTimeout = RealtimeCloseCode(rawValue: 4005)
  /// 4006: the principal already has as many connections as the server allows; reconnect with backoff (after
  /// closing another).
  public static let tooManyConnections = RealtimeCloseCode(rawValue: 4006)

  /// Whether a client should reconnect after a close with this code.
  public var allowsReconnect: Bool { self != .unauthorized }

  /// The code and its name, e.g. `4003 slow consumer`.
  public var description: String {
    switch self {
    case .normal: return "1000 normal"
    case .invalidData: return "1007 invalid data"
    case .messageTooBig: return "1009 message too big"
    case .unauthorized: return "4001 unauthorized"
    case .protocolViolation: return "4002 protocol violation"
    case .slowConsumer: return "4003 slow consumer"
    case .serverShuttingDown: return "4004 server shutting down"
    case .heartbeatTimeout: return "4005 heartbeat timeout"
    default: return String(rawValue)
    }
  }
}

/// The `code` of an `error` message (protocol §5).
public struct RealtimeErrorCode: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
  /// The wire form.
  public let rawValue: String
  /// Wraps a wire code; unknown codes are kept as they are.
  public init(rawValue: String) { self.rawValue = rawValue }

  /// Not JSON, not an object, no `type`, or a field of the wrong type.
  public static let badFrame = RealtimeErrorCode(rawValue: "bad_frame")
  /// A `type` this version does not define.
  public static let unknownType = RealtimeErrorCode(rawValue: "unknown_type")
  /// A channel name that is malformed or in a namespace the server does not serve.
  public static let invalidChannel = RealtimeErrorCode(rawValue: "invalid_channel")
  /// The authorization hook refused the subscribe or publish.
  public static let forbidden = RealtimeErrorCode(rawValue: "forbidden")
  /// The connection reached its subscription limit.
  public static let tooManySubscriptions = RealtimeErrorCode(rawValue: "too_many_subscriptions")
  /// The principal already has as many connections as the server allows (fatal for this connection: close 4006).
  public static let tooManyConnections = RealtimeErrorCode(rawValue: "too_many_connections")
  /// The server refused a publish's payload (for example a location outside the valid ranges); do not re-send it.
  public static let invalidPayload = RealtimeErrorCode(rawValue: "invalid_payload")
  /// The publish rate was exceeded; the publish was not accepted and may be re-sent later with the same id.
  public static let rateLimited = RealtimeErrorCode(rawValue: "rate_limited")
  /// Bad, expired or missing token (fatal).
  public static let unauthorized = RealtimeErrorCode(rawValue: "unauthorized")
  /// The client broke the protocol (fatal).
  public static let protocolViolation = RealtimeErrorCode(rawValue: "protocol_violation")
  /// A server-side hook failed; retry later.
  public static let `internal` = RealtimeErrorCode(rawValue: "internal")

  /// The wire form.
  public var description: String { rawValue }

  /// Whether a publish refused with this code may be re-sent later with the same id.
  public var isRetryable: Bool { self == .rateLimited || self == .internal }
}

/// The limits a server enforces, announced in `welcome` (protocol §8).
public struct RealtimeLimits: Sendable, Hashable {
  /// Largest accepted message, in bytes, after reassembly.
  public var maxFrameBytes: Int
  /// Most channels one connection may be subscribed to.
  public var maxSubscriptions: Int
  /// Sustained publishes per second per connection.
  public var publishPerSecond: Int
  /// Publishes allowed in a burst above the sustained rate.
  public var publishBurst: Int

  /// Creates limits; the defaults are the protocol's.
  public init(
    maxFrameBytes: Int = 65_536, maxSubscriptions: Int = 100, publishPerSecond: Int = 20, publishBurst: Int = 40
  ) {
    self.maxFrameBytes = maxFrameBytes
    self.maxSubscriptions = maxSubscriptions
    self.publishPerSecond = publishPerSecond
    self.publishBurst = publishBurst
  }
}
