import Foundation

/// How a request body is turned into bytes and which `Content-Type` it is sent with.
public struct RequestBodyCoding<Body: Sendable>: Sendable {
  /// The media type sent as `Content-Type`, or `nil` for no body.
  public let contentType: String?
  /// Encodes a body; `nil` means no body.
  public let encode: @Sendable (Body) throws -> Data?

  /// Creates a coding from a media type and an encoding function.
  public init(contentType: String?, encode: @escaping @Sendable (Body) throws -> Data?) {
    self.contentType = contentType
    self.encode = encode
  }
}

extension RequestBodyCoding where Body == NoBody {
  /// No body.
  public static var none: Self { Self(contentType: nil) { _ in nil } }
}

extension RequestBodyCoding where Body: Encodable {
  /// A JSON body (`application/json`). Keys are sorted, so one value always becomes the same bytes (a retry, or the
  /// same request rebuilt after a restart, matches an `Idempotency-Key` fingerprint of the bytes); `configure` may
  /// change the encoder once.
  public static func json(configure: @Sendable (JSONEncoder) -> Void = { _ in }) -> Self {
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    configure(encoder)
    let box = UncheckedSendable(encoder)
    return Self(contentType: "application/json") { try box.value.encode($0) }
  }

  /// An `application/x-www-form-urlencoded` body from a flat `Encodable` value: strings, numbers and booleans,
  /// arrays of them as repeated keys; `nil` values are left out. Nested objects are an encoding error.
  public static var formURLEncoded: Self {
    Self(contentType: "application/x-www-form-urlencoded") { try FormURLEncoding.encode($0) }
  }
}

extension RequestBodyCoding where Body == Data {
  /// Raw bytes sent as they are, with the given media type.
  public static func raw(contentType: String = "application/octet-stream") -> Self {
    Self(contentType: contentType) { $0 }
  }
}

/// How a success response body is turned into the endpoint's response type.
public struct ResponseDecoding<Response: Sendable>: Sendable {
  /// The media type sent as `Accept`, if any.
  public let accept: String?
  /// Decodes a response body.
  public let decode: @Sendable (Data) throws -> Response

  /// Creates a decoding from a media type and a decoding function.
  public init(accept: String?, decode: @escaping @Sendable (Data) throws -> Response) {
    self.accept = accept
    self.decode = decode
  }
}

extension ResponseDecoding where Response: Decodable {
  /// A JSON response. A decoding failure becomes ``NetworkingError/decoding(_:)`` naming the field path.
  ///
  /// A ``CommonFormDecodable`` response is read by its own reader first, and by `JSONDecoder` when that declines;
  /// `configure` applies to the `JSONDecoder` only (the reader knows its type's own key names and forms).
  public static func json(configure: @Sendable (JSONDecoder) -> Void = { _ in }) -> Self {
    let decoder = JSONDecoder()
    configure(decoder)
    let box = UncheckedSendable(decoder)
    if let fast = Response.self as? any CommonFormDecodable.Type {
      let reader = UncheckedSendable(fast)
      return Self(accept: "application/json") { data in
        if let value = reader.value.decodeCommonForm(data) as? Response { return value }
        return try box.value.decode(Response.self, from: data)
      }
    }
    return Self(accept: "application/json") { try box.value.decode(Response.self, from: $0) }
  }
}

/// A JSON body with a reader for its common form that is faster than `JSONDecoder`.
///
/// Readers of such bodies (the server for requests, ``ResponseDecoding/json(configure:)`` for responses) try
/// ``decodeCommonForm(_:)`` first and use `JSONDecoder` when it declines, so a conforming type must return either
/// exactly what `JSONDecoder` would, or `nil`; `JSONDecoder` then also words any error.
public protocol CommonFormDecodable: Decodable {
  /// The value read from `data`, or `nil` when `data` is not in the common form.
  static func decodeCommonForm(_ data: Data) -> Self?
}

/// A JSON body that writes itself faster than `JSONEncoder`: the bytes a `JSONEncoder` with `.sortedKeys` writes.
public protocol CommonFormEncodable: Encodable {
  /// The JSON of the value.
  var commonFormJSON: Data { get }
}

extension ResponseDecoding where Response == NoContent {
  /// Any body is ignored.
  public static var empty: Self { Self(accept: nil) { _ in NoContent() } }
}

extension ResponseDecoding where Response == Data {
  /// The body's bytes as they arrived (after content decoding).
  public static var raw: Self { Self(accept: nil) { $0 } }
}

/// JSON coders are safe to share once configured; this box says so to the compiler on every platform.
struct UncheckedSendable<Value>: @unchecked Sendable {
  let value: Value
  init(_ value: Value) { self.value = value }
}

enum FormURLEncoding {
  struct NotFlat: Error, CustomStringConvertible {
    let key: String
    var description: String { "form-urlencoded bodies take flat values; '\(key)' is a nested object" }
  }

  /// A JSON value as far as a form can carry it.
  enum Value: Decodable {
    case null
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([Value])
    case object

    init(from decoder: any Decoder) throws {
      let container = try decoder.singleValueContainer()
      if container.decodeNil() {
        self = .null
      } else if let value = try? container.decode(Bool.self) {
        self = .bool(value)
      } else if let value = try? container.decode(Int64.self) {
        self = .integer(value)
      } else if let value = try? container.decode(Double.self) {
        self = .number(value)
      } else if let value = try? container.decode(String.self) {
        self = .string(value)
      } else if let value = try? container.decode([Value].self) {
        self = .array(value)
      } else {
        self = .object
      }
    }
  }

  static func encode(_ value: some Encodable) throws -> Data {
    let json = try JSONEncoder().encode(value)
    let object: [String: Value]
    do {
      object = try JSONDecoder().decode([String: Value].self, from: json)
    } catch {
      throw NotFlat(key: "<root>")
    }
    var pairs: [String] = []
    for key in object.keys.sorted() {
      let values: [Value]
      if case .array(let items) = object[key] { values = items } else { values = object[key].map { [$0] } ?? [] }
      for item in values {
        guard let text = try scalar(item, key: key) else { continue }
        pairs.append(
          PercentEncoding.encode(key, allowing: .queryComponent) + "="
            + PercentEncoding.encode(text, allowing: .queryComponent))
      }
    }
    return Data(pairs.joined(separator: "&").utf8)
  }

  private static func scalar(_ value: Value, key: String) throws -> String? {
    switch value {
    case .null: nil
    case .bool(let value): value ? "true" : "false"
    case .integer(let value): String(value)
    case .number(let value): String(value)
    case .string(let value): value
    case .array, .object: throw NotFlat(key: key)
    }
  }
}
