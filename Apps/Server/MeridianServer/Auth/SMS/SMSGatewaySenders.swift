import AsyncHTTPClient
import Foundation
import HTTPTypes
import Logging
import NIOPosix
import NetworkingKit
import NetworkingKitAsyncHTTPClient
import Prometheus
import ServiceLifecycle
import Synchronization

/// An SMS the gateway did not accept: every attempt failed, timed out or was refused. The person is told to retry
/// (503 `sms_unavailable`); nothing is counted against their limits.
public struct SMSDeliveryError: Error, Sendable, CustomStringConvertible {
  /// The sender (`http`, `twilio`).
  public var sender: String
  /// Why: `status`, `timeout`, `unreachable` or `other` (the metrics label).
  public var reason: String
  /// The last error, for the log.
  public var detail: String
  /// `http SMS failed (status): …`.
  public var description: String { "\(sender) SMS failed (\(reason)): \(detail)" }
}

/// The SMS senders' counters on the server's registry: `meridian_sms_sent_total{sender}`,
/// `meridian_sms_failed_total{sender,reason}` and `meridian_sms_retries_total{sender}`.
public struct SMSMetrics: Sendable {
  let registry: PrometheusCollectorRegistry

  /// Counters on `registry` (``ServerMetrics/registry`` in the server).
  public init(registry: PrometheusCollectorRegistry) { self.registry = registry }

  func sent(_ sender: String) { counter("sms_sent", "SMS accepted by the gateway.", [("sender", sender)]).increment() }

  func failed(_ sender: String, reason: String) {
    counter(
      "sms_failed", "SMS not sent after every attempt (the person was told to retry).",
      [("sender", sender), ("reason", reason)]
    ).increment()
  }

  func retried(_ sender: String) {
    counter("sms_retries", "SMS attempts retried (timeout, lost connection, 429 or 5xx).", [("sender", sender)])
      .increment()
  }

  private func counter(_ name: String, _ help: String, _ labels: [(String, String)]) -> Counter {
    registry.makeCounter(
      descriptor: MetricNameDescriptor(namespace: "meridian", metricName: name, unitName: "total", helpText: help),
      labels: labels)
  }
}

/// A gateway sender's one connection pool: made at its first code, kept for the next ones, shut down with the
/// server (``SMSSender/shutdown()``); a code after that is refused.
final class SMSConnectionPool: Sendable {
  private let configuration: HTTPClient.Configuration
  private let state = Mutex<(client: HTTPClient?, closed: Bool)>((nil, false))

  init(configuration: HTTPClient.Configuration) { self.configuration = configuration }

  /// The pool's client.
  /// - Throws: ``SMSDeliveryError`` (`other`) once shut down.
  func client(sender: String) throws -> HTTPClient {
    try state.withLock { state in
      guard !state.closed else {
        throw SMSDeliveryError(sender: sender, reason: "other", detail: "the sender was shut down")
      }
      if let client = state.client { return client }
      let client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
      state.client = client
      return client
    }
  }

  /// Closes the pool (waiting for its connections); idempotent.
  func shutdown() async {
    let client = state.withLock { state in
      state.closed = true
      defer { state.client = nil }
      return state.client
    }
    try? await client?.shutdown()
  }
}

/// One SMS request through NetworkingKit: its request factory, retry policy (full jitter, `Retry-After`) with one
/// `Idempotency-Key` for every attempt of a code, per-attempt timeout and deadline, over AsyncHTTPClient.
struct SMSGatewayCall: Sendable {
  /// The metrics label.
  let sender: String
  let url: URLComponents
  let method: HTTPRequest.Method
  let contentType: String
  let headerFields: HTTPFields
  let settings: SMSSettings
  let metrics: SMSMetrics
  let logger: Logger
  let pool: SMSConnectionPool

  init(
    sender: String, url: URLComponents, method: HTTPRequest.Method, contentType: String, headerFields: HTTPFields,
    settings: SMSSettings, metrics: SMSMetrics, logger: Logger
  ) {
    self.sender = sender
    self.url = url
    self.method = method
    self.contentType = contentType
    self.headerFields = headerFields
    self.settings = settings
    self.metrics = metrics
    self.logger = logger
    var configuration = AsyncHTTPClientTransport.makeConfiguration()
    configuration.redirectConfiguration = .disallow
    configuration.timeout.connect = .milliseconds(Int64((settings.attemptTimeout / .milliseconds(1)).rounded(.up)))
    pool = SMSConnectionPool(configuration: configuration)
  }

