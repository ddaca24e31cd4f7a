import AsyncHTTPClient
import Foundation
import MeridianAPI
import NIOCore
import NIOHTTP1

/// This server's client of the OpenID provider: its discovery document (checked to name the configured issuer) and
/// its keys, each fetched when first needed and kept; the keys again for a token signed with a key id they lack (the
/// provider rotated its keys), at most once per ``OpenIDSettings/keyRefetchInterval``; and the code exchange. Every
/// call has the deadline ``OpenIDSettings/timeout``: a provider that does not answer in time, or can't be reached,
/// is 503 `sso_provider_unavailable`; one that answers nonsense, 502 `sso_provider_error`.
actor OpenIDProviderClient {
  /// The parts of the discovery document the code flow uses.
  struct Metadata: Sendable, Decodable {
    var issuer: String
    var authorizationEndpoint: String
    var tokenEndpoint: String
    var jwksURI: String

    enum CodingKeys: String, CodingKey {
      case issuer
      case authorizationEndpoint = "authorization_endpoint"
      case tokenEndpoint = "token_endpoint"
      case jwksURI = "jwks_uri"
    }
  }

  let settings: OpenIDSettings
  private let http: HTTPClient
  private let now: @Sendable () -> Int64
  private var metadata: Metadata?
  private var keys: [JSONWebKey] = []
  private var keysFetchedAt: Int64?
  /// How long a fetched discovery document is kept, ms.
  static let metadataLifetime: Int64 = 60 * 60 * 1000
  private var metadataFetchedAt: Int64 = 0
  /// The largest answer read from the provider.
  static let maximumAnswerBytes = 1 << 20

  init(settings: OpenIDSettings, http: HTTPClient = .shared, now: @escaping @Sendable () -> Int64) {
    self.settings = settings
    self.http = http
    self.now = now
  }

  /// The discovery document, fetched when none is kept or the kept one is older than an hour.
  func discovery() async throws(APIError) -> Metadata {
    if let metadata, now() - metadataFetchedAt < Self.metadataLifetime { return metadata }
    let base = settings.issuer.hasSuffix("/") ? String(settings.issuer.dropLast()) : settings.issuer
    let document: Metadata = try await getJSON(base + "/.well-known/openid-configuration", what: "discovery document")
    guard document.issuer == settings.issuer else {
      throw Self.providerError(
        "The provider's discovery document names the issuer \(document.issuer), not \(settings.issuer).")
    }
    for url in [document.authorizationEndpoint, document.tokenEndpoint, document.jwksURI]
    where !OpenIDSettings.isAllowed(URLComponents(string: url)) {
      throw Self.providerError("The provider's discovery document has an endpoint that is not https: \(url).")
    }
    metadata = document
    metadataFetchedAt = now()
    return document
  }

  /// Throws unless `token` was signed by one of the provider's keys: the kept ones, or — for a key id they lack —
  /// the set fetched again, when the last fetch is older than ``OpenIDSettings/keyRefetchInterval``.
  func verifySignature(of token: SignedIDToken) async throws {
    var candidates = token.candidateKeys(in: keys)
    let mayRefetch = keysFetchedAt.map { now() - $0 >= settings.keyRefetchInterval } ?? true
    if candidates.isEmpty && mayRefetch {
      let set: JSONWebKeySet = try await getJSON(try await discovery().jwksURI, what: "key set")
      keys = set.keys
      keysFetchedAt = now()
      candidates = token.candidateKeys(in: keys)
    }
    try token.verifySignature(with: candidates)
  }

  /// Exchanges an authorization code (with its PKCE verifier) for the provider's ID token.
  func idToken(code: String, verifier: String) async throws(APIError) -> String {
    let metadata = try await discovery()
    var form = [
      ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", settings.redirectURL),
      ("code_verifier", verifier),
    ]
    var request = HTTPClientRequest(url: metadata.tokenEndpoint)
    request.method = .POST
    request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
    request.headers.add(name: "Accept", value: "application/json")
    if let secret = settings.clientSecret {
      // client_secret_basic: each part form-encoded, then base64 (RFC 6749 §2.3.1).
      let pair = Self.formEncoded(settings.clientID) + ":" + Self.formEncoded(secret)
      request.headers.add(name: "Authorization", value: "Basic " + Data(pair.utf8).base64EncodedString())
    } else {
      form.append(("client_id", settings.clientID))
    }
    let body = form.map { Self.formEncoded($0.0) + "=" + Self.formEncoded($0.1) }.joined(separator: "&")
    request.body = .bytes(ByteBuffer(string: body))
    let (status, data) = try await send(request)
    struct TokenAnswer: Decodable {
      var idToken: String?
      var error: String?
      var errorDescription: String?
      enum CodingKeys: String, CodingKey {
        case idToken = "id_token"
        case error
        case errorDescription = "error_description"
      }
    }
    let answer = try? JSONDecoder().decode(TokenAnswer.self, from: data)
    guard (200..<300).contains(status), let idToken = answer?.idToken else {
      let reason = [answer?.error, answer?.errorDescription].compactMap { $0 }.joined(separator: ": ")
      throw Self.providerError(
        "The provider refused the authorization code (HTTP \(status)\(reason.isEmpty ? "" : ", \(reason)")).")
    }
    return idToken
  }

  private func getJSON<Answer: Decodable>(_ url: String, what: String) async throws(APIError) -> Answer {
    var request = HTTPClientRequest(url: url)
    request.headers.add(name: "Accept", value: "application/json")
    let (status, data) = try await send(request)
    guard (200..<300).contains(status) else {
      throw Self.providerError("The provider's \(what) answered HTTP \(status).")
    }
    do {
      return try JSONDecoder().decode(Answer.self, from: data)
    } catch {
      throw Self.providerError("The provider's \(what) can't be read: \(error).")
    }
  }

  /// Sends `request` and reads its answer within the deadline.
  private func send(_ request: HTTPClientRequest) async throws(APIError) -> (status: UInt, body: Data) {
    let http = self.http
    let timeout = settings.timeout
    do {
      return try await withThrowingTaskGroup(of: (UInt, Data).self) { group in
        group.addTask {
          let response = try await http.execute(request, deadline: .now() + .milliseconds(timeout))
          let body = try await response.body.collect(upTo: Self.maximumAnswerBytes)
          return (response.status.code, Data(body.readableBytesView))
        }
        group.addTask {
          try await Task.sleep(for: .milliseconds(timeout))
          throw CancellationError()
        }
        defer { group.cancelAll() }
        guard let first = try await group.next() else { throw CancellationError() }
        return first
      }
    } catch {
      throw APIError(
        status: 503, code: .ssoProviderUnavailable,
        message: "The sign-in provider did not answer within \(timeout) ms; try again later.", retryAfterSeconds: 30)
    }
  }

  static func providerError(_ message: String) -> APIError {
    APIError(status: 502, code: .ssoProviderError, message: message)
  }

  /// `text` as `application/x-www-form-urlencoded` encodes it.
  static func formEncoded(_ text: String) -> String {
    text.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._*"))) ?? text
  }
}
