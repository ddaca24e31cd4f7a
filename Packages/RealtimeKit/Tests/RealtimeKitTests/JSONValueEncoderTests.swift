import Foundation
import Testing

@testable import RealtimeKit

/// `JSONValue(encoding:)` builds the tree directly, and gives what writing the value with `JSONEncoder` and reading the
/// text back as a `JSONValue` gives.
@Suite struct JSONValueEncoderTests {
  enum Kind: String, Codable { case enter, exit }

  enum Shape: Codable, Equatable {
    case circle(center: [Double], radius: Double)
    case polygon([[Double]])
  }

  struct Inner: Codable {
    var name: String
    var tags: [String]
    var missing: Int?
  }

  struct Everything: Codable {
    var string = "café \"quoted\" \\ / \u{1}"
    var bool = true
    var int = -42
    var int8: Int8 = -8
    var int16: Int16 = 16
    var int32: Int32 = -32
    var int64: Int64 = .min
    var uint: UInt = 7
    var uint8: UInt8 = 255
    var uint16: UInt16 = 65_535
    var uint32: UInt32 = .max
    var uint64: UInt64 = .max
    var double = 50.45
    var integralDouble = 50.0
    var hugeDouble = 1e300
    var tinyDouble = -1e-300
    var float: Float = 0.1
    var optionalPresent: String? = "here"
    var optionalAbsent: String?
    var nested = Inner(name: "inner", tags: ["a", "b"], missing: nil)
    var array: [Inner] = [Inner(name: "x", tags: [], missing: 3)]
    var arrays: [[Int]] = [[1, 2], [], [3]]
    var byString: [String: Double] = ["a": 1.5, "b": 2]
    var byInt: [Int: String] = [1: "one", 20: "twenty"]
    var kind = Kind.enter
    var shapes: [Shape] = [.circle(center: [50.5, 30.57], radius: 120), .polygon([[1, 2], [3, 4.5]])]
    var data = Data([0, 1, 2, 250])
    var url = URL(string: "https://example.com/a?b=c")!
    var date = Date(timeIntervalSinceReferenceDate: 123_456.789)
    var decimal = Decimal(string: "12.5")!
    var empty: [String: Int] = [:]
  }

  func throughText(_ value: some Encodable) throws -> JSONValue {
    try JSONDecoder().decode(JSONValue.self, from: JSONEncoder().encode(value))
  }

  @Test func everyKindOfMemberIsWhatTheRoundTripThroughTextGives() throws {
    let value = Everything()
    #expect(try JSONValue(encoding: value) == (try throughText(value)))
    #expect(try JSONValue(encoding: [value, value]) == (try throughText([value, value])))
  }

  @Test func topLevelScalarsAndOptionalsAreWhatTheRoundTripGives() throws {
    #expect(try JSONValue(encoding: 3) == (try throughText(3)))
    #expect(try JSONValue(encoding: 2.0) == .int(2))
    #expect(try JSONValue(encoding: 2.5) == .double(2.5))
    #expect(try JSONValue(encoding: "text") == (try throughText("text")))
    #expect(try JSONValue(encoding: String?.none) == .null)
    #expect(try JSONValue(encoding: [Int?.none, 1]) == (try throughText([Int?.none, 1])))
    #expect(try JSONValue(encoding: UInt64.max) == (try throughText(UInt64.max)))
  }

  @Test func aNumberJSONCannotHoldIsRefusedAsJSONEncoderRefusesIt() {
    struct Bad: Encodable { var value = Double.nan }
    #expect(throws: EncodingError.self) { try JSONValue(encoding: Bad()) }
    #expect(throws: EncodingError.self) { try JSONEncoder().encode(Bad()) }
    #expect(throws: EncodingError.self) { try JSONValue(encoding: [Float.infinity]) }
  }

  @Test func theEncodedValueDecodesBackToTheOriginal() throws {
    let shapes: [Shape] = [.circle(center: [1, 2], radius: 3.25), .polygon([[0, 0], [1, 1], [0, 1]])]
    #expect(try JSONValue(encoding: shapes).decode(as: [Shape].self) == shapes)
  }
}
