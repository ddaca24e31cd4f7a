import Foundation

/// An `Encoder` that builds a ``JSONValue`` tree directly — the value `JSONEncoder` would write, read back by
/// `JSONDecoder` — without the text in between: no bytes written and parsed again, no thrown `DecodingError` per
/// member while the decoder guesses each member's kind.
///
/// As that round trip, it writes an integral `Double` or `Float` within ±2⁵³ as an integer, refuses a non-finite one,
/// and writes `Data` as Base64, `URL` as its absolute string and `Decimal` as a number. `Date` uses its own encoding
/// (seconds since 2001, `JSONEncoder`'s default strategy).
struct JSONValueEncoder {
  /// `value` as a JSON value.
  /// - Throws: `EncodingError.invalidValue` for a non-finite number, or what `value`'s `encode(to:)` throws.
  static func encode(_ value: some Encodable) throws -> JSONValue {
    try Node.encoding(value, at: [])
  }

  /// A value being built: the result, or a container that the encoding fills in later.
  fileprivate final class Node {
    enum Content {
      case value(JSONValue)
      case object([String: Node])
      case array([Node])
      case empty
    }
    var content: Content = .empty

    /// The finished tree.
    var value: JSONValue {
      switch content {
      case .value(let value): value
      case .object(let members): .object(members.mapValues(\.value))
      case .array(let elements): .array(elements.map(\.value))
      case .empty: .object([:])  // an `encode(to:)` that asked for no container writes `{}`, as `JSONEncoder` does
      }
    }

    /// Encodes `value` at `codingPath` into a finished tree.
    static func encoding(_ value: some Encodable, at codingPath: [any CodingKey]) throws -> JSONValue {
      if let special = try special(value, at: codingPath) { return special }
      let node = Node()
      try value.encode(to: ValueEncoder(node: node, codingPath: codingPath))
      return node.value
    }

    /// The types `JSONEncoder` writes its own way, and numbers.
    static func special(_ value: some Encodable, at codingPath: [any CodingKey]) throws -> JSONValue? {
      switch value {
      case let data as Data: return .string(data.base64EncodedString())
      case let url as URL: return .string(url.absoluteString)
      case let decimal as Decimal: return number(NSDecimalNumber(decimal: decimal).doubleValue)
      case let double as Double: return try finite(double, at: codingPath)
      case let float as Float: return try finite(asWritten(float), at: codingPath)
      default: return nil
      }
    }

    /// A floating-point number as the round trip through text gives it back.
    static func number(_ value: Double) -> JSONValue {
      if value.rounded() == value, abs(value) < 9.007_199_254_740_992e15 { return .int(Int64(value)) }
      return .double(value)
    }

    /// A `Float` as its text (the shortest that reads back as the same `Float`) reads as a `Double`: 0.1, not
    /// 0.100000001….
    static func asWritten(_ value: Float) -> Double {
      value.isFinite ? Double("\(value)") ?? Double(value) : Double(value)
    }

    /// An integer: beyond 64 signed bits, the `Double` that `JSONDecoder` reads the text as.
    static func integer(_ value: some BinaryInteger) -> JSONValue {
      Int64(exactly: value).map(JSONValue.int) ?? .double(Double(value))
    }

    static func finite(_ value: Double, at codingPath: [any CodingKey]) throws -> JSONValue {
      guard value.isFinite else {
        throw EncodingError.invalidValue(
          value, EncodingError.Context(codingPath: codingPath, debugDescription: "\(value) is not a JSON number"))
      }
      return number(value)
    }
  }

