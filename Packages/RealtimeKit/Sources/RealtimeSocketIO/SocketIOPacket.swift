import Foundation
import RealtimeKit

/// One Socket.IO v5 packet, carried in an Engine.IO `message` (socket.io-protocol, "Packet encoding"):
/// `<type>[<namespace>,][<ack id>][<JSON payload>]`, the namespace written only when it is not `/`.
///
/// Binary packets (`BINARY_EVENT`, `BINARY_ACK`) are refused: their attachments would arrive as binary Engine.IO
/// packets, which this server does not take.
public struct SocketIOPacket: Sendable, Hashable {
  /// The packet types of the protocol.
  public enum Kind: Int, Sendable, Hashable {
    /// Joins a namespace (client; payload: the auth object) or accepts it (server; payload `{"sid"}`).
    case connect = 0
    /// Leaves a namespace.
    case disconnect = 1
    /// An event: a non-empty array whose first element is the event's name.
    case event = 2
    /// The answer to an event that asked for one, an array.
    case ack = 3
    /// A refused `connect` (server; payload `{"message"}`).
    case connectError = 4
    /// An event with binary attachments (refused).
    case binaryEvent = 5
    /// An acknowledgement with binary attachments (refused).
    case binaryAck = 6
  }

  /// The type.
  public var kind: Kind
  /// The namespace, `/` by default.
  public var namespace: String
  /// The payload, if any.
  public var data: JSONValue?
  /// The acknowledgement id, when an event asks for an answer (or an `ack` gives one).
  public var id: Int?

  /// Creates a packet.
  public init(_ kind: Kind, namespace: String = "/", data: JSONValue? = nil, id: Int? = nil) {
    self.kind = kind
    self.namespace = namespace
    self.data = data
    self.id = id
  }

  /// An event `name` with `arguments`.
  public static func event(_ name: String, _ arguments: [JSONValue], namespace: String = "/", id: Int? = nil)
    -> SocketIOPacket
  {
    SocketIOPacket(.event, namespace: namespace, data: .array([.string(name)] + arguments), id: id)
  }

  /// The event's name and arguments, for a well-formed `event`.
  public var event: (name: String, arguments: [JSONValue])? {
    guard kind == .event, case .array(let values) = data, case .string(let name) = values.first else { return nil }
    return (name, Array(values.dropFirst()))
  }

  /// The packet's text form (the Engine.IO `message`'s data).
  public var encoded: String {
    var text = String(kind.rawValue)
    if namespace != "/" { text += namespace + "," }
    if let id { text += String(id) }
    if let data { text += data.jsonText }
    return text
  }

  /// The longest namespace and acknowledgement id accepted, in characters.
  static let maxNamespaceLength = 256
  static let maxIDDigits = 15

  /// Decodes a packet and checks its payload against its type: `connect` an object or none, `disconnect` none,
  /// `event` a non-empty array starting with a string, `ack` an array, `connect_error` an object.
  ///
  /// - Throws: ``SocketIOError/malformed(_:)`` for text that is not such a packet, ``SocketIOError/binaryUnsupported``
  ///   for the binary types.
  public init(decoding text: String) throws(SocketIOError) {
    var rest = Substring(text)
    guard let digit = rest.first, let raw = digit.wholeNumberValue, let kind = Kind(rawValue: raw), digit.isASCII
    else { throw .malformed("unknown packet type") }
    rest = rest.dropFirst()
    guard kind != .binaryEvent, kind != .binaryAck else { throw .binaryUnsupported }
    var namespace = "/"
    if rest.first == "/" {
      guard let comma = rest.firstIndex(of: ","),
        rest.distance(from: rest.startIndex, to: comma) <= Self.maxNamespaceLength
      else { throw .malformed("a namespace without its comma") }
      namespace = String(rest[..<comma])
      rest = rest[rest.index(after: comma)...]
    }
    let digits = rest.prefix { $0.isASCII && $0.isNumber }
    var id: Int?
    if !digits.isEmpty {
      guard digits.count <= Self.maxIDDigits, let value = Int(digits) else { throw .malformed("an ack id too large") }
      id = value
      rest = rest.dropFirst(digits.count)
    }
    var data: JSONValue?
    if !rest.isEmpty {
      do {
        data = try JSONValue.parse(Data(rest.utf8))
      } catch {
        throw .malformed("the payload is not JSON")
      }
    }
    switch (kind, data) {
    case (.connect, nil), (.connect, .object?), (.disconnect, nil), (.connectError, .object?), (.ack, .array?):
      break
    case (.event, .array(let values)?) where values.first?.stringValue != nil:
      break
    default:
      throw .malformed("a payload that packet type \(kind.rawValue) does not take")
    }
    self.init(kind, namespace: namespace, data: data, id: id)
  }
}

/// What was wrong with a Socket.IO packet; the session it came on is closed.
public enum SocketIOError: Error, Sendable, Hashable, CustomStringConvertible {
  /// Not a packet of the protocol, said how.
  case malformed(String)
  /// A binary packet type.
  case binaryUnsupported

  public var description: String {
    switch self {
    case .malformed(let reason): "malformed Socket.IO packet: \(reason)"
    case .binaryUnsupported: "binary Socket.IO packets are not supported"
    }
  }
}
