/// A parsed JSON value that keeps numbers as their source text and remembers object key order: what DomainKit's
/// format readers work on. Internal, so that the one public `JSONValue` apps see is RealtimeKit's.
enum JSONValue: Sendable, Hashable {
  /// An object, keys in document order.
  case object([(String, JSONValue)])
  /// An array.
  case array([JSONValue])
  /// A string.
  case string(String)
  /// A number as written.
  case number(String)
  /// A boolean.
  case bool(Bool)
  /// null.
  case null

  /// The member `key` of an object (first occurrence).
  subscript(key: String) -> JSONValue? {
    guard case .object(let members) = self else { return nil }
    return members.first { $0.0 == key }?.1
  }

  /// The value as a finite Double, when it is a number.
  var double: Double? {
    guard case .number(let text) = self, let value = Double(text), value.isFinite else { return nil }
    return value
  }

  /// The value as a string, when it is one.
  var string: String? {
    guard case .string(let text) = self else { return nil }
    return text
  }

  /// The elements, when it is an array.
  var array: [JSONValue]? {
    guard case .array(let elements) = self else { return nil }
    return elements
  }

  /// Structural equality; object members are compared in order (as they appeared in the document).
  static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
    switch (lhs, rhs) {
    case (.object(let a), .object(let b)): a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
    case (.array(let a), .array(let b)): a == b
    case (.string(let a), .string(let b)), (.number(let a), .number(let b)): a == b
    case (.bool(let a), .bool(let b)): a == b
    case (.null, .null): true
    default: false
    }
  }

  /// Hashes consistently with ``==(_:_:)``.
  func hash(into hasher: inout Hasher) {
    switch self {
    case .object(let members):
      hasher.combine(0)
      for (key, value) in members {
        hasher.combine(key)
        hasher.combine(value)
      }
    case .array(let elements): hasher.combine(elements)
    case .string(let text), .number(let text): hasher.combine(text)
    case .bool(let value): hasher.combine(value)
    case .null: hasher.combine(5)
    }
  }
}

/// Builds ``JSONValue`` trees from ``JSONEvent``s, in time linear in the number of events: each open container is
/// appended to in place on the stack (a container taken off the stack, appended to and put back would be copied
/// on every append).
struct JSONValueBuilder {
  private struct Frame {
    var isObject: Bool
    var members: [(String, JSONValue)] = []
    var elements: [JSONValue] = []
    var pendingKey = ""
  }
  private var stack: [Frame] = []

  /// Whether a value is being built.
  var isBuilding: Bool { !stack.isEmpty }

  /// Adds an event; returns the finished value when the outermost container (or a scalar) completes.
  mutating func add(_ event: JSONEvent) -> JSONValue? {
    switch event {
    case .beginObject:
      stack.append(Frame(isObject: true))
      return nil
    case .beginArray:
      stack.append(Frame(isObject: false))
      return nil
    case .key(let key):
      if !stack.isEmpty { stack[stack.count - 1].pendingKey = key }
      return nil
    case .endObject, .endArray:
      guard let frame = stack.popLast() else { return nil }
      return attach(frame.isObject ? .object(frame.members) : .array(frame.elements))
    case .string(let text): return attach(.string(text))
    case .number(let text): return attach(.number(text))
    case .bool(let value): return attach(.bool(value))
    case .null: return attach(.null)
    }
  }

  private mutating func attach(_ value: JSONValue) -> JSONValue? {
    guard !stack.isEmpty else { return value }
    let top = stack.count - 1
    if stack[top].isObject {
      stack[top].members.append((stack[top].pendingKey, value))
      stack[top].pendingKey = ""
    } else {
      stack[top].elements.append(value)
    }
    return nil
  }
}
