import Crypto
import Foundation
import _CryptoExtras

/// The public half of a signing key in an OpenID provider's key set (JWK, RFC 7517): RSA (`n`, `e`) or P-256
/// (`x`, `y`).
struct JSONWebKey: Sendable, Hashable, Decodable {
  /// `RSA` or `EC`.
  var kty: String
  /// The key id ID tokens name it by.
  var kid: String?
  /// `sig` for a signing key (absent: any use).
  var use: String?
  /// The one algorithm the key is for, when the provider says.
  var alg: String?
  /// RSA modulus and exponent, base64url.
  var n: String?
  var e: String?
  /// EC curve and coordinates, base64url.
  var crv: String?
  var x: String?
  var y: String?

  /// Whether the key may check a signature made with `algorithm`.
  func fits(_ algorithm: IDTokenAlgorithm) -> Bool {
    guard use == nil || use == "sig", alg == nil || alg == algorithm.rawValue else { return false }
    switch algorithm {
    case .rs256: return kty == "RSA"
    case .es256: return kty == "EC" && crv == "P-256"
    }
  }
}

/// A provider's key set (its `jwks_uri`).
struct JSONWebKeySet: Sendable, Hashable, Decodable {
  var keys: [JSONWebKey]
}

/// The ID token signatures accepted: RSASSA-PKCS1-v1_5 and ECDSA P-256, with SHA-256 (never `none`, never HMAC).
enum IDTokenAlgorithm: String, Sendable {
  case rs256 = "RS256"
  case es256 = "ES256"
}

/// Why an ID token was refused (its description is the sentence the error envelope carries).
enum IDTokenError: Error, Sendable, Hashable, CustomStringConvertible {
  case malformed(String)
  case unsupportedAlgorithm(String)
  case unknownKey(String?)
  case badSignature
  case wrongIssuer(String)
  case wrongAudience
  case expired
  case issuedInTheFuture
  case wrongNonce

  var description: String {
    switch self {
    case .malformed(let what): "The provider's ID token is malformed (\(what))."
    case .unsupportedAlgorithm(let alg): "The provider's ID token is signed with \(alg); RS256 or ES256 are accepted."
    case .unknownKey(let kid):
      "The provider's ID token is signed with a key it does not publish (kid \(kid ?? "none"))."
    case .badSignature: "The provider's ID token has a wrong signature."
    case .wrongIssuer(let issuer): "The ID token was issued by \(issuer), not by the configured provider."
    case .wrongAudience: "The ID token was issued to another client."
    case .expired: "The ID token has expired."
    case .issuedInTheFuture: "The ID token was issued in the future (check the clocks)."
    case .wrongNonce: "The ID token does not belong to this sign-in (nonce)."
    }
  }
}

/// The claims of an ID token the server reads.
struct IDTokenClaims: Sendable, Hashable, Decodable {
  var iss: String
  var sub: String
  /// `aud`: one string or an array.
  var aud: [String]
  /// Seconds since 1970.
  var exp: Double
  var iat: Double
  var nonce: String?
  /// The authorized party, when the token has several audiences.
  var azp: String?
  var email: String?
  /// `email_verified`: true or false (some providers send `"true"`).
  var emailVerified: Bool

  enum CodingKeys: String, CodingKey {
    case iss, sub, aud, exp, iat, nonce, azp, email
    case emailVerified = "email_verified"
  }

  init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    iss = try container.decode(String.self, forKey: .iss)
    sub = try container.decode(String.self, forKey: .sub)
    if let one = try? container.decode(String.self, forKey: .aud) {
      aud = [one]
    } else {
      aud = try container.decode([String].self, forKey: .aud)
    }
    exp = try container.decode(Double.self, forKey: .exp)
    iat = try container.decode(Double.self, forKey: .iat)
    nonce = try container.decodeIfPresent(String.self, forKey: .nonce)
    azp = try container.decodeIfPresent(String.self, forKey: .azp)
    email = try container.decodeIfPresent(String.self, forKey: .email)
    if let flag = try? container.decodeIfPresent(Bool.self, forKey: .emailVerified) {
      emailVerified = flag
    } else {
      emailVerified = (try? container.decodeIfPresent(String.self, forKey: .emailVerified)) == "true"
    }
  }
}

