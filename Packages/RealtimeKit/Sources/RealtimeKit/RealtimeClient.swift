import Foundation

/// Settings of a ``RealtimeClient``.
public struct RealtimeClientConfiguration: Sendable {
  /// Returns the bearer token for each connection attempt (so a renewed token is picked up on reconnect).
  public var token: @Sendable () async throws -> String
  /// The client's name, sent in `hello`.
  public var clientName: String
  /// The client's version, sent in `hello`.
  public var clientVersion: String
  /// The first reconnect delay; it doubles per failed attempt.
  public var reconnectBaseDelay: Duration
  /// The longest reconnect delay.
  public var reconnectMaxDelay: Duration
  /// How long to wait for `welcome` after connecting.
  public var connectTimeout: Duration
  /// Silence tolerated after the server's heartbeat interval before the connection is declared dead; `nil` uses the
  /// server's `heartbeatTimeoutMs`.
  public var heartbeatTimeout: Duration?
  /// How long to wait before re-sending a publish refused with `rate_limited` or `internal`.
  public var publishRetryDelay: Duration
  /// A random number in `0...1` for backoff jitter; replace it for deterministic tests.
  public var jitter: @Sendable () -> Double

  /// Creates a configuration.
  public init(
    clientName: String,
    clientVersion: String,
    reconnectBaseDelay: Duration = .milliseconds(500),
    reconnectMaxDelay: Duration = .seconds(30),
    connectTimeout: Duration = .seconds(10),
    heartbeatTimeout: Duration? = nil,
    publishRetryDelay: Duration = .seconds(1),
    jitter: @escaping @Sendable () -> Double = { Double.random(in: 0...1) },
    token: @escaping @Sendable () async throws -> String
  ) {
    self.token = token
    self.clientName = clientName
    self.clientVersion = clientVersion
    self.reconnectBaseDelay = reconnectBaseDelay
    self.reconnectMaxDelay = reconnectMaxDelay
    self.connectTimeout = connectTimeout
    self.heartbeatTimeout = heartbeatTimeout
    self.publishRetryDelay = publishRetryDelay
    self.jitter = jitter
  }

  /// The delay before reconnect attempt `attempt` (0-based): `d = min(max, base · 2^attempt)`, uniformly in `d/2...d`.
  public func reconnectDelay(attempt: Int) -> Duration {
    let exponential = reconnectBaseDelay * Double(1 << min(attempt, 20))
    let capped = min(exponential, reconnectMaxDelay)
    return capped / 2 + capped / 2 * min(1, max(0, jitter()))
  }
}

/// The state of a client's connection, reported on ``RealtimeClient/states``.
public enum RealtimeConnectionState: Sendable, Hashable {
  /// Connecting; `attempt` counts failures since the last `welcome`.
  case connecting(attempt: Int)
  /// Authenticated; subscriptions are being restored.
  case connected(session: String)
  /// Lost; the next attempt starts after `retryIn`.
  case disconnected(code: RealtimeCloseCode?, retryIn: Duration)
  /// Stopped for good: by ``RealtimeClient/stop()`` or a close that forbids reconnecting (4001).
  case stopped(code: RealtimeCloseCode?)
}

/// What a client reports on ``RealtimeClient/events``.
public enum RealtimeClientEvent: Sendable, Hashable {
  /// A channel event, exactly once and in offset order per channel, across reconnects.
  case event(RealtimeEvent)
  /// A subscription is active (again).
  case subscribed(ChannelPosition)
  /// Events were missed and are no longer retained: reload the channel's state over HTTP.
  case reload(ChannelPosition)
  /// A subscription ended; after `revoked` it is not restored.
  case unsubscribed(ChannelName, reason: UnsubscribeReason)
  /// The server reported an error.
  case error(RealtimeError)
}

/// Why a publish failed.
public enum RealtimeClientError: Error, Sendable, Hashable {
  /// The server refused it (e.g. `forbidden`); re-sending will not help.
  case rejected(RealtimeError)
  /// The client was stopped before the publish was acknowledged.
  case stopped
}

