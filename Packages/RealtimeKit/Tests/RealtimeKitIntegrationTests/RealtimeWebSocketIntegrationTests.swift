import Foundation
import NIOCore
import NIOWebSocket
import RealtimeKit
import RealtimeKitHummingbird
import RealtimeKitTesting
import RealtimeKitWebSocketClient
import Synchronization
import Testing
import WSClient

@Suite(.serialized) struct RealtimeWebSocketIntegrationTests {
  let group = ChannelName.test("group:1")

  @Test func publishReachesBothSubscribersInOrder() async throws {
    let hub = makeHub()
    try await withServer(hub) { port in
      let alice = makeClient(port: port, token: "alice")
      let bob = makeClient(port: port, token: "bob")
      for client in [alice, bob] {
        await client.start()
        await client.subscribe(group)
        try await waitSubscribed(client, group)
      }
      async let aliceEvents = collect(alice) { $0.count == 20 }
      async let bobEvents = collect(bob) { $0.count == 20 }
      for index in 1...20 {
        let ack = try await alice.publish(["n": .int(Int64(index))], to: group)
        #expect(ack.offset == UInt64(index))
      }
      let (a, b) = try await (aliceEvents, bobEvents)
      #expect(a.map(\.offset) == Array(1...20))
      #expect(b.map(\.offset) == Array(1...20))
      #expect(b.map { $0.payload["n"] } == (1...20).map { JSONValue.int(Int64($0)) })
      await alice.stop()
      await bob.stop()
    }
  }

  @Test func cutConnectionResumesWithExactlyTheMissedEvents() async throws {
    let hub = makeHub()
    let channel = ChannelName.test("user:7")
    try await withServer(hub) { port in
      let client = makeClient(port: port, token: "watcher")
      let sessions = Task {
        var connected = 0
        for await state in client.states {
          if case .connected = state { connected += 1 }
          if connected == 3 { break }
        }
        return connected
      }
      await client.start()
      await client.subscribe(channel)
      try await waitSubscribed(client, channel)
      let publisher = Task {
        for index in 1...100 {
          await hub.publish(.int(Int64(index)), to: channel)
          if index == 30 || index == 70 {
            // Drop the TCP connection without a close handshake, mid-stream.
            await hub.disconnect(principalID: "watcher", code: nil)
          }
          try? await Task.sleep(for: .milliseconds(3))
        }
      }
      let events = try await collect(client) { $0.last?.offset == 100 }
      await publisher.value
      #expect(events.map(\.offset) == Array(1...100))
      #expect(events.map(\.payload) == (1...100).map { JSONValue.int(Int64($0)) })
      #expect(await sessions.value == 3)  // the first session and two reconnects
      await client.stop()
    }
  }

  @Test func resentPublishIsAcknowledgedAgainAndPublishedOnce() async throws {
    let hub = makeHub()
    try await withServer(hub) { port in
      let publish = RealtimeCodec.encode(.publish(PublishRequest(id: "fix-1", channel: group, payload: ["lat": 1])))
      let acks = Acks()
      for _ in 0..<2 {  // two connections of the same principal, each sending the id twice
        _ = try await rawSession(port: port) { inbound, outbound in
          var iterator = inbound.makeAsyncIterator()
          try await outbound.write(.text(hello()))
          _ = try await iterator.nextFrame()
          try await outbound.write(.text(publish))
          try await outbound.write(.text(publish))
          for _ in 0..<2 {
            if case .ack(let ack)? = try await iterator.nextFrame() { acks.append(ack) }
          }
        }
      }
      #expect(acks.values == Array(repeating: PublishAck(id: "fix-1", channel: group, offset: 1), count: 4))
      #expect(await hub.position(of: group).offset == 1)
    }
  }

