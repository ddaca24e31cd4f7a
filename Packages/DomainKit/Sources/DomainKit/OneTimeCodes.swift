/// Why a one-time code was refused; `description` is a sentence for the person signing in.
public enum OneTimeCodeError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The text is not exactly six digits.
  case malformed
  /// The code is wrong; `remainingAttempts` more tries are allowed.
  case incorrect(remainingAttempts: Int)
  /// The code is older than ``OneTimeCodeChallenge/lifetime``.
  case expired
  /// ``OneTimeCodeChallenge/maximumAttempts`` wrong codes were entered; a new code is needed.
  case tooManyAttempts
  /// The code was already used to sign in.
  case alreadyUsed
  /// Too many codes were sent to this phone or address; the next may be sent after `retryAfter` ms.
  case rateLimited(retryAfter: Int64)

  /// A sentence for the person signing in.
  public var description: String {
    switch self {
    case .malformed: "Enter the 6-digit code we sent you."
    case .incorrect(let remaining):
      remaining == 1
        ? "That code is wrong. You have 1 more try." : "That code is wrong. You have \(remaining) more tries."
    case .expired: "This code has expired. Ask for a new one."
    case .tooManyAttempts: "Too many wrong codes. Ask for a new one."
    case .alreadyUsed: "This code was already used. Ask for a new one."
    case .rateLimited(let retryAfter):
      "Too many codes were sent. Try again in \(max(1, (retryAfter + 59_999) / 60_000)) min."
    }
  }
}

/// A one-time sign-in code: exactly six ASCII digits (leading zeros allowed). The server sends it by SMS or email
/// and stores only a hash of ``digits`` in a ``OneTimeCodeChallenge``. `description` never shows the digits.
public struct OneTimeCode: Sendable, Hashable, CustomStringConvertible {
  /// Number of digits.
  public static let length = 6

  /// The six digits.
  public let digits: String

  /// A code from what the person typed; spaces and dashes (`123 456`, `123-456`) are ignored.
  /// - Throws: ``OneTimeCodeError/malformed`` unless exactly six ASCII digits remain.
  public init(_ text: String) throws(OneTimeCodeError) {
    let compact = text.filter { $0 != " " && $0 != "-" && $0 != "\t" }
    guard compact.utf8.count == Self.length, compact.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else {
      throw .malformed
    }
    digits = compact
  }

  /// A uniformly random code from `generator` (use a cryptographically secure one, such as the default).
  public static func random(using generator: inout some RandomNumberGenerator) -> OneTimeCode {
    let value = Int.random(in: 0..<1_000_000, using: &generator)
    let text = String(value)
    return OneTimeCode(unchecked: String(repeating: "0", count: length - text.count) + text)
  }

  /// A uniformly random code from the system's secure generator.
  public static func random() -> OneTimeCode {
    var generator = SystemRandomNumberGenerator()
    return random(using: &generator)
  }

  private init(unchecked digits: String) { self.digits = digits }

  /// `••••••`: codes are secrets and must not end up in logs.
  public var description: String { String(repeating: "•", count: Self.length) }
}

/// Comparison that takes the same time whatever the inputs have in common, so a wrong code (or its hash) does
/// not reveal how many leading characters were right.
public enum ConstantTime {
  /// Whether `a` and `b` are byte-for-byte equal; the time depends only on the lengths.
  public static func equals(_ a: some Collection<UInt8>, _ b: some Collection<UInt8>) -> Bool {
    let left = Array(a)
    let right = Array(b)
    var difference = UInt8(truncatingIfNeeded: left.count ^ right.count)
    if left.count != right.count { difference |= 1 }
    let count = max(left.count, right.count)
    for index in 0..<count {
      let x = index < left.count ? left[index] : 0
      let y = index < right.count ? right[index] : 0
      difference |= x ^ y
    }
    return difference == 0
  }

  /// Whether two strings have the same UTF-8 bytes, in time that depends only on their lengths.
  public static func equals(_ a: String, _ b: String) -> Bool { equals(a.utf8, b.utf8) }
}

