import AsyncHTTPClient
import DomainKit
import Foundation
import MeridianAPI
import MeridianServer
import MeridianStoreTesting
import MeridianTestSupport
import NIOCore
import NIOHTTP1
import NetworkingKit
import Synchronization
import Testing

/// Single sign-on against a real OpenID provider (pyop, ``openIDProviderScript``) on loopback: a browser in the test
/// follows the redirects, keeps each site's cookies and signs in at the provider's form; the server does the code
/// flow with PKCE, checks the ID token and makes or finds the account.
@Suite("Single sign-on (OpenID Connect)", .serialized)
struct SingleSignOnTests {
  static let engines = ["sqlite", "postgres"]

  /// The provider, as the test drives it.
  struct Provider {
    let service: PythonService
    let issuer: String
    let port: Int
    let browser = TestBrowser()
    /// The server's clock when the test sets one. The provider stamps its tokens with the real time, so before each
    /// sign-in the server's clock is brought up to it (never back): a test that took a minute to get here on a
    /// loaded machine would otherwise see tokens issued "in the future".
    var serverClock: TestClock?

    /// Moves the server's clock up to the real time, when it is behind.
    func catchUpServerClock() {
      guard let serverClock else { return }
      let real = Timestamp.milliseconds(Date())
      if real > serverClock.now { serverClock.advance(real - serverClock.now) }
    }

    struct Hello: Decodable {
      var port: Int
      var issuer: String
    }

    static func start() async throws -> Provider {
      let service = try await PythonService.start(openIDProviderScript, name: "openid-provider")
      let hello = try service.hello(Hello.self)
      return Provider(service: service, issuer: hello.issuer, port: hello.port)
    }

    /// Posts a control (`/test/…`) to the provider.
    func control(_ path: String, _ json: String) async throws {
      let answer = try await browser.send(.POST, issuer + path, body: json, contentType: "application/json")
      #expect(answer.status == 200, "\(path): \(answer.text)")
    }

