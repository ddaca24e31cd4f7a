import MeridianMQTT
import NIOCore
import Testing

/// The codec against the byte layouts and examples of the MQTT 3.1.1 OASIS Standard (section numbers in names).
struct MQTTCodecTests {
  /// Table 2.4 "Size of Remaining Length field": the first and last value of each length, and one more byte.
  @Test(
    arguments: [
      (0, [0x00]), (127, [0x7F]), (128, [0x80, 0x01]), (16_383, [0xFF, 0x7F]), (16_384, [0x80, 0x80, 0x01]),
      (2_097_151, [0xFF, 0xFF, 0x7F]), (2_097_152, [0x80, 0x80, 0x80, 0x01]), (268_435_455, [0xFF, 0xFF, 0xFF, 0x7F]),
      (321, [0xC1, 0x02]),
    ] as [(Int, [UInt8])])
  func remainingLengthTable2_4(value: Int, bytes: [UInt8]) throws {
    var buffer = ByteBuffer()
    MQTTCodec.writeRemainingLength(value, to: &buffer)
    #expect(Array(buffer.readableBytesView) == bytes)
    #expect(try MQTTCodec.readRemainingLength(from: &buffer) == value)
    #expect(buffer.readableBytes == 0)
  }

  @Test func aRemainingLengthOfFiveBytesIsMalformed() {
    var buffer = ByteBuffer(bytes: [0x80, 0x80, 0x80, 0x80, 0x01])
    #expect(throws: MQTTProtocolError.malformedRemainingLength) { try MQTTCodec.readRemainingLength(from: &buffer) }
  }

  @Test func aPartialPacketReadsNothing() throws {
    let whole = MQTTCodec.encode(.publish(MQTTPublish(topic: "a/b", payload: Array(repeating: 7, count: 200))))
    for cut in [1, 2, 3, whole.count - 1] {
      var buffer = ByteBuffer(bytes: whole.prefix(cut))
      #expect(try MQTTCodec.decode(from: &buffer) == nil)
      #expect(buffer.readableBytes == cut)
    }
  }

  /// Figure 1.1 / §1.5.3: "A𪛔" is 0x0005 then 41 F0 AA 9B 94 (as the topic of a QoS 0 PUBLISH).
  @Test func utf8StringExample1_5_3() throws {
    let bytes = MQTTCodec.encode(.publish(MQTTPublish(topic: "A\u{2A6D4}", payload: [])))
    #expect(bytes == [0x30, 0x07, 0x00, 0x05, 0x41, 0xF0, 0xAA, 0x9B, 0x94])
  }

  /// §3.1.2.10, figure 3.6 (variable header non-normative example): protocol name, level 4, connect flags 0xCE
  /// (user name, password, will QoS 1, will flag, clean session), keep alive 10; then the payload in the order of
  /// §3.1.3: client identifier, will topic, will message, user name, password.
  @Test func connectExample3_1_2_10() throws {
    let connect = MQTTConnect(
      clientIdentifier: "c", cleanSession: true, keepAliveSeconds: 10, username: "u", password: [0x70],
      will: MQTTPublish(topic: "w", payload: [0x6D], qos: .atLeastOnce))
    let bytes = MQTTCodec.encode(.connect(connect))
    let variableHeader: [UInt8] = [0x00, 0x04, 0x4D, 0x51, 0x54, 0x54, 0x04, 0xCE, 0x00, 0x0A]
    let payload: [UInt8] = [0x00, 0x01, 0x63, 0x00, 0x01, 0x77, 0x00, 0x01, 0x6D, 0x00, 0x01, 0x75, 0x00, 0x01, 0x70]
    #expect(bytes == [0x10, UInt8(variableHeader.count + payload.count)] + variableHeader + payload)
    var buffer = ByteBuffer(bytes: bytes)
    #expect(try MQTTCodec.decode(from: &buffer) == .connect(connect))
  }

  /// §3.1.2.4: a persistent session (clean session 0) with a user name and password and no will: flags 0xC0.
  @Test func persistentSessionConnectFlags() {
    let bytes = MQTTCodec.encode(
      .connect(MQTTConnect(clientIdentifier: "", cleanSession: false, keepAliveSeconds: 60, username: "", password: []))
    )
    #expect(bytes[9] == 0xC0)
    #expect(bytes[10...11] == [0x00, 0x3C])
  }

