/// A channel name, `<namespace>:<id>`, such as `user:42`, `group:7` or `venue:cafe-12`.
///
/// The namespace matches `[a-z][a-z0-9_]{0,31}` and the id `[A-Za-z0-9_.@-]{1,128}` (protocol §2).
public struct ChannelName: Sendable, Hashable, Comparable, CustomStringConvertible {
  /// The part before the colon, e.g. `user`.
  public let namespace: String
  /// The part after the colon, e.g. `42`.
  public let id: String

  /// Parses and validates a channel name; `nil` when it does not follow the protocol's rules.
  public init?(_ rawValue: String) {
    guard rawValue.utf8.count <= 161, let colon = rawValue.firstIndex(of: ":") else { return nil }
    let namespace = String(rawValue[..<colon])
    let id = String(rawValue[rawValue.index(after: colon)...])
    self.init(namespace: namespace, id: id)
  }

  /// Creates a channel name from its parts; `nil` when either part is invalid.
  public init?(namespace: String, id: String) {
    guard Self.isValidNamespace(namespace), Self.isValidID(id) else { return nil }
    self.namespace = namespace
    self.id = id
  }

  /// The channel of one user's live updates, `user:<id>`; `nil` if `id` is not a valid channel id.
  public static func user(_ id: String) -> ChannelName? { ChannelName(namespace: "user", id: id) }
  /// The channel of a group's shared updates, `group:<id>`; `nil` if `id` is not a valid channel id.
  public static func group(_ id: String) -> ChannelName? { ChannelName(namespace: "group", id: id) }
  /// The channel of a venue's promotions, `venue:<id>`; `nil` if `id` is not a valid channel id.
  public static func venue(_ id: String) -> ChannelName? { ChannelName(namespace: "venue", id: id) }

  /// The wire form, `<namespace>:<id>`.
  public var rawValue: String { namespace + ":" + id }
  /// The wire form.
  public var description: String { rawValue }

  /// Orders by wire form.
  public static func < (lhs: ChannelName, rhs: ChannelName) -> Bool { lhs.rawValue < rhs.rawValue }

  static func isValidNamespace(_ namespace: String) -> Bool {
    let bytes = Array(namespace.utf8)
    guard (1...32).contains(bytes.count), (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(bytes[0]) else {
      return false
    }
    return bytes.allSatisfy { byte in
      (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
        || byte == UInt8(ascii: "_")
    }
  }

  static func isValidID(_ id: String) -> Bool {
    let bytes = Array(id.utf8)
    guard (1...128).contains(bytes.count) else { return false }
    return bytes.allSatisfy { byte in
      (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
        || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
        || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "@") || byte == UInt8(ascii: "-")
    }
  }
}
