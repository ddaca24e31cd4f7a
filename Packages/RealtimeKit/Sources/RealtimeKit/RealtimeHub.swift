import Foundation

/// The server side of `meridian.v1`: authenticates connections, authorizes every subscribe and publish through the
/// app's hooks, fans events out in offset order, keeps bounded per-channel history for resume, deduplicates publishes,
/// enforces limits and heartbeats, and closes slow consumers without making anyone else wait.
///
/// Transport-independent: an adapter (such as `RealtimeKitHummingbird`) calls ``serve(connection:inbound:)`` for each
/// accepted socket. Run ``run()`` for heartbeat enforcement; cancelling it shuts the hub down gracefully.
public final class RealtimeHub: Sendable {
  /// Turns a bearer token into a principal; `nil` or a thrown error rejects the token (close 4001).
  public typealias Authenticate = @Sendable (_ token: String) async throws -> RealtimePrincipal?
  /// Decides whether a principal may subscribe or publish to a channel.
  public typealias Authorize =
    @Sendable (_ principal: RealtimePrincipal, _ access: RealtimeAccess, _ channel: ChannelName) async throws -> Bool
  /// Takes over an authorized, admitted client `publish` instead of the hub fanning its payload out as is: for apps
  /// that validate and store what clients send and then publish the result themselves with ``publish(_:to:)``.
  ///
  /// Returning acknowledges the publish (a re-sent id gets the same `ack` without a second call). Throwing a
  /// ``RealtimeError`` answers with it (its `id` and `channel` set to the publish's); any other error answers
  /// `internal`, which the client retries.
  public typealias Receive = @Sendable (_ principal: RealtimePrincipal, _ request: PublishRequest) async throws -> Void

  /// The settings the hub was created with.
  public let configuration: RealtimeHubConfiguration
  /// The epoch of every channel's offsets in this hub.
  public let epoch: String
  let state: HubState
  let authenticate: Authenticate
  let authorize: Authorize
  let receive: Receive?

  /// Creates a hub.
  ///
  /// - Parameters:
  ///   - configuration: limits, timeouts and queue sizes.
  ///   - authenticate: called once per connection with the `hello` token.
  ///   - authorize: called on every subscribe and publish; allow everything by default.
  ///   - receive: handles clients' publishes in place of the hub's fan-out; by default the hub publishes their
  ///     payloads as they are.
  public init(
    configuration: RealtimeHubConfiguration = RealtimeHubConfiguration(),
    authenticate: @escaping Authenticate,
    authorize: @escaping Authorize = { _, _, _ in true },
    receive: Receive? = nil
  ) {
    self.configuration = configuration
    let epoch = configuration.epoch ?? String(UInt32.random(in: 0...UInt32.max), radix: 36)
    self.epoch = epoch
    self.state = HubState(configuration: configuration, epoch: epoch)
    self.authenticate = authenticate
    self.authorize = authorize
    self.receive = receive
  }

  // MARK: Serving connections

  /// Serves one connection until its inbound messages end; rethrows the inbound sequence's error after cleanup.
  public func serve<Inbound: AsyncSequence>(connection: some RealtimeServerConnection, inbound: Inbound) async throws
  where Inbound.Element == RealtimeInboundMessage {
    let id = await state.register(transport: connection)
    var session = Session(id: id)
    do {
      for try await message in inbound {
        await handle(message, session: &session)
      }
    } catch {
      await state.unregister(id)
      throw error
    }
    await state.unregister(id)
  }

  struct Session {
    let id: UInt64
    var helloSeen = false
    var principal: RealtimePrincipal?
  }

