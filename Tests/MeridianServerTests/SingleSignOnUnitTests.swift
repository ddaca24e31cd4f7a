import Crypto
import Foundation
import MeridianSecrets
import Testing

@testable import MeridianServer

/// The sign-in settings as the environment gives them, and the ID token checks that need no provider: only RS256
/// and ES256 (never `none` or HMAC, whatever the header says), the key named by `kid`, a signature over exactly what
/// was sent, one audience or the authorized party.
@Suite struct SingleSignOnUnitTests {
  static let provider = [
    "MERIDIAN_OIDC_ISSUER": "https://id.example", "MERIDIAN_OIDC_CLIENT_ID": "meridian",
    "MERIDIAN_OIDC_REDIRECT_URL": "https://where.example/v1/auth/oidc/callback",
  ]

  @Test func settingsAreReadFromTheEnvironment() throws {
    let defaults = try ServerConfiguration.resolve(environment: [:])
    #expect(defaults.signIn.passwordSignIn && defaults.signIn.registrationOpen && defaults.signIn.openID == nil)
    var environment = Self.provider
    environment["MERIDIAN_PASSWORD_SIGN_IN"] = "off"
    environment["MERIDIAN_REGISTRATION"] = "closed"
    environment["MERIDIAN_OIDC_LINK_VERIFIED_EMAIL"] = "on"
    environment["MERIDIAN_OIDC_TIMEOUT_MS"] = "2500"
    let configured = try ServerConfiguration.resolve(environment: environment).signIn
    #expect(!configured.passwordSignIn && !configured.registrationOpen)
    let openID = try #require(configured.openID)
    #expect(openID.issuer == "https://id.example" && openID.clientID == "meridian" && openID.clientSecret == nil)
    #expect(openID.name == "id.example" && openID.linkVerifiedEmail && openID.timeout == 2_500)
  }

