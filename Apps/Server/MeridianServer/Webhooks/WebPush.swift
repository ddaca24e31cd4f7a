import Crypto
import Foundation
import MeridianAPI
import MeridianSecrets
import MeridianStore

/// Web Push for the ``AlertChannel/webpush`` channel: the server's VAPID key (RFC 8292), the `Authorization` header
/// it signs, and the payload encryption of RFC 8291 (`aes128gcm`, one RFC 8188 record).
enum WebPush {
  /// The name of the deployment secret whose 32 bytes are the VAPID private key (the same on every node, made once).
  static let secretName = "vapid-p256"

  /// The server's VAPID key: the deployment secret as a P-256 scalar.
  static func key(_ store: any MeridianStore) async throws -> P256.Signing.PrivateKey {
    try P256.Signing.PrivateKey(rawRepresentation: try await store.deploymentSecret(secretName))
  }

  /// The public key as the API shows it: the uncompressed point, base64url.
  static func publicKey(of key: P256.Signing.PrivateKey) -> String {
    Base64URL.encode(key.publicKey.x963Representation)
  }

  /// `vapid t=<JWT>, k=<public key>`: an ES256 JWT for the push service's origin (`aud`), valid 12 hours from `now`
  /// (UTC milliseconds), naming the operator (`sub`).
  static func authorization(
    endpoint: URLComponents, key: P256.Signing.PrivateKey, subject: String, now: Int64
  ) throws -> String {
    let origin = "\(endpoint.scheme ?? "https")://\(endpoint.host ?? "")" + (endpoint.port.map { ":\($0)" } ?? "")
    let header = Base64URL.encode(Data(#"{"typ":"JWT","alg":"ES256"}"#.utf8))
    let claims = try JSONSerialization.data(
      withJSONObject: ["aud": origin, "exp": now / 1000 + 12 * 3600, "sub": subject], options: [.sortedKeys])
    let signingInput = header + "." + Base64URL.encode(claims)
    let signature = try key.signature(for: Data(signingInput.utf8)).rawRepresentation
    return "vapid t=\(signingInput).\(Base64URL.encode(signature)), k=\(publicKey(of: key))"
  }

  /// A subscription's keys, checked: `p256dh` a P-256 point and `auth` 16 bytes, both base64url.
  struct Keys: Sendable {
    var p256dh: P256.KeyAgreement.PublicKey
    var auth: Data

    /// - Throws: ``APIError`` `422 invalid_request`.
    init(p256dh: String, auth: String) throws(APIError) {
      guard let point = WebPush.decode(p256dh), point.count == 65,
        let key = try? P256.KeyAgreement.PublicKey(x963Representation: point), let secret = WebPush.decode(auth),
        secret.count == 16
      else {
        throw APIError(
          status: 422, code: .invalidRequest,
          message: "keys.p256dh must be an uncompressed P-256 point and keys.auth 16 bytes, both base64url.")
      }
      self.p256dh = key
      self.auth = secret
    }

    /// How the keys are stored, as the registration's secret: `<p256dh>.<auth>`, base64url.
    var stored: String { Base64URL.encode(p256dh.x963Representation) + "." + Base64URL.encode(auth) }

    /// The keys of a registration's stored secret.
    init(stored: String) throws(APIError) {
      let parts = stored.split(separator: ".", maxSplits: 1).map(String.init)
      try self.init(p256dh: parts.first ?? "", auth: parts.count > 1 ? parts[1] : "")
    }
  }

  /// `plaintext` encrypted for `keys` (RFC 8291): an ephemeral ECDH key, the auth secret and a random salt give the
  /// content key and nonce (HKDF-SHA-256); one `aes128gcm` record (RFC 8188) with its header (salt, record size
  /// 4096, the ephemeral public key as key id).
  static func encrypt(_ plaintext: Data, for keys: Keys) throws -> Data {
    let ephemeral = P256.KeyAgreement.PrivateKey()
    let shared = try ephemeral.sharedSecretFromKeyAgreement(with: keys.p256dh)
    let browserPublic = keys.p256dh.x963Representation
    let serverPublic = ephemeral.publicKey.x963Representation
    let keyInfo = Data("WebPush: info".utf8) + [0] + browserPublic + serverPublic
    let ikm = shared.hkdfDerivedSymmetricKey(
      using: SHA256.self, salt: keys.auth, sharedInfo: keyInfo, outputByteCount: 32)
    var salt = Data(count: 16)
    for index in salt.indices { salt[index] = UInt8.random(in: 0...255) }
    let cek = HKDF<SHA256>.deriveKey(
      inputKeyMaterial: ikm, salt: salt, info: Data("Content-Encoding: aes128gcm".utf8) + [0], outputByteCount: 16)
    let nonce = HKDF<SHA256>.deriveKey(
      inputKeyMaterial: ikm, salt: salt, info: Data("Content-Encoding: nonce".utf8) + [0], outputByteCount: 12)
    let sealed = try AES.GCM.seal(
      plaintext + [2], using: cek, nonce: try AES.GCM.Nonce(data: nonce.withUnsafeBytes { Data($0) }))
    let recordSize: UInt32 = 4096
    var body = salt
    body.append(contentsOf: withUnsafeBytes(of: recordSize.bigEndian) { Array($0) })
    body.append(UInt8(serverPublic.count))
    body.append(serverPublic)
    body.append(sealed.ciphertext)
    body.append(sealed.tag)
    return body
  }

  /// The notification a page's service worker shows: `{"title","body","tags","kind","id"}`.
  static func payload(of message: AlertMessage, kind: String, id: String) -> Data {
    let object: [String: Any] = [
      "title": message.title, "body": message.text, "tags": message.tags, "kind": kind, "id": id,
    ]
    return (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
  }

  /// Base64url (padded or not) to bytes; nil when it isn't.
  static func decode(_ text: String) -> Data? {
    var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    base64 = base64.trimmingCharacters(in: CharacterSet(charactersIn: "="))
    base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
    return Data(base64Encoded: base64)
  }
}

/// The push service answered 404 or 410: the subscription is gone, and its registration is deleted.
struct PushSubscriptionGone: Error, CustomStringConvertible {
  var status: Int
  var description: String { "the push service answered \(status): the subscription is gone" }
}
