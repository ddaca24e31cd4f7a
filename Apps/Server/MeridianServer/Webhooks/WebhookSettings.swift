import Foundation
import NetworkingKit

/// Webhook delivery: which addresses may be registered, how long a delivery is retried, how it is paced.
///
/// | setting | default | variable |
/// |---|---|---|
/// | allow loopback, private and link-local addresses | no | `MERIDIAN_WEBHOOK_ALLOW_PRIVATE` (`true`/`false`) |
/// | abandon a delivery this long after its event | 86,400 s (a day) | `MERIDIAN_WEBHOOK_ABANDON_AFTER` |
/// | one attempt's timeout | 10 s | `MERIDIAN_WEBHOOK_TIMEOUT` |
/// | how often the outbox is polled (besides wake-ups on enqueue) | 1,000 ms | `MERIDIAN_WEBHOOK_POLL_MS` |
/// | deliveries in flight per node | 8 | `MERIDIAN_WEBHOOK_CONCURRENCY` |
/// | alerts (ntfy, Web Push, email) per account per hour, 0 for no limit | 60 | `MERIDIAN_ALERTS_PER_HOUR` |
/// | the VAPID JWT's `sub` (Web Push) | `mailto:operator@meridian.invalid` | `MERIDIAN_VAPID_SUBJECT` |
/// | the SMTP server of email alerts | none (email alerts off) | `MERIDIAN_SMTP_*` (``SMTPSettings``) |
public struct WebhookSettings: Sendable, Hashable {
  /// Whether loopback, private (RFC 1918, ULA, CGNAT) and link-local addresses may receive webhooks. The metadata
  /// addresses (169.254.169.254, fd00:ec2::254) are refused even then.
  public var allowPrivateAddresses = false
  /// A delivery still failing this long after its event is abandoned, its last error kept, in milliseconds.
  public var abandonAfterMilliseconds: Int64 = 86_400_000
  /// One attempt's timeout.
  public var attemptTimeout: Duration = .seconds(10)
  /// The in-call retries of one delivery round (NetworkingKit: full jitter, `Retry-After` honoured, a per-host
  /// retry budget); after a failed round the delivery is due again after the outbox backoff.
  public var attemptPolicy = RetryPolicy(
    maxAttempts: 3, baseDelay: .milliseconds(500), maxDelay: .seconds(5), deadline: .seconds(30),
    maxRetryAfter: .seconds(10))
  /// The backoff between rounds (full jitter, `baseDelay × 2^(round−1)` capped at `maxDelay`); a longer
  /// `Retry-After` than the attempt policy honours becomes the wait instead.
  public var roundPolicy = RetryPolicy(baseDelay: .seconds(2), maxDelay: .seconds(900))
  /// How often the outbox is polled for due deliveries.
  public var pollInterval: Duration = .milliseconds(1000)
  /// Deliveries in flight at once on one node.
  public var concurrency = 8
  /// Alerts (deliveries to every channel but webhooks: ntfy, Web Push, email) an account receives per hour; past it a delivery is
  /// skipped, recorded as failed with the reason in its delivery log. 0 for no limit.
  public var alertsPerAccountPerHour = 60
  /// The `sub` of the VAPID JWT (RFC 8292): a `mailto:` or `https:` URL where push services can reach the operator.
  public var vapidSubject = "mailto:operator@meridian.invalid"
  /// The SMTP server through which `email` channels send; nil (the default) for none, and then no email channel can be
  /// registered.
  public var smtp: SMTPSettings?

  /// The defaults.
  public init() {}

  /// How long a claimed delivery stays leased: its whole round plus a margin, so that only a node that died loses it.
  public var leaseMilliseconds: Int64 {
    let deadline = attemptPolicy.deadline ?? .seconds(60)
    let parts = (deadline + attemptTimeout + .seconds(30)).components
    return parts.seconds * 1000 + parts.attoseconds / 1_000_000_000_000_000
  }

  /// Reads the `MERIDIAN_WEBHOOK_*`, `MERIDIAN_ALERTS_PER_HOUR`, `MERIDIAN_VAPID_SUBJECT` and `MERIDIAN_SMTP_*` variables.
  /// - Throws: ``ConfigurationError`` for a value out of range.
  mutating func read(_ environment: [String: String]) throws(ConfigurationError) {
    func number(_ name: String, minimum: Int64) throws(ConfigurationError) -> Int64? {
      guard let text = environment[name], !text.isEmpty else { return nil }
      guard let value = Int64(text), value >= minimum else {
        throw ConfigurationError(setting: name, value: text, reason: "must be a whole number ≥ \(minimum)")
      }
      return value
    }
    if let text = environment["MERIDIAN_WEBHOOK_ALLOW_PRIVATE"], !text.isEmpty {
      switch text.lowercased() {
      case "true", "1", "yes": allowPrivateAddresses = true
      case "false", "0", "no": allowPrivateAddresses = false
      default:
        throw ConfigurationError(
          setting: "MERIDIAN_WEBHOOK_ALLOW_PRIVATE", value: text, reason: "must be true or false")
      }
    }
    if let seconds = try number("MERIDIAN_WEBHOOK_ABANDON_AFTER", minimum: 1) {
      abandonAfterMilliseconds = seconds * 1000
    }
    if let seconds = try number("MERIDIAN_WEBHOOK_TIMEOUT", minimum: 1) { attemptTimeout = .seconds(seconds) }
    if let milliseconds = try number("MERIDIAN_WEBHOOK_POLL_MS", minimum: 10) {
      pollInterval = .milliseconds(milliseconds)
    }
    if let count = try number("MERIDIAN_WEBHOOK_CONCURRENCY", minimum: 1) { concurrency = Int(count) }
    if let count = try number("MERIDIAN_ALERTS_PER_HOUR", minimum: 0) { alertsPerAccountPerHour = Int(count) }
    if let subject = environment["MERIDIAN_VAPID_SUBJECT"], !subject.isEmpty {
      guard subject.hasPrefix("mailto:") || subject.hasPrefix("https://") else {
        throw ConfigurationError(
          setting: "MERIDIAN_VAPID_SUBJECT", value: subject, reason: "must be a mailto: or https: URL")
      }
      vapidSubject = subject
    }
    if let smtp = try SMTPSettings.read(environment) { self.smtp = smtp }
  }
}
