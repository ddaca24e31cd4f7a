import NIOCore

/// Writes and reads MQTT 3.1.1 control packets: the fixed header with its variable-length remaining length
/// (§2.2.3), two-byte big-endian integers and length-prefixed UTF-8 strings (§1.5).
public enum MQTTCodec {
  /// The largest remaining length the four bytes of §2.2.3 express (256 MB).
  public static let maximumRemainingLength = 268_435_455

  // MARK: Remaining length

  /// Appends `length` as the remaining length: seven bits a byte, least significant first, the top bit set on every
  /// byte but the last.
  public static func writeRemainingLength(_ length: Int, to buffer: inout ByteBuffer) {
    precondition(length >= 0 && length <= maximumRemainingLength, "remaining length out of range")
    var value = length
    repeat {
      var byte = UInt8(value % 128)
      value /= 128
      if value > 0 { byte |= 0x80 }
      buffer.writeInteger(byte)
    } while value > 0
  }

  /// Reads a remaining length at the reader index, or nil (reading nothing) when its bytes have not all arrived.
  /// - Throws: ``MQTTProtocolError/malformedRemainingLength`` for a fifth byte.
  public static func readRemainingLength(from buffer: inout ByteBuffer) throws(MQTTProtocolError) -> Int? {
    var value = 0
    var multiplier = 1
    var index = buffer.readerIndex
    for position in 0..<4 {
      guard let byte = buffer.getInteger(at: index, as: UInt8.self) else { return nil }
      index += 1
      value += Int(byte & 0x7F) * multiplier
      if byte & 0x80 == 0 {
        buffer.moveReaderIndex(to: index)
        return value
      }
      if position == 3 { break }
      multiplier *= 128
    }
    throw .malformedRemainingLength
  }

  // MARK: Encoding

  /// Appends `packet` to `buffer`.
  public static func encode(_ packet: MQTTPacket, into buffer: inout ByteBuffer) {
    var body = ByteBuffer()
    var flags: UInt8 = 0
    switch packet {
    case .connect(let connect):
      writeString("MQTT", to: &body)
      body.writeInteger(UInt8(4))  // protocol level 3.1.1
      var connectFlags: UInt8 = 0
      if connect.username != nil { connectFlags |= 0x80 }
      if connect.password != nil { connectFlags |= 0x40 }
      if let will = connect.will {
        connectFlags |= 0x04 | (will.qos.rawValue << 3)
        if will.retain { connectFlags |= 0x20 }
      }
      if connect.cleanSession { connectFlags |= 0x02 }
      body.writeInteger(connectFlags)
      body.writeInteger(connect.keepAliveSeconds)
      writeString(connect.clientIdentifier, to: &body)
      if let will = connect.will {
        writeString(will.topic, to: &body)
        writeBinary(will.payload, to: &body)
      }
      if let username = connect.username { writeString(username, to: &body) }
      if let password = connect.password { writeBinary(password, to: &body) }
    case .connectAcknowledgement(let sessionPresent, let returnCode):
      body.writeInteger(UInt8(sessionPresent ? 1 : 0))
      body.writeInteger(returnCode.rawValue)
    case .publish(let publish):
      flags = (publish.duplicate ? 0x08 : 0) | (publish.qos.rawValue << 1) | (publish.retain ? 0x01 : 0)
      writeString(publish.topic, to: &body)
      if publish.qos > .atMostOnce { body.writeInteger(publish.packetIdentifier ?? 0) }
      body.writeBytes(publish.payload)
    case .publishAcknowledgement(let packetIdentifier):
      body.writeInteger(packetIdentifier)
    case .subscribe(let packetIdentifier, let subscriptions):
      flags = 0x02
      body.writeInteger(packetIdentifier)
      for subscription in subscriptions {
        writeString(subscription.topicFilter, to: &body)
        body.writeInteger(subscription.qos.rawValue)
      }
    case .subscribeAcknowledgement(let packetIdentifier, let returnCodes):
      body.writeInteger(packetIdentifier)
      body.writeBytes(returnCodes)
    case .pingRequest, .pingResponse, .disconnect:
      break
    }
    buffer.writeInteger(packet.type << 4 | flags)
    writeRemainingLength(body.readableBytes, to: &buffer)
    buffer.writeImmutableBuffer(body)
  }

  /// The bytes of `packet`.
  public static func encode(_ packet: MQTTPacket) -> [UInt8] {
    var buffer = ByteBuffer()
    encode(packet, into: &buffer)
    return Array(buffer.readableBytesView)
  }

  static func writeString(_ string: String, to buffer: inout ByteBuffer) {
    writeBinary(Array(string.utf8), to: &buffer)
  }

  static func writeBinary(_ bytes: [UInt8], to buffer: inout ByteBuffer) {
    buffer.writeInteger(UInt16(truncatingIfNeeded: bytes.count))
    buffer.writeBytes(bytes.prefix(Int(UInt16.max)))
  }

  // MARK: Decoding

  /// Reads the packet at the reader index, or nil (reading nothing) when it has not all arrived.
  /// - Throws: ``MQTTProtocolError`` for bytes that are no packet this client speaks, or a packet longer than
  ///   `maximumLength`.
  public static func decode(from buffer: inout ByteBuffer, maximumLength: Int = maximumRemainingLength)
    throws(MQTTProtocolError) -> MQTTPacket?
  {
    let start = buffer.readerIndex
    guard let first = buffer.readInteger(as: UInt8.self) else { return nil }
    guard let length = try readRemainingLength(from: &buffer) else {
      buffer.moveReaderIndex(to: start)
      return nil
    }
    guard length <= maximumLength else { throw .packetTooLarge(length) }
    guard var body = buffer.readSlice(length: length) else {
      buffer.moveReaderIndex(to: start)
      return nil
    }
    return try decode(type: first >> 4, flags: first & 0x0F, body: &body)
  }