    /// Registers the server's client (confidential unless `secret` is nil).
    func registerClient(redirectURL: String, secret: String?) async throws {
      let secretPart =
        secret.map { #""client_secret": "\#($0)", "token_endpoint_auth_method": "client_secret_basic""# }
        ?? #""token_endpoint_auth_method": "none""#
      try await control(
        "/test/client",
        #"{"client_id": "meridian", "redirect_uris": ["\#(redirectURL)"], "response_types": ["code"], \#(secretPart)}"#)
    }

    /// Adds a person who signs in as `user`.
    func addUser(_ user: String, sub: String, email: String? = nil, verified: Bool = false) async throws {
      let claims = email.map { #"{"email": "\#($0)", "email_verified": \#(verified)}"# } ?? "{}"
      try await control("/test/user", #"{"user": "\#(user)", "sub": "\#(sub)", "claims": \#(claims)}"#)
    }

    func stop() async { await service.stop() }
  }

  /// Runs `body` with a provider and a server of `engine` configured for it (`configure` may change the sign-in
  /// settings); both are always stopped.
  static func withProvider(
    _ engine: String, clock: TestClock? = nil, secret: String? = "client-secret",
    _ configure: @escaping (inout SignInSettings) -> Void = { _ in },
    _ body: (TestServer, Provider) async throws -> Void
  ) async throws {
    var provider = try await Provider.start()
    provider.serverClock = clock
    do {
      let database = engine == "postgres" ? try await PostgresTestDatabase.create() : nil
      do {
        let server = try await startServer(database: database?.url, clock: clock) { port in
          var settings = SignInSettings()
          settings.openID = OpenIDSettings(
            issuer: provider.issuer, clientID: "meridian", clientSecret: secret,
            redirectURL: "http://127.0.0.1:\(port)/v1/auth/oidc/callback", name: "Test ID")
          configure(&settings)
          return settings
        }
        do {
          try await provider.registerClient(
            redirectURL: "http://127.0.0.1:\(server.port)/v1/auth/oidc/callback", secret: secret)
          try await body(server, provider)
        } catch {
          try await server.stop()
          throw error
        }
        try await server.stop()
      } catch {
        await database?.drop()
        throw error
      }
      await database?.drop()
    } catch {
      await provider.stop()
      throw error
    }
    await provider.stop()
  }

  /// A server on a port chosen here (the redirect URL names it), another one when it is taken.
  static func startServer(
    database: String?, clock: TestClock?, _ signIn: (Int) -> SignInSettings
  ) async throws -> TestServer {
    var attempt = 1
    while true {
      let port = Int.random(in: 10_000..<32_000)
      do {
        return try await TestServer.start(port: port, clock: clock) {
          if let database { $0.database = .postgres(url: database) }
          $0.signIn = signIn(port)
        }
      } catch  where attempt < 50 && TestServer.isAddressInUse(error) {
        attempt += 1
      }
    }
  }

  /// What a browser gets at the end of a sign-in.
  struct Outcome {
    /// The callback's answer: 303 to `/#sso=<code>`, or an error envelope.
    let callback: TestBrowser.Page

    /// The one-time code in the callback's `Location`.
    var code: String? {
      guard callback.status == 303, let location = callback.location, location.hasPrefix("/#sso=") else { return nil }
      return String(location.dropFirst("/#sso=".count))
    }
  }

  /// Starts a sign-in at `server` in `browser` and signs in at the provider as `user`; returns the callback URL the
  /// provider sends the browser to (not followed yet).
  static func authorize(
    _ server: TestServer, _ provider: Provider, as user: String, in browser: TestBrowser
  ) async throws -> String {
    provider.catchUpServerClock()
    let start = try await browser.send(.GET, "http://127.0.0.1:\(server.port)/v1/auth/oidc/start")
    #expect(start.status == 302, "\(start.text)")
    let authorize = try #require(start.location)
    #expect(authorize.hasPrefix(provider.issuer + "/authorize?"))
    #expect(authorize.contains("code_challenge_method=S256") && authorize.contains("nonce="))
    let form = try await browser.send(.GET, authorize)
    #expect(form.status == 200 && form.text.contains("<form"), "\(form.text)")
    let request = try #require(URLComponents(string: authorize)?.percentEncodedQuery)
    let login = try await browser.send(
      .POST, provider.issuer + "/login",
      body: "request=\(TestBrowser.formEncoded(request))&user=\(TestBrowser.formEncoded(user))",
      contentType: "application/x-www-form-urlencoded")
    #expect(login.status == 302, "\(login.text)")
    let callback = try #require(login.location)
    #expect(callback.hasPrefix("http://127.0.0.1:\(server.port)/v1/auth/oidc/callback?"))
    return callback
  }

  /// A whole sign-in as `user` in a new browser.
  static func signIn(_ server: TestServer, _ provider: Provider, as user: String) async throws -> Outcome {
    let browser = TestBrowser()
    let callback = try await authorize(server, provider, as: user, in: browser)
    return Outcome(callback: try await browser.send(.GET, callback))
  }

  /// The session of a finished sign-in.
  static func session(_ server: TestServer, _ outcome: Outcome) async throws -> AuthSession {
    let code = try #require(outcome.code, "\(outcome.callback.status) \(outcome.callback.text)")
    return try await server.client().send(API.singleSignOnSession, body: SingleSignOnCode(code: code))
  }

  @Test(arguments: engines)
  func theCodeFlowMakesAnAccountAndSignsItInAgainAcrossAKeyRotation(_ engine: String) async throws {
    let clock = TestClock()
    try await Self.withProvider(engine, clock: clock) { server, provider in
      let methods = try await server.client().send(API.signInMethods)
      #expect(methods.singleSignOn == SingleSignOnProvider(name: "Test ID", startPath: "/v1/auth/oidc/start"))
      #expect(methods.password && methods.registration)
      try await provider.addUser("anna", sub: "sub-anna", email: "anna@example.com", verified: true)

      let first = try await Self.signIn(server, provider, as: "anna")
      #expect(first.callback.setCookie?.contains("Max-Age=0") == true)
      let session = try await Self.session(server, first)
      #expect(session.isNew == true)
      let me = try await server.client(token: session.token).send(API.me)
      #expect(me.account.id == session.userId && me.account.credentials.isEmpty)
      // The one-time code is good once.
      await expectAPIError(.ssoStateInvalid, status: 400) {
        try await server.client().send(API.singleSignOnSession, body: SingleSignOnCode(code: try #require(first.code)))
      }

      let second = try await Self.session(server, try await Self.signIn(server, provider, as: "anna"))
      #expect(second.userId == session.userId && second.isNew == false && second.token != session.token)

      // The provider rotates to a new key (ES256). Within a minute of the last fetch of its key set the server does
      // not fetch it again, so the new key is unknown yet…
      try await provider.control("/test/rotate", #"{"alg": "ES256"}"#)
      let early = try await Self.signIn(server, provider, as: "anna")
      #expect(
        early.callback.status == 401 && early.callback.text.contains("does not publish"), "\(early.callback.text)")
      // …and after it, the unknown key id makes it fetch the set again.
      clock.advance(61_000)
      let third = try await Self.session(server, try await Self.signIn(server, provider, as: "anna"))
      #expect(third.userId == session.userId && third.isNew == false)
      try await provider.control("/test/rotate", #"{"alg": "RS256"}"#)
      clock.advance(61_000)
      #expect(
        try await Self.session(server, try await Self.signIn(server, provider, as: "anna")).userId == session.userId)

      // A second person gets an account of their own.
      try await provider.addUser("boris", sub: "sub-boris")
      let boris = try await Self.session(server, try await Self.signIn(server, provider, as: "boris"))
      #expect(boris.isNew == true && boris.userId != session.userId)
    }
  }

  /// Two nodes on one PostgreSQL database behind one address: the sign-in starts on one, the provider's redirect
  /// reaches the other, and the page trades its code on the first.
  @Test func aSignInStartedOnOneNodeEndsOnAnother() async throws {
    let provider = try await Provider.start()
    let database = try await PostgresTestDatabase.create()
    var nodes: [TestServer] = []
    do {
      let nodeA = try await Self.startServer(database: database.url, clock: nil) { port in
        var settings = SignInSettings()
        settings.openID = OpenIDSettings(
          issuer: provider.issuer, clientID: "meridian", clientSecret: "client-secret",
          redirectURL: "http://127.0.0.1:\(port)/v1/auth/oidc/callback")
        return settings
      }
      nodes.append(nodeA)
      let nodeB = try await TestServer.start {
        $0.database = .postgres(url: database.url)
        $0.signIn = nodeA.app.environment.signIn
      }
      nodes.append(nodeB)
      try await provider.registerClient(
        redirectURL: "http://127.0.0.1:\(nodeA.port)/v1/auth/oidc/callback", secret: "client-secret")
      try await provider.addUser("anna", sub: "sub-anna")
      let browser = TestBrowser()
      let callback = try await Self.authorize(nodeA, provider, as: "anna", in: browser)
      // The browser's cookie is the site's, whichever node answers (the test's browser keys it by port: copy it).
      let onB = callback.replacingOccurrences(of: ":\(nodeA.port)/", with: ":\(nodeB.port)/")
      let cookie = try #require(browser.cookie(SingleSignOnTests.cookieName, for: "127.0.0.1:\(nodeA.port)"))
      browser.setCookie(SingleSignOnTests.cookieName, cookie, for: "127.0.0.1:\(nodeB.port)")
      let outcome = Outcome(callback: try await browser.send(.GET, onB))
      let session = try await Self.session(nodeA, outcome)
      #expect(session.isNew == true)
      #expect(try await nodeB.client(token: session.token).send(API.me).account.id == session.userId)
    } catch {
      for node in nodes { try? await node.stop() }
      await database.drop()
      await provider.stop()
      throw error
    }
    for node in nodes { try await node.stop() }
    await database.drop()
    await provider.stop()
  }

  static let cookieName = "meridian_sso"

  @Test(arguments: engines)
  func aStateIsGoodOnceInTheBrowserThatStartedIt(_ engine: String) async throws {
    try await Self.withProvider(engine) { server, provider in
      try await provider.addUser("anna", sub: "sub-anna")
      // Another state than the one sent.
      let browser = TestBrowser()
      let callback = try await Self.authorize(server, provider, as: "anna", in: browser)
      let forged = callback.replacingOccurrences(of: "state=", with: "state=x")
      let wrong = try await browser.send(.GET, forged)
      #expect(wrong.status == 400 && wrong.errorCode == "sso_state_invalid", "\(wrong.text)")
      // The right one, from another browser (no cookie): refused, and used up.
      let elsewhere = try await TestBrowser().send(.GET, callback)
      #expect(elsewhere.status == 400 && elsewhere.errorCode == "sso_state_invalid")
      let after = try await browser.send(.GET, callback)
      #expect(after.status == 400 && after.errorCode == "sso_state_invalid")

      // A state replayed after it was used.
      let again = TestBrowser()
      let good = try await Self.authorize(server, provider, as: "anna", in: again)
      let used = Outcome(callback: try await again.send(.GET, good))
      _ = try await Self.session(server, used)
      let replayed = try await again.send(.GET, good)
      #expect(replayed.status == 400 && replayed.errorCode == "sso_state_invalid")
      // No state at all.
      let none = try await again.send(.GET, "http://127.0.0.1:\(server.port)/v1/auth/oidc/callback?code=abc")
      #expect(none.status == 400 && none.errorCode == "sso_state_invalid")
    }
  }

  @Test(arguments: engines)
  func tokensWithAWrongNonceAnUnknownKeyOrPastTheirTimeAreRefused(_ engine: String) async throws {
    let clock = TestClock()
    try await Self.withProvider(engine, clock: clock) { server, provider in
      try await provider.addUser("anna", sub: "sub-anna")
      func expectRefused(_ settings: String, _ reason: String, sourceLocation: SourceLocation = #_sourceLocation)
        async throws
      {
        try await provider.control("/test/settings", settings)
        let outcome = try await Self.signIn(server, provider, as: "anna")
        #expect(outcome.callback.status == 401, "\(outcome.callback.text)", sourceLocation: sourceLocation)
        #expect(outcome.callback.errorCode == "sso_token_invalid", sourceLocation: sourceLocation)
        #expect(outcome.callback.text.contains(reason), "\(outcome.callback.text)", sourceLocation: sourceLocation)
      }
      try await expectRefused(#"{"nonce_override": "not-this-sign-in"}"#, "nonce")
      try await provider.control("/test/settings", #"{"nonce_override": null}"#)
      // Signed by a key the provider does not publish: the key set is fetched again (allowed once the interval
      // passed), and the key is still not in it.
      clock.advance(61_000)
      try await expectRefused(#"{"unpublished_key": true}"#, "does not publish")
      try await provider.control("/test/settings", #"{"unpublished_key": false}"#)
      // Expired ten minutes ago (beyond the one-minute leeway).
      try await expectRefused(#"{"id_token_lifetime": -600}"#, "expired")
      try await provider.control("/test/settings", #"{"id_token_lifetime": 3600}"#)
      // None of those made an account; a good token still signs in.
      let session = try await Self.session(server, try await Self.signIn(server, provider, as: "anna"))
      #expect(session.isNew == true)
    }
  }

  @Test(arguments: engines)
  func aVerifiedEmailLinksTheEmailAccountOnlyWhenTheOperatorAllowsIt(_ engine: String) async throws {
    try await Self.withProvider(engine, { $0.openID?.linkVerifiedEmail = true }) { server, provider in
      let carol = try await server.signUp("carol")
      let dan = try await server.signUp("dan")
      try await provider.addUser("carol", sub: "sub-carol", email: "Carol@Example.com", verified: true)
      try await provider.addUser("dan", sub: "sub-dan", email: "dan@example.com", verified: false)
      let linked = try await Self.session(server, try await Self.signIn(server, provider, as: "carol"))
      #expect(linked.userId == carol.session.userId && linked.isNew == false)
      // Linked by its subject from now on.
      #expect(
        try await Self.session(server, try await Self.signIn(server, provider, as: "carol")).userId == linked.userId)
      // An unverified email links nothing: a new account.
      let unverified = try await Self.session(server, try await Self.signIn(server, provider, as: "dan"))
      #expect(unverified.userId != dan.session.userId && unverified.isNew == true)
    }
    try await Self.withProvider(engine) { server, provider in
      let erin = try await server.signUp("erin")
      try await provider.addUser("erin", sub: "sub-erin", email: "erin@example.com", verified: true)
      let session = try await Self.session(server, try await Self.signIn(server, provider, as: "erin"))
      #expect(session.userId != erin.session.userId && session.isNew == true)
    }
  }

  @Test(arguments: engines)
  func registrationClosedRefusesNewSubjectsAndPasswordSignInCanBeTurnedOff(_ engine: String) async throws {
    try await Self.withProvider(
      engine,
      {
        $0.registrationOpen = false
        $0.passwordSignIn = false
      }
    ) { server, provider in
      let methods = try await server.client().send(API.signInMethods)
      #expect(!methods.password && !methods.registration && methods.singleSignOn?.name == "Test ID")
      try await provider.addUser("anna", sub: "sub-anna")
      let refused = try await Self.signIn(server, provider, as: "anna")
      #expect(refused.callback.status == 403 && refused.callback.errorCode == "registration_closed")
      // A browser is sent to the page, which says why in its language.
      let browser = TestBrowser()
      let callback = try await Self.authorize(server, provider, as: "anna", in: browser)
      let page = try await browser.send(.GET, callback, accept: "text/html,application/xhtml+xml,*/*;q=0.8")
      #expect(page.status == 303 && page.location == "/#sso_error=registration_closed", "\(page.text)")
      await expectAPIError(.passwordSignInDisabled, status: 403) {
        try await server.client().send(
          API.register, body: EmailCredentials(email: "anna@example.com", password: "correct horse"))
      }
      await expectAPIError(.passwordSignInDisabled, status: 403) {
        try await server.client().send(
          API.login, body: EmailCredentials(email: "anna@example.com", password: "correct horse"))
      }
      // A phone that has no account gets none either.
      _ = try await server.client().send(API.requestOTP, body: OTPRequest(phone: "+380671234567"))
      let code = try #require(await server.sms.lastCode(for: "+380671234567"))
      await expectAPIError(.registrationClosed, status: 403) {
        try await server.client().send(API.verifyOTP, body: OTPVerification(phone: "+380671234567", code: code))
      }
    }
  }

  @Test(arguments: ["sqlite"])
  func aProviderThatIsDownOrSilentIsA503WithinTheDeadline(_ engine: String) async throws {
    try await Self.withProvider(engine, { $0.openID?.timeout = 1_000 }) { server, provider in
      try await provider.addUser("anna", sub: "sub-anna")
      let browser = TestBrowser()
      let callback = try await Self.authorize(server, provider, as: "anna", in: browser)
      // The provider takes the token request and never answers.
      try await provider.control("/test/settings", #"{"hang": true}"#)
      let started = ContinuousClock.now
      let silent = try await browser.send(.GET, callback)
      let waited = ContinuousClock.now - started
      #expect(silent.status == 503 && silent.errorCode == "sso_provider_unavailable", "\(silent.text)")
      #expect(waited >= .milliseconds(900) && waited < .seconds(5), "\(waited)")
      // Stopped: refused at once.
      await provider.stop()
      let down = try await TestBrowser().send(.GET, callback)
      #expect(down.status == 400 && down.errorCode == "sso_state_invalid")  // the state was used by the try above
    }
  }

  /// A public client (no secret: `client_id` in the token request, PKCE alone); and a discovery document that names
  /// another issuer than the configured one is refused before the browser is sent anywhere (mix-up).
  @Test func aPublicClientSignsInAndADiscoveryDocumentOfAnotherIssuerIsRefused() async throws {
    try await Self.withProvider("sqlite", secret: nil) { server, provider in
      try await provider.addUser("anna", sub: "sub-anna")
      let session = try await Self.session(server, try await Self.signIn(server, provider, as: "anna"))
      #expect(session.isNew == true)
    }
    try await Self.withProvider("sqlite") { server, provider in
      try await provider.control("/test/settings", #"{"issuer_override": "https://attacker.example"}"#)
      let answer = try await TestBrowser().send(.GET, "http://127.0.0.1:\(server.port)/v1/auth/oidc/start")
      #expect(answer.status == 502 && answer.errorCode == "sso_provider_error", "\(answer.text)")
      #expect(answer.text.contains("attacker.example") && answer.location == nil)  // JSON escapes the slashes
    }
  }

  @Test func aStoppedProviderIsA503AtTheStart() async throws {
    try await Self.withProvider("sqlite") { server, provider in
      await provider.stop()
      let started = ContinuousClock.now
      let answer = try await TestBrowser().send(.GET, "http://127.0.0.1:\(server.port)/v1/auth/oidc/start")
      #expect(answer.status == 503 && answer.errorCode == "sso_provider_unavailable", "\(answer.text)")
      #expect(ContinuousClock.now - started < .seconds(6))
      #expect(answer.headers["Retry-After"].first != nil)
    }
  }
}

/// A browser for the tests: follows no redirect by itself (the test follows them), keeps each site's cookies (by
/// host and port) and sends them back.
final class TestBrowser: Sendable {
  private static let client = HTTPClient(
    eventLoopGroup: HTTPClient.defaultEventLoopGroup,
    configuration: HTTPClient.Configuration(redirectConfiguration: .disallow))
  private let cookies = Mutex<[String: [String: String]]>([:])

  /// An answer.
  struct Page {
    var status: UInt
    var headers: HTTPHeaders
    var body: Data
    var text: String { String(decoding: body, as: UTF8.self) }
    var location: String? { headers["Location"].first }
    var setCookie: String? { headers["Set-Cookie"].first }
    var errorCode: String? { (try? JSONDecoder().decode(StandardErrorEnvelope.self, from: body))?.code }
  }

  /// Sends a request with this browser's cookies for the URL's site, and keeps the cookies it sets.
  func send(
    _ method: HTTPMethod, _ url: String, body: String? = nil, contentType: String? = nil, accept: String? = nil
  ) async throws -> Page {
    let site = try #require(URLComponents(string: url)).site
    var request = HTTPClientRequest(url: url)
    request.method = method
    if let contentType { request.headers.add(name: "Content-Type", value: contentType) }
    if let accept { request.headers.add(name: "Accept", value: accept) }
    if let body { request.body = .bytes(ByteBuffer(string: body)) }
    let jar = cookies.withLock { $0[site] ?? [:] }
    if !jar.isEmpty {
      request.headers.add(name: "Cookie", value: jar.map { "\($0.key)=\($0.value)" }.joined(separator: "; "))
    }
    let response = try await Self.client.execute(request, timeout: .seconds(30))
    let bytes = try await response.body.collect(upTo: 1 << 20)
    for header in response.headers["Set-Cookie"] {
      let pair = header.split(separator: ";")[0].split(separator: "=", maxSplits: 1).map(String.init)
      guard pair.count == 2 else { continue }
      let expired = header.contains("Max-Age=0")
      cookies.withLock { if expired { $0[site]?[pair[0]] = nil } else { $0[site, default: [:]][pair[0]] = pair[1] } }
    }
    return Page(status: response.status.code, headers: response.headers, body: Data(bytes.readableBytesView))
  }

  /// The cookie `name` kept for `site` (`host:port`).
  func cookie(_ name: String, for site: String) -> String? { cookies.withLock { $0[site]?[name] } }

  /// Keeps cookie `name` for `site` (`host:port`).
  func setCookie(_ name: String, _ value: String, for site: String) {
    cookies.withLock { $0[site, default: [:]][name] = value }
  }

  /// `text` form-encoded.
  static func formEncoded(_ text: String) -> String {
    text.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._*"))) ?? text
  }
}

extension URLComponents {
  /// `host:port`.
  fileprivate var site: String { "\(host ?? ""):\(port ?? 80)" }
}
