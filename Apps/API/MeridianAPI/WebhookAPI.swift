import Foundation
import NetworkingKit

extension API {
  // MARK: Webhooks

  /// `GET /v1/webhooks`: the caller's webhook registrations (never their secrets).
  public static let webhooks = Endpoint<Void, NoBody, WebhookList>(.get, "/v1/webhooks")
  /// `POST /v1/webhooks {url, events, enabled}` → 201 with the registration and its signing secret, shown only
  /// this once. `422 webhook_url_invalid` for a URL that isn't http(s) with a host, `422 webhook_address_forbidden`
  /// for a loopback, private, link-local or metadata address (unless the operator allows private addresses).
  public static let createWebhook = Endpoint<Void, NewWebhook, CreatedWebhook>(.post, "/v1/webhooks")
  /// `GET /v1/webhooks/{id}`: one of the caller's registrations.
  public static let webhook = Endpoint<WebhookRef, NoBody, Webhook>(.get, "/v1/webhooks/\(\.id, "id")")
  /// `PATCH /v1/webhooks/{id} {url?, events?, enabled?}` → the registration.
  public static let updateWebhook = Endpoint<WebhookRef, WebhookUpdate, Webhook>(
    .patch, "/v1/webhooks/\(\.id, "id")")
  /// `DELETE /v1/webhooks/{id}` → 204, with the deliveries still queued for it.
  public static let deleteWebhook = Endpoint<WebhookRef, NoBody, NoContent>(
    .delete, "/v1/webhooks/\(\.id, "id")", body: .none, response: .empty)
  /// `POST /v1/webhooks/{id}/test` → 202: queues a `webhook.test` event for this registration only.
  public static let testWebhook = Endpoint<WebhookRef, NoBody, WebhookTestReceipt>(
    .post, "/v1/webhooks/\(\.id, "id")/test")
  /// `GET /v1/webhooks/{id}/deliveries`: the registration's delivery log, newest first (at most 100): each delivery's
  /// state, attempts and last error — a delivery skipped because the account's alert quota was reached is `failed`
  /// with an error that says so.
  public static let webhookDeliveries = Endpoint<WebhookRef, NoBody, WebhookDeliveryLog>(
    .get, "/v1/webhooks/\(\.id, "id")/deliveries")

  /// The webhook endpoints, for ``all``.
  static let webhookEndpoints: [EndpointDescriptor] = [
    webhooks.descriptor, createWebhook.descriptor, webhook.descriptor, updateWebhook.descriptor,
    deleteWebhook.descriptor, testWebhook.descriptor, webhookDeliveries.descriptor, vapidPublicKey.descriptor,
    pushSubscriptions.descriptor, createPushSubscription.descriptor, deletePushSubscription.descriptor,
  ]

  // MARK: Web Push

  /// `GET /v1/push/vapid-public-key`: the server's VAPID public key, for `pushManager.subscribe`'s
  /// `applicationServerKey`.
  public static let vapidPublicKey = Endpoint<Void, NoBody, VAPIDPublicKey>(.get, "/v1/push/vapid-public-key")
  /// `GET /v1/push/subscriptions`: the caller's Web Push subscriptions (registrations of channel `webpush`).
  public static let pushSubscriptions = Endpoint<Void, NoBody, WebhookList>(.get, "/v1/push/subscriptions")
  /// `POST /v1/push/subscriptions {endpoint, keys: {p256dh, auth}, events?}` → 201 with the registration (channel
  /// `webpush`, `url` the endpoint); a subscription of the same endpoint replaces the caller's earlier one.
  /// `422 invalid_request` for keys that aren't a P-256 point and 16 bytes in base64url, the endpoint as a webhook URL.
  public static let createPushSubscription = Endpoint<Void, NewPushSubscription, Webhook>(
    .post, "/v1/push/subscriptions")
  /// `DELETE /v1/push/subscriptions/{id}` → 204.
  public static let deletePushSubscription = Endpoint<WebhookRef, NoBody, NoContent>(
    .delete, "/v1/push/subscriptions/\(\.id, "id")", body: .none, response: .empty)
}

/// A webhook's id in a path.
public struct WebhookRef: RouteParameters, Hashable {
  /// The registration's id.
  public var id: String
  /// A reference.
  public init(id: String) { self.id = id }
  /// Reads `{id}`.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    id = try path.required("id")
  }
}

