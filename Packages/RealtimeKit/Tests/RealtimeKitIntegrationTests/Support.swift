import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOWebSocket
import RealtimeKit
import RealtimeKitHummingbird
import RealtimeKitTesting
import RealtimeKitWebSocketClient
import Testing
import WSClient

/// Runs a Hummingbird server with `hub` mounted at `/ws` on 127.0.0.1 with an OS-chosen port.
func withServer(_ hub: RealtimeHub, _ body: @Sendable (Int) async throws -> Void) async throws {
  var logger = Logger(label: "realtime-test")
  logger.logLevel = .critical
  let (ports, portSink) = AsyncStream<Int>.makeStream()
  let app = Application(
    router: Router(),
    server: .realtime(hub: hub),
    configuration: .init(address: .hostname("127.0.0.1", port: 0)),
    onServerRunning: { channel in portSink.yield(channel.localAddress?.port ?? 0) },
    logger: logger
  )
  try await withThrowingTaskGroup(of: Void.self) { group in
    group.addTask { try await app.run() }
    group.addTask { await hub.run() }
    var iterator = ports.makeAsyncIterator()
    guard let port = await iterator.next() else { throw CancellationError() }
    do {
      try await body(port)
    } catch {
      group.cancelAll()
      throw error
    }
    group.cancelAll()
  }
}

func makeHub(
  _ configuration: RealtimeHubConfiguration = RealtimeHubConfiguration(),
  authorize: @escaping RealtimeHub.Authorize = { _, _, _ in true }
) -> RealtimeHub {
  .testing(configuration, authorize: authorize)
}

func makeClient(port: Int, token: String = "alice") -> RealtimeClient {
  RealtimeClient(
    transport: WebSocketRealtimeTransport(url: "ws://127.0.0.1:\(port)/ws"),
    configuration: RealtimeClientConfiguration(
      clientName: "test",
      clientVersion: "1",
      reconnectBaseDelay: .milliseconds(20),
      reconnectMaxDelay: .milliseconds(200),
      token: { token }
    )
  )
}

extension ChannelName {
  static func test(_ raw: String) -> ChannelName { ChannelName(raw)! }
}

/// Collects a client's channel events until `predicate` holds.
func collect(_ client: RealtimeClient, until predicate: @escaping @Sendable ([RealtimeEvent]) -> Bool) async throws
  -> [RealtimeEvent]
{
  try await withTimeout {
    var events: [RealtimeEvent] = []
    for await item in client.events {
      if case .event(let event) = item { events.append(event) }
      if predicate(events) { break }
    }
    return events
  }
}

/// Waits until the client reports a subscription of `channel`.
func waitSubscribed(_ client: RealtimeClient, _ channel: ChannelName) async throws {
  try await withTimeout {
    for await item in client.events {
      if case .subscribed(let position) = item, position.channel == channel { return }
    }
  }
}

/// Speaks raw WebSocket to the server: `script` gets the inbound messages and the writer; returns the server's
/// close code.
func rawSession(
  port: Int,
  subprotocol: String? = RealtimeProtocol.subprotocol,
  maxFrameSize: Int = 1 << 24,
  _ script: @escaping @Sendable (WebSocketInboundStream, WebSocketOutboundWriter) async throws -> Void
) async throws -> UInt16? {
  var headers = HTTPFields()
  if let subprotocol { headers[.secWebSocketProtocol] = subprotocol }
  var logger = Logger(label: "raw")
  logger.logLevel = .critical
  let frame = try await WebSocketClient.connect(
    url: "ws://127.0.0.1:\(port)/ws",
    configuration: WebSocketClientConfiguration(maxFrameSize: maxFrameSize, additionalHeaders: headers),
    logger: logger
  ) { inbound, outbound, _ in
    try await script(inbound, outbound)
  }
  return frame.map { UInt16(webSocketErrorCode: $0.closeCode) }
}

/// Reads text messages until the server closes, decoding them.
func readAll(_ inbound: WebSocketInboundStream) async throws -> [ServerFrame] {
  var frames: [ServerFrame] = []
  for try await message in inbound.messages(maxSize: 1 << 24) {
    if case .text(let text) = message, let frame = try? RealtimeCodec.decodeServerFrame(text) { frames.append(frame) }
  }
  return frames
}

func hello(_ token: String = "alice") -> String {
  RealtimeCodec.encode(.hello(Hello(token: token, clientName: "raw", clientVersion: "1")))
}

extension WebSocketInboundStream.AsyncIterator {
  /// The next decoded server frame.
  mutating func nextFrame() async throws -> ServerFrame? {
    while let message = try await nextMessage(maxSize: 1 << 24) {
      if case .text(let text) = message { return try? RealtimeCodec.decodeServerFrame(text) }
    }
    return nil
  }
}