  /// Sends `body` once (with NetworkingKit's retries).
  /// - Throws: ``SMSDeliveryError`` when the gateway didn't accept it; `CancellationError` when cancelled.
  func send(_ body: Data) async throws {
    guard
      let request = OutboundRequest(url: url, method: method, contentType: contentType, accept: "application/json")
    else {
      throw SMSDeliveryError(sender: sender, reason: "other", detail: "invalid URL \(url.string ?? "")")
    }
    var configuration = OutboundRequest.configuration(
      userAgent: "Meridian-SMS/1", retryPolicy: settings.retryPolicy, attemptTimeout: settings.attemptTimeout,
      budgets: nil)
    let (sender, metrics, logger) = (self.sender, self.metrics, self.logger)
    configuration.onAttempt = { event in
      if case .retry = event.decision { metrics.retried(sender) }
      logger.debug("SMS attempt", metadata: ["sender": "\(sender)", "attempt": "\(event)"])
    }
    let result: Result<Void, any Error>
    do {
      let client = try NetworkClient(
        baseURL: request.base, transport: AsyncHTTPClientTransport(client: pool.client(sender: sender)),
        configuration: configuration)
      _ = try await client.send(
        request.endpoint, body: body, headerFields: headerFields, idempotencyKey: UUID().uuidString.lowercased())
      result = .success(())
    } catch {
      result = .failure(error)
    }
    switch result {
    case .success:
      metrics.sent(sender)
    case .failure(let error as CancellationError):
      throw error
    case .failure(let error as SMSDeliveryError):
      metrics.failed(sender, reason: error.reason)
      throw error
    case .failure(let error):
      let failure = SMSDeliveryError(sender: sender, reason: Self.reason(error), detail: "\(error)")
      metrics.failed(sender, reason: failure.reason)
      logger.warning("SMS not sent", metadata: ["sender": "\(sender)", "error": "\(failure.detail)"])
      throw failure
    }
  }

  /// The metrics label of a failure.
  static func reason(_ error: any Error) -> String {
    guard let error = error as? NetworkingError else { return "other" }
    if error.serverError != nil { return "status" }
    if case .deadlineExceeded = error { return "timeout" }
    guard let transport = error.transportError else { return "other" }
    switch transport.kind {
    case .timedOut: return "timeout"
    case .connectionRefused, .noNetwork: return "unreachable"
    case .connectionLost, .other: return "other"
    }
  }
}

/// Sends codes through a generic HTTP gateway: ``SMSSettings/httpMethod`` to ``SMSSettings/httpURL`` with the body
/// template's `{phone}` and `{text}` filled in (JSON-escaped or percent-encoded) and the configured auth header.
public struct HTTPGatewaySMSSender: SMSSender {
  let call: SMSGatewayCall
  let template: String
  let format: SMSSettings.BodyFormat
  let settings: SMSSettings

  /// A sender for `settings` (checked with ``SMSSettings/check(sender:)`` for `.http`).
  public init(settings: SMSSettings, metrics: SMSMetrics, logger: Logger) throws(ConfigurationError) {
    try settings.check(sender: .http)
    guard let url = settings.httpURL.flatMap(URLComponents.init(string:)) else {
      throw ConfigurationError(setting: "MERIDIAN_SMS_HTTP_URL", value: settings.httpURL)
    }
    var fields = HTTPFields()
    if let auth = settings.httpAuth, let name = HTTPField.Name(settings.httpAuthHeader) { fields[name] = auth }
    self.settings = settings
    self.format = settings.httpFormat
    self.template = settings.httpBody ?? SMSSettings.defaultTemplate(settings.httpFormat)
    self.call = SMSGatewayCall(
      sender: "http", url: url, method: settings.httpMethod,
      contentType: format == .json ? "application/json" : "application/x-www-form-urlencoded",
      headerFields: fields, settings: settings, metrics: metrics, logger: logger)
  }

  /// The request body for `text` to `phone`.
  public func body(text: String, phone: String) -> Data {
    func escape(_ text: String) -> String {
      format == .json ? Self.jsonEscaped(text) : SMSFormEncoding.encode(text)
    }
    return Data(
      template.replacingOccurrences(of: "{phone}", with: escape(phone))
        .replacingOccurrences(of: "{text}", with: escape(text)).utf8)
  }

