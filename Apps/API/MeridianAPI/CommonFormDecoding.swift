import DomainKit
import Foundation
import NetworkingKit

extension FixBatch: CommonFormDecodable {
  /// Decodes the common form of a fix upload several times faster than `JSONDecoder`, or returns `nil` so that the
  /// caller decodes with `JSONDecoder` (which then also words any error).
  ///
  /// The common form is what clients send: an object with `deviceId` and `fixes`, each fix an object of the
  /// documented fields with numbers and ASCII strings (no escapes, no `null`, no `refinedBy`, no unknown or
  /// repeated keys), in any key order and with any JSON whitespace. Every fix goes through the same validating
  /// initializer as the `Codable` path, so a result is always the one `JSONDecoder` would give; anything else,
  /// including a fix that fails validation, is `nil`.
  public static func decodeCommonForm(_ data: Data) -> FixBatch? {
    data.withUnsafeBytes { raw in
      var scanner = CommonFormScanner(bytes: raw.bindMemory(to: UInt8.self))
      return scanner.batch()
    }
  }
}

extension FixReceipt: CommonFormDecodable {
  /// Reads `{"accepted": n, "duplicates": m}` and an optional `"withheld": w` (keys in any order, any JSON
  /// whitespace), or returns `nil`.
  public static func decodeCommonForm(_ data: Data) -> FixReceipt? {
    data.withUnsafeBytes { raw in
      var scanner = CommonFormScanner(bytes: raw.bindMemory(to: UInt8.self))
      return scanner.receipt()
    }
  }
}

