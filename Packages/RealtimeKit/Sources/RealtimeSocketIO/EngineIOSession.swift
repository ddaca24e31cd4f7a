import RealtimeKit
import Synchronization

/// The settings of an ``EngineIOServer``.
public struct EngineIOConfiguration: Sendable {
  /// How often the server pings each session.
  public var pingInterval: Duration
  /// How long a session may take to answer a ping before it is closed.
  public var pingTimeout: Duration
  /// The largest polling body or WebSocket message accepted, in bytes; a larger one closes the session.
  public var maxPayload: Int
  /// The most packets waiting for a client to take them (a poll or a slow WebSocket); past it the session is closed:
  /// a slow consumer is dropped, never made to lose packets silently.
  public var maxBufferedPackets: Int
  /// The most received messages (a POST's payload, a WebSocket message) waiting for the application; at it the
  /// client is slowed down, never dropped: a long-polling `POST` is answered once there is room, and a WebSocket is
  /// not read until the queue is half empty (what one read already holds still goes in).
  public var maxQueuedMessages: Int
  /// The most sessions open at once; a handshake past it is refused (`503`).
  public var maxSessions: Int
  /// How long a session may stay open before the application calls ``EngineIOSession/establish()`` (a client that
  /// never signs in); nil for no such deadline.
  public var establishTimeout: Duration?
  /// How long a WebSocket that answered the upgrade probe may take to complete the upgrade; then it is turned away
  /// and polling goes on (meanwhile each poll is answered at once with a `noop`).
  public var upgradeTimeout: Duration

  /// Creates a configuration; the defaults are Socket.IO's (25 s, 20 s, 1 MB, 10 s).
  public init(
    pingInterval: Duration = .seconds(25), pingTimeout: Duration = .seconds(20), maxPayload: Int = 1_000_000,
    maxBufferedPackets: Int = 1_000, maxQueuedMessages: Int = 64, maxSessions: Int = 10_000,
    establishTimeout: Duration? = nil, upgradeTimeout: Duration = .seconds(10)
  ) {
    self.pingInterval = pingInterval
    self.pingTimeout = pingTimeout
    self.maxPayload = maxPayload
    self.maxBufferedPackets = maxBufferedPackets
    self.maxQueuedMessages = maxQueuedMessages
    self.maxSessions = maxSessions
    self.establishTimeout = establishTimeout
    self.upgradeTimeout = upgradeTimeout
  }
}

/// One Engine.IO session: its transport (HTTP long-polling, then maybe a WebSocket after an upgrade, or a WebSocket
/// from the start), the packets waiting for the client, and its heartbeat. Transport-independent: an adapter hands it
/// what arrives and takes what it sends through ``EngineIOServer``.
public final class EngineIOSession: Sendable {
  /// A WebSocket attached to the session, with the id that tells it from another one.
  struct WebSocket: Sendable {
    let id: UInt64
    let connection: any RealtimeServerConnection

    /// Ends a socket that came to upgrade a session that is gone or closing: a `noop` first, so that a client
    /// waiting for its probe's answer takes it for a failed upgrade, carries on polling and finds the session gone
    /// (python-engineio's client, answered by nothing but the close, stayed "connected" and never reconnected).
    func turnAway(reason: String) {
      Task {
        try? await connection.send(EngineIOPacket.noop.encoded)
        await connection.close(code: .normal, reason: reason)
      }
    }
  }

  enum Transport: Sendable {
    case polling
    case webSocket(WebSocket)
  }

  /// What the session's task handles, in arrival order.
  enum Inbound: Sendable {
    case polled([EngineIOPacket])
    case webSocket(String, WebSocket)
    case webSocketEnded(WebSocket)
  }

  struct State {
    var transport: Transport
    /// WebSockets opened to upgrade the session whose probe is not answered yet, by id.
    var candidates: [UInt64: WebSocket] = [:]
    /// A WebSocket that answered the probe and may complete the upgrade, until `upgradeDeadline`.
    var probing: WebSocket?
    var upgradeDeadline: ContinuousClock.Instant?
    var outbox: [EngineIOPacket] = []
    /// A poll or the WebSocket writer waiting for packets.
    var waiter: CheckedContinuation<[EngineIOPacket]?, Never>?
    var pollPending = false
    var closed = false
    var nextPing: ContinuousClock.Instant
    var pongDeadline: ContinuousClock.Instant?
    /// Why the session closed.
    var closeReason = "transport close"
    /// Until the application calls ``EngineIOSession/establish()``, when the session is closed.
    var establishDeadline: ContinuousClock.Instant?
  }

