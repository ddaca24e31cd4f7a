/// Milliseconds since the Unix epoch, the protocol's time unit.
public typealias RealtimeTimestamp = Int64

/// A channel position to resume from: the last offset received and the epoch it belongs to.
public struct ResumePosition: Sendable, Hashable {
  /// The last offset the client processed on the channel.
  public var offset: UInt64
  /// The channel's epoch at that offset.
  public var epoch: String

  /// Creates a resume position.
  public init(offset: UInt64, epoch: String) {
    self.offset = offset
    self.epoch = epoch
  }
}

/// `subscribe`: start receiving a channel's events, optionally replaying from a position.
public struct SubscribeRequest: Sendable, Hashable {
  /// The channel.
  public var channel: ChannelName
  /// Where to resume from; `nil` for live events only.
  public var resume: ResumePosition?

  /// Creates a subscribe request.
  public init(channel: ChannelName, resume: ResumePosition? = nil) {
    self.channel = channel
    self.resume = resume
  }
}

/// `hello`: the first message of every connection.
public struct Hello: Sendable, Hashable {
  /// The bearer token.
  public var token: String
  /// The client's name, for logs.
  public var clientName: String
  /// The client's version, for logs.
  public var clientVersion: String
  /// Subscriptions to restore at once, handled like `subscribe` messages after `welcome`.
  public var resume: [SubscribeRequest]

  /// Creates a hello message.
  public init(token: String, clientName: String, clientVersion: String, resume: [SubscribeRequest] = []) {
    self.token = token
    self.clientName = clientName
    self.clientVersion = clientVersion
    self.resume = resume
  }
}

/// `publish`: a client's message to a channel, idempotent per `id`.
public struct PublishRequest: Sendable, Hashable {
  /// The client message id, 1–64 characters, unique per principal.
  public var id: String
  /// The target channel.
  public var channel: ChannelName
  /// The payload delivered unchanged to subscribers.
  public var payload: JSONValue

  /// Creates a publish request.
  public init(id: String, channel: ChannelName, payload: JSONValue) {
    self.id = id
    self.channel = channel
    self.payload = payload
  }
}

/// A message from client to server.
public enum ClientFrame: Sendable, Hashable {
  /// Authenticate; must be first.
  case hello(Hello)
  /// Subscribe to a channel.
  case subscribe(SubscribeRequest)
  /// Unsubscribe from a channel.
  case unsubscribe(ChannelName)
  /// Publish to a channel.
  case publish(PublishRequest)
  /// Heartbeat.
  case ping

  /// The wire `type`.
  public var type: String {
    switch self {
    case .hello: "hello"
    case .subscribe: "subscribe"
    case .unsubscribe: "unsubscribe"
    case .publish: "publish"
    case .ping: "ping"
    }
  }
}

/// `welcome`: the server accepted the token.
public struct Welcome: Sendable, Hashable {
  /// The connection's id in server logs.
  public var session: String
  /// The server's clock.
  public var serverTime: RealtimeTimestamp
  /// How often the client sends `ping`, in milliseconds.
  public var heartbeatMilliseconds: Int
  /// How long past the heartbeat interval silence means a dead connection, in milliseconds.
  public var heartbeatTimeoutMilliseconds: Int
  /// The server's limits.
  public var limits: RealtimeLimits

  /// Creates a welcome message.
  public init(
    session: String,
    serverTime: RealtimeTimestamp,
    heartbeatMilliseconds: Int,
    heartbeatTimeoutMilliseconds: Int,
    limits: RealtimeLimits
  ) {
    self.session = session
    self.serverTime = serverTime
    self.heartbeatMilliseconds = heartbeatMilliseconds
    self.heartbeatTimeoutMilliseconds = heartbeatTimeoutMilliseconds
    self.limits = limits
  }
}

/// A channel's position, sent in `subscribed` and `reload`.
public struct ChannelPosition: Sendable, Hashable {
  /// The channel.
  public var channel: ChannelName
  /// The channel's current offset (0 before the first event).
  public var offset: UInt64
  /// The channel's epoch.
  public var epoch: String

  /// Creates a channel position.
  public init(channel: ChannelName, offset: UInt64, epoch: String) {
    self.channel = channel
    self.offset = offset
    self.epoch = epoch
  }
}

/// `event`: one message of a channel.
public struct RealtimeEvent: Sendable, Hashable {
  /// The channel.
  public var channel: ChannelName
  /// The event's offset: the previous event's plus one.
  public var offset: UInt64
  /// When the server accepted it.
  public var time: RealtimeTimestamp
  /// The payload as published.
  public var payload: JSONValue

  /// Creates an event.
  public init(channel: ChannelName, offset: UInt64, time: RealtimeTimestamp, payload: JSONValue) {
    self.channel = channel
    self.offset = offset
    self.time = time
    self.payload = payload
  }
}

/// `ack`: a publish was stored as an event.
public struct PublishAck: Sendable, Hashable {
  /// The client message id.
  public var id: String
  /// The channel.
  public var channel: ChannelName
  /// The offset of the event it became.
  public var offset: UInt64

  /// Creates an ack.
  public init(id: String, channel: ChannelName, offset: UInt64) {
    self.id = id
    self.channel = channel
    self.offset = offset
  }
}

/// Why a subscription ended.
public enum UnsubscribeReason: String, Sendable, Hashable {
  /// The client asked.
  case client
  /// The server withdrew access; do not re-subscribe automatically.
  case revoked
}

/// `error`: something the server could not accept.
public struct RealtimeError: Error, Sendable, Hashable {
  /// The error code.
  public var code: RealtimeErrorCode
  /// A human-readable explanation.
  public var message: String
  /// Whether the server closes the connection after it.
  public var fatal: Bool
  /// The publish id it concerns, if any.
  public var id: String?
  /// The channel it concerns, if any (as sent, so possibly not a valid name).
  public var channel: String?

  /// Creates an error message.
  public init(code: RealtimeErrorCode, message: String, fatal: Bool = false, id: String? = nil, channel: String? = nil)
  {
    self.code = code
    self.message = message
    self.fatal = fatal
    self.id = id
    self.channel = channel
  }
}

/// A message from server to client.
public enum ServerFrame: Sendable, Hashable {
  /// The token was accepted.
  case welcome(Welcome)
  /// A subscription is active; replay (if any) and live events follow.
  case subscribed(ChannelPosition)
  /// A resume was impossible: reload the channel's state over HTTP, then continue from this position.
  case reload(ChannelPosition)
  /// An event.
  case event(RealtimeEvent)
  /// A publish was accepted.
  case ack(PublishAck)
  /// A subscription ended.
  case unsubscribed(ChannelName, reason: UnsubscribeReason)
  /// An error.
  case error(RealtimeError)
  /// The answer to `ping`.
  case pong(time: RealtimeTimestamp)

  /// The wire `type`.
  public var type: String {
    switch self {
    case .welcome: "welcome"
    case .subscribed: "subscribed"
    case .reload: "reload"
    case .event: "event"
    case .ack: "ack"
    case .unsubscribed: "unsubscribed"
    case .error: "error"
    case .pong: "pong"
    }
  }
}
