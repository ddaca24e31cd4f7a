import RealtimeKit
import Testing

@testable import RealtimeSocketIO

/// The packet encodings against the examples of the protocols' own documents: engine.io-protocol (v4) "Packet
/// encoding" and socket.io-protocol (v5) "Packet encoding" and "Sample session".
@Suite struct EngineIOPacketTests {
  @Test func handshakeIsTheSampleSessionsOpenPacket() {
    let handshake = EngineIOHandshake(
      sid: "lv_VI97HAXpY6yYWAAAC", upgrades: ["websocket"], pingInterval: 25000, pingTimeout: 5000,
      maxPayload: 1_000_000)
    #expect(
      EngineIOPacket.open(handshake.json).encoded
        == #"0{"sid":"lv_VI97HAXpY6yYWAAAC","upgrades":["websocket"],"pingInterval":25000,"pingTimeout":5000,"maxPayload":1000000}"#
    )
  }

  @Test func packetsOfTheDocument() throws {
    let examples: [(String, EngineIOPacket)] = [
      ("1", .close), ("2", .ping("")), ("3", .pong("")), ("2probe", .ping("probe")), ("3probe", .pong("probe")),
      ("4hello", .message("hello")), ("4€", .message("€")), ("5", .upgrade), ("6", .noop),
    ]
    for (text, packet) in examples {
      #expect(packet.encoded == text)
      #expect(try EngineIOPacket(decoding: Substring(text)) == packet)
    }
  }

  @Test func pollingPayloadOfTheDocument() throws {
    let packets: [EngineIOPacket] = [.message("hello"), .ping(""), .message("world")]
    #expect(EngineIOPayload.encode(packets) == "4hello\u{1e}2\u{1e}4world")
    #expect(try EngineIOPayload.decode("4hello\u{1e}2\u{1e}4world") == packets)
    // The sample session's POST of two Socket.IO events.
    #expect(
      try EngineIOPayload.decode("42[\"hello\"]\u{1e}42[\"world\"]") == [
        .message("2[\"hello\"]"), .message("2[\"world\"]"),
      ])
  }

  @Test func binaryAndMalformedPacketsAreRefused() {
    #expect(throws: EngineIOError.binaryUnsupported) { try EngineIOPayload.decode("4hello\u{1e}bAQIDBA==") }
    for bad in ["", "7", "x", "1data", "5x", "4a\u{1e}\u{1e}4b"] {
      #expect(throws: EngineIOError.self) { try EngineIOPayload.decode(bad) }
    }
  }
}

@Suite struct SocketIOPacketTests {
  /// Every text-only row of the document's tables.
  static let examples: [(String, SocketIOPacket)] = [
    ("0", SocketIOPacket(.connect)),
    (#"0{"sid":"wZX3oN0bSVIhsaknAAAI"}"#, SocketIOPacket(.connect, data: ["sid": "wZX3oN0bSVIhsaknAAAI"])),
    ("0/admin,", SocketIOPacket(.connect, namespace: "/admin")),
    (
      #"0/admin,{"sid":"oSO0OpakMV_3jnilAAAA"}"#,
      SocketIOPacket(.connect, namespace: "/admin", data: ["sid": "oSO0OpakMV_3jnilAAAA"])
    ),
    (#"4{"message":"Not authorized"}"#, SocketIOPacket(.connectError, data: ["message": "Not authorized"])),
    (#"2["foo"]"#, .event("foo", [])),
    (#"2/admin,["bar"]"#, .event("bar", [], namespace: "/admin")),
    (#"212["foo"]"#, .event("foo", [], id: 12)),
    ("312[]", SocketIOPacket(.ack, data: [], id: 12)),
    (#"2/admin,13["foo"]"#, .event("foo", [], namespace: "/admin", id: 13)),
    (#"3/admin,13["bar"]"#, SocketIOPacket(.ack, namespace: "/admin", data: ["bar"], id: 13)),
    (#"314["bar"]"#, SocketIOPacket(.ack, data: ["bar"], id: 14)),
    (#"215["foo"]"#, .event("foo", [], id: 15)),
    ("1", SocketIOPacket(.disconnect)),
    ("1/admin,", SocketIOPacket(.disconnect, namespace: "/admin")),
    // The sample session's server emit, and a CONNECT with an auth payload ("with an additional payload").
    (#"2["hey","Jude"]"#, .event("hey", ["Jude"])),
    (#"0/admin,{"token":"123"}"#, SocketIOPacket(.connect, namespace: "/admin", data: ["token": "123"])),
  ]

  @Test func packetsOfTheDocument() throws {
    for (text, packet) in Self.examples {
      #expect(packet.encoded == text)
      #expect(try SocketIOPacket(decoding: text) == packet)
    }
    #expect(try SocketIOPacket(decoding: #"2["hey","Jude"]"#).event?.name == "hey")
  }

  @Test func binaryPacketsAreRefused() {
    #expect(throws: SocketIOError.binaryUnsupported) {
      try SocketIOPacket(decoding: #"51-["baz",{"_placeholder":true,"num":0}]"#)
    }
    #expect(throws: SocketIOError.binaryUnsupported) {
      try SocketIOPacket(decoding: #"61-15["bar",{"_placeholder":true,"num":0}]"#)
    }
  }

  /// The payloads the document says a receiver MUST close the connection for, and text that is no packet at all.
  @Test func malformedPacketsAreRefused() {
    let bad = [
      "", "7", "x", "٣", "2", "2[]", "2[42]", #"2{"a":1}"#, "2[\"a\"", "0[1]", #"1{"a":1}"#, "3{}", "4[]",
      "0/admin", "2" + String(repeating: "9", count: 40) + #"["a"]"#,
    ]
    for text in bad {
      #expect(throws: SocketIOError.self, "\(text)") { try SocketIOPacket(decoding: text) }
    }
  }
}