  func handle(_ message: RealtimeInboundMessage, session: inout Session) async {
    let id = session.id
    guard await state.isOpen(id) else { return }
    await state.touch(id)
    let text: String
    switch message {
    case .binary:
      await violation(id, "binary messages are not allowed; send JSON text")
      return
    case .text(let value):
      text = value
    }
    let frame: ClientFrame
    do {
      frame = try RealtimeCodec.decodeClientFrame(text, maxBytes: configuration.limits.maxFrameBytes)
    } catch {
      if error.isTooLarge {
        await state.close(id, code: .messageTooBig, reason: "message too big")
      } else if session.principal == nil {
        await violation(id, "the first message must be a valid hello (\(error.message))")
      } else {
        await state.send(id, .error(error.errorFrame))
      }
      return
    }
    if case .hello(let hello) = frame {
      guard !session.helloSeen else {
        await violation(id, "hello was already sent")
        return
      }
      session.helloSeen = true
      await handleHello(hello, session: &session)
      return
    }
    guard let principal = session.principal else {
      await violation(id, "the first message must be hello")
      return
    }
    switch frame {
    case .hello, .ping:
      await state.send(id, .pong(time: currentTimestamp()))
    case .subscribe(let request):
      await subscribe(id, principal: principal, request)
    case .unsubscribe(let channel):
      await state.unsubscribe(id, channel)
    case .publish(let request):
      await publish(id, principal: principal, request)
    }
  }

  func violation(_ id: UInt64, _ message: String) async {
    await state.close(
      id,
      code: .protocolViolation,
      reason: "protocol violation",
      error: RealtimeError(code: .protocolViolation, message: message, fatal: true)
    )
  }

  func handleHello(_ hello: Hello, session: inout Session) async {
    // A disconnect that lands while the token is checked (a sign-out) must still end this session: note when.
    let generation = await state.disconnectGeneration
    let principal: RealtimePrincipal?
    do {
      principal = try await authenticate(hello.token)
    } catch {
      principal = nil
    }
    guard let principal else {
      await state.close(
        session.id,
        code: .unauthorized,
        reason: "unauthorized",
        error: RealtimeError(code: .unauthorized, message: "the token is missing, invalid or expired", fatal: true)
      )
      return
    }
    guard await state.welcome(session.id, principal: principal, authenticatedAt: generation) else { return }
    session.principal = principal
    for request in hello.resume { await subscribe(session.id, principal: principal, request) }
  }

  func servesNamespace(of channel: ChannelName) -> Bool {
    configuration.namespaces?.contains(channel.namespace) ?? true
  }

  func subscribe(_ id: UInt64, principal: RealtimePrincipal, _ request: SubscribeRequest) async {
    let channel = request.channel
    guard servesNamespace(of: channel) else {
      await state.send(id, .error(namespaceError(channel)))
      return
    }
    // A revocation that lands while the hook runs invalidates its answer: ask again.
    for _ in 0..<8 {
      let generation = await state.revocationGeneration
      guard await isAllowed(id, principal, .subscribe, channel, publishID: nil) else { return }
      if await state.subscribe(id, request, authorizedAt: generation) == .done { return }
    }
  }

  func publish(_ id: UInt64, principal: RealtimePrincipal, _ request: PublishRequest) async {
    guard servesNamespace(of: request.channel) else {
      var error = namespaceError(request.channel)
      error.id = request.id
      await state.send(id, .error(error))
      return
    }
    guard await isAllowed(id, principal, .publish, request.channel, publishID: request.id),
      await state.admitPublish(id, principalID: principal.id, request)
    else { return }
    guard let receive else {
      await state.publish(id, principalID: principal.id, request)
      return
    }
    do {
      try await receive(principal, request)
      let offset = await state.position(of: request.channel).offset
      await state.acknowledge(id, principalID: principal.id, request, offset: offset)
    } catch {
      var answer =
        error as? RealtimeError
        ?? RealtimeError(code: .internal, message: "could not handle the publish; retry later")
      answer.id = request.id
      answer.channel = request.channel.rawValue
      await state.refuse(id, principalID: principal.id, request, answer)
    }
  }

