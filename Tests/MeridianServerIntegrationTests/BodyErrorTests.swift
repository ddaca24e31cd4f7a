import DomainKit
import Foundation
import HTTPTypes
import MeridianAPI
import NetworkingKit
import Testing

/// What a bad body is answered with: a number of the wrong kind or out of range names its field with
/// `invalid_request` (`invalid_json` stays for a body that isn't JSON), and no message repeats more than 64
/// characters of a value or runs past 1,000 characters.
@Suite("Errors for bad bodies", .inProcess)
struct BodyErrorTests {
  @Test func numbersOfTheWrongKindNameTheirField() async throws {
    try await PollTests.withServer("sqlite") { server in
      try await PlaceTests.seed(server.app.environment.store)
      let (session, _) = try await server.signUp("anna")
      let raw = try server.client(token: session.token, compressionThreshold: nil)
      let review = Endpoint<Void, Data, Review>(
        .put, "/v1/places/tsu-ff-phys/reviews/me", body: .raw(contentType: "application/json"), response: .json())
      func send(_ json: String) async throws -> Review { try await raw.send(review, body: Data(json.utf8)) }
      let cases: [(json: String, field: String)] = [
        (#"{"grade": 2.5}"#, "grade"),
        (#"{"grade": 1180591620717411303424}"#, "grade"),
        (#"{"grade": 9223372036854775808}"#, "grade"),
        (#"{"grade": "five"}"#, "grade"),
        (#"{"grade": 4, "grades": {"teaching": 4.5}}"#, "grades.teaching"),
        (#"{"text": "2.5 and 1e9 in a text are fine", "grades": {"a": 4, "b": 2.5}, "grade": 4}"#, "grades.b"),
        (#"{"grade": 4, "text": 12}"#, "text"),
      ]
      for (json, field) in cases {
        await InputRuleTests.expectRefused(.invalidRequest, 400, naming: "'\(field)'", json) { try await send(json) }
      }
      // A fix's timestamp of the wrong kind, in a batch the fast reader declines.
      let fixes = Endpoint<Void, Data, FixReceipt>(
        .post, PathTemplate(stringLiteral: API.postFixes.pathTemplate), body: .raw(contentType: "application/json"),
        response: .json())
      await InputRuleTests.expectRefused(.invalidRequest, 400, naming: "'fixes[1].timestamp'", "a fractional timestamp")
      {
        try await raw.send(
          fixes,
          body: Data(
            #"""
            {"deviceId": "p", "fixes": [{"timestamp": 1800000000000, "latitude": 50.5, "longitude": 30.25},
              {"timestamp": 1800000000000.5, "latitude": 50.5, "longitude": 30.25}]}
            """#.utf8))
      }
      // Broken JSON is still invalid_json.
      for json in [#"{"grade": 2.5"#, #"{"grade": 4,, }"#, "grade=4"] {
        let error = await InputRuleTests.refusal { try await send(json) }
        #expect(error?.code == APIErrorCode.invalidJSON.rawValue, "\(json): \(String(describing: error))")
      }
      #expect(try await send(#"{"grade": 4}"#).grade == 4)
    }
  }

  @Test func errorMessagesQuoteLittleOfAValue() async throws {
    try await PollTests.withServer("sqlite") { server in
      let (session, anna) = try await server.signUp("anna")
      let raw = try server.client(token: session.token, compressionThreshold: nil)
      let long = String(repeating: "x", count: 200_000)
      /// The longest run of `x` in `message`: how much of the value it repeats.
      func quoted(_ message: String?) -> Int {
        (message ?? "").split(whereSeparator: { $0 != "x" }).map(\.count).max() ?? 0
      }
      let bodies = [
        #"{"gender": "\#(long)"}"#, #"{"birthday": "\#(long)"}"#, #"{"audience": {"\#(long)": "everyone"}}"#,
        #"{"fullName": "\#(long)"}"#, #"{"avatar": "\#(long)"}"#,
      ]
      for body in bodies {
        let error = await InputRuleTests.refusal { try await raw.send(RawAPI.updateProfile, body: Data(body.utf8)) }
        #expect(error?.status.code == 400)
        #expect((error?.message?.count ?? .max) <= 1_000, "\(body.prefix(20))")
        #expect(quoted(error?.message) <= 64, "\(body.prefix(20)): \(String(describing: error?.message?.prefix(100)))")
      }
      // A header quoted back.
      let encoded = Endpoint<Void, Data, Profile>(
        .patch, PathTemplate(stringLiteral: API.updateProfile.pathTemplate),
        headerFields: [.contentEncoding: String(repeating: "x", count: 4_000)],
        body: .raw(contentType: "application/json"), response: .json())
      let error = await InputRuleTests.refusal { try await raw.send(encoded, body: Data("{}".utf8)) }
      #expect(error?.code == APIErrorCode.unsupportedEncoding.rawValue)
      #expect(quoted(error?.message) <= 64, "\(String(describing: error).prefix(300))")
      #expect(try await anna.send(API.me).profile.gender == nil)
    }
  }
}
