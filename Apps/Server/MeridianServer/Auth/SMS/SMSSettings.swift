import Foundation
import HTTPTypes
import MeridianAPI
import NetworkingKit

/// How one-time codes reach phones through the `http` and `twilio` senders (``ServerConfiguration/SMSSenderKind``).
/// Secrets (`MERIDIAN_SMS_HTTP_AUTH`, `MERIDIAN_SMS_TWILIO_AUTH_TOKEN`) have no defaults.
///
/// | setting | default | variable |
/// |---|---|---|
/// | the text; `{code}` is the code | `Your Meridian code: {code}` | `MERIDIAN_SMS_MESSAGE` |
/// | one attempt's timeout, seconds | 5 | `MERIDIAN_SMS_TIMEOUT` |
/// | attempts and waits of one code, seconds | 15 | `MERIDIAN_SMS_DEADLINE` |
/// | attempts in all | 3 | `MERIDIAN_SMS_ATTEMPTS` |
/// | gateway URL (`http`) | required | `MERIDIAN_SMS_HTTP_URL` |
/// | method (`http`): POST, PUT or PATCH | POST | `MERIDIAN_SMS_HTTP_METHOD` |
/// | body format (`http`): json or form | json | `MERIDIAN_SMS_HTTP_FORMAT` |
/// | body template (`http`), `{phone}` and `{text}` | see ``defaultTemplate(_:)`` | `MERIDIAN_SMS_HTTP_BODY` |
/// | auth header value (`http`), a secret | none | `MERIDIAN_SMS_HTTP_AUTH` |
/// | auth header name (`http`) | Authorization | `MERIDIAN_SMS_HTTP_AUTH_HEADER` |
/// | API base URL (`twilio`) | https://api.twilio.com | `MERIDIAN_SMS_TWILIO_URL` |
/// | account SID, auth token (a secret), sender number (`twilio`) | required | `MERIDIAN_SMS_TWILIO_ACCOUNT_SID`, `MERIDIAN_SMS_TWILIO_AUTH_TOKEN`, `MERIDIAN_SMS_TWILIO_FROM` |
public struct SMSSettings: Sendable, Hashable {
  /// How the generic gateway's body template is encoded.
  public enum BodyFormat: String, Sendable, Hashable, CaseIterable {
    /// `application/json`: placeholders are replaced by JSON-escaped text (the template holds the quotes).
    case json
    /// `application/x-www-form-urlencoded`: placeholders are replaced by percent-encoded text.
    case form
  }

  /// The message; `{code}` is replaced by the code.
  public var message = "Your Meridian code: {code}"
  /// One attempt's timeout.
  public var attemptTimeout: Duration = .seconds(5)
  /// The longest one code may take, attempts and waits together (the person waits for the answer meanwhile).
  public var deadline: Duration = .seconds(15)
  /// Attempts in all (a retry happens after a timeout, a lost connection, 408, 429, 500, 502, 503 or 504).
  public var attempts = 3
  /// The generic gateway's URL (`http` sender).
  public var httpURL: String?
  /// The generic gateway's method.
  public var httpMethod = HTTPRequest.Method.post
  /// The generic gateway's body format.
  public var httpFormat = BodyFormat.json
  /// The generic gateway's body template with `{phone}` and `{text}`; nil uses ``defaultTemplate(_:)``.
  public var httpBody: String?
  /// The generic gateway's auth header value (e.g. `Bearer …`), a secret; nil sends none.
  public var httpAuth: String?
  /// The header ``httpAuth`` goes in.
  public var httpAuthHeader = "Authorization"
  /// The Twilio-compatible API's base URL.
  public var twilioURL = "https://api.twilio.com"
  /// The Twilio account SID (the basic-auth user and part of the path).
  public var twilioAccountSID: String?
  /// The Twilio auth token (the basic-auth password), a secret.
  public var twilioAuthToken: String?
  /// The number (or sender id) the SMS comes from.
  public var twilioFrom: String?

  /// The defaults.
  public init() {}

  /// The body template used when none is configured.
  public static func defaultTemplate(_ format: BodyFormat) -> String {
    switch format {
    case .json: #"{"to":"{phone}","text":"{text}"}"#
    case .form: "to={phone}&text={text}"
    }
  }

  /// The text sent for `code`.
  public func text(for code: String) -> String { message.replacingOccurrences(of: "{code}", with: code) }

  /// NetworkingKit's policy for one code: ``attempts`` within ``deadline``, a `Retry-After` honoured up to it.
  public var retryPolicy: RetryPolicy {
    RetryPolicy(
      maxAttempts: attempts, baseDelay: .milliseconds(250), maxDelay: .seconds(2), deadline: deadline,
      maxRetryAfter: deadline)
  }

