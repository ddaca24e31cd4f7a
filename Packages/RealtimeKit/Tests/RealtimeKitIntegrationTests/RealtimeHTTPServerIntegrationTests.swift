import NIOCore
import RealtimeKit
import RealtimeKitHummingbird
import Testing

/// The HTTP side of `.realtime(hub:)` against raw TCP clients that never close their side: malformed requests are
/// answered and closed, slow and idle connections are closed after their timeouts, and none of it touches keep-alive
/// clients or WebSockets. "Closed" means both that the client reads the end of the stream and that the server
/// releases its socket. Each test runs on both server paths: the channel handler, and hummingbird-websocket's with
/// permessage-deflate.
@Suite struct RealtimeHTTPServerIntegrationTests {
  static let deflate = [false, true]

  /// The default timeouts.
  static func standard(deflate: Bool) -> RealtimeWebSocketConfiguration {
    RealtimeWebSocketConfiguration(perMessageDeflate: deflate)
  }

  /// Short timeouts, so that the tests take well under a second each.
  static func short(deflate: Bool) -> RealtimeWebSocketConfiguration {
    RealtimeWebSocketConfiguration(
      perMessageDeflate: deflate,
      timeouts: .init(idle: .milliseconds(1200), header: .milliseconds(300), body: .milliseconds(300)))
  }

  struct Malformed: Sendable, CustomTestStringConvertible {
    let testDescription: String
    let request: String
    var status = "400"
  }

  static let malformed: [Malformed] = [
    Malformed(
      testDescription: "two different Content-Lengths",
      request: "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!"),
    Malformed(
      testDescription: "Content-Length and chunked Transfer-Encoding",
      request: "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
        + "5\r\nhello\r\n0\r\n\r\n"),
    Malformed(
      testDescription: "negative Content-Length",
      request: "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n"),
    Malformed(testDescription: "unknown method", request: "FOO / HTTP/1.1\r\nHost: x\r\n\r\n"),
    Malformed(
      testDescription: "100 KB header",
      request: "GET /health HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "a", count: 100_000))\r\n\r\n",
      status: "431"),
  ]

  @Test(arguments: malformed, deflate)
  func malformedRequestIsAnsweredAndClosed(_ malformed: Malformed, deflate: Bool) async throws {
    try await withServer(makeHub(), configuration: Self.standard(deflate: deflate)) { port in
      let connection = try await RawTCPConnection.open(port: port)
      try await connection.send(malformed.request)
      let result = try await connection.waitForEnd()
      #expect(result.text.hasPrefix("HTTP/1.1 \(malformed.status) "))
      #expect(result.text.lowercased().contains("connection: close"))
      #expect(result.ended || result.closed)
      #expect(try await connection.waitUntilReleased())
      await connection.close()
    }
  }

  @Test(arguments: deflate) func malformedSecondRequestOnAKeepAliveConnectionIsAnsweredAndClosed(deflate: Bool)
    async throws
  {
    try await withServer(makeHub(), configuration: Self.standard(deflate: deflate)) { port in
      let connection = try await RawTCPConnection.open(port: port)
      try await connection.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
      let first = try await connection.wait { $0.text.hasSuffix("\r\n\r\nok") }
      #expect(first.text.hasPrefix("HTTP/1.1 200 "))
      try await connection.send("GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n")
      let result = try await connection.waitForEnd()
      #expect(result.ended || result.closed)
      #expect(try await connection.waitUntilReleased())
      let second = result.text.dropFirst(first.text.count)
      #expect(second.hasPrefix("HTTP/1.1 400 "))
      #expect(result.text.components(separatedBy: "HTTP/1.1 ").count == 3)  // exactly two responses
      await connection.close()
    }
  }

  @Test(arguments: deflate) func slowHeadIsAnswered408AfterTheHeaderTimeout(deflate: Bool) async throws {
    try await withServer(makeHub(), configuration: Self.short(deflate: deflate)) { port in
      let connection = try await RawTCPConnection.open(port: port)
      let start = ContinuousClock.now
      try await connection.send("GET /health HTTP/1.1\r\n")
      // A slowloris: a header line every 100 ms, each in time for an idle timer but never finishing the head.
      let drip = Task {
        for index in 0..<50 {
          try await Task.sleep(for: .milliseconds(100))
          try await connection.send("X-\(index): 1\r\n")
        }
      }
      let result = try await connection.waitForEnd()
      let elapsed = ContinuousClock.now - start
      #expect(result.ended || result.closed)
      #expect(result.text.hasPrefix("HTTP/1.1 408 "))
      #expect(elapsed >= .milliseconds(300))
      #expect(elapsed < .seconds(2))
      #expect(try await connection.waitUntilReleased())
      drip.cancel()
      await connection.close()
    }
  }

