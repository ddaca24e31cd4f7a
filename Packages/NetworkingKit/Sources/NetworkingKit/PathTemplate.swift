import Foundation

/// A URL path with typed parameters, written once and used both to build requests and to register server routes.
///
/// Write it as a string literal; interpolate a key path of the parameters type and the name the route uses:
///
/// ```swift
/// let path: PathTemplate<UserRef> = "/v1/users/\(\.id, "id")/profile"
/// path.template            // "/v1/users/{id}/profile"
/// path.render(UserRef(id: "42"))  // "/v1/users/42/profile"
/// ```
public struct PathTemplate<Parameters>: Sendable, ExpressibleByStringInterpolation, CustomStringConvertible {
  /// One piece of a template: literal text or a named parameter.
  public enum Component: Sendable {
    /// Literal path text, sent as written.
    case literal(String)
    /// A parameter: its name in the template and how to read its value from the parameters.
    case parameter(name: String, value: @Sendable (Parameters) -> String)
  }

  /// The pieces of the template, in order.
  public let components: [Component]

  /// The template with `{name}` for every parameter, e.g. `/v1/users/{id}/profile`.
  public let template: String

  /// Builds a template from its components.
  public init(components: [Component]) {
    self.components = components
    self.template = components.map { component in
      switch component {
      case .literal(let text): text
      case .parameter(let name, _): "{\(name)}"
      }
    }.joined()
  }

  /// Builds a template without parameters.
  public init(stringLiteral value: String) {
    self.init(components: [.literal(value)])
  }

  /// Builds a template from an interpolated string literal.
  public init(stringInterpolation: StringInterpolation) {
    self.init(components: stringInterpolation.components)
  }

  /// The interpolation that reads parameters from key paths.
  public struct StringInterpolation: StringInterpolationProtocol {
    var components: [Component] = []

    /// Creates an empty interpolation.
    public init(literalCapacity: Int, interpolationCount: Int) {
      components.reserveCapacity(interpolationCount * 2 + 1)
    }

    /// Appends literal path text.
    public mutating func appendLiteral(_ literal: String) {
      if !literal.isEmpty { components.append(.literal(literal)) }
    }

    /// Appends a parameter read from `keyPath`, named `name` in the template (`{name}`).
    public mutating func appendInterpolation<Value: CustomStringConvertible & Sendable>(
      _ keyPath: KeyPath<Parameters, Value> & Sendable, _ name: String
    ) {
      components.append(.parameter(name: name, value: { $0[keyPath: keyPath].description }))
    }
  }

  /// The parameter names, in order of appearance.
  public var parameterNames: [String] {
    components.compactMap { component in
      if case .parameter(let name, _) = component { return name }
      return nil
    }
  }

  /// The template as a string (same as ``template``).
  public var description: String { template }

  /// The path for `parameters`, each parameter value percent-encoded as one path segment.
  public func render(_ parameters: Parameters) -> String {
    var result = ""
    for component in components {
      switch component {
      case .literal(let text): result += text
      case .parameter(_, let value): result += PercentEncoding.encode(value(parameters), allowing: .pathSegment)
      }
    }
    return result
  }

  /// Matches a concrete path against the template and returns the decoded parameter values by name,
  /// or `nil` when the path doesn't fit. Servers use it to read parameters; a parameter never spans a `/`.
  public func match(_ path: String) -> [String: String]? {
    var captures: [String: String] = [:]
    var rest = Substring(path)
    var index = components.startIndex
    while index < components.endIndex {
      switch components[index] {
      case .literal(let text):
        guard rest.hasPrefix(text) else { return nil }
        rest = rest.dropFirst(text.count)
      case .parameter(let name, _):
        let nextLiteral: String? = {
          let next = components.index(after: index)
          if next < components.endIndex, case .literal(let text) = components[next] { return text }
          return nil
        }()
        let segmentEnd = rest.firstIndex(of: "/") ?? rest.endIndex
        var end = segmentEnd
        if let nextLiteral, let first = nextLiteral.first, first != "/" {
          guard let range = rest[..<segmentEnd].range(of: nextLiteral) else { return nil }
          end = range.lowerBound
        }
        let raw = rest[..<end]
        guard !raw.isEmpty, let value = String(raw).removingPercentEncoding else { return nil }
        captures[name] = value
        rest = rest[end...]
      }
      index = components.index(after: index)
    }
    return rest.isEmpty ? captures : nil
  }
}

/// Percent-encoding of path segments and query components (RFC 3986).
enum PercentEncoding {
  enum Allowed {
    /// Unreserved characters plus sub-delimiters, `:` and `@`, never `/`.
    case pathSegment
    /// Unreserved characters only, for `application/x-www-form-urlencoded` and query values.
    case queryComponent
  }

  static func encode(_ string: String, allowing allowed: Allowed) -> String {
    var needsEncoding = false
    for byte in string.utf8 where !isAllowed(byte, allowed) {
      needsEncoding = true
      break
    }
    guard needsEncoding else { return string }
    let hex: [UInt8] = Array("0123456789ABCDEF".utf8)
    var bytes: [UInt8] = []
    bytes.reserveCapacity(string.utf8.count * 3)
    for byte in string.utf8 {
      if isAllowed(byte, allowed) {
        bytes.append(byte)
      } else {
        bytes.append(UInt8(ascii: "%"))
        bytes.append(hex[Int(byte >> 4)])
        bytes.append(hex[Int(byte & 0x0F)])
      }
    }
    return String(decoding: bytes, as: UTF8.self)
  }

  private static func isAllowed(_ byte: UInt8, _ allowed: Allowed) -> Bool {
    switch byte {
    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
      UInt8(ascii: "0")...UInt8(ascii: "9"),
      UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
      return true
    case UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("),
      UInt8(ascii: ")"),
      UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"), UInt8(ascii: "="), UInt8(ascii: ":"),
      UInt8(ascii: "@"):
      return allowed == .pathSegment
    default:
      return false
    }
  }
}