  /// Reads the `MERIDIAN_SMS_*` variables and checks that `sender` has what it needs.
  /// - Throws: ``ConfigurationError`` naming the bad or missing setting.
  mutating func read(_ environment: [String: String], sender: ServerConfiguration.SMSSenderKind)
    throws(ConfigurationError)
  {
    func value(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
    func parse<T>(_ name: String, _ convert: (String) -> T?) throws(ConfigurationError) -> T? {
      guard let text = value(name) else { return nil }
      guard let result = convert(text) else { throw ConfigurationError(setting: name, value: text) }
      return result
    }
    func seconds(_ text: String) -> Duration? {
      Double(text).flatMap { $0 > 0 && $0 <= 300 ? Duration.milliseconds(Int(($0 * 1000).rounded())) : nil }
    }
    if let message = try parse("MERIDIAN_SMS_MESSAGE", { $0.contains("{code}") ? $0 : nil }) { self.message = message }
    if let timeout = try parse("MERIDIAN_SMS_TIMEOUT", seconds) { attemptTimeout = timeout }
    if let deadline = try parse("MERIDIAN_SMS_DEADLINE", seconds) { self.deadline = deadline }
    if let attempts = try parse("MERIDIAN_SMS_ATTEMPTS", { Int($0).flatMap { (1...10).contains($0) ? $0 : nil } }) {
      self.attempts = attempts
    }
    httpURL = value("MERIDIAN_SMS_HTTP_URL") ?? httpURL
    if let method = try parse(
      "MERIDIAN_SMS_HTTP_METHOD",
      { ["POST", "PUT", "PATCH"].contains($0.uppercased()) ? HTTPRequest.Method($0.uppercased()) : nil })
    {
      httpMethod = method
    }
    if let format = try parse("MERIDIAN_SMS_HTTP_FORMAT", BodyFormat.init(rawValue:)) { httpFormat = format }
    httpBody = value("MERIDIAN_SMS_HTTP_BODY") ?? httpBody
    httpAuth = value("MERIDIAN_SMS_HTTP_AUTH") ?? httpAuth
    if let name = try parse("MERIDIAN_SMS_HTTP_AUTH_HEADER", { HTTPField.Name($0) == nil ? nil : $0 }) {
      httpAuthHeader = name
    }
    twilioURL = value("MERIDIAN_SMS_TWILIO_URL") ?? twilioURL
    twilioAccountSID = value("MERIDIAN_SMS_TWILIO_ACCOUNT_SID") ?? twilioAccountSID
    twilioAuthToken = value("MERIDIAN_SMS_TWILIO_AUTH_TOKEN") ?? twilioAuthToken
    twilioFrom = value("MERIDIAN_SMS_TWILIO_FROM") ?? twilioFrom
    try check(sender: sender)
  }

  /// Checks that `sender` has every setting it needs.
  /// - Throws: ``ConfigurationError`` naming the first missing or invalid one.
  public func check(sender: ServerConfiguration.SMSSenderKind) throws(ConfigurationError) {
    func required(_ value: String?, _ name: String) throws(ConfigurationError) -> String {
      guard let value else {
        throw ConfigurationError(setting: name, value: nil, reason: "is required with MERIDIAN_SMS_SENDER=\(sender)")
      }
      return value
    }
    func url(_ text: String, _ name: String) throws(ConfigurationError) {
      guard let url = URL(string: text), ["http", "https"].contains(url.scheme?.lowercased() ?? ""),
        url.host?.isEmpty == false
      else { throw ConfigurationError(setting: name, value: text, reason: "is not an http(s) URL") }
    }
    switch sender {
    case .log: return
    case .http:
      try url(try required(httpURL, "MERIDIAN_SMS_HTTP_URL"), "MERIDIAN_SMS_HTTP_URL")
      let template = httpBody ?? Self.defaultTemplate(httpFormat)
      guard template.contains("{phone}"), template.contains("{text}") else {
        throw ConfigurationError(
          setting: "MERIDIAN_SMS_HTTP_BODY", value: template, reason: "must contain {phone} and {text}")
      }
    case .twilio:
      try url(twilioURL, "MERIDIAN_SMS_TWILIO_URL")
      _ = try required(twilioAccountSID, "MERIDIAN_SMS_TWILIO_ACCOUNT_SID")
      _ = try required(twilioAuthToken, "MERIDIAN_SMS_TWILIO_AUTH_TOKEN")
      _ = try required(twilioFrom, "MERIDIAN_SMS_TWILIO_FROM")
    }
  }
}

extension RateLimiter {
  /// Returns one unit taken for `key` at `now` (by ``allow(_:now:)``): an SMS that was not sent doesn't count.
  func giveBack(_ key: String, now: Int64) async { _ = await take(key, cost: -1, now: now) }
}

extension APIError {
  /// 503 `sms_unavailable`: the code could not be sent; nothing was counted against the person's limits.
  static let smsUnavailable = APIError(
    status: 503, code: .smsUnavailable,
    message: "The code could not be sent by SMS just now; nothing was counted, please try again in a minute.")
}