  @Test func badSettingsNameTheVariable() {
    func refused(_ change: [String: String]) -> String? {
      do {
        _ = try ServerConfiguration.resolve(environment: Self.provider.merging(change) { $1 })
        return nil
      } catch {
        return error.setting
      }
    }
    #expect(refused(["MERIDIAN_OIDC_ISSUER": "http://id.example"]) == "MERIDIAN_OIDC_ISSUER")
    #expect(refused(["MERIDIAN_OIDC_CLIENT_ID": ""]) == "MERIDIAN_OIDC_CLIENT_ID")
    #expect(refused(["MERIDIAN_OIDC_REDIRECT_URL": "https://where.example/callback"]) == "MERIDIAN_OIDC_REDIRECT_URL")
    #expect(
      refused(["MERIDIAN_OIDC_REDIRECT_URL": "ftp://where.example/v1/auth/oidc/callback"])
        == "MERIDIAN_OIDC_REDIRECT_URL")
    #expect(refused(["MERIDIAN_OIDC_REDIRECT_URL": "http:///v1/auth/oidc/callback"]) == "MERIDIAN_OIDC_REDIRECT_URL")
    #expect(refused(["MERIDIAN_OIDC_TIMEOUT_MS": "0"]) == "MERIDIAN_OIDC_TIMEOUT_MS")
    #expect(refused(["MERIDIAN_PASSWORD_SIGN_IN": "no"]) == "MERIDIAN_PASSWORD_SIGN_IN")
    #expect(refused(["MERIDIAN_REGISTRATION": "invite"]) == "MERIDIAN_REGISTRATION")
    #expect(refused(["MERIDIAN_OIDC_ISSUER": "http://127.0.0.1:9000"]) == nil)
  }

  static func part(_ json: String) -> String { Base64URL.encode(Array(json.utf8)) }

  static let claims =
    #"{"iss": "https://id.example", "sub": "1", "aud": "meridian", "exp": 2000000000, "iat": 1700000000, "#
    + #""nonce": "n", "email_verified": "true"}"#

  static func signed(_ header: String, _ claims: String, with key: P256.Signing.PrivateKey) throws -> String {
    let input = part(header) + "." + part(claims)
    let signature = try key.signature(for: Data(input.utf8)).rawRepresentation
    return input + "." + Base64URL.encode(Array(signature))
  }

  static func jwk(_ key: P256.Signing.PrivateKey, kid: String) -> JSONWebKey {
    let point = key.publicKey.x963Representation
    return JSONWebKey(
      kty: "EC", kid: kid, use: "sig", alg: "ES256", crv: "P-256", x: Base64URL.encode(Array(point[1..<33])),
      y: Base64URL.encode(Array(point[33...])))
  }

  @Test func onlyRS256AndES256ByANamedPublishedKeyOverTheSentBytesAreAccepted() throws {
    let key = P256.Signing.PrivateKey()
    let published = [Self.jwk(key, kid: "k1")]
    let token = try SignedIDToken(parsing: try Self.signed(#"{"alg": "ES256", "kid": "k1"}"#, Self.claims, with: key))
    try token.verifySignature(with: token.candidateKeys(in: published))
    #expect(token.claims.emailVerified && token.claims.aud == ["meridian"])
    try token.verifyClaims(
      issuer: "https://id.example", clientID: "meridian", nonce: "n", now: 1_800_000_000_000, leeway: 0)

    for alg in ["none", "HS256", "RS512"] {
      #expect(throws: IDTokenError.unsupportedAlgorithm(alg)) {
        try SignedIDToken(parsing: try Self.signed(#"{"alg": "\#(alg)", "kid": "k1"}"#, Self.claims, with: key))
      }
    }
    // Another key id: no candidate, so the key set would be fetched again; still none is unknownKey.
    let other = try SignedIDToken(parsing: try Self.signed(#"{"alg": "ES256", "kid": "k2"}"#, Self.claims, with: key))
    #expect(other.candidateKeys(in: published).isEmpty)
    #expect(throws: IDTokenError.unknownKey("k2")) {
      try other.verifySignature(with: other.candidateKeys(in: published))
    }
    // The claims changed after signing.
    let sent = try Self.signed(#"{"alg": "ES256", "kid": "k1"}"#, Self.claims, with: key).split(separator: ".")
    let changed = try SignedIDToken(
      parsing:
        "\(sent[0]).\(Self.part(Self.claims.replacingOccurrences(of: #""sub": "1""#, with: #""sub": "2""#))).\(sent[2])"
    )
    #expect(throws: IDTokenError.badSignature) {
      try changed.verifySignature(with: changed.candidateKeys(in: published))
    }
    // An RSA key is no candidate for an ES256 token.
    #expect(token.candidateKeys(in: [JSONWebKey(kty: "RSA", kid: "k1", n: "AQAB", e: "AQAB")]).isEmpty)
  }

  @Test func theClaimsMustBeForThisClientIssuerTimeAndSignIn() throws {
    let key = P256.Signing.PrivateKey()
    func check(_ claims: String, nonce: String = "n", now: Int64 = 1_800_000_000_000) throws {
      let token = try SignedIDToken(parsing: try Self.signed(#"{"alg": "ES256"}"#, claims, with: key))
      try token.verifyClaims(issuer: "https://id.example", clientID: "meridian", nonce: nonce, now: now, leeway: 60_000)
    }
    try check(Self.claims)
    #expect(throws: IDTokenError.wrongNonce) { try check(Self.claims, nonce: "m") }
    #expect(throws: IDTokenError.wrongIssuer("https://evil.example")) {
      try check(Self.claims.replacingOccurrences(of: "https://id.example", with: "https://evil.example"))
    }
    #expect(throws: IDTokenError.wrongAudience) {
      try check(Self.claims.replacingOccurrences(of: #""aud": "meridian""#, with: #""aud": ["meridian", "other"]"#))
    }
    try check(
      Self.claims.replacingOccurrences(
        of: #""aud": "meridian""#, with: #""aud": ["meridian", "other"], "azp": "meridian""#))
    // exp 2,000,000,000 s: within the minute's leeway still, not after it.
    try check(Self.claims, now: 2_000_000_059_000)
    #expect(throws: IDTokenError.expired) { try check(Self.claims, now: 2_000_000_060_000) }
    #expect(throws: IDTokenError.issuedInTheFuture) { try check(Self.claims, now: 1_699_999_900_000) }
    // Absurd times are far off, not a crash.
    try check(Self.claims.replacingOccurrences(of: "2000000000", with: "1e300"))
    #expect(throws: IDTokenError.issuedInTheFuture) {
      try check(Self.claims.replacingOccurrences(of: "1700000000", with: "1e300"))
    }
    #expect(throws: IDTokenError.wrongNonce) {
      try check(Self.claims.replacingOccurrences(of: #""nonce": "n", "#, with: ""))
    }
  }
}
