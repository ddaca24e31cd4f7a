/// One Engine.IO v4 packet: a type digit, then its data (engine.io-protocol, "Packet encoding").
///
/// Only text is carried: a binary packet (a WebSocket binary frame, or `b<base64>` in a polling payload) is refused
/// with ``EngineIOError/binaryUnsupported``.
public enum EngineIOPacket: Sendable, Hashable {
  /// `0`: the handshake, sent by the server with its JSON (``EngineIOHandshake``).
  case open(String)
  /// `1`: the transport is closed.
  case close
  /// `2`: a heartbeat (the server's), or `2probe` when a client probes a WebSocket during an upgrade.
  case ping(String)
  /// `3`: the answer to a ping, with the ping's data.
  case pong(String)
  /// `4`: a message for the layer above (a Socket.IO packet).
  case message(String)
  /// `5`: the client completes an upgrade.
  case upgrade
  /// `6`: nothing; ends a pending poll during an upgrade.
  case noop

  /// The packet's text form: its type digit followed by its data.
  public var encoded: String {
    switch self {
    case .open(let handshake): "0" + handshake
    case .close: "1"
    case .ping(let data): "2" + data
    case .pong(let data): "3" + data
    case .message(let text): "4" + text
    case .upgrade: "5"
    case .noop: "6"
    }
  }

  /// Decodes one packet from its text form.
  ///
  /// - Throws: ``EngineIOError/malformed(_:)`` for an empty text, an unknown type or data where the type has none;
  ///   ``EngineIOError/binaryUnsupported`` for a base64 (`b`) packet.
  public init(decoding text: Substring) throws(EngineIOError) {
    guard let type = text.first else { throw .malformed("an empty packet") }
    let data = String(text.dropFirst())
    switch type {
    case "0": self = .open(data)
    case "1": self = try Self.bare(.close, data)
    case "2": self = .ping(data)
    case "3": self = .pong(data)
    case "4": self = .message(data)
    case "5": self = try Self.bare(.upgrade, data)
    case "6": self = try Self.bare(.noop, data)
    case "b": throw .binaryUnsupported
    default: throw .malformed("unknown packet type \(type)")
    }
  }

  private static func bare(_ packet: EngineIOPacket, _ data: String) throws(EngineIOError) -> EngineIOPacket {
    guard data.isEmpty else { throw .malformed("packet type \(packet.encoded) carries no data") }
    return packet
  }
}

/// The body of an HTTP long-polling request or response: packets separated by the record separator `\u{1e}`.
public enum EngineIOPayload {
  /// The separator between two packets of a payload.
  public static let separator: Character = "\u{1e}"

  /// The payload of `packets`.
  public static func encode(_ packets: [EngineIOPacket]) -> String {
    packets.map(\.encoded).joined(separator: String(separator))
  }

  /// The packets of a payload.
  ///
  /// - Throws: what ``EngineIOPacket/init(decoding:)`` throws for any of them.
  public static func decode(_ payload: String) throws(EngineIOError) -> [EngineIOPacket] {
    var packets: [EngineIOPacket] = []
    for text in payload.split(separator: separator, omittingEmptySubsequences: false) {
      packets.append(try EngineIOPacket(decoding: text))
    }
    return packets
  }
}

/// What went wrong with what a client sent; the session it came on is closed.
public enum EngineIOError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The text is not a packet of the protocol (or a packet out of place), said how.
  case malformed(String)
  /// Binary packets are not accepted.
  case binaryUnsupported

  public var description: String {
    switch self {
    case .malformed(let reason): "malformed Engine.IO packet: \(reason)"
    case .binaryUnsupported: "binary Engine.IO packets are not supported"
    }
  }
}

/// The data of the `open` packet that starts a session (engine.io-protocol, "Handshake").
public struct EngineIOHandshake: Sendable, Hashable {
  /// The session id the client sends back as `sid`.
  public var sid: String
  /// The transports the client may upgrade to (`["websocket"]` on polling, none on a WebSocket).
  public var upgrades: [String]
  /// How often the server sends a ping, in milliseconds.
  public var pingInterval: Int
  /// How long the server waits for the pong, and the client for the next ping past the interval, in milliseconds.
  public var pingTimeout: Int
  /// The largest payload (a polling body, or a WebSocket message) the server accepts, in bytes.
  public var maxPayload: Int

  /// Creates a handshake.
  public init(sid: String, upgrades: [String], pingInterval: Int, pingTimeout: Int, maxPayload: Int) {
    self.sid = sid
    self.upgrades = upgrades
    self.pingInterval = pingInterval
    self.pingTimeout = pingTimeout
    self.maxPayload = maxPayload
  }

  /// The JSON text, members in the order of the protocol's example.
  public var json: String {
    let upgrades = self.upgrades.map { "\"\($0)\"" }.joined(separator: ",")
    return #"{"sid":"\#(sid)","upgrades":[\#(upgrades)],"pingInterval":\#(pingInterval),"#
      + #""pingTimeout":\#(pingTimeout),"maxPayload":\#(maxPayload)}"#
  }
}
