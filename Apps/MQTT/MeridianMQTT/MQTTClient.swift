import Logging
import NIOCore
import NIOPosix
import Synchronization

/// How an ``MQTTClient`` reaches its broker and what it asks of it.
public struct MQTTClientConfiguration: Sendable {
  /// The broker's host name or address.
  public var host: String
  /// The broker's port (1883 for MQTT without TLS).
  public var port: Int
  /// The client identifier: the broker keeps a persistent session under it.
  public var clientIdentifier: String
  /// The user name, if the broker asks for one.
  public var username: String?
  /// The password, if the broker asks for one.
  public var password: String?
  /// Whether to start from a clean session each time. False (the default) has the broker keep the subscriptions
  /// and queue QoS 1 messages while the client is away, and deliver again those it did not acknowledge (§4.4).
  public var cleanSession: Bool
  /// The keep-alive interval: the client sends PINGREQ this often and closes a connection whose PINGRESP does not
  /// come before the next.
  public var keepAlive: Duration
  /// The deadline of connecting (TCP and CONNACK) and of every acknowledgement (SUBACK, PUBACK) awaited.
  public var acknowledgementTimeout: Duration
  /// The first wait before connecting again after a connection failed or ended; it doubles up to
  /// ``reconnectMaximumDelay`` and starts over once a connection is accepted.
  public var reconnectInitialDelay: Duration
  /// The longest wait between two connection attempts.
  public var reconnectMaximumDelay: Duration
  /// The topic filters subscribed after each CONNACK.
  public var subscriptions: [MQTTSubscription]
  /// How many received messages the handler may take at once; 1 (the default) takes them one after another. Their
  /// PUBACKs go in the order the PUBLISHes came whatever the number (§4.6): a message taken early is acknowledged
  /// after those before it.
  public var messagesInFlight: Int
  /// Which of the messages in flight must keep their order: a message waits for the exclusive messages of its key
  /// received before it, and an exclusive one for every message of its key before it. nil, for every message or
  /// for one: no order beyond the window.
  public var ordering: (@Sendable (MQTTPublish) -> MQTTMessageOrder?)?

  /// A configuration; the defaults keep a persistent session and retry within 30 seconds.
  public init(
    host: String, port: Int = 1883, clientIdentifier: String, username: String? = nil, password: String? = nil,
    cleanSession: Bool = false, keepAlive: Duration = .seconds(30), acknowledgementTimeout: Duration = .seconds(10),
    reconnectInitialDelay: Duration = .milliseconds(250), reconnectMaximumDelay: Duration = .seconds(30),
    subscriptions: [MQTTSubscription] = [], messagesInFlight: Int = 1,
    ordering: (@Sendable (MQTTPublish) -> MQTTMessageOrder?)? = nil
  ) {
    self.host = host
    self.port = port
    self.clientIdentifier = clientIdentifier
    self.username = username
    self.password = password
    self.cleanSession = cleanSession
    self.keepAlive = keepAlive
    self.acknowledgementTimeout = acknowledgementTimeout
    self.reconnectInitialDelay = reconnectInitialDelay
    self.reconnectMaximumDelay = reconnectMaximumDelay
    self.subscriptions = subscriptions
    self.messagesInFlight = max(1, messagesInFlight)
    self.ordering = ordering
  }
}

/// How a message in flight is ordered among the others (``MQTTClientConfiguration/ordering``).
public struct MQTTMessageOrder: Sendable, Hashable {
  /// The messages that are ordered among themselves (a device's, say).
  public var key: String
  /// Whether the message waits for every earlier message of its key, and the later ones for it; a message that is
  /// not exclusive waits only for the exclusive ones.
  public var exclusive: Bool

  /// An order.
  public init(key: String, exclusive: Bool) {
    self.key = key
    self.exclusive = exclusive
  }
}

/// Where the link to the broker stands.
public enum MQTTLinkState: Sendable, Hashable {
  /// Connecting (the first time, or again after `lastError`).
  case connecting(lastError: String?)
  /// Connected and subscribed.
  case connected
  /// Stopped: ``MQTTClient/run(handler:)`` returned.
  case stopped
}

/// Why an MQTT operation failed.
public enum MQTTClientError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The broker refused the connection (CONNACK return code).
  case refused(MQTTConnectReturnCode)
  /// No connection to the broker at the moment.
  case notConnected
  /// An acknowledgement (CONNACK, SUBACK, PUBACK, PINGRESP) did not come in time.
  case timedOut(String)
  /// The broker refused a subscription (SUBACK 0x80).
  case subscriptionRefused(String)
  /// The broker sent something out of place.
  case protocolViolation(String)
  /// The connection closed before the operation ended.
  case connectionClosed

  public var description: String {
    switch self {
    case .refused(let code): "the broker refused the connection (CONNACK return code \(code.rawValue))"
    case .notConnected: "not connected to the broker"
    case .timedOut(let what): "no \(what) in time"
    case .subscriptionRefused(let filter): "the broker refused the subscription to \(filter)"
    case .protocolViolation(let what): "protocol violation: \(what)"
    case .connectionClosed: "the connection to the broker closed"
    }
  }
}

