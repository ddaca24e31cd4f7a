import DomainKit
import Foundation
import MeridianAPI
import MeridianServer
import MeridianTestSupport
import NetworkingKit
import Testing

@Suite("Authentication over HTTP", .inProcess)
struct AuthTests {
  @Test func healthReportsTheDatabase() async throws {
    try await TestServer.with { server in
      let health = try await server.client().send(API.health)
      #expect(health == HealthStatus(status: "ok", database: "ok"))
    }
  }

  /// Codes to one number in quick succession: the 60 s between two is off here (`AuthThrottleTests` tests it).
  static func quickCodes(_ configuration: inout ServerConfiguration) { configuration.otpSpacingSeconds = 0 }

  @Test func otpSignUpThenSignInAgain() async throws {
    try await TestServer.with(Self.quickCodes) { server in
      let client = try server.client()
      _ = try await client.send(API.requestOTP, body: OTPRequest(phone: "+380 67 123 4567"))
      let code = try #require(await server.sms.lastCode(for: "+380671234567"))
      #expect(code.count == 6 && code.allSatisfy(\.isNumber))

      let wrong = code == "000000" ? "111111" : "000000"
      await expectAPIError(.otpInvalid, status: 401) {
        try await client.send(API.verifyOTP, body: OTPVerification(phone: "+380671234567", code: wrong))
      }
      let session = try await client.send(API.verifyOTP, body: OTPVerification(phone: "+380671234567", code: code))
      #expect(session.isNew == true)
      // A code works once.
      await expectAPIError(.otpExpired, status: 401) {
        try await client.send(API.verifyOTP, body: OTPVerification(phone: "+380671234567", code: code))
      }

      let me = try await server.client(token: session.token).send(API.me)
      #expect(me.account.id == session.userId)
      #expect(me.account.credentials == [.phone("+380671234567")])
      #expect(me.profile.phone == "+380671234567")

      _ = try await client.send(API.requestOTP, body: OTPRequest(phone: "+380671234567"))
      let second = try #require(await server.sms.lastCode(for: "+380671234567"))
      let again = try await client.send(API.verifyOTP, body: OTPVerification(phone: "+380671234567", code: second))
      #expect(again.isNew == false)
      #expect(again.userId == session.userId)
      #expect(again.token != session.token)

      let groups = try await server.client(token: session.token).send(API.groups).groups
      #expect(groups.map(\.kind) == [.family, .friends, .blacklist])
    }
  }

  @Test func otpAttemptsAndRateLimits() async throws {
    try await TestServer.with(Self.quickCodes) { server in
      let client = try server.client()
      let phone = "+380501112233"
      _ = try await client.send(API.requestOTP, body: OTPRequest(phone: phone))
      let code = try #require(await server.sms.lastCode(for: phone))
      let wrong = code == "000000" ? "111111" : "000000"
      for _ in 0..<4 {
        await expectAPIError(.otpInvalid, status: 401) {
          try await client.send(API.verifyOTP, body: OTPVerification(phone: phone, code: wrong))
        }
      }
      await expectAPIError(.otpAttemptsExceeded, status: 401) {
        try await client.send(API.verifyOTP, body: OTPVerification(phone: phone, code: wrong))
      }
      // Used up: even the right code is refused now.
      await expectAPIError(.otpAttemptsExceeded, status: 401) {
        try await client.send(API.verifyOTP, body: OTPVerification(phone: phone, code: code))
      }
      // 5 codes per phone per hour: 4 more are fine, the next is refused.
      for _ in 0..<4 { _ = try await client.send(API.requestOTP, body: OTPRequest(phone: phone)) }
      await expectAPIError(.rateLimited, status: 429) {
        try await client.send(API.requestOTP, body: OTPRequest(phone: phone))
      }
      await expectAPIError(.invalidPhone, status: 400) {
        try await client.send(API.requestOTP, body: OTPRequest(phone: "0671234567"))
      }
    }
  }

  @Test func otpRateLimitPerClientAddress() async throws {
    try await TestServer.with({ $0.otpPerAddressPerHour = 3 }) { server in
      let client = try server.client()
      for index in 0..<3 { _ = try await client.send(API.requestOTP, body: OTPRequest(phone: "+38067000000\(index)")) }
      await expectAPIError(.rateLimited, status: 429) {
        try await client.send(API.requestOTP, body: OTPRequest(phone: "+380670000009"))
      }
    }
  }

  @Test func emailRegisterLoginLogout() async throws {
    try await TestServer.with { server in
      let client = try server.client()
      let credentials = EmailCredentials(email: "Anna@Example.COM", password: "correct horse")
      let session = try await client.send(API.register, body: credentials)
      #expect(session.isNew == nil)
      await expectAPIError(.emailTaken, status: 409) {
        try await client.send(API.register, body: EmailCredentials(email: "anna@example.com", password: "whatever1"))
      }
      await expectAPIError(.invalidEmail, status: 400) {
        try await client.send(API.register, body: EmailCredentials(email: "anna.example.com", password: "whatever1"))
      }
      await expectAPIError(.invalidPassword, status: 400) {
        try await client.send(API.register, body: EmailCredentials(email: "bob@example.com", password: "short"))
      }
      await expectAPIError(.invalidCredentials, status: 401) {
        try await client.send(API.login, body: EmailCredentials(email: "anna@example.com", password: "wrong horse"))
      }
      await expectAPIError(.invalidCredentials, status: 401) {
        try await client.send(API.login, body: EmailCredentials(email: "nobody@example.com", password: "correct horse"))
      }
      let login = try await client.send(API.login, body: credentials)
      #expect(login.userId == session.userId)

      let signedIn = try server.client(token: login.token)
      #expect(try await signedIn.send(API.me).account.credentials == [.email("anna@example.com")])
      _ = try await signedIn.send(API.logout)
      await expectAPIError(.tokenInvalid, status: 401) { try await signedIn.send(API.me) }
      // The other session is still valid.
      _ = try await server.client(token: session.token).send(API.me)
    }
  }

  @Test func expiredAndUnknownTokensAreRejected() async throws {
    // The server's clock is the test's: the token expires when the test moves it past the lifetime, not after a wait.
    let clock = TestClock()
    let server = try await TestServer.start(clock: clock) { $0.tokenLifetime = 3 }
    do {
      let (_, client) = try await server.signUp("anna")
      await expectAPIError(.tokenInvalid, status: 401) { try await server.client().send(API.me) }
      await expectAPIError(.tokenInvalid, status: 401) {
        try await server.client(token: "not-a-token").send(API.groups)
      }
      clock.advance(2_999)
      _ = try await client.send(API.me)
      clock.advance(2)
      await expectAPIError(.tokenInvalid, status: 401) { try await client.send(API.me) }
    } catch {
      try await server.stop()
      throw error
    }
    try await server.stop()
  }
}
