import Logging

/// Sends one-time codes by SMS. Pluggable: ``LogSMSSender`` for development, a webhook sender in production,
/// a capturing sender in tests.
public protocol SMSSender: Sendable {
  /// Sends `code` to `phone` (E.164).
  func sendCode(_ code: String, to phone: String) async throws
  /// Releases what the sender holds (a gateway sender's connection pool); the server calls it once, when it shuts
  /// down, after its last request. Nothing by default.
  func shutdown() async
}

extension SMSSender {
  /// Nothing to release.
  public func shutdown() async {}
}

/// Writes one line `OTP <phone> <code>` to the log instead of sending an SMS (development mode).
public struct LogSMSSender: SMSSender {
  /// The logger the line goes to.
  public let logger: Logger

  /// A sender writing to `logger`.
  public init(logger: Logger) { self.logger = logger }

  public func sendCode(_ code: String, to phone: String) async throws {
    logger.notice("OTP \(phone) \(code)")
  }
}
