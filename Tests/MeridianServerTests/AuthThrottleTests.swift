import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import MeridianAPI
import MeridianServer
import MeridianTestSupport
import NIOCore
import NetworkingKit
import Synchronization
import Testing

/// The throttles of the sign-up and sign-in routes, on a clock the test moves instead of waiting.
@Suite struct AuthThrottleTests {
  /// Counts the codes sent per phone.
  final class CountingSMSSender: SMSSender {
    let sent = Mutex<[String: Int]>([:])
    func sendCode(_ code: String, to phone: String) async throws { sent.withLock { $0[phone, default: 0] += 1 } }
    func count(_ phone: String) -> Int { sent.withLock { $0[phone] ?? 0 } }
  }

  /// Runs `body` with a router-mode client of a server on a new temporary database whose clock is `clock`.
  static func withRoutes(
    sms: any SMSSender = CountingSMSSender(), clock: TestClock,
    _ body: @Sendable (any TestClientProtocol) async throws -> Void
  ) async throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("auth-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: directory) }
    var configuration = ServerConfiguration()
    configuration.databasePath = directory.appendingPathComponent("meridian.sqlite").path
    configuration.bcryptCost = 4
    let router = try ServerApp.routes(
      configuration: configuration, smsSender: sms, logger: Logger(label: "auth-throttle-tests"),
      now: { clock.now })
    try await Application(router: router).test(.router, body)
  }

  static let json: HTTPFields = [.contentType: "application/json"]

  static func code(_ response: TestResponse) throws -> String {
    try JSONDecoder().decode(StandardErrorEnvelope.self, from: Data(response.body.readableBytesView)).code
  }

  /// DomainKit's `OneTimeCodeRateLimit`: two codes to one number are at least 60 s apart (429 with `Retry-After`
  /// meanwhile, nothing sent); another number is not held up.
  @Test func codesToOnePhoneAreSixtySecondsApart() async throws {
    let clock = TestClock(start: 1_800_000_000_000)
    let sms = CountingSMSSender()
    try await Self.withRoutes(sms: sms, clock: clock) { client in
      func request(_ phone: String) async throws -> TestResponse {
        try await client.execute(
          uri: "/v1/auth/otp/request", method: .post, headers: Self.json,
          body: ByteBuffer(string: #"{"phone":"\#(phone)"}"#))
      }
      #expect(try await request("+380671234567").status == .accepted)
      clock.advance(1_000)
      let early = try await request("+380671234567")
      #expect(early.status == .tooManyRequests)
      #expect(try Self.code(early) == APIErrorCode.rateLimited.rawValue)
      #expect(early.headers[.retryAfter] == "59")
      #expect(sms.count("+380671234567") == 1)
      #expect(try await request("+380501112233").status == .accepted)
      clock.advance(58_999)
      #expect(try await request("+380671234567").status == .tooManyRequests)
      clock.advance(1)
      #expect(try await request("+380671234567").status == .accepted)
      #expect(sms.count("+380671234567") == 2)
    }
  }

  /// Registering an email that has an account is a failed guess like a wrong password: after the free ones, 429
  /// with `Retry-After`, before any work, until the wait is over.
  @Test func registeringATakenEmailIsThrottledLikeSigningIn() async throws {
    let clock = TestClock(start: 1_800_000_000_000)
    try await Self.withRoutes(clock: clock) { client in
      func register(_ email: String) async throws -> TestResponse {
        try await client.execute(
          uri: "/v1/auth/register", method: .post, headers: Self.json,
          body: ByteBuffer(string: #"{"email":"\#(email)","password":"correct horse"}"#))
      }
      #expect(try await register("anna@example.com").status == .created)
      for _ in 0..<ServerLimits().signInFailuresPerAccount {
        let taken = try await register("Anna@Example.com")
        #expect(taken.status == .conflict)
        #expect(try Self.code(taken) == APIErrorCode.emailTaken.rawValue)
      }
      let limited = try await register("anna@example.com")
      #expect(limited.status == .tooManyRequests)
      #expect(try Self.code(limited) == APIErrorCode.rateLimited.rawValue)
      #expect(limited.headers[.retryAfter] == "1")
      // The same throttle as signing in: the account's sign-in waits too.
      let login = try await client.execute(
        uri: "/v1/auth/login", method: .post, headers: Self.json,
        body: ByteBuffer(string: #"{"email":"anna@example.com","password":"correct horse"}"#))
      #expect(login.status == .tooManyRequests)
      clock.advance(1_000)
      #expect(try await register("anna@example.com").status == .conflict)
      // A new email is not held up by another's failures.
      #expect(try await register("boris@example.com").status == .created)
    }
  }
}
