import AsyncHTTPClient
import Crypto
import DomainKit
import Foundation
import HTTPTypes
import Logging
import MeridianAPI
import MeridianSecrets
import MeridianStore
import NIOPosix
import NetworkingKit
import NetworkingKitAsyncHTTPClient
import ServiceLifecycle
import Synchronization

/// Delivers the webhook outbox: claims due deliveries under a lease, POSTs each one's exact body with its
/// `Idempotency-Key` and `Meridian-Signature`, through NetworkingKit (full-jitter retries, `Retry-After`, a per-host
/// retry budget) over AsyncHTTPClient, and records the outcome: delivered, due again after a backoff, or abandoned
/// once ``WebhookSettings/abandonAfterMilliseconds`` passed since the event was queued.
///
/// Before each delivery the URL's host is resolved once and every address checked (``WebhookAddressPolicy``); the
/// connection goes to the first checked address (IPv4 first), pinned with AsyncHTTPClient's `dnsOverride` (TLS still
/// verifies the host name), so a name that resolves elsewhere a moment later (DNS rebinding) can't redirect it.
///
/// On graceful shutdown it cancels what is in flight and releases its leases, so the next start (or another node)
/// delivers those at once; a node that dies loses its leases when they expire.
struct WebhookDeliveryService: Service {
  let store: any MeridianStore
  let outbox: WebhookOutbox
  let settings: WebhookSettings
  let logger: Logger
  let now: @Sendable () -> Int64
  /// This node's lease name.
  let lease = "node-" + UUID().uuidString.lowercased()
  /// One retry budget per receiving host, for this node.
  let budgets = RetryBudgets()
  /// Resolves host names for the address check; the system resolver unless replaced (tests).
  var resolver: (@Sendable (_ host: String) async throws -> [[UInt8]])? = nil

  func run() async throws {
    await cancelWhenGracefulShutdown { await loop() }
    do {
      try await store.releaseWebhookLeases(lease)
    } catch {
      logger.warning("could not release webhook leases", metadata: ["error": "\(error)"])
    }
  }

  /// Keeps up to ``WebhookSettings/concurrency`` deliveries in flight until cancelled.
  func loop() async {
    let inFlight = Counter()
    await withDiscardingTaskGroup { group in
      while !Task.isCancelled {
        let free = settings.concurrency - inFlight.value.withLock { $0 }
        var claims: [WebhookClaim] = []
        if free > 0 {
          do {
            claims = try await store.claimWebhookDeliveries(
              limit: free, lease: lease, leaseMilliseconds: settings.leaseMilliseconds, now: now())
          } catch  where !Task.isCancelled {
            logger.warning("could not claim webhook deliveries", metadata: ["error": "\(error)"])
          } catch {
            break
          }
        }
        for claim in claims {
          inFlight.value.withLock { $0 += 1 }
          group.addTask {
            await deliver(claim)
            inFlight.value.withLock { $0 -= 1 }
            outbox.wake()
          }
        }
        if claims.isEmpty || claims.count < free { await outbox.signal.wait(timeout: settings.pollInterval) }
      }
    }
  }

  /// One round of one delivery, its outcome recorded (unless cancelled: the lease is released at shutdown).
  func deliver(_ claim: WebhookClaim) async {
    var retryAfter: Duration?
    let failure: String
    do {
      if let refusal = try await quotaRefusal(claim) {
        // Logged (the delivery log keeps why), never sent and never dropped silently.
        try await record(claim, .failed(error: refusal))
        logger.info("alert skipped: quota", metadata: ["delivery": "\(claim.id)", "webhook": "\(claim.webhookID)"])
        return
      }
      let status = try await send(claim)
      try await record(claim, .delivered(status: status))
      logger.debug("webhook delivered", metadata: ["delivery": "\(claim.id)", "status": "\(status)"])
      return
    } catch is CancellationError {
      return
    } catch let gone as PushSubscriptionGone {
      // The browser unsubscribed (or the push service forgot it): the registration goes, with its deliveries.
      logger.info("push subscription gone", metadata: ["webhook": "\(claim.webhookID)", "status": "\(gone.status)"])
      do {
        _ = try await store.deleteWebhook(claim.webhookID)
        return
      } catch {
        failure = "\(gone); deleting it failed: \(error)"
      }
    } catch let error as APIError {
      failure = error.message
    } catch let error as NetworkingError {
      if Task.isCancelled { return }
      failure = "\(error)"
      retryAfter = error.retryAfter
    } catch {
      if Task.isCancelled { return }
      failure = "\(error)"
    }
    let now = now()
    let attempts = claim.attempts + 1
    var wait = settings.roundPolicy.backoff(afterAttempt: attempts, unit: Double.random(in: 0..<1))
    if let retryAfter { wait = retryAfter }
    let next = now + Self.milliseconds(wait)
    let outcome: WebhookOutcome =
      next - claim.createdAt > settings.abandonAfterMilliseconds
      ? .failed(error: "abandoned after \(attempts) rounds: \(failure)") : .retry(at: next, error: failure)
    logger.info(
      "webhook delivery failed",
      metadata: ["delivery": "\(claim.id)", "webhook": "\(claim.webhookID)", "error": "\(failure)"])
    try? await record(claim, outcome)
  }

