import DomainKit
import Foundation
import HTTPTypes
import MeridianAPI
import MeridianStoreTesting
import NetworkingKit
import Testing

/// Endpoints with the real paths of ``API`` but raw bodies, to send what a well-behaved client never would.
enum RawAPI {
  static let postFixes = Endpoint<Void, Data, FixReceipt>(
    .post, PathTemplate(stringLiteral: API.postFixes.pathTemplate), body: .raw(contentType: "application/json"),
    response: .json())
  static let keyedFixes = Endpoint<Void, Data, FixReceipt>(
    .post, PathTemplate(stringLiteral: API.postFixes.pathTemplate), body: .raw(contentType: "application/json"),
    response: .json(), idempotency: .key)
  static let gzipFixes = Endpoint<Void, Data, FixReceipt>(
    .post, PathTemplate(stringLiteral: API.postFixes.pathTemplate), headerFields: [.contentEncoding: "gzip"],
    body: .raw(contentType: "application/json"), response: .json())
  static let updateProfile = Endpoint<Void, Data, Profile>(
    .patch, PathTemplate(stringLiteral: API.updateProfile.pathTemplate), body: .raw(contentType: "application/json"),
    response: .json())
  static let unknownRoute = Endpoint<Void, NoBody, NoContent>(
    .get, "/v1/no-such-route", body: .none, response: .empty)
}

@Suite("Bad input over HTTP", .inProcess)
struct BadInputTests {
  @Test func badFixBatchesAreRefusedAndLoseNothing() async throws {
    try await TestServer.with { server in
      let (session, anna) = try await server.signUp("anna")
      let stored = try makeFixes(count: 3)
      _ = try await anna.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: stored))
      let raw = try server.client(token: session.token, compressionThreshold: nil)

      await expectAPIError(.invalidJSON, status: 400) {
        try await raw.send(RawAPI.postFixes, body: Data(#"{"deviceId": "anna-phone", "fixes": [{"#.utf8))
      }
      await expectAPIError(.invalidJSON, status: 400) {
        try await raw.send(RawAPI.postFixes, body: Data(#"{"fixes": []}"#.utf8))
      }
      // A value of the wrong kind names its field (`fixes[0].timestamp`): invalid_request, not invalid_json.
      await expectAPIError(.invalidRequest, status: 400) {
        try await raw.send(
          RawAPI.postFixes,
          body: Data(
            #"{"deviceId": "anna-phone", "fixes": [{"timestamp": "soon", "latitude": 1, "longitude": 2}]}"#.utf8))
      }
      await expectAPIError(.invalidJSON, status: 400) { try await raw.send(RawAPI.postFixes, body: Data()) }
      // Out-of-range coordinates: the whole batch is refused, the valid fix in it is not stored either.
      await expectAPIError(.invalidFix, status: 400) {
        try await raw.send(
          RawAPI.postFixes,
          body: Data(
            #"""
            {"deviceId": "anna-phone", "fixes": [
              {"timestamp": 1800000000000, "latitude": 50, "longitude": 30},
              {"timestamp": 1800000001000, "latitude": 91, "longitude": 30}]}
            """#.utf8))
      }
      await expectAPIError(.invalidFix, status: 400) {
        try await raw.send(
          RawAPI.postFixes,
          body: Data(#"{"deviceId": "d", "fixes": [{"timestamp": 1, "latitude": 50, "longitude": 181}]}"#.utf8))
      }
      await expectAPIError(.invalidRequest, status: 400) {
        try await anna.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: []))
      }
      await expectAPIError(.invalidRequest, status: 400) {
        try await anna.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: try makeFixes(count: 1001)))
      }
      await expectAPIError(.invalidRequest, status: 400) {
        try await anna.send(API.postFixes, body: FixBatch(deviceId: " ", fixes: try makeFixes(count: 1)))
      }
      // Oversized on the wire, a zip bomb, and a corrupt gzip body.
      let big = Data(repeating: UInt8(ascii: " "), count: 600 * 1024)
      await expectAPIError(.bodyTooLarge, status: 413) { try await raw.send(RawAPI.postFixes, body: big) }
      let bomb = try Gzip.compress(Data(repeating: UInt8(ascii: " "), count: 17 * 1024 * 1024))
      await expectAPIError(.bodyTooLarge, status: 413) { try await raw.send(RawAPI.gzipFixes, body: bomb) }
      await expectAPIError(.unsupportedEncoding, status: 400) {
        try await raw.send(RawAPI.gzipFixes, body: Data("not gzip at all".utf8))
      }
      // A device of another account.
      let (_, bob) = try await server.signUp("bob")
      await expectAPIError(.deviceNotOwned, status: 403) {
        try await bob.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: try makeFixes(count: 1)))
      }

      let history = try await anna.send(API.history, parameters: HistoryQuery(limit: 1000))
      #expect(history.fixes.map(\.timestamp) == stored.map(\.timestamp).reversed())
    }
  }

  @Test func badQueriesPathsAndProfiles() async throws {
    try await TestServer.with { server in
      let (session, anna) = try await server.signUp("anna")
      let raw = try server.client(token: session.token, compressionThreshold: nil)
      await expectAPIError(.routeNotFound, status: 404) { try await anna.send(RawAPI.unknownRoute) }
      await expectAPIError(.invalidRequest, status: 400) {
        try await anna.send(API.history, parameters: HistoryQuery(from: 10, to: 5))
      }
      await expectAPIError(.invalidRequest, status: 400) {
        try await anna.send(API.history, parameters: HistoryQuery(limit: 5000))
      }
      await expectAPIError(.invalidRequest, status: 400) {
        try await anna.send(API.history, parameters: HistoryQuery(cursor: "garbage"))
      }
      await expectAPIError(.invalidRequest, status: 400) {
        try await anna.send(API.history, parameters: HistoryQuery(timeZone: "Mars/Olympus"))
      }
      await expectAPIError(.invalidRequest, status: 400) {
        try await anna.send(API.historyClusters, parameters: ClusterQuery(precision: 9))
      }
      await expectAPIError(.notFound, status: 404) {
        try await anna.send(API.userProfile, parameters: UserRef(id: "no-such-user"))
      }
      await expectAPIError(.invalidRequest, status: 400) {
        try await raw.send(RawAPI.updateProfile, body: Data(#"{"audience": {"shoeSize": "everyone"}}"#.utf8))
      }
      await expectAPIError(.invalidRequest, status: 400) {
        try await raw.send(RawAPI.updateProfile, body: Data(#"{"gender": "unicorn"}"#.utf8))
      }
      await expectAPIError(.invalidRequest, status: 400) {
        try await anna.send(API.updateProfile, body: ProfileUpdate(fullName: String(repeating: "a", count: 201)))
      }
      // Nothing of the refused updates was stored.
      #expect(try await anna.send(API.me).profile.fullName == "Anna")
    }
  }
}