  func namespaceError(_ channel: ChannelName) -> RealtimeError {
    RealtimeError(
      code: .invalidChannel,
      message: "this server does not serve the namespace `\(channel.namespace)`",
      channel: channel.rawValue
    )
  }

  func isAllowed(
    _ id: UInt64,
    _ principal: RealtimePrincipal,
    _ access: RealtimeAccess,
    _ channel: ChannelName,
    publishID: String?
  ) async -> Bool {
    let verb = access == .subscribe ? "subscribe to" : "publish to"
    do {
      if try await authorize(principal, access, channel) { return true }
      await state.send(
        id,
        .error(
          RealtimeError(
            code: .forbidden, message: "not allowed to \(verb) \(channel)", id: publishID, channel: channel.rawValue)
        )
      )
    } catch {
      await state.send(
        id,
        .error(
          RealtimeError(
            code: .internal,
            message: "could not check access to \(channel); retry later",
            id: publishID,
            channel: channel.rawValue
          )
        )
      )
    }
    return false
  }

  // MARK: Lifecycle

  /// Enforces heartbeats and hello timeouts until cancelled, then shuts down gracefully (close 4004 for everyone).
  public func run() async {
    let period = min(configuration.heartbeatInterval, configuration.helloTimeout) / 4
    while !Task.isCancelled {
      do {
        try await Task.sleep(for: max(period, .milliseconds(50)))
      } catch {
        break
      }
      await state.sweep()
    }
    await shutdown()
  }

  /// Closes every connection with ``RealtimeCloseCode/serverShuttingDown`` after what is already queued for it,
  /// refuses new ones the same way, and waits up to ``RealtimeHubConfiguration/shutdownTimeout`` for them to end.
  public func shutdown() async {
    await state.shutdown()
    let deadline = ContinuousClock.now + configuration.shutdownTimeout
    while await state.connectionCount > 0, ContinuousClock.now < deadline {
      try? await Task.sleep(for: .milliseconds(20))
    }
  }

  // MARK: App-side API

  /// Publishes an event from the app (for example a stored fix to `user:<id>`) and returns its offset.
  @discardableResult
  public func publish(_ payload: JSONValue, to channel: ChannelName) async -> UInt64 {
    await state.append(payload, to: channel)
  }

  /// Publishes one event with the same payload to each of `channels` (the payload is encoded once) and returns
  /// their offsets, in order.
  @discardableResult
  public func publish(_ payload: JSONValue, to channels: [ChannelName]) async -> [UInt64] {
    await state.append(payload, to: channels)
  }

  /// Publishes several payloads, each to its channels, in one step on the hub (a batch of app events costs one
  /// hop, not one each); each payload is encoded once. Returns each payload's offsets, in order.
  ///
  /// By default each event takes its channel's next offset. Hubs on several servers that fan out one shared log (a
  /// database's) pass `offsets` instead, one per payload, increasing: the log's sequence numbers. A payload then
  /// takes its offset in every one of its channels, so an offset means the same event on every server (offsets
  /// skip values: each channel sees only its own events of the log), and a channel that already reached that
  /// offset skips the payload (a log read twice delivers nothing twice). Give the same hub's events offsets always
  /// or never, under one ``RealtimeHubConfiguration/epoch`` shared by those servers, and see ``setHistoryFloor(_:)``.
  @discardableResult
  public func publish(_ events: [(payload: JSONValue, channels: [ChannelName])], offsets: [UInt64]? = nil) async
    -> [[UInt64]]
  {
    precondition(offsets.map { $0.count == events.count } ?? true, "one offset per event")
    return events.isEmpty ? [] : await state.append(events, offsets: offsets)
  }