  /// Why `claim` is not sent: its owner's alerts (every channel but webhooks) delivered in the last hour reached
  /// ``WebhookSettings/alertsPerAccountPerHour``; nil when it may go.
  func quotaRefusal(_ claim: WebhookClaim) async throws -> String? {
    let quota = settings.alertsPerAccountPerHour
    guard claim.channel != .webhook, claim.channel != .homeAssistant, quota > 0, let owner = claim.ownerID else {
      return nil
    }
    let delivered = try await store.deliveredAlertCount(owner: owner, since: now() - 3_600_000)
    guard delivered >= quota else { return nil }
    return "skipped (429 quota_exceeded): the account's \(quota) alerts an hour were already delivered"
  }

  private func record(_ claim: WebhookClaim, _ outcome: WebhookOutcome) async throws {
    if try await !store.finishWebhookDelivery(claim.id, lease: lease, outcome: outcome, now: now()) {
      logger.notice("webhook lease lost before its outcome was recorded", metadata: ["delivery": "\(claim.id)"])
    }
  }

  /// Checks the claim's URL on the addresses its host resolves to now (a host that was public when registered may
  /// point inward today), then POSTs its body once through NetworkingKit (its attempts and waits) to the first
  /// checked address; returns the 2xx status the receiver answered.
  func send(_ claim: WebhookClaim) async throws -> Int {
    if claim.channel == .email { return try await sendEmail(claim) }
    var policy = WebhookAddressPolicy(allowPrivateAddresses: settings.allowPrivateAddresses)
    if let resolver { policy.resolver = resolver }
    let addresses = try await policy.check(claim.url)
    let url = try WebhookAddressPolicy.parse(claim.url)
    let host = url.host ?? ""
    var configuration = AsyncHTTPClientTransport.makeConfiguration()
    configuration.redirectConfiguration = .disallow
    configuration.timeout.connect = .seconds(5)
    if WebhookAddressPolicy.literal(host) == nil, let address = addresses.first {
      configuration.dnsOverride = [host: WebhookAddressPolicy.format(address)]
    }
    let client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
    let result: Result<Int, any Error>
    do {
      result = .success(try await send(claim, url: url, through: AsyncHTTPClientTransport(client: client)))
    } catch {
      result = .failure(error)
    }
    try? await client.shutdown()
    return try result.get()
  }

  /// Sends the claim's ``AlertEmail`` through the operator's SMTP server within the round's deadline (the attempt
  /// policy's); returns the server's reply to the message (250).
  func sendEmail(_ claim: WebhookClaim) async throws -> Int {
    guard let smtp = settings.smtp else {
      throw SMTPError(step: "configuration", reason: "no SMTP server is configured (MERIDIAN_SMTP_HOST)")
    }
    let email = AlertEmail(
      envelope: claim.body, personName: await personName(in: claim), deliveryID: claim.id, from: smtp.sender,
      to: AlertEmail.address(ofURL: claim.url), now: now())
    let deadline = ContinuousClock.now + (settings.attemptPolicy.deadline ?? .seconds(60))
    return try await SMTPClient(settings: smtp, deadline: deadline).send(email)
  }

  /// POSTs the claim to `url` through `transport` as its channel says (``request(for:)``); returns the status of the
  /// answer.
  private func send(_ claim: WebhookClaim, url: URLComponents, through transport: AsyncHTTPClientTransport)
    async throws -> Int
  {
    let (body, contentType, fields, userAgent) = try await request(for: claim, url: url)
    guard let request = OutboundRequest(url: url, method: .post, contentType: contentType, accept: nil) else {
      throw APIError(
        status: 422, code: .webhookURLInvalid,
        message: "The webhook URL \(QuotedValue.quote("\(claim.url)")) is not valid.")
    }
    var configuration = OutboundRequest.configuration(
      userAgent: userAgent, retryPolicy: settings.attemptPolicy, attemptTimeout: settings.attemptTimeout,
      budgets: budgets)
    let logger = self.logger
    let lastStatus = Mutex<Int?>(nil)
    configuration.onAttempt = { event in
      if case .status(let code) = event.outcome { lastStatus.withLock { $0 = code } }
      logger.debug("webhook attempt", metadata: ["delivery": "\(claim.id)", "attempt": "\(event)"])
    }
    let client = try NetworkClient(baseURL: request.base, transport: transport, configuration: configuration)
    do {
      _ = try await client.send(
        request.endpoint, body: body, headerFields: fields, idempotencyKey: claim.idempotencyKey)
    } catch {
      if claim.channel == .webpush, let status = lastStatus.withLock({ $0 }), status == 404 || status == 410 {
        throw PushSubscriptionGone(status: status)
      }
      throw error
    }
    // NetworkingKit reports every answer's status; a success without one is not taken for a 200.
    guard let status = lastStatus.withLock({ $0 }) else {
      throw APIError(status: 502, code: .internal, message: "The receiver's answer carried no HTTP status.")
    }
    return status
  }

