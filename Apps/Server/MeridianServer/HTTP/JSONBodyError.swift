import DomainKit
import Foundation
import MeridianAPI

/// What the server answers for a JSON body that doesn't decode: `invalid_json` when it is not JSON (or not the
/// object the route reads, or lacks a field), `invalid_request` naming the field when a field holds a value of the
/// wrong kind or out of range (`2.5` or `2^70` for a whole number, `"five"` for a number, an unknown enum value).
///
/// Foundation's decoder reports a number that doesn't fit its field (`2.5` or `1e30` for an `Int`) as "not valid
/// JSON", without a path. Such a body is decoded again with its suspect numbers (those with a fraction, an
/// exponent or 10 digits or more) replaced by `0`, halving the suspects each time, until the one that makes the
/// difference is found; then once more with that number as a string, which names its path. A body over
/// ``maximumLocatedBytes`` is not searched.
enum JSONBodyError {
  /// The largest body whose bad number is looked for (each search decodes it about log2(numbers) times).
  static let maximumLocatedBytes = 256 * 1024

  /// The API error for `error`, thrown by `decode` (the route's decoder) on `data`.
  static func apiError(_ error: DecodingError, data: Data, decode: (Data) throws -> Void) -> APIError {
    switch error {
    case .typeMismatch(let type, let context) where !context.codingPath.isEmpty:
      return .invalidRequest("'\(path(context.codingPath))' must be \(kind(type)).")
    case .dataCorrupted(let context) where !context.codingPath.isEmpty:
      return .invalidRequest(fieldMessage(path(context.codingPath), context.debugDescription))
    case .dataCorrupted:
      if data.count <= maximumLocatedBytes, let number = badNumber(in: data, decode: decode) {
        return .invalidRequest(
          "'\(number.path)' must be \(number.kind), not \(QuotedValue.clip(number.text)).")
      }
      return APIError(status: 400, code: .invalidJSON, message: "The body is not valid JSON.")
    case .typeMismatch(let type, _):
      return APIError(status: 400, code: .invalidJSON, message: "The body must be \(kind(type)).")
    case .keyNotFound(let key, let context):
      return APIError(
        status: 400, code: .invalidJSON, message: "'\(path(context.codingPath + [key]))' is missing.")
    case .valueNotFound(let type, let context):
      return APIError(
        status: 400, code: .invalidJSON, message: "'\(path(context.codingPath))' must be \(kind(type)), not null.")
    @unknown default:
      return APIError(status: 400, code: .invalidJSON, message: "The body does not match the expected JSON.")
    }
  }

  /// A coding path as the body spells it: `options[1].text`.
  static func path(_ codingPath: [any CodingKey]) -> String {
    let text = codingPath.map { key in key.intValue.map { "[\($0)]" } ?? ".\(key.stringValue)" }.joined()
    return text.hasPrefix(".") ? String(text.dropFirst()) : text.isEmpty ? "the body" : text
  }

  /// What a value of `type` is, for a person: "a whole number", "text".
  static func kind(_ type: Any.Type) -> String {
    switch type {
    case is Int.Type, is Int64.Type: "a whole number from -2^63 to 2^63-1"
    case is Int32.Type: "a whole number from -2^31 to 2^31-1"
    case is UInt.Type, is UInt64.Type, is UInt32.Type: "a whole number of 0 or more"
    case is Int8.Type, is Int16.Type, is UInt8.Type, is UInt16.Type: "a small whole number"
    case is Double.Type, is Float.Type: "a finite number"
    case is Bool.Type: "true or false"
    case is String.Type: "text"
    case is [Any].Type: "a list"
    case is [String: Any].Type: "an object"
    default: "a value of another kind"
    }
  }

  /// The message for a field a decoder refused with `reason`. Foundation's own reason for an enum repeats the
  /// whole value; it is replaced by one quoting at most 64 characters of it.
  static func fieldMessage(_ path: String, _ reason: String) -> String {
    let marker = " value "
    if reason.hasPrefix("Cannot initialize "), let range = reason.range(of: marker) {
      return "'\(path)' can't be \(QuotedValue.quote(reason[range.upperBound...]))."
    }
    return "'\(path)' is invalid: \(QuotedValue.clip(reason, limit: 300))"
  }

  /// A number of a body that doesn't fit its field.
  struct BadNumber: Equatable {
    /// Its field's path.
    var path: String
    /// What the field takes.
    var kind: String
    /// The number as written.
    var text: String
  }

  /// The first number of `data` (valid JSON but for its numbers) that `decode` refuses, with its path.
  static func badNumber(in data: Data, decode: (Data) throws -> Void) -> BadNumber? {
    let bytes = [UInt8](data)
    let suspects = suspectNumbers(in: bytes)
    guard !suspects.isEmpty else { return nil }
    /// Whether `decode` still fails as unreadable JSON with the first `count` suspects made `0`.
    func stillUnreadable(zeroing count: Int, then replacement: [UInt8]? = nil) -> (Bool, DecodingError?) {
      var patched: [UInt8] = []
      patched.reserveCapacity(bytes.count)
      var position = 0
      for (index, range) in suspects.enumerated() {
        let with: [UInt8]? = index < count ? [UInt8(ascii: "0")] : index == count ? replacement : nil
        guard let with else { continue }
        patched += bytes[position..<range.lowerBound] + with
        position = range.upperBound
      }
      patched += bytes[position...]
      do {
        try decode(Data(patched))
        return (false, nil)
      } catch let error as DecodingError {
        if case .dataCorrupted(let context) = error, context.codingPath.isEmpty { return (true, error) }
        return (false, error)
      } catch {
        return (false, nil)
      }
    }
    guard !stillUnreadable(zeroing: suspects.count).0 else { return nil }
    // The smallest count whose zeroing makes the body readable: the number at count - 1 is a culprit.
    var low = 1
    var high = suspects.count
    while low < high {
      let middle = (low + high) / 2
      if stillUnreadable(zeroing: middle).0 { low = middle + 1 } else { high = middle }
    }
    let culprit = suspects[low - 1]
    guard case .typeMismatch(let type, let context)? = stillUnreadable(zeroing: low - 1, then: Array(#""""#.utf8)).1,
      !context.codingPath.isEmpty
    else { return nil }
    return BadNumber(
      path: path(context.codingPath), kind: kind(type), text: String(decoding: bytes[culprit], as: UTF8.self))
  }

  /// The number tokens of `bytes` (outside strings) that a Swift number may not hold: with a fraction or an
  /// exponent, or 10 digits or more (past a 32-bit integer's range).
  static func suspectNumbers(in bytes: [UInt8]) -> [Range<Int>] {
    var suspects: [Range<Int>] = []
    var index = 0
    while index < bytes.count {
      let byte = bytes[index]
      if byte == UInt8(ascii: "\"") {
        index += 1
        while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
          index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
        }
        index += 1
      } else if byte == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) {
        let start = index
        var digits = 0
        var fractional = false
        while index < bytes.count {
          let byte = bytes[index]
          if (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) {
            digits += 1
          } else if byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
            fractional = true
          } else if byte != UInt8(ascii: "-") && byte != UInt8(ascii: "+") {
            break
          }
          index += 1
        }
        if fractional || digits >= 10 { suspects.append(start..<index) }
      } else {
        index += 1
      }
    }
    return suspects
  }
}
