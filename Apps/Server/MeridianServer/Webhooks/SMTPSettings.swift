import DomainKit
import Foundation

/// The operator's SMTP server, through which the `email` alert channel sends; without it (no `MERIDIAN_SMTP_HOST`)
/// an email channel can't be registered.
///
/// | setting | default | variable |
/// |---|---|---|
/// | the server's host name or address | none: email alerts off | `MERIDIAN_SMTP_HOST` |
/// | its port | 587 | `MERIDIAN_SMTP_PORT` |
/// | the sender (`From`, `MAIL FROM`) | required with a host | `MERIDIAN_SMTP_FROM` |
/// | user name and password (AUTH PLAIN, only over TLS) | none | `MERIDIAN_SMTP_USERNAME`, `MERIDIAN_SMTP_PASSWORD` |
/// | STARTTLS | when the server offers it | `MERIDIAN_SMTP_STARTTLS` (`when-offered`, `required`, `never`) |
/// | one step's deadline (connect, each command and its reply) | 10 s | `MERIDIAN_SMTP_TIMEOUT` |
public struct SMTPSettings: Sendable, Hashable {
  /// When the connection is upgraded to TLS.
  public enum StartTLS: String, Sendable, Hashable {
    /// Whenever the server's EHLO offers STARTTLS; in plain text otherwise.
    case whenOffered = "when-offered"
    /// Always: a server that does not offer it is an error of the delivery.
    case required
    /// Never (a relay on the same host).
    case never
  }

  /// The server's host name or IP address.
  public var host: String
  /// Its port.
  public var port = 587
  /// The sender's address, as `From` and `MAIL FROM`.
  public var sender: String
  /// A user name and password for AUTH PLAIN, sent only over TLS.
  public var username: String?
  /// The password of ``username``.
  public var password: String?
  /// When STARTTLS is used.
  public var startTLS = StartTLS.whenOffered
  /// The deadline of each step: connecting, and each command until its reply.
  public var stepTimeout: Duration = .seconds(10)

  /// A server `host:port` sending as `sender`.
  public init(host: String, port: Int = 587, sender: String) {
    self.host = host
    self.port = port
    self.sender = sender
  }

  /// The settings of the `MERIDIAN_SMTP_*` variables; nil when `MERIDIAN_SMTP_HOST` is not set.
  /// - Throws: ``ConfigurationError`` for a value that can't be used.
  static func read(_ environment: [String: String]) throws(ConfigurationError) -> SMTPSettings? {
    func value(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
    guard let host = value("MERIDIAN_SMTP_HOST") else { return nil }
    guard let from = value("MERIDIAN_SMTP_FROM") else {
      throw ConfigurationError(
        setting: "MERIDIAN_SMTP_FROM", value: nil, reason: "the sender's address is required with MERIDIAN_SMTP_HOST")
    }
    let sender: String
    do throws(CredentialError) {
      sender = try EmailAddress.validate(from)
      guard sender.unicodeScalars.allSatisfy(\.isASCII) else { throw CredentialError.emailInvalidCharacters }
    } catch {
      throw ConfigurationError(setting: "MERIDIAN_SMTP_FROM", value: from, reason: error.description)
    }
    var settings = SMTPSettings(host: host, sender: sender)
    if let text = value("MERIDIAN_SMTP_PORT") {
      guard let port = Int(text), (1...65535).contains(port) else {
        throw ConfigurationError(setting: "MERIDIAN_SMTP_PORT", value: text, reason: "must be a port, 1 to 65535")
      }
      settings.port = port
    }
    settings.username = value("MERIDIAN_SMTP_USERNAME")
    settings.password = value("MERIDIAN_SMTP_PASSWORD")
    guard (settings.username == nil) == (settings.password == nil) else {
      throw ConfigurationError(
        setting: "MERIDIAN_SMTP_PASSWORD", value: nil,
        reason: "MERIDIAN_SMTP_USERNAME and MERIDIAN_SMTP_PASSWORD are set together or not at all")
    }
    if let text = value("MERIDIAN_SMTP_STARTTLS") {
      guard let mode = StartTLS(rawValue: text.lowercased()) else {
        throw ConfigurationError(
          setting: "MERIDIAN_SMTP_STARTTLS", value: text, reason: "must be when-offered, required or never")
      }
      settings.startTLS = mode
    }
    if let text = value("MERIDIAN_SMTP_TIMEOUT") {
      guard let seconds = Int64(text), seconds >= 1 else {
        throw ConfigurationError(
          setting: "MERIDIAN_SMTP_TIMEOUT", value: text, reason: "must be a whole number of seconds ≥ 1")
      }
      settings.stepTimeout = .seconds(seconds)
    }
    return settings
  }
}