/// How a registration's events reach their receiver: the same durable outbox (retries, back-off, abandonment, the
/// delivery log) for every kind, a different request per kind.
public enum AlertChannel: String, Codable, Sendable, Hashable, CaseIterable {
  /// A signed JSON POST (`Meridian-Signature`), for programs.
  case webhook
  /// An ntfy-style publish: a short text POSTed to a topic URL with `Title`, `Tags` and `Priority` headers and, when
  /// the registration has one, `Authorization: Bearer <token>` — for people's phones (ntfy.sh or a self-hosted ntfy).
  /// At most `MERIDIAN_ALERTS_PER_HOUR` of an account's alerts an hour are sent; the rest are logged as skipped.
  case ntfy
  /// A Web Push subscription (RFC 8030) a page registered: a JSON notification `{"title","body","tags","kind","id"}`
  /// encrypted for the browser (RFC 8291 `aes128gcm`) and POSTed to its push service with a VAPID JWT (RFC 8292). A
  /// subscription the push service answers 404 or 410 is deleted.
  case webpush
  /// An email over the operator's SMTP server (`MERIDIAN_SMTP_*`; STARTTLS when offered) to the registration's
  /// `mailto:` address: a plain-text message saying who arrived at or left which place, and when. Counted in
  /// `MERIDIAN_ALERTS_PER_HOUR` like the other alerts; a refusal (4xx or 5xx) is retried like a failed POST.
  case email
  /// A Home Assistant instance (`url` its base, e.g. `http://homeassistant.local:8123`, `token` a long-lived access
  /// token): each new position of a person the registration's owner may see (and the owner's own) is sent as a call
  /// of the `device_tracker.see` service — `POST <url>/api/services/device_tracker/see` with `Authorization: Bearer
  /// <token>` and `{"dev_id":"meridian_<id>","gps":[lat,lon],"gps_accuracy":m,"battery":%,"host_name":name}` — so
  /// each person is a `device_tracker.meridian_<id>` entity. Receives only `location` events; not counted in
  /// `MERIDIAN_ALERTS_PER_HOUR`.
  case homeAssistant = "homeassistant"
}

/// A webhook registration as the API shows it (its secret is shown only at creation).
public struct Webhook: Codable, Sendable, Hashable {
  /// The id.
  public var id: String
  /// The owner; nil for an operator-wide registration, which receives every person's events.
  public var ownerID: String?
  /// Where events are POSTed.
  public var url: String
  /// The event kinds it receives (e.g. `geofence.enter`); empty for every kind.
  public var events: [String]
  /// Whether deliveries are made.
  public var enabled: Bool
  /// Creation time, UTC milliseconds.
  public var createdAt: Int64
  /// Last change, UTC milliseconds.
  public var updatedAt: Int64
  /// How its events are sent; `webhook` when absent (registrations made before channels existed).
  public var channel: AlertChannel

  /// A registration.
  public init(
    id: String, ownerID: String?, url: String, events: [String], enabled: Bool, createdAt: Int64, updatedAt: Int64,
    channel: AlertChannel = .webhook
  ) {
    self.id = id
    self.ownerID = ownerID
    self.url = url
    self.events = events
    self.enabled = enabled
    self.createdAt = createdAt
    self.updatedAt = updatedAt
    self.channel = channel
  }

  private enum CodingKeys: String, CodingKey {
    case id, ownerID, url, events, enabled, createdAt, updatedAt, channel
  }

  /// Decodes a registration; a missing `channel` is `webhook`.
  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    id = try container.decode(String.self, forKey: .id)
    ownerID = try container.decodeIfPresent(String.self, forKey: .ownerID)
    url = try container.decode(String.self, forKey: .url)
    events = try container.decode([String].self, forKey: .events)
    enabled = try container.decode(Bool.self, forKey: .enabled)
    createdAt = try container.decode(Int64.self, forKey: .createdAt)
    updatedAt = try container.decode(Int64.self, forKey: .updatedAt)
    channel = try container.decodeIfPresent(AlertChannel.self, forKey: .channel) ?? .webhook
  }

  /// Whether it receives events of `kind` (the test event reaches every registration).
  public func wants(_ kind: String) -> Bool { events.isEmpty || events.contains(kind) }
}

/// `POST /v1/webhooks` body.
public struct NewWebhook: Codable, Sendable, Hashable {
  /// An `http` or `https` URL; for an `email` channel, the recipient as `mailto:name@example.com` (or the bare
  /// address), kept as its `mailto:` URL.
  public var url: String
  /// Event kinds; omitted or empty for every kind.
  public var events: [String]?
  /// Enabled unless false.
  public var enabled: Bool?
  /// How events are sent; `webhook` unless given.
  public var channel: AlertChannel?
  /// For an `ntfy` channel, the access token sent as `Authorization: Bearer <token>` (printable ASCII, at most 512
  /// bytes); for a `homeassistant` channel, required: a long-lived access token of that instance (at most 512 bytes);
  /// refused for a webhook, whose secret the server makes.
  public var token: String?
  /// A body.
  public init(
    url: String, events: [String]? = nil, enabled: Bool? = nil, channel: AlertChannel? = nil, token: String? = nil
  ) {
    self.url = url
    self.events = events
    self.enabled = enabled
    self.channel = channel
    self.token = token
  }
}