/// An ID token (a JWS in compact form) taken apart: its algorithm and key id, its claims, and what was signed.
struct SignedIDToken: Sendable {
  var algorithm: IDTokenAlgorithm
  var keyID: String?
  var claims: IDTokenClaims
  /// `header.payload`, as sent.
  var signingInput: Data
  var signature: Data

  private struct Header: Decodable {
    var alg: String
    var kid: String?
  }

  /// Parses `token`; its signature and claims are not checked yet.
  init(parsing token: String) throws(IDTokenError) {
    let parts = token.split(separator: ".", omittingEmptySubsequences: false)
    guard parts.count == 3 else { throw .malformed("not three parts") }
    guard let headerBytes = Self.base64URL(parts[0]), let payload = Self.base64URL(parts[1]),
      let signature = Self.base64URL(parts[2])
    else { throw .malformed("not base64url") }
    guard let header = try? JSONDecoder().decode(Header.self, from: headerBytes) else {
      throw .malformed("header")
    }
    guard let algorithm = IDTokenAlgorithm(rawValue: header.alg) else { throw .unsupportedAlgorithm(header.alg) }
    do {
      claims = try JSONDecoder().decode(IDTokenClaims.self, from: payload)
    } catch {
      throw .malformed("claims: \(error)")
    }
    self.algorithm = algorithm
    keyID = header.kid
    signingInput = Data("\(parts[0]).\(parts[1])".utf8)
    self.signature = signature
  }

  /// The keys of `set` that may have signed this token: the one named by its key id, or (without one) every key
  /// of its algorithm.
  func candidateKeys(in set: [JSONWebKey]) -> [JSONWebKey] {
    set.filter { $0.fits(algorithm) && (keyID == nil || $0.kid == keyID) }
  }

  /// Throws unless one of `keys` signed this token.
  func verifySignature(with keys: [JSONWebKey]) throws(IDTokenError) {
    guard !keys.isEmpty else { throw .unknownKey(keyID) }
    for key in keys where isSigned(by: key) { return }
    throw .badSignature
  }

  private func isSigned(by key: JSONWebKey) -> Bool {
    let digest = SHA256.hash(data: signingInput)
    switch algorithm {
    case .rs256:
      guard let n = key.n.flatMap(Self.base64URL), let e = key.e.flatMap(Self.base64URL),
        let publicKey = try? _RSA.Signing.PublicKey(n: n, e: e)
      else { return false }
      return publicKey.isValidSignature(
        _RSA.Signing.RSASignature(rawRepresentation: signature), for: digest, padding: .insecurePKCS1v1_5)
    case .es256:
      guard let x = key.x.flatMap(Self.base64URL), let y = key.y.flatMap(Self.base64URL), x.count == 32, y.count == 32,
        let publicKey = try? P256.Signing.PublicKey(x963Representation: [0x04] + x + y),
        let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature)
      else { return false }
      return publicKey.isValidSignature(ecdsa, for: digest)
    }
  }

  /// Throws unless the claims are for this sign-in: issued by `issuer` to `clientID` (its only audience, or the
  /// authorized party), not expired and not issued in the future at `now` (UTC ms, give or take `leeway` ms), with
  /// the sign-in's `nonce`.
  func verifyClaims(issuer: String, clientID: String, nonce: String, now: Int64, leeway: Int64) throws(IDTokenError) {
    guard claims.iss == issuer else { throw .wrongIssuer(claims.iss) }
    guard claims.aud.contains(clientID), claims.aud.count == 1 || claims.azp == clientID else { throw .wrongAudience }
    guard claims.azp == nil || claims.azp == clientID else { throw .wrongAudience }
    // Compared as Double: a provider's absurd time (1e300) is just far off, never an overflow.
    guard claims.exp * 1000 + Double(leeway) > Double(now) else { throw .expired }
    guard claims.iat * 1000 - Double(leeway) <= Double(now) else { throw .issuedInTheFuture }
    guard let tokenNonce = claims.nonce, tokenNonce.utf8.elementsEqual(nonce.utf8) else { throw .wrongNonce }
  }

  /// Base64url without padding, decoded; nil when it is not.
  static func base64URL(_ text: some StringProtocol) -> Data? {
    var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    guard !standard.contains("=") else { return nil }
    standard += String(repeating: "=", count: (4 - standard.count % 4) % 4)
    return Data(base64Encoded: standard)
  }
}