  /// The session id (`sid`).
  public let id: String
  let configuration: EngineIOConfiguration
  let state: Mutex<State>
  let inbox: Mutex<Inbox>
  private let onClose: @Sendable (EngineIOSession, String) -> Void

  init(
    id: String, transport: Transport, configuration: EngineIOConfiguration, now: ContinuousClock.Instant,
    onClose: @escaping @Sendable (EngineIOSession, String) -> Void
  ) {
    self.id = id
    self.configuration = configuration
    self.onClose = onClose
    var initial = State(transport: transport, nextPing: now + configuration.pingInterval)
    initial.establishDeadline = configuration.establishTimeout.map { now + $0 }
    state = Mutex(initial)
    inbox = Mutex(Inbox())
  }

  /// The handshake of this session on a transport that may (polling) or may not (WebSocket) upgrade.
  func handshake(upgrades: [String]) -> EngineIOHandshake {
    EngineIOHandshake(
      sid: id, upgrades: upgrades, pingInterval: Int(configuration.pingInterval / .milliseconds(1)),
      pingTimeout: Int(configuration.pingTimeout / .milliseconds(1)), maxPayload: configuration.maxPayload)
  }

  /// Whether the session is closed.
  public var isClosed: Bool { state.withLock { $0.closed } }

  /// Whether the session's transport is HTTP long-polling (not yet upgraded).
  var isPolling: Bool {
    state.withLock { if case .polling = $0.transport { true } else { false } }
  }

  /// Whether a poll waits for the next packet (what a test holds as the proof that it was not answered at once).
  var isPollWaiting: Bool { state.withLock { $0.waiter != nil } }

  // MARK: Sending

  /// Queues a `message` for the client; false when the session is closed, or was closed because the client doesn't
  /// take its packets (``EngineIOConfiguration/maxBufferedPackets``).
  @discardableResult
  public func send(_ message: String) -> Bool {
    enqueue(.message(message))
  }

  func enqueue(_ packet: EngineIOPacket) -> Bool {
    let (accepted, waiter, packets, overflow) = state.withLock {
      state -> (Bool, CheckedContinuation<[EngineIOPacket]?, Never>?, [EngineIOPacket], Bool) in
      guard !state.closed else { return (false, nil, [], false) }
      guard state.outbox.count < configuration.maxBufferedPackets else { return (false, nil, [], true) }
      state.outbox.append(packet)
      guard let waiter = state.waiter else { return (true, nil, [], false) }
      state.waiter = nil
      defer { state.outbox.removeAll() }
      return (true, waiter, state.outbox, false)
    }
    waiter?.resume(returning: packets)
    if overflow { close(reason: "the client does not take its packets") }
    return accepted
  }

  /// Waits for packets to send; nil once the session is closed and everything was taken. A poll while an upgrade is
  /// under way (a WebSocket answered the probe) is answered at once: with a `noop` when nothing waits.
  func next() async -> [EngineIOPacket]? {
    await withCheckedContinuation { continuation in
      // A poll still waiting when the WebSocket writer takes over (an upgrade) is ended with a `noop`.
      var displaced: CheckedContinuation<[EngineIOPacket]?, Never>?
      let packets: [EngineIOPacket]?? = state.withLock { state in
        if !state.outbox.isEmpty {
          defer { state.outbox.removeAll() }
          return .some(state.outbox)
        }
        if state.closed { return .some(nil) }
        // The client stops polling once its poll ends, then completes the upgrade: a poll that arrived after the
        // probe's answer (or before its `releasePoll`) would otherwise wait for a packet until the next ping.
        if case .polling = state.transport, state.probing != nil { return .some([.noop]) }
        displaced = state.waiter
        state.waiter = continuation
        return .none
      }
      displaced?.resume(returning: [.noop])
      if let packets { continuation.resume(returning: packets) }
    }
  }

  /// Notes a WebSocket opened to upgrade the session; false (the socket is not noted) when the session is closed.
  func addCandidate(_ socket: WebSocket) -> Bool {
    state.withLock { state in
      guard !state.closed, case .polling = state.transport else { return false }
      state.candidates[socket.id] = socket
      return true
    }
  }

