import DomainKit
import HTTPTypes
import Hummingbird
import HummingbirdAuth
import MeridianAPI
import MeridianSecrets
import MeridianStore

/// Who a request was authenticated as: the identity an authenticator middleware puts into
/// ``MeridianRequestContext/identity`` and the route registrar hands to the handler.
public enum Caller: Sendable, Equatable {
  /// A user, by one of their bearer tokens (with the token's hash, for logout) or by HTTP Basic (no hash).
  case user(UserID, tokenHash: String?)
  /// The operator, by the admin token (`MERIDIAN_ADMIN_TOKEN`).
  case admin

  /// The signed-in user, if the caller is one.
  public var user: UserID? {
    if case .user(let user, _) = self { return user }
    return nil
  }

  /// The hash of the bearer token the caller used, if any.
  public var tokenHash: String? {
    if case .user(_, let hash) = self { return hash }
    return nil
  }
}

/// The token of an `Authorization: Bearer …` field (the scheme in any case, the token trimmed), if there is one.
func bearerToken(_ headers: HTTPFields) -> String? {
  guard let header = headers[.authorization], header.prefix(7).lowercased() == "bearer " else { return nil }
  let token = String(header.dropFirst(7)).trimmedOfWhitespace
  return token.isEmpty ? nil : token
}

/// Authenticates a user's bearer token, looked up by its hash in the store: an unrevoked, unexpired token of an
/// account that is neither deleted nor disabled (the store's lookup refuses those). A request without a valid token
/// goes on unauthenticated; the registrar refuses it on routes that need a caller (401 `token_invalid`).
struct UserTokenAuthenticator: AuthenticatorMiddleware {
  typealias Context = MeridianRequestContext

  let store: any AccountStore
  /// The time in milliseconds, for the token's expiry.
  let clock: @Sendable () -> Int64

  func authenticate(request: Request, context: Context) async throws -> Caller? {
    guard let token = bearerToken(request.headers) else { return nil }
    let hash = SecretHash.sha256(token)
    guard let user = try await store.user(forTokenHash: hash, now: clock()) else { return nil }
    return .user(user, tokenHash: hash)
  }
}

/// Authenticates the admin token, compared in constant time (hashing both sides first makes the comparison's length,
/// too, independent of the secret). Users' tokens are not the admin's; without an admin token configured (nil)
/// nobody is.
struct AdminTokenAuthenticator: AuthenticatorMiddleware {
  typealias Context = MeridianRequestContext

  /// `MERIDIAN_ADMIN_TOKEN`; nil refuses every token.
  let adminToken: String?

  func authenticate(request: Request, context: Context) async throws -> Caller? {
    guard let token = bearerToken(request.headers), Self.isAdminToken(token, adminToken) else { return nil }
    return .admin
  }

  /// Whether `token` is the admin token (nil refuses every token), in constant time.
  static func isAdminToken(_ token: String, _ adminToken: String?) -> Bool {
    guard let adminToken else { return false }
    return SecretHash.constantTimeEqual(SecretHash.sha256(token), SecretHash.sha256(adminToken))
  }
}

/// Refuses a request that no authenticator of its group recognised: 401 `token_invalid`, the answer every route
/// with credentials gives (the `IsAuthenticatedMiddleware` of hummingbird-auth, with Meridian's error envelope).
struct RequireCallerMiddleware: RouterMiddleware {
  typealias Context = MeridianRequestContext

  func handle(
    _ request: Request, context: Context, next: (Request, Context) async throws -> Response
  ) async throws -> Response {
    guard context.identity != nil else { throw APIError.tokenInvalid }
    return try await next(request, context)
  }
}

/// Adds the HTTP Basic challenge (`WWW-Authenticate: Basic realm="meridian"`) to every 401 of its group, so that a
/// client that speaks Basic (the OwnTracks apps) asks its user again.
struct BasicChallengeMiddleware: RouterMiddleware {
  typealias Context = MeridianRequestContext

  func handle(
    _ request: Request, context: Context, next: (Request, Context) async throws -> Response
  ) async throws -> Response {
    do {
      return try await next(request, context)
    } catch let error as APIError where error.status == 401 {
      var response = error.response()
      response.headers[.wwwAuthenticate] = "Basic realm=\"meridian\", charset=\"UTF-8\""
      return response
    }
  }
}
