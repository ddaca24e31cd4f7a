import DomainKit
import Foundation
import MeridianAPI
import MeridianSecrets
import MeridianStore
import NetworkingKit

/// A person's webhook registrations (`/v1/webhooks`) and their test event. Operator-wide registrations are made
/// with `meridian-admin webhooks create`; they are not listed here.
struct WebhookFeature: Sendable {
  let environment: ServerEnvironment
  let settings: WebhookSettings
  /// Test events per account per minute (``ServerLimits/webhookTestsPerAccountPerMinute``).
  let testLimiter: RateLimiter
  var store: any MeridianStore { environment.store }

  init(environment: ServerEnvironment, settings: WebhookSettings) {
    self.environment = environment
    self.settings = settings
    // Counted where the other limits are: in memory on SQLite, in the database every node shares on PostgreSQL.
    self.testLimiter = RateLimiter(
      limit: environment.limits.webhookTestsPerAccountPerMinute, window: 60_000,
      counters: .of(environment.store.sharedLimits, purpose: "webhook-tests.account"))
  }

  /// Registers the routes of the webhook endpoints.
  func register(on routes: RouteRegistrar) {
    let policy = WebhookAddressPolicy(allowPrivateAddresses: settings.allowPrivateAddresses)
    registerPush(on: routes, policy: policy)
    routes.on(API.webhooks) { call in
      WebhookList(items: try await store.webhooks(.user(try call.authenticated())))
    }
    routes.on(API.createWebhook, status: .created) { call in
      let user = try call.authenticated()
      let channel = call.body.channel ?? .webhook
      // A Home Assistant instance takes positions only.
      let events =
        channel == .homeAssistant ? [HomeAssistantFeed.kind] : try Self.events(call.body.events ?? [])
      guard channel != .webpush else {
        throw APIError(
          status: 422, code: .invalidRequest,
          message: "A Web Push subscription is registered with POST /v1/push/subscriptions (endpoint and keys).")
      }
      let url = try await checkedURL(call.body.url, of: channel, policy: policy)
      try await checkRoom(for: user)
      let token = try Self.token(call.body.token, for: channel)
      if channel == .homeAssistant && token == nil {
        throw APIError(
          status: 422, code: .invalidRequest,
          message: "A homeassistant channel needs token: a long-lived access token of the Home Assistant instance.")
      }
      let now = environment.now()
      let webhook = Webhook(
        id: "wh_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: ""), ownerID: user.rawValue,
        url: url, events: events, enabled: call.body.enabled ?? true, createdAt: now, updatedAt: now,
        channel: channel)
      // A webhook's signing secret is made here and shown once; an ntfy topic's token is the caller's own, kept to
      // send and never shown again.
      let secret = channel == .webhook ? WebhookSignature.makeSecret() : token ?? ""
      let created = try await store.createWebhook(webhook, secret: secret)
      if channel == .homeAssistant { environment.webhooks.homeAssistantTargets.removeAll { _ in true } }
      return CreatedWebhook(webhook: created, secret: channel == .webhook ? secret : "")
    }
    routes.on(API.webhook) { call in
      try await owned(call.parameters.id, by: try call.authenticated())
    }
    routes.on(API.updateWebhook) { call in
      let webhook = try await owned(call.parameters.id, by: try call.authenticated())
      var update = call.body
      if let events = update.events {
        update.events = webhook.channel == .homeAssistant ? [HomeAssistantFeed.kind] : try Self.events(events)
      }
      if let url = update.url { update.url = try await checkedURL(url, of: webhook.channel, policy: policy) }
      guard let updated = try await store.updateWebhook(webhook.id, update, now: environment.now()) else {
        throw Self.notFound
      }
      environment.webhooks.homeAssistantTargets.removeAll { _ in true }
      return updated
    }
    routes.on(API.deleteWebhook, status: .noContent) { call in
      let webhook = try await owned(call.parameters.id, by: try call.authenticated())
      guard try await store.deleteWebhook(webhook.id) else { throw Self.notFound }
      environment.webhooks.homeAssistantTargets.removeAll { _ in true }
      return NoContent()
    }
    routes.on(API.webhookDeliveries) { call in
      let webhook = try await owned(call.parameters.id, by: try call.authenticated())
      return WebhookDeliveryLog(items: try await store.webhookDeliveries(webhook: webhook.id, state: nil, limit: 100))
    }
    routes.on(API.testWebhook, status: .accepted) { call in
      let user = try call.authenticated()
      let webhook = try await owned(call.parameters.id, by: user)
      let now = environment.now()
      if let wait = await testLimiter.take(user.rawValue, cost: 1, now: now) {
        throw APIError.rateLimited(
          "At most \(testLimiter.limit) test events a minute; wait \((wait + 999) / 1000) s.",
          retryAfterMilliseconds: wait)
      }
      let key = "test_" + UUID().uuidString.lowercased()
      let payload = Data(#"{"message":"A test event from Meridian.","webhookId":"\#(webhook.id)"}"#.utf8)
      try await environment.webhooks.enqueue(
        WebhookEvent(
          kind: WebhookEvent.testKind, userID: user, payload: payload, idempotencyKey: key, occurredAt: now,
          queuedAt: now,
          target: webhook.id))
      return WebhookTestReceipt(idempotencyKey: key)
    }
  }

  static let notFound = APIError.notFound("You have no webhook with this id.")

  /// `url` checked as its channel's address: an email channel's recipient (``AlertEmail/recipientURL(_:)``, as its
  /// `mailto:` URL; refused while the server has no SMTP server), else an HTTP URL the address policy allows.
  /// - Throws: ``APIError`` `400 invalid_email`, `422 invalid_request`, `422 webhook_url_invalid` or
  ///   `422 webhook_address_forbidden`.
  func checkedURL(_ url: String, of channel: AlertChannel, policy: WebhookAddressPolicy) async throws -> String {
    if channel == .homeAssistant {
      let service = HomeAssistantFeed.serviceURL(url)
      try await policy.check(service)
      return service
    }
    guard channel == .email else {
      try await policy.check(url)
      return url
    }
    guard settings.smtp != nil else {
      throw APIError(
        status: 422, code: .invalidRequest,
        message: "This server sends no email alerts: its operator has configured no SMTP server.")
    }
    return try AlertEmail.recipientURL(url)
  }

  /// Throws `409 quota_exceeded` when `owner` has as many webhooks as ``ServerLimits/webhooksPerAccount`` allows.
  func checkRoom(for owner: UserID) async throws {
    guard let limit = ServerLimits.active(environment.limits.webhooksPerAccount) else { return }
    let count = try await store.webhooks(.user(owner)).count
    guard count < limit else {
      throw APIError(
        status: 409, code: .quotaExceeded,
        message: "You have \(count) webhooks, the most allowed; delete one to register another.")
    }
  }

  /// The caller's registration `id`; another person's is reported as missing.
  func owned(_ id: String, by user: UserID) async throws -> Webhook {
    guard let webhook = try await store.webhook(id), webhook.ownerID == user.rawValue else { throw Self.notFound }
    return webhook
  }

  /// The bearer token of an ntfy or Home Assistant channel, checked: 1…512 printable ASCII characters; none for a
  /// webhook.
  /// - Throws: ``APIError`` `422 invalid_request`.
  static func token(_ token: String?, for channel: AlertChannel) throws(APIError) -> String? {
    guard let token else { return nil }
    guard channel == .ntfy || channel == .homeAssistant else {
      throw APIError(
        status: 422, code: .invalidRequest,
        message:
          "A token is only for an ntfy or homeassistant channel; a webhook's signing secret is made by the server.")
    }
    guard !token.isEmpty, token.utf8.count <= 512, token.unicodeScalars.allSatisfy({ (0x21...0x7e).contains($0.value) })
    else {
      throw APIError(
        status: 422, code: .invalidRequest,
        message: "token must be 1 to 512 printable ASCII characters without spaces.")
    }
    return token
  }

  /// Event kinds, checked: at most 50, each 1…64 characters of letters, digits, `.`, `_` and `-`.
  static func events(_ kinds: [String]) throws(APIError) -> [String] {
    let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
    guard kinds.count <= 50,
      kinds.allSatisfy({ !$0.isEmpty && $0.count <= 64 && $0.allSatisfy(allowed.contains) })
    else {
      throw APIError(
        status: 422, code: .invalidRequest,
        message: "events must be at most 50 kinds, each 1 to 64 letters, digits, '.', '_' or '-'.")
    }
    return Array(Set(kinds)).sorted()
  }
}
