import MeridianMQTT
import MeridianTestSupport
import NIOCore
import Synchronization
import Testing

/// The messages a handler was given.
private final class Deliveries: Sendable {
  let value = Mutex<[MQTTPublish]>([])
}

/// `MeridianMQTT`'s client against Debian's real `mosquitto` (an open broker of the test's own) and against a
/// listener that never answers: acknowledgement only after the handler, QoS 1 both ways, and the connect deadline.
@Suite("MQTT client", .enabled(if: MosquittoBroker.isInstalled, "needs /usr/sbin/mosquitto"))
struct MQTTClientTests {
  static func configuration(_ port: Int, _ identifier: String, subscriptions: [MQTTSubscription] = [])
    -> MQTTClientConfiguration
  {
    MQTTClientConfiguration(
      host: "127.0.0.1", port: port, clientIdentifier: identifier, keepAlive: .seconds(5),
      acknowledgementTimeout: .seconds(10), reconnectInitialDelay: .milliseconds(50),
      reconnectMaximumDelay: .milliseconds(200), subscriptions: subscriptions)
  }

  /// A message whose handler fails is not acknowledged: the client closes the connection, connects again, and the
  /// broker delivers the same message again (DUP set), before the next one (PUBACKs keep the order of PUBLISHes).
  @Test(.timeLimit(.minutes(2)))
  func aMessageTheHandlerFailedIsDeliveredAgainBeforeTheNext() async throws {
    try await Self.withOpenBroker(Self.redelivery)
  }

  /// Runs `body` with an open broker of its own (anonymous clients allowed), removed whatever `body` does.
  static func withOpenBroker(_ body: (MosquittoBroker) async throws -> Void) async throws {
    let broker = try await MosquittoBroker.start(allowAnonymous: true)
    do {
      try await body(broker)
    } catch {
      await broker.remove()
      throw error
    }
    await broker.remove()
  }

  static func redelivery(_ broker: MosquittoBroker) async throws {
    let seen = Deliveries()
    struct NotNow: Error {}
    let receiver = MQTTClient(
      Self.configuration(broker.port, "receiver", subscriptions: [MQTTSubscription("t/#", qos: .atLeastOnce)]))
    let sender = MQTTClient(Self.configuration(broker.port, "sender"))
    try await withThrowingTaskGroup(of: Void.self) { tasks in
      tasks.addTask {
        await receiver.run { message in
          let first = seen.value.withLock { seen in
            seen.append(message)
            return seen.count == 1
          }
          if first { throw NotNow() }
        }
      }
      tasks.addTask { await sender.run { _ in } }
      try await GeofenceQueueTests.waitFor("both connected", timeout: .seconds(30)) {
        receiver.state == .connected && sender.state == .connected
      }
      // QoS 1 from this client: publish returns once the broker acknowledged.
      try await sender.publish(topic: "t/1", payload: Array("one".utf8), qos: .atLeastOnce)
      try await sender.publish(topic: "t/2", payload: Array("two".utf8), qos: .atLeastOnce)
      try await GeofenceQueueTests.waitFor("three deliveries", timeout: .seconds(30)) {
        seen.value.withLock { $0.count } >= 3
      }
      let deliveries = seen.value.withLock { $0 }
      #expect(deliveries.map(\.topic) == ["t/1", "t/1", "t/2"])
      #expect(deliveries.prefix(2).map(\.duplicate) == [false, true])
      #expect(deliveries.allSatisfy { $0.qos == .atLeastOnce })
      tasks.cancelAll()
    }
    #expect(receiver.state == .stopped)
  }

  /// With several messages in flight the handler takes the next message before the one before it returned, and
  /// each is still acknowledged: after the receiver connects again (its session kept), the broker delivers neither
  /// again. A window of 2: the third message starts only once the first was acknowledged, the fourth once the
  /// second was, so the fourth's start says both PUBACKs went.
  @Test(.timeLimit(.minutes(2)))
  func messagesInFlightAreTakenAtOnceAndEachAcknowledged() async throws {
    try await Self.withOpenBroker(Self.inFlight)
  }

  static func inFlight(_ broker: MosquittoBroker) async throws {
    let seen = Deliveries()
    func topics() -> [String] { seen.value.withLock { $0.map(\.topic) } }
    // The first message's handler returns only once the second's started: one at a time, it would never return.
    let (secondStarted, startingSecond) = AsyncStream.makeStream(of: Void.self)
    var configuration = Self.configuration(
      broker.port, "receiver", subscriptions: [MQTTSubscription("t/#", qos: .atLeastOnce)])
    configuration.messagesInFlight = 2
    let receiver = MQTTClient(configuration)
    let sender = MQTTClient(Self.configuration(broker.port, "sender"))
    try await withThrowingTaskGroup(of: Void.self) { tasks in
      let receiving = Task {
        await receiver.run { message in
          seen.value.withLock { $0.append(message) }
          if message.topic == "t/2" { startingSecond.yield() }
          if message.topic == "t/1" {
            for await _ in secondStarted { break }
          }
        }
      }
      tasks.addTask { await sender.run { _ in } }
      try await GeofenceQueueTests.waitFor("both connected", timeout: .seconds(30)) {
        receiver.state == .connected && sender.state == .connected
      }
      for index in 1...4 {
        try await sender.publish(topic: "t/\(index)", payload: Array("\(index)".utf8), qos: .atLeastOnce)
      }
      try await GeofenceQueueTests.waitFor("the fourth delivery", timeout: .seconds(30)) {
        topics().contains("t/4")
      }
      #expect(Array(topics().prefix(4)) == ["t/1", "t/2", "t/3", "t/4"])
      receiving.cancel()
      await receiving.value
      #expect(receiver.state == .stopped)

      // The same client identifier again: the broker still holds the session, and would deliver a message it has
      // no PUBACK of again, before t/5.
      let again = MQTTClient(configuration)
      tasks.addTask { await again.run { message in seen.value.withLock { $0.append(message) } } }
      try await GeofenceQueueTests.waitFor("connected again", timeout: .seconds(30)) { again.state == .connected }
      try await sender.publish(topic: "t/5", payload: Array("5".utf8), qos: .atLeastOnce)
      try await GeofenceQueueTests.waitFor("the fifth delivery", timeout: .seconds(30)) { topics().contains("t/5") }
      #expect(topics().filter { $0 == "t/1" || $0 == "t/2" } == ["t/1", "t/2"])
      tasks.cancelAll()
    }
  }

  /// A listener that accepts and says nothing: the client gives up at its deadline, says so, and tries again.
  @Test(.timeLimit(.minutes(1)))
  func aBrokerThatNeverAnswersEndsAtTheConnectDeadline() async throws {
    try await withSilentListener { port in
      var configuration = Self.configuration(port, "silent")
      configuration.acknowledgementTimeout = .milliseconds(300)
      let client = MQTTClient(configuration)
      let run = Task { await client.run { _ in } }
      try await GeofenceQueueTests.waitFor("the CONNACK deadline", timeout: .seconds(30)) {
        client.state == .connecting(lastError: "no CONNACK in time")
      }
      run.cancel()
      await run.value
      #expect(client.state == .stopped)
    }
  }
}
