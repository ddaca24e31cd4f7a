import Foundation
import RealtimeKit
import RealtimeKitTesting
import Synchronization
import Testing

/// A hand-driven protocol peer over the in-memory transport.
final class Peer {
  let socket: InMemoryRealtimeSocket
  var iterator: AsyncStream<RealtimeClientInbound>.Iterator
  var closeCode: RealtimeCloseCode??

  init(_ transport: InMemoryRealtimeTransport) throws {
    socket = try transport.connectRaw()
    iterator = socket.inbound.makeAsyncIterator()
  }

  func send(_ frame: ClientFrame) { socket.send(.text(RealtimeCodec.encode(frame))) }
  func sendText(_ text: String) { socket.send(.text(text)) }

  /// The next server frame, or `nil` when the connection closed (see ``closeCode``).
  func next() async -> ServerFrame? {
    while let message = await iterator.next() {
      switch message {
      case .text(let text):
        if let frame = try? RealtimeCodec.decodeServerFrame(text) { return frame }
      case .closed(let code, _):
        closeCode = .some(code)
        return nil
      }
    }
    return nil
  }

  /// Reads until the connection closes and returns its close code.
  func closed() async -> RealtimeCloseCode? {
    while await next() != nil {}
    return closeCode ?? nil
  }

  @discardableResult
  func hello(_ token: String = "alice") async -> ServerFrame? {
    send(.hello(Hello(token: token, clientName: "test", clientVersion: "1")))
    return await next()
  }
}

func makeHub(
  _ configuration: RealtimeHubConfiguration = RealtimeHubConfiguration(epoch: "e1"),
  authorize: @escaping RealtimeHub.Authorize = { _, _, _ in true },
  receive: RealtimeHub.Receive? = nil
) -> RealtimeHub {
  .testing(configuration, authorize: authorize, receive: receive)
}

extension ChannelName {
  static func test(_ raw: String) -> ChannelName { ChannelName(raw)! }
}

/// Collects client events until `predicate` holds, or fails after `timeout`.
func collect(
  _ client: RealtimeClient,
  timeout: Duration = .seconds(10),
  until predicate: @escaping @Sendable ([RealtimeEvent]) -> Bool
) async throws -> [RealtimeEvent] {
  try await withTimeout(timeout) {
    var events: [RealtimeEvent] = []
    for await item in client.events {
      if case .event(let event) = item { events.append(event) }
      if predicate(events) { break }
    }
    return events
  }
}

/// Waits for a state matching `predicate`; returns the states seen.
func waitForState(
  _ client: RealtimeClient,
  timeout: Duration = .seconds(10),
  _ predicate: @escaping @Sendable (RealtimeConnectionState) -> Bool
) async throws -> [RealtimeConnectionState] {
  try await withTimeout(timeout) {
    var seen: [RealtimeConnectionState] = []
    for await state in client.states {
      seen.append(state)
      if predicate(state) { break }
    }
    return seen
  }
}

func fastClientConfiguration(token: String = "alice") -> RealtimeClientConfiguration {
  RealtimeClientConfiguration(
    clientName: "test",
    clientVersion: "1",
    reconnectBaseDelay: .milliseconds(20),
    reconnectMaxDelay: .milliseconds(200),
    publishRetryDelay: .milliseconds(50),
    token: { token }
  )
}

/// Values appended from any task.
final class LockedValues<Value: Sendable>: Sendable {
  private let stored = Mutex<[Value]>([])
  var values: [Value] { stored.withLock { $0 } }
  func append(_ value: Value) { stored.withLock { $0.append(value) } }
}

/// A hub a hook reaches after the hub was created (the hook is an argument of the hub's initializer).
final class HubBox: Sendable {
  private let stored = Mutex<RealtimeHub?>(nil)
  var hub: RealtimeHub? {
    get { stored.withLock { $0 } }
    set { stored.withLock { $0 = newValue } }
  }
}

/// Alice, signed in to publish, and Bob, signed in and subscribed to `channel` from its start (epoch `e1`).
func publisherAndSubscriber(_ transport: InMemoryRealtimeTransport, on channel: ChannelName) async throws -> (
  publisher: Peer, subscriber: Peer
) {
  let publisher = try Peer(transport)
  let subscriber = try Peer(transport)
  await publisher.hello()
  await subscriber.hello("bob")
  subscriber.send(.subscribe(SubscribeRequest(channel: channel)))
  #expect(await subscriber.next() == .subscribed(ChannelPosition(channel: channel, offset: 0, epoch: "e1")))
  return (publisher, subscriber)
}
