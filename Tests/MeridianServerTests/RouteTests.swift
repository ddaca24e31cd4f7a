import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import MeridianAPI
import MeridianServer
import NIOCore
import NetworkingKit
import Testing

/// The routes that need no socket, called through HummingbirdTesting's router framework against a real SQLite
/// store: what a request gets back, without a port, a client or a running server.
@Suite struct RouteTests {
  /// Runs `body` with a test client of a server on a new temporary database (not running: no fix commits).
  static func withRoutes(_ body: @Sendable (any TestClientProtocol) async throws -> Void) async throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("routes-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: directory) }
    var configuration = ServerConfiguration()
    configuration.databasePath = directory.appendingPathComponent("meridian.sqlite").path
    configuration.bcryptCost = 4
    configuration.adminToken = "route-tests-admin"
    let router = try ServerApp.routes(configuration: configuration, logger: Logger(label: "route-tests"))
    try await Application(router: router).test(.router, body)
  }

  static func json(_ text: String) -> ByteBuffer { ByteBuffer(string: text) }
  static let jsonType: HTTPFields = [.contentType: "application/json"]

  static func decode<T: Decodable>(_ type: T.Type, _ response: TestResponse) throws -> T {
    try JSONDecoder().decode(type, from: Data(response.body.readableBytesView))
  }

  @Test func signUpSignInAndReadTheAccount() async throws {
    try await Self.withRoutes { client in
      let created = try await client.execute(
        uri: "/v1/auth/register", method: .post, headers: Self.jsonType,
        body: Self.json(#"{"email":"Anna@Example.com","password":"correct horse"}"#))
      #expect(created.status == .created)
      #expect(created.headers[.cacheControl] == "no-store")
      let session = try Self.decode(AuthSession.self, created)
      let me = try await client.execute(
        uri: "/v1/me", method: .get, headers: [.authorization: "Bearer \(session.token)"])
      #expect(me.status == .ok)
      #expect(try Self.decode(Me.self, me).account.credentials == [.email("anna@example.com")])
      let login = try await client.execute(
        uri: "/v1/auth/login", method: .post, headers: Self.jsonType,
        body: Self.json(#"{"email":"anna@example.com","password":"correct horse"}"#))
      #expect(login.status == .ok)
      let groups = try await client.execute(
        uri: "/v1/groups", method: .get, headers: [.authorization: "Bearer \(session.token)"])
      #expect(try Self.decode(GroupList.self, groups).groups.map(\.kind) == [.family, .friends, .blacklist])
    }
  }

  @Test func errorsUseTheEnvelope() async throws {
    try await Self.withRoutes { client in
      let cases: [(String, HTTPRequest.Method, HTTPFields, String?, HTTPResponse.Status, APIErrorCode)] = [
        ("/v1/nowhere", .get, [:], nil, .notFound, .routeNotFound),
        ("/v1/me", .get, [:], nil, .unauthorized, .tokenInvalid),
        ("/v1/me", .get, [.authorization: "Bearer nope"], nil, .unauthorized, .tokenInvalid),
        ("/v1/auth/register", .post, Self.jsonType, "{", .badRequest, .invalidJSON),
        (
          "/v1/auth/register", .post, Self.jsonType, #"{"email":"x","password":"correct horse"}"#, .badRequest,
          .invalidEmail
        ),
        (
          "/v1/auth/register", .post, [.contentType: "text/plain"], "{}", .unsupportedMediaType,
          .unsupportedMediaType
        ),
        ("/metrics", .get, [:], nil, .unauthorized, .tokenInvalid),
      ]
      for (uri, method, headers, body, status, code) in cases {
        let response = try await client.execute(uri: uri, method: method, headers: headers, body: body.map(Self.json))
        #expect(response.status == status, "\(method) \(uri)")
        #expect(try Self.decode(StandardErrorEnvelope.self, response).code == code.rawValue, "\(method) \(uri)")
        #expect(response.headers[HTTPField.Name("X-Content-Type-Options")!] == "nosniff")
      }
    }
  }
}
