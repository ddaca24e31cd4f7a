import DomainKit
import Foundation
import NetworkingKit

extension API {
  // MARK: Single sign-on (OpenID Connect)

  /// `GET /v1/auth/methods`: how people sign in here — whether with a password, whether new accounts are made, and
  /// the OpenID provider, if one is configured (what the page offers).
  public static let signInMethods = Endpoint<Void, NoBody, SignInMethods>(
    .get, "/v1/auth/methods", authentication: .none)
  /// `GET /v1/auth/oidc/start` → 302 to the provider's authorization endpoint (authorization code with PKCE S256,
  /// `state` and `nonce`), setting the cookie that binds the sign-in to this browser. `404 sso_not_configured`
  /// without a provider, `503 sso_provider_unavailable` when its discovery document can't be read in time.
  public static let singleSignOnStart = Endpoint<Void, NoBody, NoContent>(
    .get, "/v1/auth/oidc/start", body: .none, response: .empty, authentication: .none)
  /// `GET /v1/auth/oidc/callback?code=&state=` (the redirect URL registered at the provider) → 303 to
  /// `/#sso=<code>`: a one-time code (60 s) the page exchanges for a session (``singleSignOnSession``). Refusals are
  /// error envelopes: `400 sso_state_invalid` (no such sign-in, used, expired, or another browser's), `401
  /// sso_token_invalid` (the ID token's signature, issuer, audience, times or nonce), `403 registration_closed`,
  /// `403 account_disabled`, `502 sso_provider_error` (the provider refused the code or answered nonsense), `503
  /// sso_provider_unavailable` (it did not answer within the deadline).
  public static let singleSignOnCallback = Endpoint<SingleSignOnCallback, NoBody, NoContent>(
    .get, "/v1/auth/oidc/callback", query: { $0.queryItems }, body: .none, response: .empty,
    authentication: .none)
  /// `POST /v1/auth/oidc/session` → the session of a finished single sign-on, for its one-time code (once);
  /// `400 sso_state_invalid` for a code used, expired or unknown.
  public static let singleSignOnSession = Endpoint<Void, SingleSignOnCode, AuthSession>(
    .post, "/v1/auth/oidc/session", authentication: .none)

  /// The single sign-on endpoints, for ``all``.
  static let singleSignOnEndpoints: [EndpointDescriptor] = [
    signInMethods.descriptor, singleSignOnStart.descriptor, singleSignOnCallback.descriptor,
    singleSignOnSession.descriptor,
  ]
}

/// How people sign in on this server (`GET /v1/auth/methods`).
public struct SignInMethods: Sendable, Hashable, Codable {
  /// Whether email and password sign-in and registration are offered (`MERIDIAN_PASSWORD_SIGN_IN`).
  public var password: Bool
  /// Whether new accounts are made (`MERIDIAN_REGISTRATION`), by any way of signing in.
  public var registration: Bool
  /// The OpenID provider offered, if any.
  public var singleSignOn: SingleSignOnProvider?

  /// Methods.
  public init(password: Bool, registration: Bool, singleSignOn: SingleSignOnProvider?) {
    self.password = password
    self.registration = registration
    self.singleSignOn = singleSignOn
  }
}

/// The OpenID provider a server offers.
public struct SingleSignOnProvider: Sendable, Hashable, Codable {
  /// Its name for the button ("Sign in with <name>").
  public var name: String
  /// Where a browser starts signing in (``API/singleSignOnStart``).
  public var startPath: String

  /// A provider.
  public init(name: String, startPath: String) {
    self.name = name
    self.startPath = startPath
  }
}

/// What the provider sends the browser back with: `code` and `state`, or `error` (and `error_description`).
public struct SingleSignOnCallback: RouteParameters, Hashable {
  /// The authorization code.
  public var code: String?
  /// The `state` the server sent.
  public var state: String?
  /// The provider's error code (`access_denied`, …).
  public var error: String?
  /// The provider's words for it.
  public var errorDescription: String?

  /// A callback.
  public init(code: String?, state: String?, error: String? = nil, errorDescription: String? = nil) {
    self.code = code
    self.state = state
    self.error = error
    self.errorDescription = errorDescription
  }

  /// Reads `code`, `state`, `error` and `error_description` (each at most 2,048 characters).
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    func value(_ name: String) throws(APIError) -> String? {
      guard let text = query.string(name), !text.isEmpty else { return nil }
      guard text.count <= 2_048, !Identifier.hasControlCharacters(text) else {
        throw .invalidRequest("'\(name)' must be at most 2048 characters without control characters.")
      }
      return text
    }
    code = try value("code")
    state = try value("state")
    error = try value("error")
    errorDescription = try value("error_description")
  }

  var queryItems: [QueryItem] {
    [
      QueryItem("code", code), QueryItem("state", state), QueryItem("error", error),
      QueryItem("error_description", errorDescription),
    ]
  }
}

/// The one-time code of a finished single sign-on (`/#sso=<code>`).
public struct SingleSignOnCode: Sendable, Hashable, Codable {
  /// The code.
  public var code: String
  /// A code.
  public init(code: String) { self.code = code }
}