/// An MQTT 3.1.1 client on SwiftNIO that keeps one connection to a broker up: it connects (with a deadline),
/// subscribes, hands each message to a handler in the order received (up to
/// ``MQTTClientConfiguration/messagesInFlight`` at once) and acknowledges a QoS 1 message (PUBACK) only once the
/// handler returned for it and every message before it, so a message the broker delivered is never acknowledged
/// before it was taken; when the handler throws, the connection is closed with that message and the ones after it
/// unacknowledged, and the broker delivers them again on the next connection. It sends PINGREQ every keep-alive interval and reconnects with exponential back-off when
/// the broker goes away.
///
/// ```swift
/// let client = MQTTClient(MQTTClientConfiguration(host: "127.0.0.1", clientIdentifier: "server",
///   subscriptions: [MQTTSubscription("owntracks/+/+", qos: .atLeastOnce)]))
/// try await client.run { message in print(message.topic) }
/// ```
public actor MQTTClient {
  /// The configuration.
  public nonisolated let configuration: MQTTClientConfiguration
  private let group: any EventLoopGroup
  private let logger: Logger
  private let linkState = Mutex(MQTTLinkState.connecting(lastError: nil))
  private var channel: (any Channel)?
  private var nextIdentifier: UInt16 = 0
  private var awaitingAcknowledgement: [UInt16: CheckedContinuation<Void, any Error>] = [:]
  private var awaitingPingResponse = false
  /// Whether the current connection's CONNACK accepted it.
  private var accepted = false

  /// A client of `configuration` on `group`'s event loops.
  public init(
    _ configuration: MQTTClientConfiguration, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
    logger: Logger = Logger(label: "mqtt")
  ) {
    self.configuration = configuration
    self.group = group
    self.logger = logger
  }

  /// Where the link stands now (for health checks).
  public nonisolated var state: MQTTLinkState { linkState.withLock { $0 } }

  /// Keeps connected until the task is cancelled, handing every message received to `handler` in the order
  /// received, up to ``MQTTClientConfiguration/messagesInFlight`` at a time.
  public func run(handler: @escaping @Sendable (MQTTPublish) async throws -> Void) async {
    var delay = configuration.reconnectInitialDelay
    while !Task.isCancelled {
      accepted = false
      do {
        try await session(handler: handler)
        linkState.withLock { $0 = .connecting(lastError: "the broker closed the connection") }
      } catch {
        if Task.isCancelled { break }
        logger.warning("MQTT link to \(configuration.host):\(configuration.port) down: \(error)")
        linkState.withLock { $0 = .connecting(lastError: "\(error)") }
      }
      // A connection the broker accepted starts the back-off over.
      if accepted { delay = configuration.reconnectInitialDelay }
      do { try await Task.sleep(for: delay) } catch { break }
      delay = min(delay * 2, configuration.reconnectMaximumDelay)
    }
    linkState.withLock { $0 = .stopped }
  }

  /// Publishes a message; at QoS 1, returns once the broker acknowledged it (within the acknowledgement deadline).
  /// - Throws: ``MQTTClientError/notConnected`` when the link is down, ``MQTTClientError/timedOut(_:)`` when the
  ///   PUBACK does not come in time, ``MQTTClientError/connectionClosed``.
  public func publish(topic: String, payload: [UInt8], qos: MQTTQoS = .atLeastOnce, retain: Bool = false)
    async throws
  {
    guard let channel, case .connected = state else { throw MQTTClientError.notConnected }
    guard qos > .atMostOnce else {
      try await channel.writeAndFlush(MQTTPacket.publish(MQTTPublish(topic: topic, payload: payload, retain: retain)))
      return
    }
    let identifier = makeIdentifier()
    let message = MQTTPublish(
      topic: topic, payload: payload, qos: .atLeastOnce, retain: retain, packetIdentifier: identifier)
    let timeout = configuration.acknowledgementTimeout
    let deadline = Task { [weak self] in
      try await Task.sleep(for: timeout)
      await self?.resume(identifier, with: .failure(MQTTClientError.timedOut("PUBACK")))
    }
    defer { deadline.cancel() }
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
      awaitingAcknowledgement[identifier] = continuation
      channel.writeAndFlush(MQTTPacket.publish(message)).whenFailure { error in
        Task { await self.resume(identifier, with: .failure(error)) }
      }
    }
  }

  private func makeIdentifier() -> UInt16 {
    repeat {
      nextIdentifier = nextIdentifier == .max ? 1 : nextIdentifier + 1
    } while awaitingAcknowledgement[nextIdentifier] != nil
    return nextIdentifier
  }

  private func resume(_ identifier: UInt16, with result: Result<Void, any Error>) {
    awaitingAcknowledgement.removeValue(forKey: identifier)?.resume(with: result)
  }

  /// Closes the connection when `what` has not come within the acknowledgement deadline, noting it in `expired`.
  private nonisolated func expire(_ channel: any Channel, unless what: String, expired: Expiry) -> Scheduled<Void> {
    channel.eventLoop.scheduleTask(in: TimeAmount(configuration.acknowledgementTimeout)) {
      expired.note(what)
      channel.close(promise: nil)
    }
  }

  /// One connection, from CONNECT to its end.
  private func session(handler: @escaping @Sendable (MQTTPublish) async throws -> Void) async throws {
    let timeout = configuration.acknowledgementTimeout
    let connection = try await ClientBootstrap(group: group)
      .connectTimeout(TimeAmount(timeout))
      .channelOption(.socketOption(.tcp_nodelay), value: 1)
      .connect(host: configuration.host, port: configuration.port) { channel in
        channel.eventLoop.makeCompletedFuture {
          try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(MQTTPacketDecoder()))
          try channel.pipeline.syncOperations.addHandler(MessageToByteHandler(MQTTPacketEncoder()))
          return try NIOAsyncChannel<MQTTPacket, MQTTPacket>(wrappingChannelSynchronously: channel)
        }
      }
    let channel = connection.channel
    let expired = Expiry()
    defer {
      self.channel = nil
      for continuation in awaitingAcknowledgement.values {
        continuation.resume(throwing: MQTTClientError.connectionClosed)
      }
      awaitingAcknowledgement = [:]
    }
    try await connection.executeThenClose { inbound, _ in
      var connectDeadline: Scheduled<Void>? = expire(channel, unless: "CONNACK", expired: expired)
      let connect = MQTTConnect(
        clientIdentifier: configuration.clientIdentifier, cleanSession: configuration.cleanSession,
        keepAliveSeconds: UInt16(clamping: configuration.keepAlive.components.seconds),
        username: configuration.username, password: configuration.password.map { Array($0.utf8) })
      try await channel.writeAndFlush(MQTTPacket.connect(connect))
      let (messages, delivery) = AsyncStream.makeStream(of: MQTTPublish.self)
      try await withThrowingTaskGroup(of: Void.self) { tasks in
        tasks.addTask { await self.take(messages, handler: handler, channel: channel) }
        defer {
          delivery.finish()
          tasks.cancelAll()
        }
        var subscribeDeadline: Scheduled<Void>?
        var subscribeIdentifier: UInt16?
        for try await packet in inbound {
          switch packet {
          case .connectAcknowledgement(let sessionPresent, let code) where connectDeadline != nil:
            connectDeadline?.cancel()
            connectDeadline = nil
            guard code == .accepted else { throw MQTTClientError.refused(code) }
            accepted = true
            logger.info(
              "MQTT connected to \(configuration.host):\(configuration.port) (session present: \(sessionPresent))")
            self.channel = channel
            if configuration.subscriptions.isEmpty {
              linkState.withLock { $0 = .connected }
            } else {
              let identifier = makeIdentifier()
              subscribeIdentifier = identifier
              subscribeDeadline = expire(channel, unless: "SUBACK", expired: expired)
              try await channel.writeAndFlush(
                MQTTPacket.subscribe(packetIdentifier: identifier, subscriptions: configuration.subscriptions))
            }
            tasks.addTask { try await self.keepAlive(channel, expired: expired) }
          case .subscribeAcknowledgement(let identifier, let codes) where identifier == subscribeIdentifier:
            subscribeDeadline?.cancel()
            subscribeIdentifier = nil
            if let refused = zip(configuration.subscriptions, codes).first(where: { $0.1 == 0x80 }) {
              throw MQTTClientError.subscriptionRefused(refused.0.topicFilter)
            }
            linkState.withLock { $0 = .connected }
          case .publish(let message) where connectDeadline == nil:
            delivery.yield(message)
          case .publishAcknowledgement(let identifier):
            resume(identifier, with: .success(()))
          case .pingResponse:
            awaitingPingResponse = false
          default:
            throw MQTTClientError.protocolViolation("unexpected packet type \(packet.type)")
          }
        }
        connectDeadline?.cancel()
        subscribeDeadline?.cancel()
        if let what = expired.what { throw MQTTClientError.timedOut(what) }
      }
    }
  }

  /// Hands `messages` to `handler`, up to ``MQTTClientConfiguration/messagesInFlight`` at once, and acknowledges
  /// each QoS 1 message once it and every message before it were taken: PUBACKs follow the order of the PUBLISHes
  /// (§4.6). A message starts after those it is ordered behind (``MQTTClientConfiguration/ordering``). When the
  /// handler throws, the connection closes with that message and the later ones unacknowledged.
  private nonisolated func take(
    _ messages: AsyncStream<MQTTPublish>, handler: @escaping @Sendable (MQTTPublish) async throws -> Void,
    channel: any Channel
  ) async {
    // A free place in the window is a token in `places`; the acknowledger gives one back for each message it acked.
    let (places, freed) = AsyncStream.makeStream(of: Void.self)
    for _ in 0..<configuration.messagesInFlight { freed.yield() }
    let (taken, taking) = AsyncStream.makeStream(
      of: (message: MQTTPublish, number: Int, work: Task<Void, any Error>).self)
    // The number of the last message acknowledged: every message up to it is done.
    let acknowledged = Acknowledged()
    await withTaskGroup(of: Void.self) { group in
      group.addTask {
        defer { freed.finish() }
        for await (message, number, work) in taken {
          do {
            try await withTaskCancellationHandler {
              try await work.value
            } onCancel: {
              work.cancel()
            }
          } catch {
            self.logger.warning("MQTT message on \(message.topic) not taken, closing to have it again: \(error)")
            channel.close(promise: nil)
            freed.finish()  // takes no more messages
            for await (_, _, later) in taken { later.cancel() }
            return
          }
          if let identifier = message.packetIdentifier, message.qos > .atMostOnce {
            try? await channel.writeAndFlush(MQTTPacket.publishAcknowledgement(packetIdentifier: identifier))
          }
          acknowledged.number.store(number, ordering: .releasing)
          freed.yield()
        }
      }
      var place = places.makeAsyncIterator()
      var ordered = OrderedInFlight()
      var number = 0
      for await message in messages {
        guard await place.next() != nil else { break }
        let order = configuration.ordering?(message)
        let earlier =
          order.map { ordered.earlier(than: $0, done: acknowledged.number.load(ordering: .acquiring)) } ?? []
        let work = Task {
          for task in earlier { _ = try? await task.value }
          try await handler(message)
        }
        if let order { ordered.add(work, number: number, order: order) }
        taking.yield((message, number, work))
        number += 1
      }
      taking.finish()
    }
  }

  /// The number of the last message acknowledged, shared by the tasks taking messages.
  private final class Acknowledged: Sendable {
    let number = Atomic(-1)
  }

  /// The messages in flight of each ordering key, to say which ones a new message waits for.
  private struct OrderedInFlight {
    private var byKey: [String: [(number: Int, exclusive: Bool, work: Task<Void, any Error>)]] = [:]

    /// The work a message of `order` waits for, forgetting what is done (numbered up to `done`).
    mutating func earlier(than order: MQTTMessageOrder, done: Int) -> [Task<Void, any Error>] {
      if byKey.count > 1_024 { byKey = byKey.compactMapValues { list in list.last!.number > done ? list : nil } }
      var list = byKey[order.key] ?? []
      list.removeAll { $0.number <= done }
      byKey[order.key] = list.isEmpty ? nil : list
      return order.exclusive ? list.map(\.work) : list.last(where: \.exclusive).map { [$0.work] } ?? []
    }

    mutating func add(_ work: Task<Void, any Error>, number: Int, order: MQTTMessageOrder) {
      byKey[order.key, default: []].append((number, order.exclusive, work))
    }
  }

  private func keepAlive(_ channel: any Channel, expired: Expiry) async throws {
    awaitingPingResponse = false
    while true {
      try await Task.sleep(for: configuration.keepAlive)
      if awaitingPingResponse {
        expired.note("PINGRESP")
        try? await channel.close()
        return
      }
      awaitingPingResponse = true
      try await channel.writeAndFlush(MQTTPacket.pingRequest)
    }
  }

  /// Sends DISCONNECT and closes the connection, if there is one (the task running ``run(handler:)`` then
  /// connects again unless it was cancelled).
  public func disconnect() async {
    guard let channel else { return }
    try? await channel.writeAndFlush(MQTTPacket.disconnect)
    try? await channel.close()
  }
}

/// The acknowledgement whose deadline closed a connection, if one did.
private final class Expiry: Sendable {
  private let value = Mutex<String?>(nil)
  func note(_ what: String) { value.withLock { $0 = $0 ?? what } }
  var what: String? { value.withLock { $0 } }
}

extension TimeAmount {
  /// `duration` in nanoseconds.
  init(_ duration: Duration) {
    let (seconds, attoseconds) = duration.components
    self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
  }
}