/// A code sent to a phone number or email address, as the server keeps it: the hash of the code (the server
/// chooses the hash; DomainKit only compares), when it expires and how many wrong attempts were made.
///
/// Rules: a code lives 5 minutes (``lifetime``); at most 5 attempts (``maximumAttempts``) — the fifth wrong one
/// uses the challenge up; a right code works once. Hashes are compared in constant time.
///
/// Wire names: `destination` (E.164 phone or email address), `codeHash`, `createdAt`, `expiresAt` (UTC ms),
/// `attempts`, `used`.
public struct OneTimeCodeChallenge: Sendable, Hashable, Codable {
  /// How long a code is valid, in milliseconds (5 minutes).
  public static let lifetime: Int64 = 5 * 60 * 1000
  /// Wrong attempts allowed before the challenge is used up.
  public static let maximumAttempts = 5

  /// The phone number (E.164) or email address the code was sent to.
  public var destination: String
  /// The server's hash of the code (e.g. hex HMAC-SHA-256); never the code itself.
  public var codeHash: String
  /// When the code was sent, UTC ms.
  public var createdAt: Int64
  /// The first instant the code no longer works, UTC ms.
  public var expiresAt: Int64
  /// Wrong attempts so far.
  public private(set) var attempts: Int
  /// Whether the code was used to sign in.
  public private(set) var used: Bool

  /// A fresh challenge for a code sent at `now`.
  public init(destination: String, codeHash: String, now: Int64) {
    self.destination = destination
    self.codeHash = codeHash
    self.createdAt = now
    let (expiry, overflow) = now.addingReportingOverflow(Self.lifetime)
    self.expiresAt = overflow ? .max : expiry
    self.attempts = 0
    self.used = false
  }

  /// Wrong attempts still allowed.
  public var remainingAttempts: Int { max(0, Self.maximumAttempts - attempts) }

  /// Whether the code is past its lifetime at `now`.
  public func isExpired(at now: Int64) -> Bool { now >= expiresAt }

  /// Checks the hash of the code the person entered. A right code marks the challenge used; a wrong one counts
  /// an attempt. Expiry, use and the attempt limit are checked before the hash is compared.
  /// - Throws: ``OneTimeCodeError/alreadyUsed``, ``OneTimeCodeError/expired``,
  ///   ``OneTimeCodeError/tooManyAttempts`` or ``OneTimeCodeError/incorrect(remainingAttempts:)``.
  public mutating func verify(codeHash submitted: String, now: Int64) throws(OneTimeCodeError) {
    guard !used else { throw .alreadyUsed }
    guard !isExpired(at: now) else { throw .expired }
    guard attempts < Self.maximumAttempts else { throw .tooManyAttempts }
    guard ConstantTime.equals(submitted, codeHash) else {
      attempts += 1
      throw attempts >= Self.maximumAttempts ? .tooManyAttempts : .incorrect(remainingAttempts: remainingAttempts)
    }
    used = true
  }
}

/// How often codes may be sent to one phone number or email address: at least ``minimumInterval`` between
/// sends and at most ``maximumPerWindow`` sends in any ``window`` (defaults: 60 s, 5 per hour).
public struct OneTimeCodeRateLimit: Sendable, Hashable, Codable {
  /// Minimum time between two codes to the same destination, ms.
  public var minimumInterval: Int64
  /// Length of the sliding window, ms.
  public var window: Int64
  /// Codes allowed per window.
  public var maximumPerWindow: Int

  /// A limit (defaults: one code per minute, five per hour).
  public init(minimumInterval: Int64 = 60_000, window: Int64 = 3_600_000, maximumPerWindow: Int = 5) {
    self.minimumInterval = max(0, minimumInterval)
    self.window = max(0, window)
    self.maximumPerWindow = max(1, maximumPerWindow)
  }

  /// Checks whether another code may be sent at `now`, given when earlier codes were sent to the same
  /// destination (any order; times in the future count as now).
  /// - Throws: ``OneTimeCodeError/rateLimited(retryAfter:)`` with the milliseconds to wait.
  public func check(previousSends: some Sequence<Int64>, now: Int64) throws(OneTimeCodeError) {
    let recent = previousSends.map { min($0, now) }.filter { now.saturatingDifference($0) < window }.sorted()
    var wait: Int64 = 0
    if let last = recent.last {
      wait = max(wait, minimumInterval - now.saturatingDifference(last))
    }
    if recent.count >= maximumPerWindow {
      // The oldest send that must leave the window before another is allowed.
      let oldest = recent[recent.count - maximumPerWindow]
      wait = max(wait, window - now.saturatingDifference(oldest))
    }
    if wait > 0 { throw .rateLimited(retryAfter: wait) }
  }
}