  public func sendCode(_ code: String, to phone: String) async throws {
    try await call.send(body(text: settings.text(for: code), phone: phone))
  }

  public func shutdown() async { await call.pool.shutdown() }

  /// `text` as the inside of a JSON string.
  static func jsonEscaped(_ text: String) -> String {
    let encoded = (try? JSONEncoder().encode(text)).map { String(decoding: $0, as: UTF8.self) } ?? "\"\""
    return String(encoded.dropFirst().dropLast())
  }
}

/// Sends codes through Twilio's Programmable Messaging API (or a compatible one):
/// `POST /2010-04-01/Accounts/{sid}/Messages.json`, form-encoded `To`, `From`, `Body`, HTTP basic auth with the
/// account SID and auth token.
public struct TwilioSMSSender: SMSSender {
  let call: SMSGatewayCall
  let settings: SMSSettings

  /// A sender for `settings` (checked with ``SMSSettings/check(sender:)`` for `.twilio`).
  public init(settings: SMSSettings, metrics: SMSMetrics, logger: Logger) throws(ConfigurationError) {
    try settings.check(sender: .twilio)
    let sid = settings.twilioAccountSID ?? ""
    let base = settings.twilioURL.hasSuffix("/") ? String(settings.twilioURL.dropLast()) : settings.twilioURL
    guard let url = URLComponents(string: base + "/2010-04-01/Accounts/\(SMSFormEncoding.encode(sid))/Messages.json")
    else {
      throw ConfigurationError(setting: "MERIDIAN_SMS_TWILIO_URL", value: settings.twilioURL)
    }
    let credentials = Data("\(sid):\(settings.twilioAuthToken ?? "")".utf8).base64EncodedString()
    self.settings = settings
    self.call = SMSGatewayCall(
      sender: "twilio", url: url, method: .post, contentType: "application/x-www-form-urlencoded",
      headerFields: [.authorization: "Basic \(credentials)"], settings: settings, metrics: metrics, logger: logger)
  }

  /// The form body: `Body`, `From` and `To`, by NetworkingKit's form encoding.
  public func body(text: String, phone: String) -> Data {
    let fields = ["To": phone, "From": settings.twilioFrom ?? "", "Body": text]
    return ((try? RequestBodyCoding<[String: String]>.formURLEncoded.encode(fields)) ?? nil) ?? Data()
  }

  public func sendCode(_ code: String, to phone: String) async throws {
    try await call.send(body(text: settings.text(for: code), phone: phone))
  }

  public func shutdown() async { await call.pool.shutdown() }
}

/// Percent-encoding for form values and path segments, by NetworkingKit's form encoding: everything but
/// `A–Z a–z 0–9 - . _ ~` (so `+` is `%2B`).
enum SMSFormEncoding {
  static func encode(_ text: String) -> String {
    guard let form = try? RequestBodyCoding<[String: String]>.formURLEncoded.encode(["v": text]) else { return text }
    return String(decoding: form.dropFirst(2), as: UTF8.self)  // "v=…"
  }
}

/// Shuts the server's SMS sender down (its connection pool) once the graceful shutdown reaches it; first in the
/// service group, so it stops last, after the HTTP server answered its last request.
struct SMSSenderService: Service {
  let sender: any SMSSender

  func run() async throws {
    try? await gracefulShutdown()
    await sender.shutdown()
  }
}

extension ServerConfiguration {
  /// The sender `smsSender` names, with `sms`'s settings and counters on `metrics`.
  /// - Throws: ``ConfigurationError`` for the log sender in production mode (codes would only reach the log) or a
  ///   gateway missing a setting.
  func makeSMSSender(metrics: ServerMetrics, logger: Logger) throws(ConfigurationError) -> any SMSSender {
    let counters = SMSMetrics(registry: metrics.registry)
    switch smsSender {
    case .log:
      guard mode == .development else {
        throw ConfigurationError(
          setting: "MERIDIAN_SMS_SENDER", value: "log",
          reason:
            "can't be log in production mode: codes would reach the log, not phones (use http or twilio with their "
            + "MERIDIAN_SMS_* settings, see docs/operations.md)")
      }
      return LogSMSSender(logger: logger)
    case .http: return try HTTPGatewaySMSSender(settings: sms, metrics: counters, logger: logger)
    case .twilio: return try TwilioSMSSender(settings: sms, metrics: counters, logger: logger)
    }
  }
}