/// `PATCH /v1/webhooks/{id}` body: the fields to change.
public struct WebhookUpdate: Codable, Sendable, Hashable {
  /// A new URL.
  public var url: String?
  /// New event kinds (empty for every kind).
  public var events: [String]?
  /// Enable or disable.
  public var enabled: Bool?
  /// A body.
  public init(url: String? = nil, events: [String]? = nil, enabled: Bool? = nil) {
    self.url = url
    self.events = events
    self.enabled = enabled
  }
}

/// A new registration with its signing secret, shown only this once.
public struct CreatedWebhook: Codable, Sendable, Hashable {
  /// The registration.
  public var webhook: Webhook
  /// The HMAC-SHA256 key of the `Meridian-Signature` header (`whsec_` and 64 hex digits); empty for an `ntfy`
  /// channel (its token is the caller's own and is never shown again).
  public var secret: String
  /// A created webhook.
  public init(webhook: Webhook, secret: String) {
    self.webhook = webhook
    self.secret = secret
  }
}

/// `GET /v1/webhooks`.
public struct WebhookList: Codable, Sendable, Hashable {
  /// The registrations, oldest first.
  public var items: [Webhook]
  /// A list.
  public init(items: [Webhook]) { self.items = items }
}

/// `POST /v1/webhooks/{id}/test` answer.
public struct WebhookTestReceipt: Codable, Sendable, Hashable {
  /// The `Idempotency-Key` the delivery carries.
  public var idempotencyKey: String
  /// A receipt.
  public init(idempotencyKey: String) { self.idempotencyKey = idempotencyKey }
}

/// `GET /v1/push/vapid-public-key`.
public struct VAPIDPublicKey: Codable, Sendable, Hashable {
  /// The uncompressed P-256 point (65 bytes), base64url without padding.
  public var publicKey: String
  /// A key.
  public init(publicKey: String) { self.publicKey = publicKey }
}

/// `POST /v1/push/subscriptions`: a browser's `PushSubscription.toJSON()`, and optionally the event kinds.
public struct NewPushSubscription: Codable, Sendable, Hashable {
  /// The subscription's keys.
  public struct Keys: Codable, Sendable, Hashable {
    /// The browser's P-256 public key, base64url (65 bytes uncompressed).
    public var p256dh: String
    /// The authentication secret, base64url (16 bytes).
    public var auth: String
    /// Keys.
    public init(p256dh: String, auth: String) {
      self.p256dh = p256dh
      self.auth = auth
    }
  }
  /// The push service's URL for this browser.
  public var endpoint: String
  /// The keys.
  public var keys: Keys
  /// Event kinds; omitted or empty for every kind.
  public var events: [String]?
  /// A body.
  public init(endpoint: String, keys: Keys, events: [String]? = nil) {
    self.endpoint = endpoint
    self.keys = keys
    self.events = events
  }
}

/// `GET /v1/webhooks/{id}/deliveries`: a registration's delivery log.
public struct WebhookDeliveryLog: Codable, Sendable, Hashable {
  /// The deliveries, newest first.
  public var items: [WebhookDelivery]
  /// A log.
  public init(items: [WebhookDelivery]) { self.items = items }
}

/// Where a delivery stands.
public enum WebhookDeliveryState: String, Sendable, Hashable, Codable, CaseIterable {
  /// Queued or waiting for its next attempt.
  case pending
  /// The receiver accepted it.
  case delivered
  /// Abandoned (or refused for good); `meridian-admin webhooks retry` queues it again.
  case failed
}

/// One delivery of one event to one registration (the outbox's row): for operators (`meridian-admin webhooks
/// deliveries`) and the registration's owner (`GET /v1/webhooks/{id}/deliveries`). A delivery skipped because the
/// account's alert quota was reached is ``WebhookDeliveryState/failed`` with a ``lastError`` that says so.
public struct WebhookDelivery: Sendable, Hashable, Codable {
  /// Its id.
  public var id: String
  /// Its registration.
  public var webhookID: String
  /// The event kind.
  public var kind: String
  /// The `Idempotency-Key`.
  public var idempotencyKey: String
  /// Its state.
  public var state: WebhookDeliveryState
  /// Attempts made.
  public var attempts: Int
  /// When queued, UTC milliseconds.
  public var createdAt: Int64
  /// When next due (pending).
  public var nextAttemptAt: Int64
  /// When delivered.
  public var deliveredAt: Int64?
  /// The last failure.
  public var lastError: String?

  /// A delivery.
  public init(
    id: String, webhookID: String, kind: String, idempotencyKey: String, state: WebhookDeliveryState, attempts: Int,
    createdAt: Int64, nextAttemptAt: Int64, deliveredAt: Int64?, lastError: String?
  ) {
    self.id = id
    self.webhookID = webhookID
    self.kind = kind
    self.idempotencyKey = idempotencyKey
    self.state = state
    self.attempts = attempts
    self.createdAt = createdAt
    self.nextAttemptAt = nextAttemptAt
    self.deliveredAt = deliveredAt
    self.lastError = lastError
  }
}