  /// §3.2: CONNACK is 0x20 0x02, the session-present flag, the return code (table 3.1).
  @Test func connectAcknowledgement3_2() throws {
    var buffer = ByteBuffer(bytes: [0x20, 0x02, 0x01, 0x00, 0x20, 0x02, 0x00, 0x04, 0x20, 0x02, 0x00, 0x05])
    #expect(try MQTTCodec.decode(from: &buffer) == .connectAcknowledgement(sessionPresent: true, returnCode: .accepted))
    #expect(
      try MQTTCodec.decode(from: &buffer)
        == .connectAcknowledgement(sessionPresent: false, returnCode: .badUsernameOrPassword))
    #expect(
      try MQTTCodec.decode(from: &buffer) == .connectAcknowledgement(sessionPresent: false, returnCode: .notAuthorized))
  }

  /// §3.3.2.3, figure 3.11: topic "a/b", packet identifier 10; the fixed header's flags carry DUP, QoS and RETAIN.
  @Test func publishExample3_3_2_3() throws {
    let message = MQTTPublish(
      topic: "a/b", payload: Array("{}".utf8), qos: .atLeastOnce, retain: true, duplicate: true, packetIdentifier: 10)
    let bytes = MQTTCodec.encode(.publish(message))
    #expect(bytes == [0x3B, 0x09, 0x00, 0x03, 0x61, 0x2F, 0x62, 0x00, 0x0A, 0x7B, 0x7D])
    var buffer = ByteBuffer(bytes: bytes)
    #expect(try MQTTCodec.decode(from: &buffer) == .publish(message))
  }

  /// §3.3.1.2: a QoS 0 PUBLISH has no packet identifier; §3.4: PUBACK is 0x40 0x02 and the identifier.
  @Test func publishAtQoS0AndPublishAcknowledgement() throws {
    #expect(MQTTCodec.encode(.publish(MQTTPublish(topic: "a", payload: [1]))) == [0x30, 0x04, 0x00, 0x01, 0x61, 0x01])
    #expect(MQTTCodec.encode(.publishAcknowledgement(packetIdentifier: 0x1234)) == [0x40, 0x02, 0x12, 0x34])
    var buffer = ByteBuffer(bytes: [0x40, 0x02, 0x12, 0x34])
    #expect(try MQTTCodec.decode(from: &buffer) == .publishAcknowledgement(packetIdentifier: 0x1234))
  }

  /// §3.8.2.1 and §3.8.3.1, figures 3.21 and 3.22: packet identifier 10, "a/b" at QoS 1, "c/d" at QoS 2; the fixed
  /// header's flags are 0010 (§3.8.1).
  @Test func subscribeExample3_8_3_1() throws {
    let packet = MQTTPacket.subscribe(
      packetIdentifier: 10,
      subscriptions: [MQTTSubscription("a/b", qos: .atLeastOnce), MQTTSubscription("c/d", qos: .exactlyOnce)])
    let bytes = MQTTCodec.encode(packet)
    #expect(bytes == [0x82, 0x0E, 0x00, 0x0A, 0x00, 0x03, 0x61, 0x2F, 0x62, 0x01, 0x00, 0x03, 0x63, 0x2F, 0x64, 0x02])
    var buffer = ByteBuffer(bytes: bytes)
    #expect(try MQTTCodec.decode(from: &buffer) == packet)
  }

  /// §3.9.3.1, figure 3.26: return codes "success, maximum QoS 0", "success, maximum QoS 2", "failure".
  @Test func subscribeAcknowledgementExample3_9_3_1() throws {
    var buffer = ByteBuffer(bytes: [0x90, 0x05, 0x00, 0x0A, 0x00, 0x02, 0x80])
    #expect(
      try MQTTCodec.decode(from: &buffer) == .subscribeAcknowledgement(packetIdentifier: 10, returnCodes: [0, 2, 0x80]))
  }

  /// §3.12–3.14: PINGREQ 0xC0 0x00, PINGRESP 0xD0 0x00, DISCONNECT 0xE0 0x00.
  @Test func pingAndDisconnect3_12() throws {
    #expect(MQTTCodec.encode(.pingRequest) == [0xC0, 0x00])
    #expect(MQTTCodec.encode(.pingResponse) == [0xD0, 0x00])
    #expect(MQTTCodec.encode(.disconnect) == [0xE0, 0x00])
    var buffer = ByteBuffer(bytes: [0xD0, 0x00])
    #expect(try MQTTCodec.decode(from: &buffer) == .pingResponse)
  }

  /// §2.2.2: reserved flags must be as the table says; a SUBSCRIBE with flags 0 is malformed. §4.3: QoS 3 is
  /// reserved. §1.5.3: a string that is not UTF-8 is malformed.
  @Test func malformedPacketsAreRefused() {
    var subscribe = ByteBuffer(bytes: [0x80, 0x06, 0x00, 0x0A, 0x00, 0x01, 0x61, 0x01])
    #expect(throws: MQTTProtocolError.invalidFlags(type: 8, flags: 0)) { try MQTTCodec.decode(from: &subscribe) }
    var qos3 = ByteBuffer(bytes: [0x36, 0x03, 0x00, 0x01, 0x61])
    #expect(throws: MQTTProtocolError.self) { try MQTTCodec.decode(from: &qos3) }
    var notUTF8 = ByteBuffer(bytes: [0x30, 0x03, 0x00, 0x01, 0xFF])
    #expect(throws: MQTTProtocolError.self) { try MQTTCodec.decode(from: &notUTF8) }
    var ping = ByteBuffer(bytes: [0xC0, 0x01, 0x00])
    #expect(throws: MQTTProtocolError.self) { try MQTTCodec.decode(from: &ping) }
    var tooLong = ByteBuffer(bytes: [0x30, 0xFF, 0x7F])
    #expect(throws: MQTTProtocolError.packetTooLarge(16_383)) {
      try MQTTCodec.decode(from: &tooLong, maximumLength: 1000)
    }
  }
}
