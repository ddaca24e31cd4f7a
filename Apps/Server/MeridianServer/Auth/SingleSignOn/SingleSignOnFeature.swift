import Crypto
import DomainKit
import Foundation
import HTTPTypes
import MeridianAPI
import MeridianSecrets
import MeridianStore
import NetworkingKit

/// Signing in with an OpenID provider: the authorization code flow with PKCE (S256), `state` and `nonce`.
///
/// `GET /v1/auth/oidc/start` keeps a single-use record of the sign-in (its PKCE verifier, nonce, and the hash of a
/// random value the browser keeps in an HttpOnly cookie) under the hash of a fresh `state`, and sends the browser to
/// the provider. The callback takes that record once — a `state` that is unknown, used, older than
/// ``OpenIDSettings/signInLifetime`` or brought by another browser is refused — exchanges the code with the verifier,
/// and checks the ID token (``SignedIDToken``: signature by a published key, issuer, audience, times, nonce). The
/// account is the one linked to the token's `(iss, sub)`; else, when the operator allows it, the email account of a
/// *verified* email, which is then linked; else a new account, unless registration is closed. The browser goes to
/// `/#sso=<code>`, a single-use code (60 s) the page trades for the project's usual session
/// (`POST /v1/auth/oidc/session`): the bearer token itself never travels in an address.
struct SingleSignOnFeature: Sendable {
  let environment: ServerEnvironment
  /// The provider's client; nil when none is configured.
  let provider: OpenIDProviderClient?
  var store: any MeridianStore { environment.store }

  /// The cookie that binds a sign-in to the browser that started it.
  static let cookieName = "meridian_sso"
  /// How long the page has to trade the callback's code for a session, ms.
  static let handoffLifetime: Int64 = 60_000

  init(environment: ServerEnvironment) {
    self.environment = environment
    provider = environment.signIn.openID.map { OpenIDProviderClient(settings: $0, now: environment.now) }
  }

  func register(on routes: RouteRegistrar) {
    routes.on(API.signInMethods) { _ in methods }
    routes.onRedirect(API.singleSignOnStart) { call in try await forBrowsers(call) { try await start() } }
    routes.onRedirect(API.singleSignOnCallback) { call in
      try await forBrowsers(call) { try await callback(call.parameters, cookie: call.headers[.cookie]) }
    }
    routes.on(API.singleSignOnSession) { call in try await session(call.body) }
  }

  /// `work`'s redirect; a refusal is logged (the operator's view of a provider that fails) and, for a browser (one
  /// that accepts HTML), is a 303 to the page at `/#sso_error=<code>`, which says it in the person's language; an
  /// API client gets the error envelope.
  func forBrowsers<Parameters, Body>(
    _ call: RouteCall<Parameters, Body>, _ work: () async throws -> RouteRegistrar.Redirect
  ) async throws -> RouteRegistrar.Redirect {
    do {
      return try await work()
    } catch let error as APIError {
      call.logger.warning(
        "Single sign-on refused", metadata: ["code": "\(error.code.rawValue)", "reason": "\(error.message)"])
      guard call.headers[.accept]?.contains("text/html") == true else { throw error }
      return RouteRegistrar.Redirect(
        location: "/#sso_error=\(error.code.rawValue)", status: .seeOther, setCookie: cookie("", maxAge: 0))
    }
  }

  var methods: SignInMethods {
    SignInMethods(
      password: environment.signIn.passwordSignIn, registration: environment.signIn.registrationOpen,
      singleSignOn: environment.signIn.openID.map {
        SingleSignOnProvider(name: $0.name, startPath: API.singleSignOnStart.pathTemplate)
      })
  }

  /// What a started sign-in keeps until its callback.
  struct PendingSignIn: Codable {
    var browser: String
    var verifier: String
    var nonce: String
  }

  /// What a finished sign-in keeps until the page takes its session.
  struct FinishedSignIn: Codable {
    var user: String
    var isNew: Bool
  }

