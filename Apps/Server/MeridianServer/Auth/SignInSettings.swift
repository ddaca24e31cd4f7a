import Foundation

/// Who may sign in and how: password sign-in, whether new accounts are made, and the OpenID provider.
///
/// | setting | default | variable |
/// |---|---|---|
/// | email and password sign-in and registration | on | `MERIDIAN_PASSWORD_SIGN_IN` (`on`, `off`) |
/// | new accounts, by any way of signing in | open | `MERIDIAN_REGISTRATION` (`open`, `closed`) |
/// | the OpenID provider | none | `MERIDIAN_OIDC_*` (``OpenIDSettings``) |
public struct SignInSettings: Sendable, Hashable {
  /// Whether email and password sign-in and registration are offered; off, both answer 403
  /// `password_sign_in_disabled` (phone codes and single sign-on stay).
  public var passwordSignIn = true
  /// Whether new accounts are made; closed, registering, a first phone code and a first single sign-on of an
  /// unknown subject answer 403 `registration_closed` (existing accounts sign in as before).
  public var registrationOpen = true
  /// The OpenID provider people may sign in with; nil offers none.
  public var openID: OpenIDSettings?

  /// The defaults.
  public init() {}

  /// Reads `MERIDIAN_PASSWORD_SIGN_IN`, `MERIDIAN_REGISTRATION` and `MERIDIAN_OIDC_*`.
  /// - Throws: ``ConfigurationError`` naming the bad setting.
  mutating func read(_ environment: [String: String]) throws(ConfigurationError) {
    func value(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
    func choice(_ name: String, _ on: String, _ off: String) throws(ConfigurationError) -> Bool? {
      guard let text = value(name) else { return nil }
      switch text.lowercased() {
      case on: return true
      case off: return false
      default: throw ConfigurationError(setting: name, value: text, reason: "must be \(on) or \(off)")
      }
    }
    if let on = try choice("MERIDIAN_PASSWORD_SIGN_IN", "on", "off") { passwordSignIn = on }
    if let open = try choice("MERIDIAN_REGISTRATION", "open", "closed") { registrationOpen = open }
    openID = try OpenIDSettings.read(environment)
  }
}

/// The OpenID provider (authorization code flow with PKCE) and this server's client at it.
///
/// | setting | variable |
/// |---|---|
/// | the issuer URL (its discovery document is `<issuer>/.well-known/openid-configuration`) | `MERIDIAN_OIDC_ISSUER` |
/// | the client id | `MERIDIAN_OIDC_CLIENT_ID` |
/// | the client secret (none for a public client) | `MERIDIAN_OIDC_CLIENT_SECRET` |
/// | the redirect URL registered at the provider: `https://<this server>/v1/auth/oidc/callback` | `MERIDIAN_OIDC_REDIRECT_URL` |
/// | the button's name (default: the issuer's host) | `MERIDIAN_OIDC_NAME` |
/// | link an existing account by a verified email (default off) | `MERIDIAN_OIDC_LINK_VERIFIED_EMAIL` (`on`, `off`) |
/// | the deadline of each call to the provider, ms (default 5000) | `MERIDIAN_OIDC_TIMEOUT_MS` |
public struct OpenIDSettings: Sendable, Hashable {
  /// The issuer URL, exactly as the provider's ID tokens name it.
  public var issuer: String
  /// This server's client id at the provider.
  public var clientID: String
  /// The client secret (`client_secret_basic`); nil for a public client (`none`, PKCE alone).
  public var clientSecret: String?
  /// The callback URL registered at the provider.
  public var redirectURL: String
  /// The provider's name on the sign-in button.
  public var name: String
  /// Whether a first sign-in whose ID token has a verified email (`email_verified: true`) is linked to the existing
  /// email account with that address.
  public var linkVerifiedEmail = false
  /// The deadline of each call to the provider (discovery, keys, token), ms.
  public var timeout: Int64 = 5_000
  /// The least time between two fetches of the provider's keys for an unknown key id, ms.
  public var keyRefetchInterval: Int64 = 60_000
  /// How long a started sign-in may take at the provider before its `state` expires, ms.
  public var signInLifetime: Int64 = 10 * 60 * 1000
  /// The leeway for the ID token's `exp` and `iat` against this server's clock, ms.
  public var clockLeeway: Int64 = 60_000

