import Crypto
import Foundation

/// The `Meridian-Signature` header of a webhook delivery: `t=<unix seconds>,v1=<hex>`, where the hex is
/// HMAC-SHA256, keyed with the webhook's secret (its UTF-8 bytes), of `<t>.` followed by the exact body bytes.
///
/// To verify: split the header at `,` into `t` and `v1`, recompute the HMAC over `t + "." + body` with the secret,
/// compare in constant time, and refuse a `t` more than five minutes from your clock (replays).
public enum WebhookSignature {
  /// The header's name.
  public static let headerName = "Meridian-Signature"

  /// The header value for `body` signed at `timestamp` (unix seconds).
  public static func header(secret: String, timestamp: Int64, body: Data) -> String {
    "t=\(timestamp),v1=\(hex(secret: secret, timestamp: timestamp, body: body))"
  }

  /// The `v1` signature.
  public static func hex(secret: String, timestamp: Int64, body: Data) -> String {
    var message = Data("\(timestamp).".utf8)
    message.append(body)
    let code = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: Data(secret.utf8)))
    return code.map { String(format: "%02x", $0) }.joined()
  }

  /// Whether `header` signs `body` with `secret` at a time within `tolerance` seconds of `now`.
  public static func verify(header: String, secret: String, body: Data, now: Int64, tolerance: Int64 = 300) -> Bool {
    var timestamp: Int64?
    var signatures: [String] = []
    for part in header.split(separator: ",") {
      let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
      guard pair.count == 2 else { continue }
      if pair[0] == "t" { timestamp = Int64(pair[1]) }
      if pair[0] == "v1" { signatures.append(pair[1]) }
    }
    guard let timestamp, abs(now - timestamp) <= tolerance else { return false }
    let expected = Array(hex(secret: secret, timestamp: timestamp, body: body).utf8)
    return signatures.contains { signature in
      let given = Array(signature.utf8)
      guard given.count == expected.count else { return false }
      return zip(given, expected).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
  }

  /// A new secret: `whsec_` and 32 random bytes in hex.
  public static func makeSecret() -> String {
    var generator = SystemRandomNumberGenerator()
    return "whsec_"
      + (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
  }
}
