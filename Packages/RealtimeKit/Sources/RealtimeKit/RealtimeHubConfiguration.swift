/// Settings of a ``RealtimeHub``; the defaults are the protocol's (§8, §9).
public struct RealtimeHubConfiguration: Sendable {
  /// Limits announced in `welcome` and enforced.
  public var limits: RealtimeLimits
  /// How often clients must send something.
  public var heartbeatInterval: Duration
  /// Extra silence tolerated after the interval before closing with ``RealtimeCloseCode/heartbeatTimeout``.
  public var heartbeatTimeout: Duration
  /// How long a connection may stay without `hello`.
  public var helloTimeout: Duration
  /// Messages queued per connection before it is closed as a slow consumer.
  public var sendQueueCapacity: Int
  /// Events retained per channel for resume.
  public var historyCapacity: Int
  /// Publish ids remembered per principal for deduplication.
  public var deduplicationCapacity: Int
  /// Connections one principal may hold at once; a further `hello` is refused with close 4006. `nil` allows any
  /// number.
  public var maxConnectionsPerPrincipal: Int?
  /// Channel namespaces accepted; `nil` accepts any valid namespace.
  public var namespaces: Set<String>?
  /// How long a slow consumer gets to take its close frame before it is dropped.
  public var slowConsumerGrace: Duration
  /// How long ``RealtimeHub/shutdown()`` waits for clients to take their close frames.
  public var shutdownTimeout: Duration
  /// The epoch of every channel's offsets; a random one per hub when `nil`. History lives in memory, so a new hub
  /// process must not reuse an old epoch.
  public var epoch: String?

  /// Creates a configuration.
  public init(
    limits: RealtimeLimits = RealtimeLimits(),
    heartbeatInterval: Duration = .seconds(15),
    heartbeatTimeout: Duration = .seconds(10),
    helloTimeout: Duration = .seconds(10),
    sendQueueCapacity: Int = 1024,
    historyCapacity: Int = 512,
    deduplicationCapacity: Int = 1024,
    namespaces: Set<String>? = ["user", "group", "venue"],
    slowConsumerGrace: Duration = .seconds(2),
    shutdownTimeout: Duration = .seconds(5),
    epoch: String? = nil,
    maxConnectionsPerPrincipal: Int? = nil
  ) {
    self.maxConnectionsPerPrincipal = maxConnectionsPerPrincipal
    self.limits = limits
    self.heartbeatInterval = heartbeatInterval
    self.heartbeatTimeout = heartbeatTimeout
    self.helloTimeout = helloTimeout
    self.sendQueueCapacity = sendQueueCapacity
    self.historyCapacity = historyCapacity
    self.deduplicationCapacity = deduplicationCapacity
    self.namespaces = namespaces
    self.slowConsumerGrace = slowConsumerGrace
    self.shutdownTimeout = shutdownTimeout
    self.epoch = epoch
  }
}

extension Duration {
  var milliseconds: Int {
    let (seconds, attoseconds) = components
    return Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000)
  }
}