extension FixReceipt: CommonFormEncodable {
  /// The receipt as `JSONEncoder` writes it with sorted keys: `{"accepted":n,"duplicates":m}`, then `"withheld":w`
  /// when there is one.
  public var commonFormJSON: Data {
    guard let withheld else { return Data(#"{"accepted":\#(accepted),"duplicates":\#(duplicates)}"#.utf8) }
    return Data(#"{"accepted":\#(accepted),"duplicates":\#(duplicates),"withheld":\#(withheld)}"#.utf8)
  }
}

/// A forward-only reader of the common form; every method returns `nil` (give up) on anything outside it.
private struct CommonFormScanner {
  let bytes: UnsafeBufferPointer<UInt8>
  var index = 0

  init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

  mutating func batch() -> FixBatch? {
    document { scanner in
      var device: DeviceID?
      var fixes: [LocationFix]?
      let read = scanner.object { scanner, key in
        switch key {
        case "deviceId" where device == nil:
          device = scanner.string().map { DeviceID($0) }
          return device != nil
        case "fixes" where fixes == nil:
          fixes = scanner.fixList()
          return fixes != nil
        default:
          return false
        }
      }
      guard read, let device, let fixes else { return nil }
      return FixBatch(deviceId: device, fixes: fixes)
    }
  }

  mutating func receipt() -> FixReceipt? {
    document { scanner in
      var accepted: Int?
      var duplicates: Int?
      var withheld: Int?
      let read = scanner.object { scanner, key in
        guard let value = scanner.integer().flatMap(Int.init(exactly:)) else { return false }
        switch key {
        case "accepted" where accepted == nil: accepted = value
        case "duplicates" where duplicates == nil: duplicates = value
        case "withheld" where withheld == nil: withheld = value
        default: return false
        }
        return true
      }
      guard read, let accepted, let duplicates else { return nil }
      return FixReceipt(accepted: accepted, duplicates: duplicates, withheld: withheld)
    }
  }

  /// `value` read from the whole input: declined if anything but whitespace follows it.
  private mutating func document<Value>(_ value: (inout Self) -> Value?) -> Value? {
    guard let result = value(&self) else { return nil }
    skipWhitespace()
    return index == bytes.count ? result : nil
  }

  /// Reads an object, handing each member's key to `member` once its colon is read; `member` reads the value and
  /// returns false to decline (an unknown or repeated key, a bad value).
  private mutating func object(_ member: (inout Self, String) -> Bool) -> Bool {
    guard take(UInt8(ascii: "{")) else { return false }
    if take(UInt8(ascii: "}")) { return true }
    repeat {
      guard let key = string(), take(UInt8(ascii: ":")), member(&self, key) else { return false }
    } while take(UInt8(ascii: ","))
    return take(UInt8(ascii: "}"))
  }

  private mutating func fixList() -> [LocationFix]? {
    guard take(UInt8(ascii: "[")) else { return nil }
    var fixes: [LocationFix] = []
    if take(UInt8(ascii: "]")) { return fixes }
    repeat {
      guard let fix = fix() else { return nil }
      fixes.append(fix)
    } while take(UInt8(ascii: ","))
    guard take(UInt8(ascii: "]")) else { return nil }
    return fixes
  }

  private mutating func fix() -> LocationFix? {
    var device: String?
    var timestamp: Int64?
    var floor: Int?
    var numbers: [Double?] = Array(repeating: nil, count: 9)
    var batteryState: BatteryState?
    var kind: FixKind?
    var trigger: FixTrigger?
    let read = object { scanner, key in
      if let slot = Self.numberFields[key] {
        guard numbers[slot] == nil, let value = scanner.double() else { return false }
        numbers[slot] = value
        return true
      }
      switch key {
      case "timestamp" where timestamp == nil:
        timestamp = scanner.integer()
        return timestamp != nil
      case "floor" where floor == nil:
        floor = scanner.integer().flatMap { Int(exactly: $0) }
        return floor != nil
      case "deviceId" where device == nil:
        device = scanner.string()
        return device != nil
      case "kind" where kind == nil:
        kind = scanner.string().flatMap(FixKind.init(rawValue:))
        return kind != nil
      case "batteryState" where batteryState == nil:
        batteryState = scanner.string().flatMap(BatteryState.init(rawValue:))
        return batteryState != nil
      case "trigger" where trigger == nil:
        trigger = scanner.string().flatMap(FixTrigger.init(rawValue:))
        return trigger != nil
      default:
        return false
      }
    }
    guard read else { return nil }
    guard let timestamp, let latitude = numbers[0], let longitude = numbers[1] else { return nil }
    return try? LocationFix(
      deviceID: device.map { DeviceID($0) }, timestamp: timestamp, latitude: latitude, longitude: longitude,
      horizontalAccuracy: numbers[2], verticalAccuracy: numbers[3], altitude: numbers[4], speed: numbers[5],
      speedAccuracy: numbers[6], course: numbers[7], floor: floor, batteryLevel: numbers[8],
      batteryState: batteryState, kind: kind ?? .movement, trigger: trigger)
  }

  /// The fields read as `Double`, by their slot in `fix()`.
  private static let numberFields: [String: Int] = [
    "latitude": 0, "longitude": 1, "horizontalAccuracy": 2, "verticalAccuracy": 3, "altitude": 4, "speed": 5,
    "speedAccuracy": 6, "course": 7, "batteryLevel": 8,
  ]

  // MARK: Tokens

  private mutating func skipWhitespace() {
    while index < bytes.count {
      switch bytes[index] {
      case 0x20, 0x0A, 0x0D, 0x09: index += 1
      default: return
      }
    }
  }

  /// Skips whitespace, then consumes `byte` if it comes next.
  private mutating func take(_ byte: UInt8) -> Bool {
    skipWhitespace()
    guard index < bytes.count, bytes[index] == byte else { return false }
    index += 1
    return true
  }

  /// A string of printable ASCII without escapes (ids and enum values; anything else is left to `JSONDecoder`).
  private mutating func string() -> String? {
    guard take(UInt8(ascii: "\"")) else { return nil }
    let start = index
    while index < bytes.count {
      let byte = bytes[index]
      if byte == UInt8(ascii: "\"") {
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        index += 1
        return text
      }
      if byte == UInt8(ascii: "\\") || byte < 0x20 || byte >= 0x80 { return nil }
      index += 1
    }
    return nil
  }

  /// The extent of a number token that follows JSON's grammar (`-? int frac? exp?`), and whether it is an integer.
  private mutating func numberToken() -> (range: Range<Int>, isInteger: Bool)? {
    skipWhitespace()
    let start = index
    func digits() -> Int {
      let first = index
      while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") { index += 1 }
      return index - first
    }
    if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
    guard index < bytes.count else { return nil }
    if bytes[index] == UInt8(ascii: "0") {
      index += 1
    } else {
      guard digits() > 0 else { return nil }
    }
    var isInteger = true
    if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
      index += 1
      isInteger = false
      guard digits() > 0 else { return nil }
    }
    if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
      index += 1
      isInteger = false
      if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
      guard digits() > 0 else { return nil }
    }
    return (start..<index, isInteger)
  }

  /// A plain integer that fits `Int64`.
  private mutating func integer() -> Int64? {
    guard let token = numberToken(), token.isInteger else { return nil }
    var position = token.range.lowerBound
    let negative = bytes[position] == UInt8(ascii: "-")
    if negative { position += 1 }
    var value: Int64 = 0
    while position < token.range.upperBound {
      let digit = Int64(bytes[position] &- UInt8(ascii: "0"))
      let (shifted, overflow) = value.multipliedReportingOverflow(by: 10)
      let (sum, carry) = negative ? shifted.subtractingReportingOverflow(digit) : shifted.addingReportingOverflow(digit)
      guard !overflow, !carry else { return nil }
      value = sum
      position += 1
    }
    return value
  }

  /// A finite number; one too small to represent (`1e-400`, which `Double` rounds to zero) is declined, as
  /// `JSONDecoder` refuses it.
  private mutating func double() -> Double? {
    guard let token = numberToken() else { return nil }
    let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[token.range]), as: UTF8.self)
    guard let value = Double(text), value.isFinite else { return nil }
    if value == 0 {
      let mantissa = text.utf8.prefix { $0 != UInt8(ascii: "e") && $0 != UInt8(ascii: "E") }
      guard mantissa.allSatisfy({ $0 == UInt8(ascii: "0") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") })
      else { return nil }
    }
    return value
  }
}
