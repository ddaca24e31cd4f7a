/// One syntactic event of a JSON text, produced incrementally by ``JSONTokenizer``.
public enum JSONEvent: Sendable, Hashable {
  /// `{`
  case beginObject
  /// `}`
  case endObject
  /// `[`
  case beginArray
  /// `]`
  case endArray
  /// An object key.
  case key(String)
  /// A string value.
  case string(String)
  /// A number value, as its source text (so integers beyond 2^53 keep every digit).
  case number(String)
  /// `true` or `false`.
  case bool(Bool)
  /// `null`.
  case null
}

/// A JSON syntax error with its line and column (1-based).
public struct JSONSyntaxError: Error, Sendable, Hashable, CustomStringConvertible {
  /// Line of the offending byte.
  public var line: Int
  /// Column (byte offset in the line) of the offending byte.
  public var column: Int
  /// What was wrong.
  public var message: String

  /// `line L, column C: message`.
  public var description: String { "line \(line), column \(column): \(message)" }
}

/// A small incremental (push) JSON tokenizer: feed it chunks of bytes of any size, get events as soon as each
/// token is complete. Memory use is bounded by the longest single token and the nesting depth (at most
/// ``maximumDepth``), so files of
/// hundreds of megabytes stream through it. It checks the full grammar (RFC 8259).
public struct JSONTokenizer: Sendable {
  /// Receives each event and the line it ended on.
  public typealias Emit = (JSONEvent, _ line: Int) throws -> Void

  private enum Container { case object, array }
  private enum Expect { case value, keyOrEnd, key, colon, commaOrEnd, valueOrEnd, done }
  private enum Token { case none, string, number, literal }

  private var stack: [Container] = []
  private var expect: Expect = .value
  private var token: Token = .none
  private var buffer: [UInt8] = []
  private var escaping = false
  private var stringIsKey = false
  /// Current 1-based line.
  public private(set) var line = 1
  private var column = 0

  /// The deepest nesting of objects and arrays accepted (deeper documents are rejected: the values built from
  /// them would be released recursively and could exhaust the stack).
  public static let maximumDepth = 512

  /// A tokenizer at the start of a document.
  public init() {}

  /// Consumes `bytes` and calls `emit` for every completed event.
  public mutating func feed(
    _ bytes: some Sequence<UInt8>, _ emit: Emit
  ) throws {
    let handled: Void? = try bytes.withContiguousStorageIfAvailable { buffer in
      for byte in buffer { try step(byte, emit) }
    }
    if handled == nil {
      for byte in bytes { try step(byte, emit) }
    }
  }

  @inline(__always)
  private mutating func step(_ byte: UInt8, _ emit: Emit) throws {
    if byte == 10 {
      line += 1
      column = 0
    } else {
      column += 1
    }
    // Fast path: bytes inside a string that need no attention.
    if token == .string, !escaping, byte != 34, byte != 92, byte >= 0x20 {
      buffer.append(byte)
      return
    }
    try consume(byte, emit)
  }

  /// Ends the document; throws when it is incomplete (a truncated file).
  public mutating func finish(_ emit: Emit) throws {
    if token == .number || token == .literal { try endScalar(emit) }
    if token == .string { throw error("unterminated string at end of input") }
    guard expect == .done else { throw error("unexpected end of input (truncated JSON?)") }
  }

  private func error(_ message: String) -> JSONSyntaxError {
    JSONSyntaxError(line: line, column: column, message: message)
  }

  private static func isWhitespace(_ b: UInt8) -> Bool { b == 32 || b == 10 || b == 13 || b == 9 }

  private mutating func consume(_ byte: UInt8, _ emit: Emit) throws {
    switch token {
    case .string:
      try consumeString(byte, emit)
      return
    case .number, .literal:
      if (byte >= 48 && byte <= 57) || (byte >= 97 && byte <= 122) || byte == 43 || byte == 45 || byte == 46
        || byte == 69
      {
        buffer.append(byte)
        return
      }
      try endScalar(emit)
    case .none: break
    }
    if Self.isWhitespace(byte) { return }
    switch expect {
    case .done:
      throw error("unexpected '\(Character(Unicode.Scalar(byte)))' after the end of the document")
    case .colon:
      guard byte == 58 else { throw error("expected ':' after an object key") }
      expect = .value
    case .commaOrEnd:
      if byte == 44 {
        expect = stack.last == .object ? .key : .value
      } else if byte == 125, stack.last == .object {
        try close(emit, .endObject)
      } else if byte == 93, stack.last == .array {
        try close(emit, .endArray)
      } else {
        throw error("expected ',' or the end of the \(stack.last == .object ? "object" : "array")")
      }
    case .keyOrEnd, .key:
      if byte == 34 {
        token = .string
        stringIsKey = true
        buffer.removeAll(keepingCapacity: true)
      } else if byte == 125, expect == .keyOrEnd {
        try close(emit, .endObject)
      } else {
        throw error("expected a string key")
      }
    case .value, .valueOrEnd:
      if byte == 93, expect == .valueOrEnd {
        try close(emit, .endArray)
        return
      }
      try startValue(byte, emit)
    }
  }

