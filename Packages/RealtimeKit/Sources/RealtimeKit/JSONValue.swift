import Foundation

/// A JSON value: the payload of events and publishes, delivered unchanged from publisher to subscribers.
public enum JSONValue: Sendable, Hashable {
  /// `null`.
  case null
  /// `true` or `false`.
  case bool(Bool)
  /// An integer that fits in 64 bits.
  case int(Int64)
  /// Any other number.
  case double(Double)
  /// A string.
  case string(String)
  /// An array.
  case array([JSONValue])
  /// An object; key order is not significant.
  case object([String: JSONValue])

  /// The member `key` of an object, or `nil`.
  public subscript(key: String) -> JSONValue? {
    if case .object(let members) = self { return members[key] }
    return nil
  }

  /// The string, if this is a string.
  public var stringValue: String? {
    if case .string(let value) = self { return value }
    return nil
  }

  /// The value as an integer, if it is an integral number.
  public var intValue: Int64? {
    switch self {
    case .int(let value): return value
    case .double(let value) where value.rounded() == value && abs(value) < 9.007_199_254_740_992e15: return Int64(value)
    default: return nil
    }
  }

  /// The value as a double, if it is a number.
  public var doubleValue: Double? {
    switch self {
    case .int(let value): return Double(value)
    case .double(let value): return value
    default: return nil
    }
  }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
  ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
  /// Creates a string value.
  public init(stringLiteral value: String) { self = .string(value) }
  /// Creates an integer value.
  public init(integerLiteral value: Int64) { self = .int(value) }
  /// Creates a floating-point value.
  public init(floatLiteral value: Double) { self = .double(value) }
  /// Creates a boolean value.
  public init(booleanLiteral value: Bool) { self = .bool(value) }
  /// Creates an array value.
  public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
  /// Creates an object value.
  public init(dictionaryLiteral elements: (String, JSONValue)...) {
    self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
  }
  /// Creates `null`.
  public init(nilLiteral: ()) { self = .null }
}

extension JSONValue: Codable {
  /// Decodes any JSON value.
  ///
  /// The kinds are tried most common first, as each miss costs a thrown `DecodingError`: an integer is read with
  /// none (a frame of half a million numbers took 2.6 s in the fuzz build when booleans came first, 5 s on a busy
  /// machine). A boolean is never a number or a string to `JSONDecoder`, so the order decides nothing else.
  public init(from decoder: any Decoder) throws {
    let container = try decoder.singleValueContainer()
    if container.decodeNil() {
      self = .null
    } else if let value = try? container.decode(Int64.self) {
      self = .int(value)
    } else if let value = try? container.decode(Double.self) {
      self = .double(value)
    } else if let value = try? container.decode(String.self) {
      self = .string(value)
    } else if let value = try? container.decode(Bool.self) {
      self = .bool(value)
    } else if let value = try? container.decode([JSONValue].self) {
      self = .array(value)
    } else {
      self = .object(try container.decode([String: JSONValue].self))
    }
  }

  /// Encodes the value.
  public func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    switch self {
    case .null: try container.encodeNil()
    case .bool(let value): try container.encode(value)
    case .int(let value): try container.encode(value)
    case .double(let value): try container.encode(value)
    case .string(let value): try container.encode(value)
    case .array(let value): try container.encode(value)
    case .object(let value): try container.encode(value)
    }
  }
}

extension JSONValue {
  /// Parses one JSON document.
  ///
  /// - Throws: a ``RealtimeDecodingError`` with code `bad_frame` when the bytes are not JSON.
  public static func parse(_ data: Data) throws(RealtimeDecodingError) -> JSONValue {
    do {
      return try JSONDecoder().decode(JSONValue.self, from: data)
    } catch {
      throw RealtimeDecodingError(code: .badFrame, message: "the message is not valid JSON")
    }
  }

  /// The JSON form of an `Encodable` value, as `JSONEncoder` writes it (for example a payload to publish).
  public init(encoding value: some Encodable) throws {
    self = try JSONValueEncoder.encode(value)
  }

  /// This value read as `type`, as `JSONDecoder` reads it (for example an event's payload).
  ///
  /// - Throws: the decoder's `DecodingError`, or the type's own error when it validates what it decodes.
  public func decode<Value: Decodable>(as type: Value.Type) throws -> Value {
    try JSONDecoder().decode(type, from: Data(jsonText.utf8))
  }

  /// The compact JSON text of this value, with object keys sorted so that equal values give equal text.
  public var jsonText: String {
    var output = ""
    output.reserveCapacity(256)
    write(to: &output)
    return output
  }

  func write(to output: inout String) {
    switch self {
    case .null: output += "null"
    case .bool(let value): output += value ? "true" : "false"
    case .int(let value): output += String(value)
    case .double(let value):
      if value.isFinite {
        if value.rounded() == value && abs(value) < 1e15 {
          output += String(Int64(value))
        } else {
          output += "\(value)"
        }
      } else {
        output += "null"
      }
    case .string(let value): Self.writeString(value, to: &output)
    case .array(let values):
      output += "["
      for (index, value) in values.enumerated() {
        if index > 0 { output += "," }
        value.write(to: &output)
      }
      output += "]"
    case .object(let members):
      output += "{"
      var first = true
      for (key, value) in members.sorted(by: { $0.key < $1.key }) {
        if !first { output += "," }
        first = false
        Self.writeString(key, to: &output)
        output += ":"
        value.write(to: &output)
      }
      output += "}"
    }
  }

  static func writeString(_ string: String, to output: inout String) {
    output += "\""
    // Most strings (ids, keys, names) need no escaping: append them whole rather than scalar by scalar.
    let needsEscaping = string.utf8.contains { byte in
      byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
    }
    if !needsEscaping {
      output += string
      output += "\""
      return
    }
    for scalar in string.unicodeScalars {
      switch scalar {
      case "\"": output += "\\\""
      case "\\": output += "\\\\"
      case "\n": output += "\\n"
      case "\r": output += "\\r"
      case "\t": output += "\\t"
      case _ where scalar.value < 0x20:
        let hex = String(scalar.value, radix: 16)
        output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
      default: output.unicodeScalars.append(scalar)
      }
    }
    output += "\""
  }
}