  /// The encoder handed to a value's `encode(to:)`, writing into one node.
  fileprivate struct ValueEncoder: Encoder {
    let node: Node
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
      if case .object = node.content {} else { node.content = .object([:]) }
      return KeyedEncodingContainer(Keyed<Key>(node: node, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
      if case .array = node.content {} else { node.content = .array([]) }
      return Unkeyed(node: node, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { Single(node: node, codingPath: codingPath) }
  }

  /// An index as a coding key, for the paths of array elements.
  fileprivate struct IndexKey: CodingKey {
    let intValue: Int?
    var stringValue: String { "Index \(intValue ?? 0)" }
    init(_ index: Int) { intValue = index }
    init?(stringValue: String) { nil }
    init?(intValue: Int) { self.intValue = intValue }
  }

  fileprivate struct Keyed<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: Node
    let codingPath: [any CodingKey]

    private func set(_ value: JSONValue, for key: Key) { child(key).content = .value(value) }

    private func child(_ key: Key) -> Node {
      guard case .object(var members) = node.content else { preconditionFailure("not an object") }
      if let existing = members[key.stringValue] { return existing }
      let child = Node()
      node.content = .empty  // the dictionary's only reference: inserting does not copy it
      members[key.stringValue] = child
      node.content = .object(members)
      return child
    }

    mutating func encodeNil(forKey key: Key) throws { set(.null, for: key) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { set(.bool(value), for: key) }
    mutating func encode(_ value: String, forKey key: Key) throws { set(.string(value), for: key) }
    mutating func encode(_ value: Int, forKey key: Key) throws { set(.int(Int64(value)), for: key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { set(.int(value), for: key) }
    mutating func encode(_ value: Double, forKey key: Key) throws {
      set(try Node.finite(value, at: codingPath + [key]), for: key)
    }
    mutating func encode(_ value: Int8, forKey key: Key) throws { set(Node.integer(value), for: key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { set(Node.integer(value), for: key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { set(Node.integer(value), for: key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { set(Node.integer(value), for: key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { set(Node.integer(value), for: key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { set(Node.integer(value), for: key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { set(Node.integer(value), for: key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { set(Node.integer(value), for: key) }
    mutating func encode(_ value: Float, forKey key: Key) throws {
      set(try Node.finite(Node.asWritten(value), at: codingPath + [key]), for: key)
    }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
      set(try Node.encoding(value, at: codingPath + [key]), for: key)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
      keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
      ValueEncoder(node: child(key), codingPath: codingPath + [key]).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
      ValueEncoder(node: child(key), codingPath: codingPath + [key]).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
      ValueEncoder(node: child(Key(stringValue: "super")!), codingPath: codingPath)
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
      ValueEncoder(node: child(key), codingPath: codingPath + [key])
    }
  }

  fileprivate struct Unkeyed: UnkeyedEncodingContainer {
    let node: Node
    let codingPath: [any CodingKey]
    var count: Int {
      guard case .array(let elements) = node.content else { return 0 }
      return elements.count
    }

    private func append(_ child: Node) {
      guard case .array(var elements) = node.content else { preconditionFailure("not an array") }
      node.content = .empty  // the array's only reference: appending does not copy it
      elements.append(child)
      node.content = .array(elements)
    }

    private func append(_ value: JSONValue) {
      let child = Node()
      child.content = .value(value)
      append(child)
    }

    private var nextPath: [any CodingKey] { codingPath + [IndexKey(count)] }

    mutating func encodeNil() throws { append(.null) }
    mutating func encode(_ value: Bool) throws { append(.bool(value)) }
    mutating func encode(_ value: String) throws { append(.string(value)) }
    mutating func encode(_ value: Int) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: Int64) throws { append(.int(value)) }
    mutating func encode(_ value: Double) throws { append(try Node.finite(value, at: nextPath)) }
    mutating func encode(_ value: Int8) throws { append(Node.integer(value)) }
    mutating func encode(_ value: Int16) throws { append(Node.integer(value)) }
    mutating func encode(_ value: Int32) throws { append(Node.integer(value)) }
    mutating func encode(_ value: UInt) throws { append(Node.integer(value)) }
    mutating func encode(_ value: UInt8) throws { append(Node.integer(value)) }
    mutating func encode(_ value: UInt16) throws { append(Node.integer(value)) }
    mutating func encode(_ value: UInt32) throws { append(Node.integer(value)) }
    mutating func encode(_ value: UInt64) throws { append(Node.integer(value)) }
    mutating func encode(_ value: Float) throws { append(try Node.finite(Node.asWritten(value), at: nextPath)) }
    mutating func encode<T: Encodable>(_ value: T) throws { append(try Node.encoding(value, at: nextPath)) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
      -> KeyedEncodingContainer<NestedKey>
    {
      let child = Node()
      let path = nextPath
      append(child)
      return ValueEncoder(node: child, codingPath: path).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
      let child = Node()
      let path = nextPath
      append(child)
      return ValueEncoder(node: child, codingPath: path).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
      let child = Node()
      let path = nextPath
      append(child)
      return ValueEncoder(node: child, codingPath: path)
    }
  }

  fileprivate struct Single: SingleValueEncodingContainer {
    let node: Node
    let codingPath: [any CodingKey]

    mutating func encodeNil() throws { node.content = .value(.null) }
    mutating func encode(_ value: Bool) throws { node.content = .value(.bool(value)) }
    mutating func encode(_ value: String) throws { node.content = .value(.string(value)) }
    mutating func encode(_ value: Int) throws { node.content = .value(.int(Int64(value))) }
    mutating func encode(_ value: Int64) throws { node.content = .value(.int(value)) }
    mutating func encode(_ value: Double) throws { node.content = .value(try Node.finite(value, at: codingPath)) }
    mutating func encode(_ value: Int8) throws { node.content = .value(Node.integer(value)) }
    mutating func encode(_ value: Int16) throws { node.content = .value(Node.integer(value)) }
    mutating func encode(_ value: Int32) throws { node.content = .value(Node.integer(value)) }
    mutating func encode(_ value: UInt) throws { node.content = .value(Node.integer(value)) }
    mutating func encode(_ value: UInt8) throws { node.content = .value(Node.integer(value)) }
    mutating func encode(_ value: UInt16) throws { node.content = .value(Node.integer(value)) }
    mutating func encode(_ value: UInt32) throws { node.content = .value(Node.integer(value)) }
    mutating func encode(_ value: UInt64) throws { node.content = .value(Node.integer(value)) }
    mutating func encode(_ value: Float) throws {
      node.content = .value(try Node.finite(Node.asWritten(value), at: codingPath))
    }
    mutating func encode<T: Encodable>(_ value: T) throws {
      node.content = .value(try Node.encoding(value, at: codingPath))
    }
  }
}
