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

  /// The webhook endpoints, for ``all``.
  static let webhookEndpoints: [EndpointDescriptor] = [
    webhooks.descriptor, createWebhook.descriptor, webhook.descriptor, updateWebhook.descriptor,
    deleteWebhook.descriptor, testWebhook.descriptor,
  ]
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

  /// A registration.
  public init(
    id: String, ownerID: String?, url: String, events: [String], enabled: Bool, createdAt: Int64, updatedAt: Int64
  ) {
    self.id = id
    self.ownerID = ownerID
    self.url = url
    self.events = events
    self.enabled = enabled
    self.createdAt = createdAt
    self.updatedAt = updatedAt
  }

  /// Whether it receives events of `kind` (the test event reaches every registration).
  public func wants(_ kind: String) -> Bool { events.isEmpty || events.contains(kind) }
}

/// `POST /v1/webhooks` body.
public struct NewWebhook: Codable, Sendable, Hashable {
  /// An `http` or `https` URL.
  public var url: String
  /// Event kinds; omitted or empty for every kind.
  public var events: [String]?
  /// Enabled unless false.
  public var enabled: Bool?
  /// A body.
  public init(url: String, events: [String]? = nil, enabled: Bool? = nil) {
    self.url = url
    self.events = events
    self.enabled = enabled
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
  /// The HMAC-SHA256 key of the `Meridian-Signature` header (`whsec_` and 64 hex digits).
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