  /// What a claim's channel sends: a webhook the event's exact JSON, signed (`Meridian-Signature`); an ntfy topic the
  /// ``AlertMessage`` text with `Title`, `Tags` and `Priority`, and `Authorization: Bearer` when it has a token; a
  /// push service the message as JSON encrypted for the browser (``WebPush``), with a VAPID `Authorization`; Home
  /// Assistant the `device_tracker.see` call's data with `Authorization: Bearer`. (An email goes over SMTP:
  /// ``sendEmail(_:)``.)
  func request(for claim: WebhookClaim, url: URLComponents) async throws -> (
    body: Data, contentType: String, fields: HTTPFields, userAgent: String
  ) {
    var fields = HTTPFields()
    fields[HTTPField.Name("Meridian-Event")!] = claim.kind
    fields[HTTPField.Name("Meridian-Delivery")!] = claim.id
    switch claim.channel {
    case .webhook:
      fields[HTTPField.Name(WebhookSignature.headerName)!] = WebhookSignature.header(
        secret: claim.secret, timestamp: now() / 1000, body: claim.body)
      return (claim.body, "application/json", fields, "Meridian-Webhooks/1")
    case .ntfy:
      let message = AlertMessage(envelope: claim.body, personName: await personName(in: claim))
      fields[HTTPField.Name("Title")!] = AlertMessage.headerValue(message.title)
      fields[HTTPField.Name("Tags")!] = message.tags.joined(separator: ",")
      fields[HTTPField.Name("Priority")!] = String(message.priority)
      if !claim.secret.isEmpty { fields[.authorization] = "Bearer " + claim.secret }
      return (Data(message.text.utf8), "text/plain; charset=utf-8", fields, "Meridian-Alerts/1")
    case .webpush:
      // Only what RFC 8030 asks: the push service sees no event kind or id, which travel inside the ciphertext.
      var push = HTTPFields()
      let keys = try WebPush.Keys(stored: claim.secret)
      let message = AlertMessage(envelope: claim.body, personName: await personName(in: claim))
      let payload = WebPush.payload(of: message, kind: claim.kind, id: claim.idempotencyKey)
      push[.authorization] = try WebPush.authorization(
        endpoint: url, key: try await WebPush.key(store), subject: settings.vapidSubject, now: now())
      push[.contentEncoding] = "aes128gcm"
      push[HTTPField.Name("TTL")!] = "86400"
      push[HTTPField.Name("Urgency")!] = "high"
      return (try WebPush.encrypt(payload, for: keys), "application/octet-stream", push, "Meridian-Alerts/1")
    case .homeAssistant:
      // The service call's data is the event's own (``HomeAssistantFeed``), with the instance's access token.
      fields[.authorization] = "Bearer " + claim.secret
      return (try HomeAssistantFeed.serviceData(envelope: claim.body), "application/json", fields, "Meridian-HA/1")
    case .email:
      throw SMTPError(step: "request", reason: "an email channel is sent over SMTP (sendEmail), not HTTP")
    }
  }

  /// The name a person's alert (ntfy, Web Push, email) gives the person the claim's event is about: their full name
  /// when the registration's owner may see it now (their own, or a sharer's who shows it to them; an operator-wide
  /// registration sees every name), else nil — the alert then says "Someone", never the person's id. A name is a
  /// nicety: a store that fails here leaves it out rather than holding the alert back.
  func personName(in claim: WebhookClaim) async -> String? {
    guard let id = AlertMessage.personID(envelope: claim.body) else { return nil }
    let person = UserID(id)
    do {
      if let owner = claim.ownerID, owner != id {
        guard let settings = try await store.privacySettings(owner: person),
          Sharing.canSee(UserID(owner), .field(.fullName), of: settings, at: now())
        else { return nil }
      }
      return try await store.profile(person)?.fullName
    } catch {
      return nil
    }
  }

  /// A count shared with the delivery tasks.
  final class Counter: Sendable {
    let value = Mutex(0)
  }

  static func milliseconds(_ duration: Duration) -> Int64 {
    let parts = duration.components
    return parts.seconds * 1000 + parts.attoseconds / 1_000_000_000_000_000
  }
}