  /// The candidate `socket` answered the probe: it may complete the upgrade until ``EngineIOConfiguration/upgradeTimeout``
  /// from `now`. False when the session closed meanwhile.
  func probed(_ socket: WebSocket, at now: ContinuousClock.Instant) -> Bool {
    state.withLock { state in
      guard state.candidates.removeValue(forKey: socket.id) != nil else { return false }
      state.probing = socket
      state.upgradeDeadline = now + configuration.upgradeTimeout
      return true
    }
  }

  /// Ends a waiting poll with a `noop` (an upgrade is under way: the client stops polling).
  func releasePoll() {
    let waiter = state.withLock { state -> CheckedContinuation<[EngineIOPacket]?, Never>? in
      guard case .polling = state.transport, state.pollPending else { return nil }
      defer { state.waiter = nil }
      return state.waiter
    }
    waiter?.resume(returning: [.noop])
  }

  /// A long-polling `GET`: the packets waiting, or the next ones; nil when a poll is already pending (the session is
  /// then closed, as the protocol asks).
  func poll() async -> [EngineIOPacket]? {
    let duplicate = state.withLock { state in
      if state.pollPending { return true }
      state.pollPending = true
      return false
    }
    if duplicate {
      close(reason: "two polls at once")
      return nil
    }
    let packets = await next()
    state.withLock { $0.pollPending = false }
    return packets
  }

  // MARK: Receiving

  /// What arrived and waits for the session's task, and the transports waiting for room in it.
  struct Inbox {
    var items: [Inbound] = []
    /// The session's task waiting for an item.
    var taker: CheckedContinuation<Inbound?, Never>?
    /// `POST`s waiting for room, in arrival order, with what they carry.
    var posts: [(item: Inbound, answer: CheckedContinuation<Bool, Never>)] = []
    /// The resume callbacks of WebSockets whose reads are held, by socket id.
    var heldReads: [UInt64: @Sendable () -> Void] = [:]
    /// The session closed: nothing more is queued.
    var finished = false
  }

  /// Queues what a WebSocket received for the session's task, room or not (a transport cannot take back what it
  /// read). Returns false when the queue is full: the transport stops reading until `resume` is called, once the
  /// queue is half empty (or the session closed). With `resume` nil (the socket's end) the item is just queued.
  func receive(_ item: Inbound, resume: (@Sendable () -> Void)?) -> Bool {
    let (taker, room) = inbox.withLock { inbox -> (CheckedContinuation<Inbound?, Never>?, Bool) in
      guard !inbox.finished else { return (nil, true) }
      if let taker = inbox.taker {
        inbox.taker = nil
        return (taker, true)
      }
      inbox.items.append(item)
      let room = inbox.items.count < configuration.maxQueuedMessages
      if !room, let resume, case .webSocket(_, let socket) = item { inbox.heldReads[socket.id] = resume }
      return (nil, room)
    }
    taker?.resume(returning: item)
    return room
  }

  /// Queues what a long-polling `POST` carried once there is room for it (back-pressure: the client's next `POST`
  /// waits for this one's answer); false when the session closed first.
  func deliver(_ item: Inbound) async -> Bool {
    await withCheckedContinuation { answer in
      enum Outcome {
        case closed
        case handedOver(CheckedContinuation<Inbound?, Never>)
        case queued, waiting
      }
      let outcome = inbox.withLock { inbox -> Outcome in
        if inbox.finished { return .closed }
        if let taker = inbox.taker {
          inbox.taker = nil
          return .handedOver(taker)
        }
        guard inbox.items.count < configuration.maxQueuedMessages, inbox.posts.isEmpty else {
          inbox.posts.append((item, answer))
          return .waiting
        }
        inbox.items.append(item)
        return .queued
      }
      switch outcome {
      case .closed: answer.resume(returning: false)
      case .handedOver(let taker):
        taker.resume(returning: item)
        answer.resume(returning: true)
      case .queued: answer.resume(returning: true)
      case .waiting: break
      }
    }
  }

  /// The next item for the session's task, in arrival order; nil once the session closed and every item queued
  /// before was taken. Takes room back: admits waiting `POST`s, and resumes held WebSockets at half the limit.
  func nextReceived() async -> Inbound? {
    await withCheckedContinuation { taker in
      var admitted: [CheckedContinuation<Bool, Never>] = []
      var resumed: [@Sendable () -> Void] = []
      let item = inbox.withLock { inbox -> Inbound?? in
        guard !inbox.items.isEmpty else {
          if inbox.finished { return .some(nil) }
          inbox.taker = taker
          return .none
        }
        let item = inbox.items.removeFirst()
        while inbox.items.count < configuration.maxQueuedMessages, !inbox.posts.isEmpty {
          let post = inbox.posts.removeFirst()
          inbox.items.append(post.item)
          admitted.append(post.answer)
        }
        if inbox.items.count <= configuration.maxQueuedMessages / 2 {
          resumed = Array(inbox.heldReads.values)
          inbox.heldReads = [:]
        }
        return .some(item)
      }
      for answer in admitted { answer.resume(returning: true) }
      for resume in resumed { resume() }
      if let item { taker.resume(returning: item) }
    }
  }

