import Logging

/// Sends one-time codes by SMS. Pluggable: ``LogSMSSender`` for development, a webhook sender in production,
/// a capturing sender in tests.
public protocol SMSSender: Sendable {
  /// Sends `code` to `phone` (E.164).
  func sendCode(_ code: String, to phone: String) async throws
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