  @Test func slowConsumerIsClosedWhileOthersKeepReceiving() async throws {
    var configuration = RealtimeHubConfiguration()
    configuration.sendQueueCapacity = 64
    configuration.historyCapacity = 2000
    configuration.slowConsumerGrace = .seconds(20)
    let hub = makeHub(configuration)
    let channel = ChannelName.test("venue:1")
    let count = 1500
    try await withServer(hub) { port in
      let fast = makeClient(port: port, token: "fast")
      await fast.start()
      await fast.subscribe(channel)
      try await waitSubscribed(fast, channel)
      async let fastEvents = collect(fast) { $0.count == count }
      let slowCode = Task {
        try await rawSession(port: port) { inbound, outbound in
          var iterator = inbound.makeAsyncIterator()
          try await outbound.write(.text(hello("slow")))
          _ = try await iterator.nextFrame()
          try await outbound.write(.text(RealtimeCodec.encode(.subscribe(SubscribeRequest(channel: channel)))))
          _ = try await iterator.nextFrame()
          try await Task.sleep(for: .seconds(3))  // stop reading: the socket buffers fill up
          while try await iterator.nextFrame() != nil {}
        }
      }
      while await hub.presence(of: channel).count < 2 { try await Task.sleep(for: .milliseconds(10)) }
      let payload = JSONValue.string(String(repeating: "x", count: 16_000))
      for index in 1...count {
        await hub.publish(payload, to: channel)
        if index % 10 == 0 { try await Task.sleep(for: .milliseconds(2)) }  // a steady stream, not one burst
      }
      let events = try await fastEvents
      #expect(events.map(\.offset) == (1...count).map { UInt64($0) })
      #expect(try await slowCode.value == RealtimeCloseCode.slowConsumer.rawValue)
      await fast.stop()
    }
  }