  /// Ends the inbox: what is queued is still handed out, then nil; waiting `POST`s are refused and held
  /// WebSockets read again (to see their end).
  private func finishInbox() {
    let (taker, posts, resumed) = inbox.withLock { inbox in
      inbox.finished = true
      defer {
        inbox.taker = nil
        inbox.posts = []
        inbox.heldReads = [:]
      }
      return (inbox.taker, inbox.posts.map(\.answer), Array(inbox.heldReads.values))
    }
    taker?.resume(returning: nil)
    for answer in posts { answer.resume(returning: false) }
    for resume in resumed { resume() }
  }

  /// Notes a pong: the next ping is due an interval from now.
  func ponged(at now: ContinuousClock.Instant) {
    state.withLock { state in
      state.pongDeadline = nil
      state.nextPing = now + configuration.pingInterval
    }
  }

  /// The application accepts the session (its client signed in): ``EngineIOConfiguration/establishTimeout`` no
  /// longer applies.
  public func establish() {
    state.withLock { $0.establishDeadline = nil }
  }

  /// Sends a ping when one is due, closes the session when its pong is late or it was not established in time, and
  /// turns away a WebSocket that answered the probe but did not complete the upgrade in time.
  func sweep(at now: ContinuousClock.Instant) {
    // An upgrade not completed in time is abandoned: polls wait for packets again.
    let abandoned = state.withLock { state -> WebSocket? in
      guard !state.closed, let probing = state.probing, let deadline = state.upgradeDeadline, now >= deadline else {
        return nil
      }
      state.probing = nil
      state.upgradeDeadline = nil
      return probing
    }
    abandoned?.turnAway(reason: "upgrade timeout")
    enum Action { case none, ping, close, unestablished }
    let action = state.withLock { state -> Action in
      guard !state.closed else { return .none }
      if let deadline = state.establishDeadline, now >= deadline { return .unestablished }
      if let deadline = state.pongDeadline { return now >= deadline ? .close : .none }
      guard now >= state.nextPing else { return .none }
      state.pongDeadline = now + configuration.pingTimeout
      return .ping
    }
    switch action {
    case .none: break
    case .ping: _ = enqueue(.ping(""))
    case .close: close(reason: "ping timeout", tellingClient: false)
    case .unestablished: close(reason: "not established in time")
    }
  }

  // MARK: Closing

  /// Closes the session: a waiting poll or the WebSocket gets a `close` packet, the application hears of it once
  /// what the client sent before is handled, a `POST` waiting for room is refused, and the session id is forgotten.
  /// Idempotent.
  ///
  /// With `tellingClient` false no `close` packet is sent: the WebSocket just closes and a waiting poll is refused,
  /// so that the client takes it for a lost connection and reconnects (a server shutting down, a missed pong). A
  /// client that gets a `close` packet does not reconnect.
  public func close(reason: String, tellingClient: Bool = true) {
    typealias Closing = (
      waiter: CheckedContinuation<[EngineIOPacket]?, Never>?, packets: [EngineIOPacket], probing: WebSocket?,
      candidates: [WebSocket]
    )
    let closing = state.withLock { state -> Closing? in
      guard !state.closed else { return nil }
      state.closed = true
      state.closeReason = reason
      if tellingClient { state.outbox.append(.close) }
      var closing: Closing = (nil, [], state.probing, Array(state.candidates.values))
      state.probing = nil
      state.candidates = [:]
      if let waiter = state.waiter {
        closing.waiter = waiter
        closing.packets = state.outbox
        state.waiter = nil
        state.outbox.removeAll()
      }
      return closing
    }
    guard let closing else { return }
    closing.waiter?.resume(returning: closing.packets.isEmpty ? nil : closing.packets)
    finishInbox()
    if let probing = closing.probing { Task { await probing.connection.close(code: .normal, reason: reason) } }
    for candidate in closing.candidates { candidate.turnAway(reason: reason) }
    onClose(self, reason)
  }
}