/// The client side of `meridian.v1`: connects, authenticates, subscribes, reconnects with exponential backoff and
/// jitter, resumes every channel from its last offset, watches the heartbeat and re-sends unacknowledged publishes with
/// their original ids.
///
/// ``events`` and ``states`` each support one consumer.
public actor RealtimeClient {
  /// Channel events, subscription changes and errors.
  public nonisolated let events: AsyncStream<RealtimeClientEvent>
  /// Connection state changes.
  public nonisolated let states: AsyncStream<RealtimeConnectionState>

  private let transport: any RealtimeClientTransport
  private let configuration: RealtimeClientConfiguration
  private let eventSink: AsyncStream<RealtimeClientEvent>.Continuation
  private let stateSink: AsyncStream<RealtimeConnectionState>.Continuation
  private let clock = ContinuousClock()

  private struct Subscription {
    var position: ResumePosition?
  }

  private struct PendingPublish {
    var request: PublishRequest
    var waiters: [Waiter]
  }

  private struct Waiter {
    let id: UInt64
    let continuation: CheckedContinuation<PublishAck, any Error>
  }

  private var subscriptions: [ChannelName: Subscription] = [:]
  private var subscriptionOrder: [ChannelName] = []
  private var outbox: [PendingPublish] = []
  private var nextWaiterID: UInt64 = 0
  private var connection: RealtimeClientConnection?
  private var connectionGeneration = 0
  private var welcome: Welcome?
  private var lastReceived = ContinuousClock.now
  private var runTask: Task<Void, Never>?
  private var stopped = false
  /// The current connection state.
  public private(set) var state: RealtimeConnectionState = .stopped(code: nil)
  /// The server's limits from the current connection's `welcome`; nil while not connected.
  public var limits: RealtimeLimits? { welcome?.limits }

  /// Creates a client; call ``start()`` to connect.
  public init(transport: some RealtimeClientTransport, configuration: RealtimeClientConfiguration) {
    self.transport = transport
    self.configuration = configuration
    (events, eventSink) = AsyncStream.makeStream()
    (states, stateSink) = AsyncStream.makeStream()
  }

  // MARK: Public API

  /// Starts connecting, and keeps reconnecting until ``stop()``.
  public func start() {
    guard runTask == nil, !stopped else { return }
    runTask = Task { await self.run() }
  }

  /// Closes the connection, fails pending publishes with ``RealtimeClientError/stopped`` and ends both streams.
  public func stop() async {
    guard !stopped else { return }
    stopped = true
    runTask?.cancel()
    if let connection { await connection.close(.normal) }
    connection = nil
    for pending in outbox {
      for waiter in pending.waiters { waiter.continuation.resume(throwing: RealtimeClientError.stopped) }
    }
    outbox = []
    setState(.stopped(code: .normal))
    eventSink.finish()
    stateSink.finish()
  }

  /// Subscribes to a channel (now, and after every reconnect), optionally resuming from a known position.
  public func subscribe(_ channel: ChannelName, resumingFrom position: ResumePosition? = nil) async {
    if subscriptions[channel] == nil { subscriptionOrder.append(channel) }
    subscriptions[channel] = Subscription(position: position ?? subscriptions[channel]?.position)
    guard welcome != nil else { return }
    await send(.subscribe(SubscribeRequest(channel: channel, resume: subscriptions[channel]?.position)))
  }

  /// Unsubscribes from a channel.
  public func unsubscribe(_ channel: ChannelName) async {
    guard subscriptions.removeValue(forKey: channel) != nil else { return }
    subscriptionOrder.removeAll { $0 == channel }
    guard welcome != nil else { return }
    await send(.unsubscribe(channel))
  }

  /// The last position processed on a channel, to persist and pass to ``subscribe(_:resumingFrom:)`` later.
  public func position(of channel: ChannelName) -> ResumePosition? {
    subscriptions[channel]?.position
  }

  /// Publishes a payload and waits for its `ack`, across reconnects: the publish stays in the outbox and is re-sent
  /// with the same `id` until acknowledged, so it is published exactly once.
  ///
  /// Cancelling the calling task withdraws the publish from the outbox (unless another call waits for the same id)
  /// and throws `CancellationError`; if it was sent already, the server may still have accepted it.
  ///
  /// - Throws: ``RealtimeClientError/rejected(_:)`` when the server refuses it for good,
  ///   ``RealtimeClientError/stopped`` when the client stops first.
  @discardableResult
  public func publish(_ payload: JSONValue, to channel: ChannelName, id: String = UUID().uuidString) async throws
    -> PublishAck
  {
    if stopped { throw RealtimeClientError.stopped }
    let request = PublishRequest(id: id, channel: channel, payload: payload)
    nextWaiterID += 1
    let waiterID = nextWaiterID
    return try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { continuation in
        let waiter = Waiter(id: waiterID, continuation: continuation)
        if Task.isCancelled {
          continuation.resume(throwing: CancellationError())
          return
        }
        if let index = outbox.firstIndex(where: { $0.request.id == id }) {
          outbox[index].waiters.append(waiter)
          return
        }
        outbox.append(PendingPublish(request: request, waiters: [waiter]))
        if welcome != nil {
          Task { await self.send(.publish(request)) }
        }
      }
    } onCancel: {
      Task { await self.withdraw(id, waiter: waiterID) }
    }
  }

  /// Ends one waiter of a publish with `CancellationError`, and drops the publish when nobody else waits for it.
  private func withdraw(_ id: String, waiter: UInt64) {
    guard let index = outbox.firstIndex(where: { $0.request.id == id }),
      let position = outbox[index].waiters.firstIndex(where: { $0.id == waiter })
    else { return }
    let removed = outbox[index].waiters.remove(at: position)
    if outbox[index].waiters.isEmpty { outbox.remove(at: index) }
    removed.continuation.resume(throwing: CancellationError())
  }

  /// The number of publishes waiting for an `ack`.
  public var pendingPublishCount: Int { outbox.count }

  // MARK: Connection loop

  private func setState(_ newState: RealtimeConnectionState) {
    state = newState
    stateSink.yield(newState)
  }

  private func run() async {
    var attempt = 0
    while !stopped, !Task.isCancelled {
      setState(.connecting(attempt: attempt))
      var code: RealtimeCloseCode?
      var welcomed = false
      do {
        let connection = try await transport.connect()
        (code, welcomed) = try await runConnection(connection)
      } catch {
        code = nil
      }
      connection = nil
      welcome = nil
      if stopped || Task.isCancelled { break }
      if let code, !code.allowsReconnect {
        stopped = true
        setState(.stopped(code: code))
        break
      }
      if welcomed { attempt = 0 }
      let delay = configuration.reconnectDelay(attempt: attempt)
      attempt += 1
      setState(.disconnected(code: code, retryIn: delay))
      do { try await Task.sleep(for: delay) } catch { break }
    }
  }

  private func runConnection(_ connection: RealtimeClientConnection) async throws -> (RealtimeCloseCode?, Bool) {
    connectionGeneration += 1
    let generation = connectionGeneration
    self.connection = connection
    lastReceived = clock.now
    let token = try await configuration.token()
    try await connection.send(
      RealtimeCodec.encode(
        .hello(Hello(token: token, clientName: configuration.clientName, clientVersion: configuration.clientVersion))
      )
    )
    // One mailbox for the socket's messages and the watchdog's verdict, so a dead socket ends the loop at once.
    let (mailbox, mailboxSink) = AsyncStream<RealtimeClientInbound>.makeStream()
    let forwarder = Task {
      for await message in connection.inbound { mailboxSink.yield(message) }
      mailboxSink.yield(.closed(code: nil, reason: "connection lost"))
    }
    let watchdog = Task { [weak self] in
      while !Task.isCancelled {
        guard let self, let tick = await self.watchdogTick(generation) else { break }
        if tick.dead {
          mailboxSink.yield(.closed(code: .heartbeatTimeout, reason: "no message from the server"))
          break
        }
        try? await Task.sleep(for: tick.next)
      }
    }
    defer {
      forwarder.cancel()
      watchdog.cancel()
      mailboxSink.finish()
    }
    var welcomed = false
    for await message in mailbox {
      switch message {
      case .text(let text):
        lastReceived = clock.now
        if await handle(text) { welcomed = true }
      case .closed(let code, _):
        if code == .heartbeatTimeout || code == nil { Task { await connection.close(.heartbeatTimeout) } }
        return (code, welcomed)
      }
      if stopped { return (.normal, welcomed) }
    }
    return (nil, welcomed)
  }

  /// Sends a ping when due and tells whether the connection is dead; `nil` when the connection is no longer current.
  private func watchdogTick(_ generation: Int) async -> (dead: Bool, next: Duration)? {
    guard generation == connectionGeneration, connection != nil, !stopped else { return nil }
    let silence = lastReceived.duration(to: clock.now)
    guard let welcome else {
      return (silence > configuration.connectTimeout, .milliseconds(100))
    }
    let interval = Duration.milliseconds(welcome.heartbeatMilliseconds)
    let timeout = configuration.heartbeatTimeout ?? .milliseconds(welcome.heartbeatTimeoutMilliseconds)
    if silence > interval + timeout { return (true, .zero) }
    await send(.ping)
    return (false, max(.milliseconds(10), min(interval, timeout)))
  }

  private func send(_ frame: ClientFrame) async {
    guard let connection else { return }
    try? await connection.send(RealtimeCodec.encode(frame))
  }

  /// Handles one server message; returns `true` for `welcome`.
  private func handle(_ text: String) async -> Bool {
    let frame: ServerFrame
    do {
      frame = try RealtimeCodec.decodeServerFrame(text)
    } catch {
      return false  // Unknown or malformed server messages are ignored (protocol §11).
    }
    switch frame {
    case .welcome(let welcome):
      self.welcome = welcome
      setState(.connected(session: welcome.session))
      for channel in subscriptionOrder {
        await send(.subscribe(SubscribeRequest(channel: channel, resume: subscriptions[channel]?.position)))
      }
      for pending in outbox { await send(.publish(pending.request)) }
      return true
    case .subscribed(let position):
      guard subscriptions[position.channel] != nil else { break }
      if subscriptions[position.channel]?.position == nil {
        subscriptions[position.channel]?.position = ResumePosition(offset: position.offset, epoch: position.epoch)
      }
      eventSink.yield(.subscribed(position))
    case .reload(let position):
      guard subscriptions[position.channel] != nil else { break }
      subscriptions[position.channel]?.position = ResumePosition(offset: position.offset, epoch: position.epoch)
      eventSink.yield(.reload(position))
    case .event(let event):
      guard let subscription = subscriptions[event.channel] else { break }
      if let position = subscription.position, event.offset <= position.offset { break }
      let epoch = subscription.position?.epoch ?? ""
      subscriptions[event.channel]?.position = ResumePosition(offset: event.offset, epoch: epoch)
      eventSink.yield(.event(event))
    case .ack(let ack):
      guard let index = outbox.firstIndex(where: { $0.request.id == ack.id }) else { break }
      let pending = outbox.remove(at: index)
      for waiter in pending.waiters { waiter.continuation.resume(returning: ack) }
    case .unsubscribed(let channel, let reason):
      if reason == .revoked {
        subscriptions[channel] = nil
        subscriptionOrder.removeAll { $0 == channel }
      }
      eventSink.yield(.unsubscribed(channel, reason: reason))
    case .error(let error):
      handleError(error)
    case .pong:
      break
    }
    return false
  }

  private func handleError(_ error: RealtimeError) {
    if let id = error.id, let index = outbox.firstIndex(where: { $0.request.id == id }) {
      if error.code.isRetryable {
        let delay = configuration.publishRetryDelay
        let request = outbox[index].request
        Task {
          try? await Task.sleep(for: delay)
          await self.resendIfPending(request)
        }
      } else {
        let pending = outbox.remove(at: index)
        for waiter in pending.waiters { waiter.continuation.resume(throwing: RealtimeClientError.rejected(error)) }
      }
    } else if error.id == nil, let raw = error.channel, let channel = ChannelName(raw),
      [.forbidden, .invalidChannel, .tooManySubscriptions].contains(error.code)
    {
      subscriptions[channel] = nil
      subscriptionOrder.removeAll { $0 == channel }
    }
    eventSink.yield(.error(error))
  }

  private func resendIfPending(_ request: PublishRequest) async {
    guard welcome != nil, outbox.contains(where: { $0.request.id == request.id }) else { return }
    await send(.publish(request))
  }
}