  @Test func badFramesGetErrorsAndRandomBytesCloseWithoutCrashing() async throws {
    let hub = makeHub()
    try await withServer(hub) { port in
      let errors = Acks()
      let code = try await rawSession(port: port) { inbound, outbound in
        var iterator = inbound.makeAsyncIterator()
        try await outbound.write(.text(hello()))
        _ = try await iterator.nextFrame()
        for text in [
          "{", "null", #"{"type":"warp"}"#, #"{"type":"publish","id":"x","channel":"user:1"}"#, "\u{1}\u{2}",
        ] {
          try await outbound.write(.text(text))
          if case .error(let error)? = try await iterator.nextFrame() { errors.appendError(error) }
        }
        try await outbound.write(.text(RealtimeCodec.encode(.ping)))
        if case .pong? = try await iterator.nextFrame() {
          errors.appendError(RealtimeError(code: .init(rawValue: "pong"), message: ""))
        }
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<512).map { _ in UInt8.random(in: 0...255, using: &generator) }
        try await outbound.write(.binary(ByteBuffer(bytes: bytes)))
        while try await iterator.nextFrame() != nil {}
      }
      #expect(errors.codes == ["bad_frame", "bad_frame", "unknown_type", "bad_frame", "bad_frame", "pong"])
      #expect(code == RealtimeCloseCode.protocolViolation.rawValue)

      // Oversized message: 1009.
      let big = try await rawSession(port: port) { inbound, outbound in
        try await outbound.write(.text(hello()))
        try await outbound.write(.text(String(repeating: "a", count: 70_000)))
        _ = try await readAll(inbound)
      }
      #expect(big == 1009)

      // Invalid UTF-8 in a text frame: 1007.
      let invalid = try await rawSession(port: port) { inbound, outbound in
        try await outbound.write(.custom(.init(fin: true, opcode: .text, data: ByteBuffer(bytes: [0xFF, 0xFE, 0x80]))))
        _ = try await readAll(inbound)
      }
      #expect(invalid == 1007)

      // The server still serves.
      let client = makeClient(port: port)
      await client.start()
      await client.subscribe(group)
      try await waitSubscribed(client, group)
      await client.stop()
    }
  }

  @Test func badTokenIsClosedWith4001() async throws {
    let hub = makeHub()
    try await withServer(hub) { port in
      let code = try await rawSession(port: port) { inbound, outbound in
        try await outbound.write(.text(hello("bad-token")))
        _ = try await readAll(inbound)
      }
      #expect(code == RealtimeCloseCode.unauthorized.rawValue)
      let client = makeClient(port: port, token: "bad-token")
      await client.start()
      let final = try await withTimeout {
        var last: RealtimeConnectionState?
        for await state in client.states {
          last = state
          if case .stopped = state { break }
        }
        return last
      }
      #expect(final == .stopped(code: .unauthorized))
    }
  }

  @Test func upgradeWithoutTheSubprotocolIsRefused() async throws {
    try await withServer(makeHub()) { port in
      await #expect(throws: (any Error).self) {
        _ = try await rawSession(port: port, subprotocol: nil) { _, _ in }
      }
    }
  }

  @Test func gracefulShutdownClosesWith4004() async throws {
    let hub = makeHub()
    try await withServer(hub) { port in
      let code = try await rawSession(port: port) { inbound, outbound in
        var iterator = inbound.makeAsyncIterator()
        try await outbound.write(.text(hello()))
        _ = try await iterator.nextFrame()
        Task { await hub.shutdown() }
        while try await iterator.nextFrame() != nil {}
      }
      #expect(code == RealtimeCloseCode.serverShuttingDown.rawValue)
    }
  }

  @Test func fragmentsPingsBurstsAndClientCloseOnTheHandlerPath() async throws {
    let hub = makeHub()
    try await withServer(hub) { port in
      let count = 200
      let code = try await rawSession(port: port) { inbound, outbound in
        var iterator = inbound.makeAsyncIterator()
        // A hello in three fragments, with a ping frame between them.
        let text = Array(hello().utf8)
        let third = text.count / 3
        try await outbound.write(.custom(.init(fin: false, opcode: .text, data: ByteBuffer(bytes: text[..<third]))))
        try await outbound.write(.custom(.init(fin: true, opcode: .ping, data: ByteBuffer(string: "p"))))
        try await outbound.write(
          .custom(.init(fin: false, opcode: .continuation, data: ByteBuffer(bytes: text[third..<(2 * third)]))))
        try await outbound.write(
          .custom(.init(fin: true, opcode: .continuation, data: ByteBuffer(bytes: text[(2 * third)...]))))
        guard case .welcome? = try await iterator.nextFrame() else {
          Issue.record("no welcome")
          return
        }
        // A burst well past the inbound backlog limit: reads pause and resume, and every ping is answered in order.
        for _ in 0..<count { try await outbound.write(.text(RealtimeCodec.encode(.ping))) }
        var pongs = 0
        while pongs < count, case .pong? = try await iterator.nextFrame() { pongs += 1 }
        #expect(pongs == count)
      }
      // The client closed; the server answered 1000 and unregistered the connection.
      #expect(code == 1000)
      try await withTimeout {
        while await hub.connectionCount > 0 { try await Task.sleep(for: .milliseconds(10)) }
      }
    }
  }

  @Test func plainHTTPRequestsStillReachTheRouter() async throws {
    try await withServer(makeHub()) { port in
      let response = try rawHTTP(port: port, "GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
      #expect(response.hasPrefix("HTTP/1.1 200"))
      #expect(response.hasSuffix("ok"))
      let refused = try rawHTTP(
        port: port,
        "GET /elsewhere HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
          + "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
          + "Sec-WebSocket-Protocol: meridian.v1\r\n\r\n"
      )
      #expect(refused.hasPrefix("HTTP/1.1 400"))
    }
  }

  @Test func perMessageDeflateConfigurationServesOnTheTaskPath() async throws {
    let hub = makeHub()
    try await withServer(hub, configuration: .init(perMessageDeflate: true)) { port in
      let client = makeClient(port: port)
      await client.start()
      await client.subscribe(group)
      try await waitSubscribed(client, group)
      await client.stop()
    }
  }
}

/// A thread-safe recorder for values produced inside WebSocket handlers.
final class Acks: Sendable {
  private let acks = Mutex<[PublishAck]>([])
  private let errorCodes = Mutex<[String]>([])
  func append(_ ack: PublishAck) { acks.withLock { $0.append(ack) } }
  func appendError(_ error: RealtimeError) { errorCodes.withLock { $0.append(error.code.rawValue) } }
  var values: [PublishAck] { acks.withLock { $0 } }
  var codes: [String] { errorCodes.withLock { $0 } }
}
