import DomainKit
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import MeridianAPI
import MeridianSecrets
import MeridianStoreSQLite
import NIOCore
import NetworkingKit
import Synchronization
import Testing

@testable import MeridianServer

/// The HTTP layer on Hummingbird's idioms (issue 34 §3): authentication is the route groups' authenticator
/// middleware, whose caller the registrar hands on; streaming routes go through the registrar with the body's limits.
@Suite struct HTTPLayerTests {
  /// Runs `body` with a router of `register`'s routes (behind the error envelope) on a new SQLite store holding an
  /// account `anna` with the token `anna-token`, and an account `ben` with `ben-token`, disabled.
  static func withRegistrar(
    limits: RouteRegistrar.BodyLimits = .init(wire: 64, decompressed: 128),
    _ register: (RouteRegistrar) -> Void, _ body: @Sendable (any TestClientProtocol) async throws -> Void
  ) async throws {
    let file = TemporaryDatabaseFile()
    defer { file.remove() }
    let store = try SQLiteStore.open(at: file.path)
    for (name, disabled) in [("anna", false), ("ben", true)] {
      let user = UserID(name)
      _ = try await store.createAccount(id: user, credential: .email("\(name)@example.com"), passwordHash: nil, now: 1)
      try await store.insertToken(
        hash: SecretHash.sha256("\(name)-token"), userID: user, createdAt: 1, expiresAt: .max)
      if disabled { try await store.setDisabled(user, true) }
    }
    let router = Router(context: MeridianRequestContext.self)
    router.add(middleware: ErrorEnvelopeMiddleware())
    register(RouteRegistrar(router: router, store: store, metrics: ServerMetrics(), limits: limits, clock: { 2 }))
    try await Application(router: router).test(.router, body)
  }

  /// A streaming route that answers who called and how many bytes its body had.
  static func echo(_ call: StreamingRouteCall<Void>) async throws -> Response {
    var count = 0
    for try await buffer in call.body { count += buffer.readableBytes }
    let caller =
      switch call.caller {
      case .user(let user, _)?: user.rawValue
      case .admin?: "admin"
      case nil: "nobody"
      }
    return Response(status: .ok, body: ResponseBody(byteBuffer: ByteBuffer(string: "\(caller) \(count)")))
  }

  static func code(_ response: TestResponse) throws -> String {
    try JSONDecoder().decode(StandardErrorEnvelope.self, from: Data(response.body.readableBytesView)).code
  }

  @Test func aStreamingRouteGetsTheCallerOfItsGroupsAuthenticatorAndItsBodyWithinTheLimits() async throws {
    try await Self.withRegistrar({ routes in
      routes.onStream(API.uploadBlob, Self.echo)  // a bearer endpoint: a user's token
      routes.authenticating(with: AdminTokenAuthenticator(adminToken: "admin-secret"))
        .onStream(API.importHistory, Self.echo)
    }) { client in
      func post(
        _ uri: String, token: String?, _ body: Data, encoding: String? = nil
      ) async throws -> TestResponse {
        var headers: HTTPFields = [:]
        if let token { headers[.authorization] = "Bearer \(token)" }
        if let encoding { headers[.contentEncoding] = encoding }
        return try await client.execute(uri: uri, method: .post, headers: headers, body: ByteBuffer(bytes: body))
      }
      let small = Data(repeating: 7, count: 40)
      let ok = try await post("/v1/blobs", token: "anna-token", small)
      #expect(ok.status == .ok)
      #expect(String(buffer: ok.body) == "anna 40")
      // Gzip is inflated on the way, within the decompressed limit; past either limit it is 413.
      let inflated = try await post(
        "/v1/blobs", token: "anna-token", try Gzip.compress(Data(count: 120)), encoding: "gzip")
      #expect(String(buffer: inflated.body) == "anna 120")
      for (body, encoding) in [(Data(count: 65), nil), (try Gzip.compress(Data(count: 129)), "gzip")] {
        let refused = try await post("/v1/blobs", token: "anna-token", body, encoding: encoding)
        #expect(refused.status == .contentTooLarge)
        #expect(try Self.code(refused) == "body_too_large")
      }
      let corrupt = try await post("/v1/blobs", token: "anna-token", Data([0x1f, 0x8b, 1, 2, 3]), encoding: "gzip")
      #expect(corrupt.status == .badRequest)
      #expect(try Self.code(corrupt) == "unsupported_encoding")
      let unknown = try await post("/v1/blobs", token: "anna-token", small, encoding: "br")
      #expect(unknown.status == .unsupportedMediaType)
      // No token, an unknown one, a disabled account's, the admin's on a user route: 401 token_invalid.
      for token in [nil, "nope", "ben-token", "admin-secret"] {
        let refused = try await post("/v1/blobs", token: token, small)
        #expect(refused.status == .unauthorized, "\(token ?? "none")")
        #expect(try Self.code(refused) == "token_invalid")
      }
      // The admin group: only the admin token, and its caller is the admin.
      let admin = try await post("/v1/history/import", token: "admin-secret", small)
      #expect(String(buffer: admin.body) == "admin 40")
      for token in [nil, "anna-token", "admin-secreT"] {
        let refused = try await post("/v1/history/import", token: token, small)
        #expect(refused.status == .unauthorized)
        #expect(try Self.code(refused) == "token_invalid")
      }
    }
  }

