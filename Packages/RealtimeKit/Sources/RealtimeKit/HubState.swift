import Foundation

enum Outbound: Sendable {
  case text(String)
  case close(RealtimeCloseCode, String)
}

/// A fixed-capacity FIFO that overwrites its oldest element.
struct Ring<Element> {
  private var storage: [Element] = []
  private var head = 0
  let capacity: Int

  init(capacity: Int) { self.capacity = capacity }

  var count: Int { storage.count }
  var first: Element? { storage.isEmpty ? nil : storage[head] }

  mutating func append(_ element: Element) -> Element? {
    guard capacity > 0 else { return element }
    if storage.count < capacity {
      storage.append(element)
      return nil
    }
    let evicted = storage[head]
    storage[head] = element
    head = (head + 1) % capacity
    return evicted
  }

  func forEach(_ body: (Element) -> Void) {
    for index in 0..<storage.count { body(storage[(head + index) % storage.count]) }
  }
}

extension RealtimePrincipal {
  /// Whether this principal has every one of `attributes`, with the same value.
  func carries(_ attributes: [String: String]) -> Bool {
    attributes.allSatisfy { self.attributes[$0.key] == $0.value }
  }
}

func currentTimestamp() -> RealtimeTimestamp { RealtimeTimestamp(Date().timeIntervalSince1970 * 1000) }

