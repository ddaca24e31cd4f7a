import Foundation
import RealtimeKit
import Testing

@Suite struct RealtimeCodecTests {
  let user42 = ChannelName("user:42")!

  @Test func channelNamesFollowTheProtocol() {
    #expect(ChannelName("user:42")?.namespace == "user")
    #expect(ChannelName("venue:cafe-12.b@x")?.id == "cafe-12.b@x")
    #expect(ChannelName.group("7")?.rawValue == "group:7")
    for bad in ["user", ":42", "user:", "User:1", "user:a b", "1user:2", "user:" + String(repeating: "a", count: 129)] {
      #expect(ChannelName(bad) == nil, "\(bad)")
    }
  }

  @Test func codableValuesConvertToAndFromJSONValues() throws {
    struct Fix: Codable, Equatable {
      var latitude: Double
      var note: String?
      var tags: [String]
    }
    let fix = Fix(latitude: 50.45, note: nil, tags: ["a", "b"])
    let value = try JSONValue(encoding: fix)
    #expect(value == ["latitude": 50.45, "tags": ["a", "b"]])
    #expect(try value.decode(as: Fix.self) == fix)
    let wrong: JSONValue = ["latitude": "north", "tags": []]
    #expect(throws: DecodingError.self) { try wrong.decode(as: Fix.self) }
  }

  @Test func clientFramesRoundTrip() throws {
    let frames: [ClientFrame] = [
      .hello(
        Hello(
          token: "t",
          clientName: "tracker",
          clientVersion: "1.0",
          resume: [SubscribeRequest(channel: user42, resume: ResumePosition(offset: 17, epoch: "e1"))]
        )
      ),
      .subscribe(SubscribeRequest(channel: user42)),
      .subscribe(SubscribeRequest(channel: user42, resume: ResumePosition(offset: 0, epoch: "e"))),
      .unsubscribe(user42),
      .publish(
        PublishRequest(id: "m-1", channel: user42, payload: ["lat": 50.45, "lon": 30.52, "n": [1, nil, true]])),
      .ping,
    ]
    for frame in frames {
      #expect(try RealtimeCodec.decodeClientFrame(RealtimeCodec.encode(frame)) == frame)
    }
  }

  @Test func serverFramesRoundTrip() throws {
    let position = ChannelPosition(channel: user42, offset: 23, epoch: "k3v9")
    let frames: [ServerFrame] = [
      .welcome(
        Welcome(
          session: "s",
          serverTime: 1_763_800_000_000,
          heartbeatMilliseconds: 15000,
          heartbeatTimeoutMilliseconds: 10000,
          limits: RealtimeLimits()
        )
      ),
      .subscribed(position),
      .reload(position),
      .event(RealtimeEvent(channel: user42, offset: 24, time: 1_763_800_001_234, payload: ["text": "a\"b\\c\n\u{1}"])),
      .ack(PublishAck(id: "m", channel: user42, offset: 24)),
      .unsubscribed(user42, reason: .revoked),
      .error(RealtimeError(code: .forbidden, message: "no", fatal: false, id: "m", channel: "user:42")),
      .pong(time: 5),
    ]
    for frame in frames {
      #expect(try RealtimeCodec.decodeServerFrame(RealtimeCodec.encode(frame)) == frame)
    }
  }