  func start() async throws -> RouteRegistrar.Redirect {
    let provider = try configuredProvider()
    let settings = provider.settings
    let metadata = try await provider.discovery()
    let state = Secrets.token()
    let browser = Secrets.token()
    let pending = PendingSignIn(browser: SecretHash.sha256(browser), verifier: Secrets.token(), nonce: Secrets.token())
    let now = environment.now()
    try await store.putSingleUseRecord(
      key: Self.stateKey(state), value: String(decoding: try JSONEncoder().encode(pending), as: UTF8.self),
      expiresAt: now + settings.signInLifetime, now: now)
    let challenge = Base64URL.encode(Array(SHA256.hash(data: Data(pending.verifier.utf8))))
    guard var url = URLComponents(string: metadata.authorizationEndpoint) else {
      throw OpenIDProviderClient.providerError("The provider's authorization endpoint is not a URL.")
    }
    url.queryItems =
      (url.queryItems ?? []) + [
        URLQueryItem(name: "response_type", value: "code"), URLQueryItem(name: "client_id", value: settings.clientID),
        URLQueryItem(name: "redirect_uri", value: settings.redirectURL),
        URLQueryItem(name: "scope", value: "openid email profile"), URLQueryItem(name: "state", value: state),
        URLQueryItem(name: "nonce", value: pending.nonce), URLQueryItem(name: "code_challenge", value: challenge),
        URLQueryItem(name: "code_challenge_method", value: "S256"),
      ]
    guard let location = url.string else {
      throw OpenIDProviderClient.providerError("The provider's authorization endpoint is not a URL.")
    }
    return RouteRegistrar.Redirect(
      location: location, status: .found,
      setCookie: cookie(browser, maxAge: Int(settings.signInLifetime / 1000)))
  }

  func callback(_ query: SingleSignOnCallback, cookie header: String?) async throws -> RouteRegistrar.Redirect {
    let provider = try configuredProvider()
    let settings = provider.settings
    let stateInvalid = APIError(
      status: 400, code: .ssoStateInvalid,
      message: "This sign-in is unknown, was used already, took too long or was started in another browser; "
        + "start again.")
    guard let state = query.state,
      let record = try await store.takeSingleUseRecord(key: Self.stateKey(state), now: environment.now()),
      let pending = try? JSONDecoder().decode(PendingSignIn.self, from: Data(record.utf8))
    else { throw stateInvalid }
    guard let browser = Self.cookieValue(Self.cookieName, in: header),
      SecretHash.constantTimeEqual(SecretHash.sha256(browser), pending.browser)
    else { throw stateInvalid }
    if let error = query.error {
      throw OpenIDProviderClient.providerError(
        "The provider refused the sign-in (\(error)\(query.errorDescription.map { ": \($0)" } ?? "")).")
    }
    guard let code = query.code else { throw APIError.invalidRequest("The provider sent no 'code'.") }
    let idToken = try await provider.idToken(code: code, verifier: pending.verifier)
    let claims: IDTokenClaims
    do {
      let token = try SignedIDToken(parsing: idToken)
      try await provider.verifySignature(of: token)
      try token.verifyClaims(
        issuer: settings.issuer, clientID: settings.clientID, nonce: pending.nonce, now: environment.now(),
        leeway: settings.clockLeeway)
      claims = token.claims
    } catch let error as IDTokenError {
      throw APIError(status: 401, code: .ssoTokenInvalid, message: error.description)
    }
    let (user, isNew) = try await account(
      for: OpenIDSubject(issuer: claims.iss, subject: claims.sub), claims: claims, settings: settings)
    let handoff = Secrets.token()
    let now = environment.now()
    try await store.putSingleUseRecord(
      key: Self.handoffKey(handoff),
      value: String(
        decoding: try JSONEncoder().encode(FinishedSignIn(user: user.rawValue, isNew: isNew)), as: UTF8.self),
      expiresAt: now + Self.handoffLifetime, now: now)
    return RouteRegistrar.Redirect(location: "/#sso=\(handoff)", status: .seeOther, setCookie: cookie("", maxAge: 0))
  }