  @Test func theBasicGroupChallengesEveryRefusalAndHandsOnTheAccount() async throws {
    try await Self.withRegistrar({ routes in
      routes.authenticating(
        with: UserTokenAuthenticator(store: routes.store, clock: { 2 }), everyRoute: true, basicChallenge: true
      ).onStream(API.osmAndPost, Self.echo)  // declared without credentials; authenticated here all the same
    }) { client in
      let refused = try await client.execute(uri: "/osmand", method: .post, headers: [:], body: ByteBuffer())
      #expect(refused.status == .unauthorized)
      #expect(refused.headers[.wwwAuthenticate]?.hasPrefix("Basic realm=\"meridian\"") == true)
      let ok = try await client.execute(
        uri: "/osmand", method: .post, headers: [.authorization: "Bearer anna-token"], body: ByteBuffer(string: "x"))
      #expect(String(buffer: ok.body) == "anna 1")
    }
  }

  /// A request that fails unexpectedly is logged with its route's template, never its path: a share link's token
  /// must not reach the logs.
  @Test func aFailureIsLoggedWithTheRouteTemplateNotThePath() async throws {
    struct Boom: Error {}
    let lines = LogLines()
    let router = Router(context: MeridianRequestContext.self)
    router.add(middleware: ErrorEnvelopeMiddleware())
    let file = TemporaryDatabaseFile()
    defer { file.remove() }
    let store = try SQLiteStore.open(at: file.path)
    RouteRegistrar(
      router: router, store: store, metrics: ServerMetrics(), limits: .init(wire: 64, decompressed: 128), clock: { 2 }
    )
    .on(API.sharedView) { _ -> SharedView in throw Boom() }
    let logger = Logger(label: "test") { _ in lines }
    let token = "secret-share-token-0123456789"
    try await Application(router: router, logger: logger).test(.router) { client in
      let response = try await client.execute(uri: "/v1/shared/\(token)", method: .get)
      #expect(response.status == .internalServerError)
    }
    let logged = lines.all.joined(separator: "\n")
    #expect(logged.contains("Request failed") && logged.contains("/v1/shared/"), "\(logged)")
    #expect(!logged.contains(token), "\(logged)")
  }
}

/// A log handler keeping every line (message and metadata) it is given.
final class LogLines: LogHandler, Sendable {
  private let lines = Mutex([String]())
  var all: [String] { lines.withLock { $0 } }
  var metadata: Logger.Metadata {
    get { [:] }
    set {}
  }
  var logLevel: Logger.Level {
    get { .trace }
    set {}
  }
  subscript(metadataKey key: String) -> Logger.Metadata.Value? {
    get { nil }
    set {}
  }
  func log(
    level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String, file: String,
    function: String, line: UInt
  ) {
    lines.withLock { $0.append("\(message) \(metadata ?? [:])") }
  }
}