  @Test func documentExamplesDecode() throws {
    // Examples from docs/realtime-protocol.md.
    let hello = try RealtimeCodec.decodeClientFrame(
      #"{"type": "hello", "token": "eyJhbGciOi...", "client": {"name": "meridian-tracker", "version": "1.4.0"}, "resume": [{"channel": "user:42", "offset": 17, "epoch": "k3v9"}]}"#
    )
    guard case .hello(let value) = hello else {
      Issue.record("not hello")
      return
    }
    #expect(value.resume == [SubscribeRequest(channel: user42, resume: ResumePosition(offset: 17, epoch: "k3v9"))])
    let event = try RealtimeCodec.decodeServerFrame(
      #"{"type": "event", "channel": "user:42", "offset": 24, "time": 1763800001234, "payload": {"lat": 50.45, "lon": 30.52}}"#
    )
    #expect(
      event
        == .event(
          RealtimeEvent(channel: user42, offset: 24, time: 1_763_800_001_234, payload: ["lat": 50.45, "lon": 30.52]))
    )
  }

  @Test(arguments: [
    ("not json", RealtimeErrorCode.badFrame),
    ("[1,2]", .badFrame),
    ("{}", .badFrame),
    (#"{"type": 3}"#, .badFrame),
    (#"{"type": "teleport"}"#, .unknownType),
    (#"{"type": "subscribe"}"#, .badFrame),
    (#"{"type": "subscribe", "channel": "nope"}"#, .invalidChannel),
    (#"{"type": "subscribe", "channel": "user:1", "offset": -1, "epoch": "e"}"#, .badFrame),
    (#"{"type": "subscribe", "channel": "user:1", "offset": 3}"#, .badFrame),
    (#"{"type": "publish", "id": "", "channel": "user:1", "payload": 1}"#, .badFrame),
    (#"{"type": "publish", "id": "x", "channel": "user:1"}"#, .badFrame),
    (#"{"type": "hello", "token": "t"}"#, .badFrame),
    ("\u{0}\u{7f}\u{fffd}", .badFrame),
  ])
  func malformedClientFramesAreErrors(text: String, code: RealtimeErrorCode) {
    #expect(throws: RealtimeDecodingError.self) { try RealtimeCodec.decodeClientFrame(text) }
    do {
      _ = try RealtimeCodec.decodeClientFrame(text)
    } catch {
      #expect(error.code == code)
      #expect(!error.isTooLarge)
    }
  }

  @Test func randomBytesNeverCrashTheDecoder() {
    var generator = SplitMix64(seed: 42)
    for _ in 0..<2000 {
      let count = Int(generator.next() % 64)
      let bytes = (0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
      let text = String(decoding: bytes, as: UTF8.self)
      _ = try? RealtimeCodec.decodeClientFrame(text)
      _ = try? RealtimeCodec.decodeServerFrame(text)
    }
  }

  @Test func oversizedFramesAreFlagged() {
    let text = RealtimeCodec.encode(
      .publish(PublishRequest(id: "x", channel: user42, payload: .string(String(repeating: "a", count: 200))))
    )
    do {
      _ = try RealtimeCodec.decodeClientFrame(text, maxBytes: 100)
      Issue.record("accepted an oversized frame")
    } catch {
      #expect(error.isTooLarge)
    }
  }

  @Test func publishErrorsCarryTheID() {
    do {
      _ = try RealtimeCodec.decodeClientFrame(#"{"type": "publish", "id": "m-9", "channel": "bad", "payload": 1}"#)
    } catch {
      #expect(error.id == "m-9")
      #expect(error.code == .invalidChannel)
    }
  }

  @Test func eventEncodingMatchesGenericEncoding() throws {
    let event = RealtimeEvent(channel: user42, offset: 9, time: 12, payload: ["a": [1, 2.5, "x"]])
    #expect(
      RealtimeCodec.encodeEvent(channel: user42, offset: 9, time: 12, payloadJSON: event.payload.jsonText)
        == RealtimeCodec.encode(.event(event))
    )
    #expect(
      RealtimeCodec.encode(.event(event))
        == #"{"channel":"user:42","offset":9,"payload":{"a":[1,2.5,"x"]},"time":12,"type":"event"}"#)
  }

  @Test func backoffGrowsExponentiallyWithBoundedJitter() {
    var low = RealtimeClientConfiguration(clientName: "t", clientVersion: "1", jitter: { 0 }, token: { "" })
    #expect(low.reconnectDelay(attempt: 0) == .milliseconds(250))
    #expect(low.reconnectDelay(attempt: 3) == .seconds(2))
    #expect(low.reconnectDelay(attempt: 30) == .seconds(15))
    low.jitter = { 1 }
    #expect(low.reconnectDelay(attempt: 0) == .milliseconds(500))
    #expect(low.reconnectDelay(attempt: 30) == .seconds(30))
  }

  @Test func closeCodesMatchTheDocument() {
    #expect(RealtimeCloseCode.unauthorized.rawValue == 4001)
    #expect(RealtimeCloseCode.protocolViolation.rawValue == 4002)
    #expect(RealtimeCloseCode.slowConsumer.rawValue == 4003)
    #expect(RealtimeCloseCode.serverShuttingDown.rawValue == 4004)
    #expect(RealtimeCloseCode.heartbeatTimeout.rawValue == 4005)
    #expect(!RealtimeCloseCode.unauthorized.allowsReconnect)
    #expect(RealtimeCloseCode.slowConsumer.allowsReconnect)
  }
}

struct SplitMix64: RandomNumberGenerator {
  var state: UInt64
  init(seed: UInt64) { state = seed }
  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}