  static func decode(type: UInt8, flags: UInt8, body: inout ByteBuffer) throws(MQTTProtocolError) -> MQTTPacket {
    func requireFlags(_ expected: UInt8) throws(MQTTProtocolError) {
      guard flags == expected else { throw .invalidFlags(type: type, flags: flags) }
    }
    func requireEnd() throws(MQTTProtocolError) {
      guard body.readableBytes == 0 else { throw .malformed("\(body.readableBytes) bytes left in packet type \(type)") }
    }
    func integer() throws(MQTTProtocolError) -> UInt16 {
      guard let value = body.readInteger(as: UInt16.self) else { throw .malformed("a two-byte integer is cut short") }
      return value
    }
    func byte() throws(MQTTProtocolError) -> UInt8 {
      guard let value = body.readInteger(as: UInt8.self) else { throw .malformed("a byte is missing") }
      return value
    }
    func binary() throws(MQTTProtocolError) -> [UInt8] {
      let count = try integer()
      guard let bytes = body.readBytes(length: Int(count)) else { throw .malformed("a string is cut short") }
      return bytes
    }
    func string() throws(MQTTProtocolError) -> String {
      let bytes = try binary()
      guard let text = String(validating: bytes, as: UTF8.self), !text.utf8.contains(0) else {
        throw .malformed("a string is not well-formed UTF-8")
      }
      return text
    }
    func qos(_ bits: UInt8) throws(MQTTProtocolError) -> MQTTQoS {
      guard let qos = MQTTQoS(rawValue: bits) else { throw .malformed("QoS 3 is reserved") }
      return qos
    }
    switch type {
    case 1:
      try requireFlags(0)
      guard try string() == "MQTT" else { throw .malformed("the protocol name is not MQTT") }
      guard try byte() == 4 else { throw .malformed("the protocol level is not 4 (3.1.1)") }
      let connectFlags = try byte()
      guard connectFlags & 0x01 == 0 else { throw .malformed("the reserved connect flag is set") }
      let keepAlive = try integer()
      var connect = MQTTConnect(
        clientIdentifier: try string(), cleanSession: connectFlags & 0x02 != 0, keepAliveSeconds: keepAlive)
      if connectFlags & 0x04 != 0 {
        let topic = try string()
        connect.will = MQTTPublish(
          topic: topic, payload: try binary(), qos: try qos((connectFlags >> 3) & 0x03),
          retain: connectFlags & 0x20 != 0)
      }
      if connectFlags & 0x80 != 0 { connect.username = try string() }
      if connectFlags & 0x40 != 0 { connect.password = try binary() }
      try requireEnd()
      return .connect(connect)
    case 2:
      try requireFlags(0)
      let acknowledgeFlags = try byte()
      let code = try byte()
      try requireEnd()
      return .connectAcknowledgement(
        sessionPresent: acknowledgeFlags & 0x01 != 0, returnCode: MQTTConnectReturnCode(rawValue: code))
    case 3:
      let level = try qos((flags >> 1) & 0x03)
      let topic = try string()
      let identifier = level > .atMostOnce ? try integer() : nil
      let payload = body.readBytes(length: body.readableBytes) ?? []
      return .publish(
        MQTTPublish(
          topic: topic, payload: payload, qos: level, retain: flags & 0x01 != 0, duplicate: flags & 0x08 != 0,
          packetIdentifier: identifier))
    case 4:
      try requireFlags(0)
      let identifier = try integer()
      try requireEnd()
      return .publishAcknowledgement(packetIdentifier: identifier)
    case 8:
      try requireFlags(2)
      let identifier = try integer()
      var subscriptions: [MQTTSubscription] = []
      while body.readableBytes > 0 {
        let filter = try string()
        subscriptions.append(MQTTSubscription(filter, qos: try qos(try byte())))
      }
      guard !subscriptions.isEmpty else { throw .malformed("a SUBSCRIBE without topic filters") }
      return .subscribe(packetIdentifier: identifier, subscriptions: subscriptions)
    case 9:
      try requireFlags(0)
      let identifier = try integer()
      return .subscribeAcknowledgement(
        packetIdentifier: identifier, returnCodes: body.readBytes(length: body.readableBytes) ?? [])
    case 12, 13, 14:
      try requireFlags(0)
      try requireEnd()
      return type == 12 ? .pingRequest : type == 13 ? .pingResponse : .disconnect
    default:
      throw .unsupportedPacketType(type)
    }
  }
}

/// Splits the bytes of a connection into ``MQTTPacket``s (for a channel pipeline).
public struct MQTTPacketDecoder: ByteToMessageDecoder, Sendable {
  public typealias InboundOut = MQTTPacket
  /// The longest packet taken; a longer one closes the connection.
  public let maximumLength: Int

  /// A decoder of packets up to `maximumLength` bytes.
  public init(maximumLength: Int = 1 << 20) { self.maximumLength = maximumLength }

  public mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
    guard let packet = try MQTTCodec.decode(from: &buffer, maximumLength: maximumLength) else { return .needMoreData }
    context.fireChannelRead(wrapInboundOut(packet))
    return .continue
  }

  public mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws
    -> DecodingState
  {
    try decode(context: context, buffer: &buffer)
  }
}

/// Writes ``MQTTPacket``s as bytes (for a channel pipeline).
public struct MQTTPacketEncoder: MessageToByteEncoder, Sendable {
  public typealias OutboundIn = MQTTPacket

  /// An encoder.
  public init() {}

  public func encode(data: MQTTPacket, out: inout ByteBuffer) throws {
    MQTTCodec.encode(data, into: &out)
  }
}