  private mutating func startValue(_ byte: UInt8, _ emit: Emit) throws {
    switch byte {
    case 123:
      guard stack.count < Self.maximumDepth else { throw error("nesting deeper than \(Self.maximumDepth) levels") }
      stack.append(.object)
      expect = .keyOrEnd
      try emit(.beginObject, line)
    case 91:
      guard stack.count < Self.maximumDepth else { throw error("nesting deeper than \(Self.maximumDepth) levels") }
      stack.append(.array)
      expect = .valueOrEnd
      try emit(.beginArray, line)
    case 34:
      token = .string
      stringIsKey = false
      buffer.removeAll(keepingCapacity: true)
    case 45, 48...57:
      token = .number
      buffer.removeAll(keepingCapacity: true)
      buffer.append(byte)
    case 116, 102, 110:
      token = .literal
      buffer.removeAll(keepingCapacity: true)
      buffer.append(byte)
    default:
      throw error("unexpected '\(Character(Unicode.Scalar(byte)))' where a value was expected")
    }
  }

  private mutating func close(_ emit: Emit, _ event: JSONEvent) throws {
    stack.removeLast()
    try emit(event, line)
    afterValue()
  }

  private mutating func afterValue() {
    expect = stack.isEmpty ? .done : .commaOrEnd
  }

  private mutating func endScalar(_ emit: Emit) throws {
    let text = String(decoding: buffer, as: UTF8.self)
    let kind = token
    token = .none
    if kind == .literal {
      switch text {
      case "true": try emit(.bool(true), line)
      case "false": try emit(.bool(false), line)
      case "null": try emit(.null, line)
      default: throw error("invalid literal '\(text)'")
      }
    } else {
      guard Self.isValidNumber(buffer) else { throw error("invalid number '\(text)'") }
      try emit(.number(text), line)
    }
    afterValue()
  }

  private static func isValidNumber(_ b: [UInt8]) -> Bool {
    var i = 0
    func digits() -> Int {
      let start = i
      while i < b.count, b[i] >= 48, b[i] <= 57 { i += 1 }
      return i - start
    }
    if i < b.count, b[i] == 45 { i += 1 }
    if i < b.count, b[i] == 48 {
      i += 1
    } else if digits() == 0 {
      return false
    }
    if i < b.count, b[i] == 46 {
      i += 1
      if digits() == 0 { return false }
    }
    if i < b.count, b[i] == 101 || b[i] == 69 {
      i += 1
      if i < b.count, b[i] == 43 || b[i] == 45 { i += 1 }
      if digits() == 0 { return false }
    }
    return i == b.count
  }

  private mutating func consumeString(_ byte: UInt8, _ emit: Emit) throws {
    if escaping {
      escaping = false
      buffer.append(byte)
      return
    }
    if byte == 92 {
      escaping = true
      buffer.append(byte)
      return
    }
    if byte < 0x20 { throw error("control character in a string (unterminated string?)") }
    guard byte == 34 else {
      buffer.append(byte)
      return
    }
    token = .none
    let text = try unescape(buffer)
    if stringIsKey {
      expect = .colon
      try emit(.key(text), line)
    } else {
      try emit(.string(text), line)
      afterValue()
    }
  }

  private func unescape(_ raw: [UInt8]) throws -> String {
    guard raw.contains(92) else { return String(decoding: raw, as: UTF8.self) }
    var out: [UInt8] = []
    out.reserveCapacity(raw.count)
    var i = 0
    var pendingHigh: UInt32?
    func hex4(_ at: Int) throws -> UInt32 {
      guard at + 4 <= raw.count else { throw error("truncated \\u escape") }
      var value: UInt32 = 0
      for b in raw[at..<at + 4] {
        value <<= 4
        switch b {
        case 48...57: value |= UInt32(b - 48)
        case 65...70: value |= UInt32(b - 55)
        case 97...102: value |= UInt32(b - 87)
        default: throw error("invalid \\u escape")
        }
      }
      return value
    }
    func append(_ scalar: UInt32) {
      let s = Unicode.Scalar(scalar) ?? "\u{FFFD}"
      out.append(contentsOf: Array(String(Character(s)).utf8))
    }
    while i < raw.count {
      let b = raw[i]
      if b != 92 {
        out.append(b)
        i += 1
        continue
      }
      guard i + 1 < raw.count else { throw error("dangling escape") }
      let e = raw[i + 1]
      i += 2
      switch e {
      case 34: out.append(34)
      case 92: out.append(92)
      case 47: out.append(47)
      case 98: out.append(8)
      case 102: out.append(12)
      case 110: out.append(10)
      case 114: out.append(13)
      case 116: out.append(9)
      case 117:
        let code = try hex4(i)
        i += 4
        if (0xD800...0xDBFF).contains(code) {
          pendingHigh = code
          if i + 6 <= raw.count, raw[i] == 92, raw[i + 1] == 117 {
            let low = try hex4(i + 2)
            if (0xDC00...0xDFFF).contains(low), let high = pendingHigh {
              append(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
              i += 6
              pendingHigh = nil
              continue
            }
          }
          append(0xFFFD)
          pendingHigh = nil
        } else {
          append(code)
        }
      default: throw error("invalid escape '\\\(Character(Unicode.Scalar(e)))'")
      }
    }
    return String(decoding: out, as: UTF8.self)
  }
}