  /// Publishes `events` as ``publish(_:offsets:)`` does, but only if every principal now subscribed to one of their
  /// channels passes `mayReceive`: the check and the publish are one step on the hub, so nobody joins or leaves in
  /// between. Returns each payload's offsets, or `nil` when a subscriber failed the check and nothing was published
  /// (revoke who may no longer receive, then publish again).
  @discardableResult
  public func publish(
    _ events: [(payload: JSONValue, channels: [ChannelName])], offsets: [UInt64]? = nil,
    ifEverySubscriber mayReceive: @escaping @Sendable (ChannelName, RealtimePrincipal) -> Bool
  ) async -> [[UInt64]]? {
    precondition(offsets.map { $0.count == events.count } ?? true, "one offset per event")
    return events.isEmpty ? [] : await state.append(events, offsets: offsets, ifEverySubscriber: mayReceive)
  }

  /// For a hub whose events carry a shared log's offsets (``publish(_:offsets:)``): events at or before `offset`
  /// may have been published before this hub saw them — it started, or caught up after losing its log, at that
  /// point. A resume from an older offset is answered with `reload` (never with a silent gap), and a channel with no
  /// events since reports `offset` as its position. The floor only rises.
  public func setHistoryFloor(_ offset: UInt64) async {
    await state.raiseHistoryFloor(offset)
  }

  /// Drops the events `channels` keep for resuming subscribers, keeping their offsets: a resume from before now is
  /// answered with `reload`, never with an event kept from before. Call when who may receive a channel's events
  /// changed, so that an event published for one audience is never replayed to another.
  public func forgetHistory(of channels: [ChannelName]) async {
    await state.forgetHistory(of: channels)
  }

  /// Withdraws a principal's live access to a channel at once: its subscriptions end with `unsubscribed`
  /// (`revoked`), and authorization answers given before this call are not used. Pass `nil` to revoke everyone.
  ///
  /// Make the authorization hook refuse the access first, so that a re-subscribe is refused too.
  public func revoke(_ channel: ChannelName, from principalID: String?) async {
    await state.revoke(channel: channel, principalID: principalID)
  }

  /// Closes every connection of a principal with `code`; with `nil`, drops them without a close handshake. A
  /// connection of the principal whose `hello` is being authenticated meanwhile is refused with 4001 once it is.
  public func disconnect(principalID: String, code: RealtimeCloseCode? = .normal, reason: String = "disconnected")
    async
  {
    if let code {
      await state.disconnect(principalID: principalID, code: code, reason: reason)
    } else {
      for connection in await state.abort(principalID: principalID) { await connection.abort() }
    }
  }

  /// Closes with `code` every connection whose principal carries all of `attributes` (for instance the session a
  /// signed-out token opened, when the app put the token's id among the attributes); returns how many it closed.
  /// A matching connection whose `hello` is being authenticated meanwhile is refused with 4001 once it is.
  /// - Precondition: `attributes` is not empty (that would close everyone; use ``shutdown()``).
  @discardableResult
  public func disconnect(matching attributes: [String: String], code: RealtimeCloseCode, reason: String) async -> Int {
    precondition(!attributes.isEmpty, "disconnect(matching:) needs at least one attribute")
    return await state.disconnect(matching: attributes, code: code, reason: reason)
  }

  /// The distinct principals currently subscribed to a channel.
  public func presence(of channel: ChannelName) async -> [RealtimePrincipal] {
    await state.presence(of: channel)
  }

  /// The distinct principals currently subscribed to each of `channels`, in order, read in one step.
  public func presence(of channels: [ChannelName]) async -> [[RealtimePrincipal]] {
    channels.isEmpty ? [] : await state.presence(of: channels)
  }

  /// How many connections are subscribed to each channel of `namespace` that has any, by channel id (a principal
  /// with several connections counts each).
  public func subscriberCounts(namespace: String) async -> [String: Int] {
    await state.subscriberCounts(namespace: namespace)
  }

  /// A channel's current offset and epoch.
  public func position(of channel: ChannelName) async -> ChannelPosition {
    await state.position(of: channel)
  }

  /// The number of open connections.
  public var connectionCount: Int {
    get async { await state.connectionCount }
  }
}