  /// The account of `subject`: linked already; else the email account of a verified email when the operator allows
  /// it (then linked); else a new one, unless registration is closed. Whether it is new.
  func account(
    for subject: OpenIDSubject, claims: IDTokenClaims, settings: OpenIDSettings
  ) async throws -> (UserID, Bool) {
    if let user = try await store.user(linkedTo: subject) {
      guard try await !store.isDisabled(user) else { throw APIError.accountDisabled }
      return (user, false)
    }
    if settings.linkVerifiedEmail, claims.emailVerified, let email = claims.email.flatMap(Self.normalizedEmail),
      let existing = try await store.account(for: .email(email))
    {
      guard try await !store.isDisabled(existing.account.id) else { throw APIError.accountDisabled }
      if try await store.link(subject, to: existing.account.id, now: environment.now()) {
        return (existing.account.id, false)
      }
    }
    if let user = try await store.user(linkedTo: subject) { return (user, false) }  // linked meanwhile
    try environment.checkRegistrationOpen()
    if let account = try await store.createAccount(
      id: UserID(Secrets.userID()), linkedTo: subject, now: environment.now())
    {
      return (account.id, true)
    }
    // Another callback created it between the check and the insert.
    guard let user = try await store.user(linkedTo: subject) else {
      throw APIError(status: 500, code: .internal, message: "The account could not be created; try again.")
    }
    return (user, false)
  }

  func session(_ body: SingleSignOnCode) async throws -> AuthSession {
    guard let record = try await store.takeSingleUseRecord(key: Self.handoffKey(body.code), now: environment.now()),
      let finished = try? JSONDecoder().decode(FinishedSignIn.self, from: Data(record.utf8))
    else {
      throw APIError(
        status: 400, code: .ssoStateInvalid, message: "This sign-in code is unknown, used or expired; sign in again.")
    }
    let user = UserID(finished.user)
    guard try await !store.isDisabled(user) else { throw APIError.accountDisabled }
    return try await environment.issueSession(for: user, isNew: finished.isNew)
  }

  private func configuredProvider() throws(APIError) -> OpenIDProviderClient {
    guard let provider else {
      throw APIError(status: 404, code: .ssoNotConfigured, message: "This server offers no single sign-on.")
    }
    return provider
  }

  /// The binding cookie: HttpOnly, sent only to the single sign-on routes, and on the provider's top-level
  /// redirect back (`SameSite=Lax`); `Secure` when the server is reached over https.
  private func cookie(_ value: String, maxAge: Int) -> String {
    let secure = environment.signIn.openID?.redirectURL.lowercased().hasPrefix("https:") == true ? "; Secure" : ""
    return "\(Self.cookieName)=\(value); Path=/v1/auth/oidc; Max-Age=\(maxAge); HttpOnly; SameSite=Lax\(secure)"
  }

  static func stateKey(_ state: String) -> String { "oidc.state:" + SecretHash.sha256(state) }
  static func handoffKey(_ code: String) -> String { "oidc.session:" + SecretHash.sha256(code) }

  /// The value of cookie `name` in a `Cookie` header.
  static func cookieValue(_ name: String, in header: String?) -> String? {
    guard let header else { return nil }
    for pair in header.split(separator: ";") {
      let parts = pair.split(separator: "=", maxSplits: 1)
      if parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == name {
        return parts[1].trimmingCharacters(in: .whitespaces)
      }
    }
    return nil
  }

  /// An email as accounts store it (validated, lowercased), or nil.
  static func normalizedEmail(_ email: String) -> String? {
    try? EmailAddress.validate(email).lowercased()
  }
}
