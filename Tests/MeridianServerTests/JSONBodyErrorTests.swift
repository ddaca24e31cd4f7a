import DomainKit
import Foundation
import MeridianAPI
import Testing

@testable import MeridianServer

@Suite struct JSONBodyErrorTests {
  struct Body: Decodable {
    var count: Int
    var ratio: Double?
    var items: [Item]?
    struct Item: Decodable { var size: Int32 }
  }

  static func error(_ json: String) -> APIError? {
    let data = Data(json.utf8)
    let decode: (Data) throws -> Void = { _ = try JSONDecoder().decode(Body.self, from: $0) }
    do {
      try decode(data)
      return nil
    } catch let error as DecodingError {
      return JSONBodyError.apiError(error, data: data, decode: decode)
    } catch {
      return nil
    }
  }

  @Test func numbersThatDontFitNameTheirField() {
    let cases: [(String, String)] = [
      (#"{"count": 2.5}"#, "'count' must be a whole number"),
      (#"{"count": 1180591620717411303424}"#, "'count' must be a whole number"),
      (#"{"ratio": 0.5, "count": 1, "items": [{"size": 1}, {"size": 3000000000}]}"#, "'items[1].size'"),
      (#"{"ratio": 1e400, "count": 1}"#, "'ratio' must be a finite number"),
      (#"{"count": "3"}"#, "'count' must be a whole number"),
    ]
    for (json, expected) in cases {
      let error = Self.error(json)
      #expect(error?.code == .invalidRequest, "\(json)")
      #expect(error?.message.hasPrefix(expected) == true, "\(json): \(String(describing: error?.message))")
    }
    // The number quoted back is clipped like any value.
    let long = "1" + String(repeating: "0", count: 500) + ".5"
    #expect((Self.error(#"{"count": \#(long)}"#)?.message.count ?? .max) < 200)
  }

  @Test func syntaxErrorsStayInvalidJSON() {
    for json in [#"{"count": 2.5"#, #"{"count": 1,, "ratio": 2.5}"#, "count=1", "[1.5]"] {
      #expect(Self.error(json)?.code == .invalidJSON, "\(json)")
    }
    #expect(Self.error(#"{"ratio": 2.5}"#)?.message == "'count' is missing.")
    #expect(Self.error(#"{"count": 1, "ratio": 2.5}"#) == nil)
  }

  @Test func suspectsAreNumbersOutsideStrings() {
    let bytes = Array(#"{"a": "1.5 \" 2e3", "b": -2.5e-3, "c": 123456789, "d": 1234567890}"#.utf8)
    let suspects = JSONBodyError.suspectNumbers(in: bytes).map { String(decoding: bytes[$0], as: UTF8.self) }
    #expect(suspects == ["-2.5e-3", "1234567890"])
  }

  @Test func anEnumValueIsQuotedClipped() {
    let message = JSONBodyError.fieldMessage(
      "gender", "Cannot initialize Gender from invalid String value " + String(repeating: "x", count: 5_000))
    #expect(message == "'gender' can't be '\(String(repeating: "x", count: 64))…'.")
  }

  @Test func everyMessageOfAnEnvelopeIsAtMostAThousandCharacters() {
    #expect(APIError.bounded(String(repeating: "a", count: 1_000)).count == 1_000)
    let cut = APIError.bounded(String(repeating: "a", count: 5_000))
    #expect(cut.count == 1_000 && cut.hasSuffix("…"))
  }
}