/// All mutable hub state, serialized by one actor. Nothing here awaits a socket: sends go into bounded queues.
actor HubState {
  struct Connection {
    let session: String
    let transport: any RealtimeServerConnection
    let queue: SendQueue
    let openedAt: ContinuousClock.Instant
    var lastSeen: ContinuousClock.Instant
    var principal: RealtimePrincipal?
    var subscriptions: Set<ChannelName> = []
    var tokens: Double
    var tokensUpdated: ContinuousClock.Instant
    var closing = false
  }

  struct Channel {
    var offset: UInt64 = 0
    /// The newest events, for resuming subscribers. The text of an event is made when it is sent: a payload
    /// published to several channels is kept once, and an event nobody receives is never spelled out.
    var history: Ring<(offset: UInt64, time: RealtimeTimestamp, payloadJSON: String)>
    /// The offset of the newest event dropped from ``history``: it holds every event after this one.
    var evicted: UInt64 = 0
    var subscribers: Set<UInt64> = []
  }

  struct DedupWindow {
    var acks: [String: PublishAck] = [:]
    var order: Ring<String>
  }

  enum SubscribeOutcome {
    case done
    case authorizationStale
  }

  let configuration: RealtimeHubConfiguration
  let epoch: String
  private let clock = ContinuousClock()
  private var nextID: UInt64 = 0
  /// Tells this hub's sessions from those of other hubs sharing its epoch (several servers on one log).
  private let instance = String(UInt32.random(in: 0...UInt32.max), radix: 36)
  private var connections: [UInt64: Connection] = [:]
  private var channels: [ChannelName: Channel] = [:]
  private var principals: [String: Set<UInt64>] = [:]
  private var dedup: [String: DedupWindow] = [:]
  /// With app-given offsets: events at or before this offset may have been published before this hub saw them
  /// (see ``RealtimeHub/setHistoryFloor(_:)``); 0 when the hub numbers its channels' events itself.
  private var historyFloor: UInt64 = 0
  /// Publishes admitted but not answered yet, by principal and id, with the connections that sent the same id again
  /// meanwhile (after a reconnect): they get the same answer, and the publish is handled once.
  private var inFlight: [String: [String: [UInt64]]] = [:]
  private(set) var revocationGeneration: UInt64 = 0
  /// Counts the app's disconnects (by principal or by attributes); an authentication notes it before it starts.
  private(set) var disconnectGeneration: UInt64 = 0
  /// The recent disconnects: a connection whose authentication started before one of them and that it matches is
  /// refused at `welcome` (its token may have been revoked while it was being checked). Kept for twice the hello
  /// timeout: a connection still unwelcomed by then is closed by the sweep anyway.
  private var recentDisconnects: [RecentDisconnect] = []
  private(set) var isShuttingDown = false

  struct RecentDisconnect {
    let generation: UInt64
    let at: ContinuousClock.Instant
    let principalID: String?
    let attributes: [String: String]

    func matches(_ principal: RealtimePrincipal) -> Bool {
      (principalID.map { $0 == principal.id } ?? true) && principal.carries(attributes)
    }
  }

  init(configuration: RealtimeHubConfiguration, epoch: String) {
    self.configuration = configuration
    self.epoch = epoch
  }

  // MARK: Connections

  func register(transport: any RealtimeServerConnection) -> UInt64 {
    nextID += 1
    let now = clock.now
    connections[nextID] = Connection(
      session: "\(epoch)-\(instance)-\(nextID)",
      transport: transport,
      queue: SendQueue(transport: transport, capacity: configuration.sendQueueCapacity),
      openedAt: now,
      lastSeen: now,
      tokens: Double(configuration.limits.publishBurst),
      tokensUpdated: now
    )
    if isShuttingDown { close(nextID, code: .serverShuttingDown, reason: "server shutting down") }
    return nextID
  }

  func unregister(_ id: UInt64) {
    guard let connection = connections.removeValue(forKey: id) else { return }
    detach(id, connection)
    connection.queue.stop()
  }

  private func detach(_ id: UInt64, _ connection: Connection) {
    for channel in connection.subscriptions { removeSubscriber(id, from: channel) }
    if let principal = connection.principal {
      principals[principal.id]?.remove(id)
      if principals[principal.id]?.isEmpty == true { principals[principal.id] = nil }
    }
  }

  private func removeSubscriber(_ id: UInt64, from channel: ChannelName) {
    channels[channel]?.subscribers.remove(id)
  }

  var connectionCount: Int { connections.count }

  func touch(_ id: UInt64) {
    connections[id]?.lastSeen = clock.now
  }

  func isOpen(_ id: UInt64) -> Bool {
    guard let connection = connections[id] else { return false }
    return !connection.closing
  }

  // MARK: Sending

  func send(_ id: UInt64, _ frame: ServerFrame) {
    enqueue(id, .text(RealtimeCodec.encode(frame)))
  }

  private func enqueue(_ id: UInt64, _ outbound: Outbound) {
    guard let connection = connections[id], !connection.closing else { return }
    switch connection.queue.enqueue(outbound) {
    case .enqueued: break
    case .dropped: dropSlowConsumer(id)
    case .terminated: connections[id]?.closing = true
    }
  }

  /// Sends `error` (if any) then closes through the queue, after whatever is already queued.
  func close(_ id: UInt64, code: RealtimeCloseCode, reason: String, error: RealtimeError? = nil) {
    guard var connection = connections[id], !connection.closing else { return }
    if let error { enqueue(id, .text(RealtimeCodec.encode(.error(error)))) }
    enqueue(id, .close(code, reason))
    guard connections[id]?.closing == false else { return }
    connection.closing = true
    detach(id, connection)
    connection.subscriptions = []
    connections[id] = connection
    connection.queue.finish()
  }

  private func dropSlowConsumer(_ id: UInt64) {
    guard var connection = connections[id], !connection.closing else { return }
    connection.closing = true
    detach(id, connection)
    connection.subscriptions = []
    connections[id] = connection
    connection.queue.stop()
    let transport = connection.transport
    let grace = configuration.slowConsumerGrace
    Task.detached {
      await withTaskGroup(of: Void.self) { group in
        group.addTask { await transport.close(code: .slowConsumer, reason: "send queue overflow") }
        group.addTask {
          try? await Task.sleep(for: grace)
          await transport.abort()
        }
        await group.waitForAll()
      }
    }
  }

  // MARK: Protocol

  /// Welcomes connection `id` as `principal`, whose authentication started at disconnect generation
  /// `authenticatedAt`; returns false, closing it with 4001, if a disconnect since then covers the principal.
  func welcome(_ id: UInt64, principal: RealtimePrincipal, authenticatedAt generation: UInt64) -> Bool {
    guard connections[id] != nil else { return false }
    if recentDisconnects.contains(where: { $0.generation > generation && $0.matches(principal) }) {
      close(
        id, code: .unauthorized, reason: "disconnected while signing in",
        error: RealtimeError(code: .unauthorized, message: "the session was ended while signing in", fatal: true))
      return false
    }
    if let limit = principal.maxConnections ?? configuration.maxConnectionsPerPrincipal,
      principals[principal.id, default: []].count >= limit
    {
      close(
        id, code: .tooManyConnections, reason: "too many connections",
        error: RealtimeError(
          code: .tooManyConnections, message: "this account already has \(limit) live connections; close one first",
          fatal: true))
      return false
    }
    connections[id]?.principal = principal
    principals[principal.id, default: []].insert(id)
    guard let session = connections[id]?.session else { return true }
    send(
      id,
      .welcome(
        Welcome(
          session: session,
          serverTime: currentTimestamp(),
          heartbeatMilliseconds: configuration.heartbeatInterval.milliseconds,
          heartbeatTimeoutMilliseconds: configuration.heartbeatTimeout.milliseconds,
          limits: configuration.limits
        )
      )
    )
    return true
  }

  func subscribe(_ id: UInt64, _ request: SubscribeRequest, authorizedAt generation: UInt64) -> SubscribeOutcome {
    guard let connection = connections[id], !connection.closing else { return .done }
    guard generation == revocationGeneration else { return .authorizationStale }
    let name = request.channel
    if !connection.subscriptions.contains(name) {
      guard connection.subscriptions.count < configuration.limits.maxSubscriptions else {
        send(
          id,
          .error(
            RealtimeError(
              code: .tooManySubscriptions,
              message: "at most \(configuration.limits.maxSubscriptions) subscriptions per connection",
              channel: name.rawValue
            )
          )
        )
        return .done
      }
      connections[id]?.subscriptions.insert(name)
    }
    // Taken out of the dictionary while it changes, so its history and subscribers are not copied on write.
    var channel = channels.removeValue(forKey: name) ?? Channel(history: Ring(capacity: configuration.historyCapacity))
    channel.subscribers.insert(id)
    channels[name] = channel
    let current = max(channel.offset, historyFloor)
    let position = ChannelPosition(channel: name, offset: current, epoch: epoch)
    send(id, .subscribed(position))
    guard let resume = request.resume, resume.offset != current || resume.epoch != epoch else { return .done }
    // The history holds every event after `complete`: a resume from there on replays exactly what was missed.
    let complete = max(channel.evicted, historyFloor)
    guard resume.epoch == epoch, resume.offset < current, resume.offset >= complete else {
      send(id, .reload(position))
      return .done
    }
    channel.history.forEach { entry in
      guard entry.offset > resume.offset else { return }
      let text = RealtimeCodec.encodeEvent(
        channel: name, offset: entry.offset, time: entry.time, payloadJSON: entry.payloadJSON)
      enqueue(id, .text(text))
    }
    return .done
  }

  func unsubscribe(_ id: UInt64, _ name: ChannelName) {
    guard connections[id] != nil else { return }
    connections[id]?.subscriptions.remove(name)
    removeSubscriber(id, from: name)
    send(id, .unsubscribed(name, reason: .client))
  }

  /// Checks a publish against the deduplication window and the connection's rate limit. Returns `true` when it may
  /// go ahead; otherwise it has been answered already (the original `ack` of a re-sent id, or `rate_limited`).
  func admitPublish(_ id: UInt64, principalID: String, _ request: PublishRequest) -> Bool {
    guard var connection = connections[id], !connection.closing else { return false }
    if let ack = dedup[principalID]?.acks[request.id] {
      send(id, .ack(ack))
      return false
    }
    if inFlight[principalID]?[request.id] != nil {
      inFlight[principalID]?[request.id]?.append(id)
      return false
    }
    let now = clock.now
    let elapsed = connection.tokensUpdated.duration(to: now)
    let refill = Double(elapsed.milliseconds) / 1000 * Double(configuration.limits.publishPerSecond)
    connection.tokens = min(Double(configuration.limits.publishBurst), connection.tokens + refill)
    connection.tokensUpdated = now
    guard connection.tokens >= 1 else {
      connections[id] = connection
      send(
        id,
        .error(
          RealtimeError(
            code: .rateLimited,
            message: "more than \(configuration.limits.publishPerSecond) publishes per second; re-send later",
            id: request.id,
            channel: request.channel.rawValue
          )
        )
      )
      return false
    }
    connection.tokens -= 1
    connections[id] = connection
    inFlight[principalID, default: [:]][request.id] = []
    return true
  }

  /// The connections waiting for the answer to an admitted publish: the one that sent it and any that re-sent it.
  private func finish(_ id: UInt64, principalID: String, _ request: PublishRequest) -> [UInt64] {
    let waiting = inFlight[principalID]?.removeValue(forKey: request.id) ?? []
    if inFlight[principalID]?.isEmpty == true { inFlight[principalID] = nil }
    return [id] + waiting.filter { $0 != id }
  }

  /// Answers an admitted publish the app refused with `error`; a re-send may try again.
  func refuse(_ id: UInt64, principalID: String, _ request: PublishRequest, _ error: RealtimeError) {
    for waiter in finish(id, principalID: principalID, request) { send(waiter, .error(error)) }
  }

  /// Publishes an admitted request's payload as is and acknowledges it.
  func publish(_ id: UInt64, principalID: String, _ request: PublishRequest) {
    acknowledge(id, principalID: principalID, request, offset: append(request.payload, to: request.channel))
  }

  /// Remembers an admitted publish as done (a re-sent id gets the same `ack`) and sends its `ack`.
  func acknowledge(_ id: UInt64, principalID: String, _ request: PublishRequest, offset: UInt64) {
    let ack = PublishAck(id: request.id, channel: request.channel, offset: offset)
    var window =
      dedup.removeValue(forKey: principalID) ?? DedupWindow(order: Ring(capacity: configuration.deduplicationCapacity))
    window.acks[request.id] = ack
    if let evicted = window.order.append(request.id) { window.acks[evicted] = nil }
    dedup[principalID] = window
    for waiter in finish(id, principalID: principalID, request) { send(waiter, .ack(ack)) }
  }

  /// Appends an event and fans it out; returns its offset.
  func append(_ payload: JSONValue, to name: ChannelName) -> UInt64 {
    append(payloadJSON: payload.jsonText, to: name, time: currentTimestamp(), offset: nil)
  }

  /// Appends one event with the same payload to each channel (the payload encoded once); returns their offsets.
  func append(_ payload: JSONValue, to names: [ChannelName]) -> [UInt64] {
    append([(payload, names)])[0]
  }

  /// Appends each payload to its channels (each payload encoded once); returns each one's offsets, in order.
  /// With `offsets` (one per payload, increasing), each payload takes its offset in all its channels, and a channel
  /// that already has that offset or a later one skips it (it was delivered before).
  func append(_ events: [(payload: JSONValue, channels: [ChannelName])], offsets: [UInt64]? = nil) -> [[UInt64]] {
    let time = currentTimestamp()
    return events.indices.map { index in
      let event = events[index]
      let payloadJSON = event.payload.jsonText
      let given = offsets?[index]
      return event.channels.map { append(payloadJSON: payloadJSON, to: $0, time: time, offset: given) }
    }
  }

  /// Appends the events only if every principal subscribed to one of their channels passes `mayReceive`; else nil.
  func append(
    _ events: [(payload: JSONValue, channels: [ChannelName])], offsets: [UInt64]? = nil,
    ifEverySubscriber mayReceive: (ChannelName, RealtimePrincipal) -> Bool
  ) -> [[UInt64]]? {
    var checked: Set<ChannelName> = []
    for event in events {
      for name in event.channels where checked.insert(name).inserted {
        if subscribedPrincipals(of: name).contains(where: { !mayReceive(name, $0) }) { return nil }
      }
    }
    return append(events, offsets: offsets)
  }

  /// Raises the history floor (never lowers it): see ``RealtimeHub/setHistoryFloor(_:)``.
  func raiseHistoryFloor(_ offset: UInt64) { historyFloor = max(historyFloor, offset) }

  /// Drops the kept events of `names`: see ``RealtimeHub/forgetHistory(of:)``.
  func forgetHistory(of names: [ChannelName]) {
    for name in names {
      guard var channel = channels.removeValue(forKey: name) else { continue }
      channel.history = Ring(capacity: configuration.historyCapacity)
      channel.evicted = channel.offset
      channels[name] = channel
    }
  }

  private func append(payloadJSON: String, to name: ChannelName, time: RealtimeTimestamp, offset given: UInt64?)
    -> UInt64
  {
    // Taken out of the dictionary while it changes, so its history and subscribers are not copied on write.
    var channel = channels.removeValue(forKey: name) ?? Channel(history: Ring(capacity: configuration.historyCapacity))
    if let given {
      guard given > channel.offset else {
        channels[name] = channel
        return given
      }
      channel.offset = given
    } else {
      channel.offset += 1
    }
    if let dropped = channel.history.append((channel.offset, time, payloadJSON)) { channel.evicted = dropped.offset }
    channels[name] = channel
    if !channel.subscribers.isEmpty {
      let text = RealtimeCodec.encodeEvent(channel: name, offset: channel.offset, time: time, payloadJSON: payloadJSON)
      for subscriber in channel.subscribers { enqueue(subscriber, .text(text)) }
    }
    return channel.offset
  }

  func position(of name: ChannelName) -> ChannelPosition {
    ChannelPosition(channel: name, offset: max(channels[name]?.offset ?? 0, historyFloor), epoch: epoch)
  }

  // MARK: App-side controls

  func revoke(channel name: ChannelName, principalID: String?) {
    revocationGeneration += 1
    let ids: [UInt64]
    if let principalID {
      ids = Array(principals[principalID] ?? [])
    } else {
      ids = Array(channels[name]?.subscribers ?? [])
    }
    for id in ids where connections[id]?.subscriptions.contains(name) == true {
      connections[id]?.subscriptions.remove(name)
      removeSubscriber(id, from: name)
      send(id, .unsubscribed(name, reason: .revoked))
    }
  }

  func disconnect(principalID: String, code: RealtimeCloseCode, reason: String) {
    remember(principalID: principalID, attributes: [:])
    for id in principals[principalID] ?? [] { close(id, code: code, reason: reason) }
  }

  /// Closes the connections whose principal carries every one of `attributes`; returns how many.
  func disconnect(matching attributes: [String: String], code: RealtimeCloseCode, reason: String) -> Int {
    remember(principalID: nil, attributes: attributes)
    let matching = connections.filter { _, connection in
      guard let principal = connection.principal, !connection.closing else { return false }
      return principal.carries(attributes)
    }
    for id in matching.keys { close(id, code: code, reason: reason) }
    return matching.count
  }

  func abort(principalID: String) -> [any RealtimeServerConnection] {
    remember(principalID: principalID, attributes: [:])
    return (principals[principalID] ?? []).compactMap { connections[$0]?.transport }
  }

  private func remember(principalID: String?, attributes: [String: String]) {
    disconnectGeneration += 1
    recentDisconnects.append(
      RecentDisconnect(
        generation: disconnectGeneration, at: clock.now, principalID: principalID, attributes: attributes))
  }

  func presence(of names: [ChannelName]) -> [[RealtimePrincipal]] {
    names.map(presence(of:))
  }

  func presence(of name: ChannelName) -> [RealtimePrincipal] {
    var seen: Set<String> = []
    return subscribedPrincipals(of: name).filter { seen.insert($0.id).inserted }.sorted { $0.id < $1.id }
  }

  func subscriberCounts(namespace: String) -> [String: Int] {
    var counts: [String: Int] = [:]
    for (name, channel) in channels where name.namespace == namespace && !channel.subscribers.isEmpty {
      counts[name.id] = channel.subscribers.count
    }
    return counts
  }

  /// The principals of the connections subscribed to `name` (one per connection, so a principal may repeat), computed
  /// as they are read.
  private func subscribedPrincipals(of name: ChannelName) -> some Sequence<RealtimePrincipal> {
    (channels[name]?.subscribers ?? []).lazy.compactMap { self.connections[$0]?.principal }
  }

  // MARK: Housekeeping

  func sweep() {
    let now = clock.now
    recentDisconnects.removeAll { $0.at.duration(to: now) > configuration.helloTimeout * 2 }
    let silenceLimit = configuration.heartbeatInterval + configuration.heartbeatTimeout
    for (id, connection) in connections where !connection.closing {
      if connection.principal == nil, connection.openedAt.duration(to: now) > configuration.helloTimeout {
        close(
          id,
          code: .protocolViolation,
          reason: "no hello",
          error: RealtimeError(code: .protocolViolation, message: "no hello within the hello timeout", fatal: true)
        )
      } else if connection.lastSeen.duration(to: now) > silenceLimit {
        close(id, code: .heartbeatTimeout, reason: "heartbeat timeout")
      }
    }
  }

  func shutdown() {
    isShuttingDown = true
    for id in connections.keys { close(id, code: .serverShuttingDown, reason: "server shutting down") }
  }
}