  @Test(arguments: deflate) func slowBodyIsAnswered408AfterTheBodyTimeout(deflate: Bool) async throws {
    try await withServer(makeHub(), configuration: Self.short(deflate: deflate)) { port in
      let connection = try await RawTCPConnection.open(port: port)
      let start = ContinuousClock.now
      try await connection.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
      let result = try await connection.waitForEnd()
      let elapsed = ContinuousClock.now - start
      #expect(result.ended || result.closed)
      #expect(result.text.hasPrefix("HTTP/1.1 408 "))
      #expect(elapsed >= .milliseconds(300))
      #expect(elapsed < .seconds(2))
      #expect(try await connection.waitUntilReleased())
      await connection.close()
    }
  }

  @Test(arguments: deflate) func idleConnectionIsClosedQuietlyAfterTheIdleTimeout(deflate: Bool) async throws {
    try await withServer(makeHub(), configuration: Self.short(deflate: deflate)) { port in
      let start = ContinuousClock.now
      let connection = try await RawTCPConnection.open(port: port)
      let result = try await connection.waitForEnd()
      let elapsed = ContinuousClock.now - start
      #expect(result.ended || result.closed)
      #expect(result.bytes.isEmpty)
      #expect(elapsed >= .milliseconds(1200))
      #expect(elapsed < .seconds(3))
      #expect(try await connection.waitUntilReleased(upTo: .milliseconds(500)))
      await connection.close()
    }
  }

  @Test(arguments: deflate) func keepAliveClientIsServedThenClosedWhenIdle(deflate: Bool) async throws {
    try await withServer(makeHub(), configuration: Self.short(deflate: deflate)) { port in
      let connection = try await RawTCPConnection.open(port: port)
      try await connection.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
      _ = try await connection.wait { $0.text.hasSuffix("\r\n\r\nok") }
      // Longer than the header and body timeouts, well within the idle timeout (a loaded machine is slow).
      try await Task.sleep(for: .milliseconds(500))
      try await connection.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
      let served = try await connection.wait { $0.text.hasSuffix("\r\n\r\nhello") }
      #expect(!served.ended && !served.closed)
      #expect(served.text.components(separatedBy: "HTTP/1.1 200 ").count == 3)
      let start = ContinuousClock.now
      let result = try await connection.waitForEnd()
      #expect(result.ended || result.closed)
      #expect(result.bytes.count == served.bytes.count)
      #expect(ContinuousClock.now - start < .seconds(3))
      #expect(try await connection.waitUntilReleased(upTo: .milliseconds(500)))
      await connection.close()
    }
  }

  @Test(arguments: deflate) func connectionCloseRequestIsServedThenReleased(deflate: Bool) async throws {
    try await withServer(makeHub(), configuration: Self.standard(deflate: deflate)) { port in
      let connection = try await RawTCPConnection.open(port: port)
      try await connection.send("GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
      let result = try await connection.waitForEnd()
      #expect(result.text.hasPrefix("HTTP/1.1 200 "))
      #expect(result.text.hasSuffix("\r\n\r\nok"))
      #expect(try await connection.waitUntilReleased())
      await connection.close()
    }
  }

  @Test(arguments: deflate) func webSocketIsNotClosedByTheHTTPTimeouts(deflate: Bool) async throws {
    try await withServer(makeHub(), configuration: Self.short(deflate: deflate)) { port in
      let connection = try await RawTCPConnection.open(port: port)
      // The upgrade request and the first frame in one write: the frame reaches the hub.
      let upgrade =
        "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
        + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: meridian.v1\r\n\r\n"
      try await connection.send(Array(upgrade.utf8) + maskedTextFrame(hello()))
      let welcomed = try await connection.wait { $0.text.contains("welcome") }
      #expect(welcomed.text.hasPrefix("HTTP/1.1 101 "))
      #expect(welcomed.text.contains("welcome"))
      try await Task.sleep(for: .seconds(1))  // past every HTTP timeout
      try await connection.send(maskedTextFrame(RealtimeCodec.encode(.ping)))
      let ponged = try await connection.wait { $0.text.contains("pong") }
      #expect(ponged.text.contains("pong"))
      #expect(!ponged.ended && !ponged.closed)
      await connection.close()
    }
  }

  @Test(arguments: deflate) func webSocketClientSessionOutlivesTheHTTPTimeouts(deflate: Bool) async throws {
    try await withServer(makeHub(), configuration: Self.short(deflate: deflate)) { port in
      let code = try await rawSession(port: port) { inbound, outbound in
        var iterator = inbound.makeAsyncIterator()
        try await outbound.write(.text(hello()))
        guard case .welcome? = try await iterator.nextFrame() else {
          Issue.record("no welcome")
          return
        }
        try await Task.sleep(for: .seconds(1))
        try await outbound.write(.text(RealtimeCodec.encode(.ping)))
        guard case .pong? = try await iterator.nextFrame() else {
          Issue.record("no pong after the HTTP timeouts")
          return
        }
      }
      #expect(code == 1000)
    }
  }
}
