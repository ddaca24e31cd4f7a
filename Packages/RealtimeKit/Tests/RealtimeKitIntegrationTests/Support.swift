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
/// `GET /health` answers `ok`; `POST /echo` answers the request's body.
func withServer(
  _ hub: RealtimeHub,
  configuration: RealtimeWebSocketConfiguration = .init(),
  _ body: @Sendable (Int) async throws -> Void
) async throws {
  var logger = Logger(label: "realtime-test")
  logger.logLevel = .critical
  let (ports, portSink) = AsyncStream<Int>.makeStream()
  let router = Router()
  router.get("/health") { _, _ in "ok" }
  router.post("/echo") { request, _ -> String in
    var request = request
    return String(buffer: try await request.collectBody(upTo: 1 << 16))
  }
  let app = Application(
    router: router,
    server: .realtime(hub: hub, configuration: configuration),
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

/// Sends `request` over a plain TCP connection and returns everything the server sends until it closes (or 5 s).
func rawHTTP(port: Int, _ request: String) throws -> String {
  #if canImport(Glibc)
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
  #else
    let fd = socket(AF_INET, SOCK_STREAM, 0)
  #endif
  guard fd >= 0 else { throw POSIXError(.EIO) }
  defer { close(fd) }
  var timeout = timeval(tv_sec: 5, tv_usec: 0)
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
  var address = sockaddr_in()
  address.sin_family = sa_family_t(AF_INET)
  address.sin_port = in_port_t(UInt16(port).bigEndian)
  address.sin_addr.s_addr = inet_addr("127.0.0.1")
  let connected = withUnsafePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
      connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
    }
  }
  guard connected == 0 else { throw POSIXError(.ECONNREFUSED) }
  let bytes = Array(request.utf8)
  guard send(fd, bytes, bytes.count, 0) == bytes.count else { throw POSIXError(.EIO) }
  var response: [UInt8] = []
  var buffer = [UInt8](repeating: 0, count: 4096)
  while true {
    let count = recv(fd, &buffer, buffer.count, 0)
    if count <= 0 { break }
    response += buffer[0..<count]
    if String(decoding: response, as: UTF8.self).contains("\r\n\r\nok") { break }
  }
  return String(decoding: response, as: UTF8.self)
}
