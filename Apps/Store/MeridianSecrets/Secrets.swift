import Crypto
import Foundation
import HummingbirdBcrypt
import NIOPosix
import Synchronization

/// SHA-256 of secrets (tokens, one-time codes) as lowercase hex: what the database stores instead of the secret.
public enum SecretHash {
  /// The hex SHA-256 of `secret`'s UTF-8 bytes.
  public static func sha256(_ secret: String) -> String { sha256(Data(secret.utf8)) }

  /// The hex SHA-256 of `bytes`.
  public static func sha256(_ bytes: Data) -> String {
    let digest = SHA256.hash(data: bytes)
    let digits: StaticString = "0123456789abcdef"
    return String(unsafeUninitializedCapacity: 2 * SHA256.byteCount) { buffer in
      var index = 0
      for byte in digest {
        buffer[index] = digits.utf8Start[Int(byte >> 4)]
        buffer[index + 1] = digits.utf8Start[Int(byte & 15)]
        index += 2
      }
      return index
    }
  }

  /// Compares two hashes without an early exit, so timing does not reveal a matching prefix.
  public static func constantTimeEqual(_ lhs: String, _ rhs: String) -> Bool {
    let a = Array(lhs.utf8)
    let b = Array(rhs.utf8)
    guard a.count == b.count else { return false }
    var difference: UInt8 = 0
    for index in a.indices { difference |= a[index] ^ b[index] }
    return difference == 0
  }
}

/// Base64url (RFC 4648 §5) without padding: what tokens and device handles are written in.
public enum Base64URL {
  /// `bytes` in base64url, without `=` padding.
  public static func encode(_ bytes: some Collection<UInt8>) -> String {
    let alphabet: StaticString = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    let digits = alphabet.utf8Start
    return String(unsafeUninitializedCapacity: (bytes.count * 4 + 2) / 3) { buffer in
      var written = 0
      var bits: UInt32 = 0
      var pending = 0
      for byte in bytes {
        bits = bits << 8 | UInt32(byte)
        pending += 8
        while pending >= 6 {
          pending -= 6
          buffer[written] = digits[Int(bits >> UInt32(pending) & 63)]
          written += 1
        }
      }
      if pending > 0 {
        buffer[written] = digits[Int(bits << UInt32(6 - pending) & 63)]
        written += 1
      }
      return written
    }
  }
}

/// Random secrets from the system's cryptographic generator.
public enum Secrets {
  /// An opaque bearer token: 32 random bytes, base64url without padding (43 characters).
  public static func token() -> String {
    var generator = SystemRandomNumberGenerator()
    let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
    return Base64URL.encode(bytes)
  }

  /// A uniformly random 6-digit code, leading zeros kept.
  public static func otpCode() -> String {
    var generator = SystemRandomNumberGenerator()
    let value = Int.random(in: 0..<1_000_000, using: &generator)
    let text = String(value)
    return String(repeating: "0", count: 6 - text.count) + text
  }

  /// A new user id (a lowercase UUID).
  public static func userID() -> String { UUID().uuidString.lowercased() }
}

/// Password hashing with bcrypt (hummingbird-auth), run on NIO's thread pool so it never blocks request threads.
public struct PasswordHasher: Sendable {
  /// The bcrypt cost (work factor 2^cost); 12 in production, lower in tests.
  public var cost: UInt8
  /// A hash of a random password at `cost`, made on first use: what an unknown account's sign-in is checked against.
  private let decoy = DecoyHash()

  /// A hasher with `cost`.
  public init(cost: UInt8) { self.cost = cost }

  /// Whether `password` matches `hash`; with no hash (no such account, or one without a password) it checks against
  /// a decoy hash of the same cost and answers false, so that the time taken doesn't tell whether the account exists.
  public func verify(_ password: String, against hash: String?) async throws -> Bool {
    if let hash { return try await verify(password, hash: hash) }
    let decoy = try await decoyHash()
    _ = try await verify(password, hash: decoy)
    return false
  }

  private func decoyHash() async throws -> String {
    if let made = decoy.hash.withLock({ $0 }) { return made }
    let made = try await hash(Secrets.token())
    return decoy.hash.withLock { stored in
      if let stored { return stored }
      stored = made
      return made
    }
  }

  /// The decoy hash, shared by the copies of a hasher.
  private final class DecoyHash: Sendable {
    let hash = Mutex<String?>(nil)
  }

  /// The bcrypt hash of `password`.
  public func hash(_ password: String) async throws -> String {
    let cost = self.cost
    return try await NIOThreadPool.singleton.runIfActive { Bcrypt.hash(password, cost: cost) }
  }

  /// Whether `password` matches `hash`.
  public func verify(_ password: String, hash: String) async throws -> Bool {
    try await NIOThreadPool.singleton.runIfActive { Bcrypt.verify(password, hash: hash) }
  }
}