  /// A provider; `name` defaults to the issuer's host.
  public init(issuer: String, clientID: String, clientSecret: String?, redirectURL: String, name: String? = nil) {
    self.issuer = issuer
    self.clientID = clientID
    self.clientSecret = clientSecret
    self.redirectURL = redirectURL
    self.name = name ?? URLComponents(string: issuer)?.host ?? issuer
  }

  /// Whether `url` may be used for the provider: https, or http on a loopback host (a provider on this machine).
  static func isAllowed(_ url: URLComponents?) -> Bool {
    guard let url, let host = url.host, !host.isEmpty else { return false }
    switch url.scheme?.lowercased() {
    case "https": return true
    case "http": return ["127.0.0.1", "localhost", "::1", "[::1]"].contains(host.lowercased())
    default: return false
    }
  }

  /// The settings in `environment`, or nil when `MERIDIAN_OIDC_ISSUER` is not set.
  static func read(_ environment: [String: String]) throws(ConfigurationError) -> OpenIDSettings? {
    func value(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
    guard let issuer = value("MERIDIAN_OIDC_ISSUER") else { return nil }
    guard isAllowed(URLComponents(string: issuer)) else {
      throw ConfigurationError(
        setting: "MERIDIAN_OIDC_ISSUER", value: issuer, reason: "must be an https URL (http only on loopback)")
    }
    guard let clientID = value("MERIDIAN_OIDC_CLIENT_ID") else {
      throw ConfigurationError(
        setting: "MERIDIAN_OIDC_CLIENT_ID", value: nil, reason: "is required with MERIDIAN_OIDC_ISSUER")
    }
    guard let redirect = value("MERIDIAN_OIDC_REDIRECT_URL") else {
      throw ConfigurationError(
        setting: "MERIDIAN_OIDC_REDIRECT_URL", value: nil,
        reason: "is required with MERIDIAN_OIDC_ISSUER (https://<this server>/v1/auth/oidc/callback)")
    }
    // http is allowed here for a server behind no TLS at all (a test, a closed network); production uses https.
    let redirectURL = URLComponents(string: redirect)
    guard let scheme = redirectURL?.scheme?.lowercased(), ["http", "https"].contains(scheme),
      redirectURL?.host?.isEmpty == false, redirectURL?.path == "/v1/auth/oidc/callback"
    else {
      throw ConfigurationError(
        setting: "MERIDIAN_OIDC_REDIRECT_URL", value: redirect,
        reason: "must be this server's http(s) URL ending in /v1/auth/oidc/callback")
    }
    var settings = OpenIDSettings(
      issuer: issuer, clientID: clientID, clientSecret: value("MERIDIAN_OIDC_CLIENT_SECRET"), redirectURL: redirect,
      name: value("MERIDIAN_OIDC_NAME"))
    if let link = value("MERIDIAN_OIDC_LINK_VERIFIED_EMAIL") {
      switch link.lowercased() {
      case "on": settings.linkVerifiedEmail = true
      case "off": settings.linkVerifiedEmail = false
      default:
        throw ConfigurationError(setting: "MERIDIAN_OIDC_LINK_VERIFIED_EMAIL", value: link, reason: "must be on or off")
      }
    }
    if let text = value("MERIDIAN_OIDC_TIMEOUT_MS") {
      guard let timeout = Int64(text), (100...60_000).contains(timeout) else {
        throw ConfigurationError(setting: "MERIDIAN_OIDC_TIMEOUT_MS", value: text, reason: "must be 100…60000")
      }
      settings.timeout = timeout
    }
    return settings
  }
}
