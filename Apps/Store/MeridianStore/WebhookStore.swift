import DomainKit
import Foundation
import MeridianAPI

/// The webhook outbox's primitives in one transaction (``StoreTransaction``).
public protocol WebhookOutboxTransaction: Sendable {
  /// The registrations that may receive `event`: its ``WebhookEvent/target``, or the enabled ones of its user and
  /// the operator-wide ones (``WebhookEvent/recipients(_:)`` decides among them).
  func webhookCandidates(for event: WebhookEvent) async throws -> [Webhook]
  /// Queues one delivery `id` of `event` (its JSON `body`) to `webhook`, due at ``WebhookEvent/queuedAt``; false
  /// (nothing changed) when that registration has one with the event's idempotency key.
  func insertWebhookDelivery(id: String, of event: WebhookEvent, body: Data, to webhook: String) async throws -> Bool
}

extension WebhookOutboxTransaction {
  /// Queues `event` in this transaction for every registration that wants it (see
  /// ``WebhookStore/enqueueWebhookEvent(_:)``): its deliveries commit with what the transaction stores, or not at all.
  /// Returns how many deliveries were queued.
  /// - Throws: ``WebhookStoreError/invalidPayload`` when the payload isn't JSON.
  @discardableResult
  public func enqueueWebhookEvent(_ event: WebhookEvent) async throws -> Int {
    let body = try event.body()
    var queued = 0
    for recipient in event.recipients(try await webhookCandidates(for: event)) {
      let id = UUID().uuidString.lowercased()
      if try await insertWebhookDelivery(id: id, of: event, body: body, to: recipient.id) { queued += 1 }
    }
    return queued
  }
}

extension WebhookStore where Self: StoreTransactions {
  @discardableResult
  public func enqueueWebhookEvent(_ event: WebhookEvent) async throws -> Int {
    try await write { tx in try await tx.enqueueWebhookEvent(event) }
  }
}

/// Webhook registrations and their durable outbox.
///
/// A feature records an event with ``enqueueWebhookEvent(_:)``, or with
/// ``WebhookOutboxTransaction/enqueueWebhookEvent(_:)`` inside the ``StoreTransactions/write(_:)`` that stores what the
/// event is about, so the two commit together: one delivery per registration that wants it
/// (the event owner's own and every operator-wide one), at most one per registration and idempotency key, so
/// enqueueing an event again changes nothing. The server's delivery service claims due deliveries under a lease
/// (several nodes never hold the same one: `FOR UPDATE SKIP LOCKED` on PostgreSQL), and records each outcome.
public protocol WebhookStore: Sendable {
  // MARK: Registrations

  /// Stores a new registration with its signing secret.
  func createWebhook(_ webhook: Webhook, secret: String) async throws -> Webhook
  /// One registration, nil when there is none.
  func webhook(_ id: String) async throws -> Webhook?
  /// The registrations of `scope`, oldest first.
  func webhooks(_ scope: WebhookScope) async throws -> [Webhook]
  /// Changes the given fields; nil when there is no such registration.
  func updateWebhook(_ id: String, _ update: WebhookUpdate, now: Int64) async throws -> Webhook?
  /// Deletes a registration with its queued deliveries; false when there was none.
  func deleteWebhook(_ id: String) async throws -> Bool

  // MARK: Outbox

  /// Queues `event` for every enabled registration that wants it (the test kind only for ``WebhookEvent/target``),
  /// due at once and queued at ``WebhookEvent/queuedAt`` (the abandon clock starts there, not at the event's own
  /// time); returns how many deliveries were queued (0 for an event queued before with the same key).
  @discardableResult
  func enqueueWebhookEvent(_ event: WebhookEvent) async throws -> Int
  /// Leases up to `limit` due deliveries (`nextAttemptAt ≤ now`, no live lease, enabled registration) to `lease`
  /// until `now + leaseMilliseconds`, oldest first.
  func claimWebhookDeliveries(limit: Int, lease: String, leaseMilliseconds: Int64, now: Int64) async throws
    -> [WebhookClaim]
  /// Records the outcome of a leased delivery; false when the lease was lost (expired and taken by another node).
  func finishWebhookDelivery(_ id: String, lease: String, outcome: WebhookOutcome, now: Int64) async throws -> Bool
  /// Drops every lease `lease` holds (a node that shuts down), so others claim those deliveries at once.
  func releaseWebhookLeases(_ lease: String) async throws
  /// Deliveries, newest first: of one registration or all, in one state or all.
  func webhookDeliveries(webhook: String?, state: WebhookDeliveryState?, limit: Int) async throws
    -> [WebhookDelivery]
  /// Queues failed deliveries again (of one registration, or one delivery by id), due now; returns how many.
  func retryWebhookDeliveries(webhook: String?, delivery: String?, now: Int64) async throws -> Int
  /// How many deliveries to `owner`'s registrations of a channel other than ``AlertChannel/webhook`` and
  /// ``AlertChannel/homeAssistant`` (positions, not alerts) were delivered
  /// at or after `since` (UTC milliseconds): what the per-account alert quota counts.
  func deliveredAlertCount(owner: String, since: Int64) async throws -> Int
}

/// Whose registrations.
public enum WebhookScope: Sendable, Hashable {
  /// One person's.
  case user(UserID)
  /// The operator-wide ones.
  case operatorWide
  /// Every registration.
  case all
}

/// An event for the outbox.
public struct WebhookEvent: Sendable, Hashable {
  /// The kind of event a test delivery has; it reaches only its ``target``.
  public static let testKind = "webhook.test"

  /// The kind, e.g. `geofence.enter`.
  public var kind: String
  /// The person it is about (their own registrations receive it); nil for an event only operators receive.
  public var userID: UserID?
  /// The event's JSON (an object), sent as the envelope's `data`.
  public var payload: Data
  /// The key that makes it one event: the `Idempotency-Key` header of its deliveries.
  public var idempotencyKey: String
  /// When it happened, UTC milliseconds, as the event says (a fix's time, which a device's clock may put ahead of the
  /// server's): only the body's `occurredAt`.
  public var occurredAt: Int64
  /// When it is queued, UTC milliseconds of the server's clock: its deliveries are due from then, and are abandoned
  /// counting from then.
  public var queuedAt: Int64
  /// Only this registration (a test event), instead of every one that wants the kind.
  public var target: String?

  /// An event.
  public init(
    kind: String, userID: UserID?, payload: Data, idempotencyKey: String, occurredAt: Int64, queuedAt: Int64,
    target: String? = nil
  ) {
    self.kind = kind
    self.userID = userID
    self.payload = payload
    self.idempotencyKey = idempotencyKey
    self.occurredAt = occurredAt
    self.queuedAt = queuedAt
    self.target = target
  }

  /// The exact bytes every delivery sends (and signs):
  /// `{"id":key,"kind":kind,"userId":user|null,"occurredAt":ms,"data":payload}`.
  /// - Throws: ``WebhookStoreError/invalidPayload`` when the payload isn't JSON.
  public func body() throws(WebhookStoreError) -> Data {
    guard (try? JSONSerialization.jsonObject(with: payload, options: [.fragmentsAllowed])) != nil else {
      throw .invalidPayload
    }
    func quoted(_ text: String) -> String {
      // A JSON string: the encoder of a one-element array, without its brackets.
      let data = (try? JSONEncoder().encode([text])) ?? Data("[\"\"]".utf8)
      return String(decoding: data.dropFirst().dropLast(), as: UTF8.self)
    }
    var body = Data(
      "{\"id\":\(quoted(idempotencyKey)),\"kind\":\(quoted(kind)),\"userId\":\(userID.map { quoted($0.rawValue) } ?? "null"),\"occurredAt\":\(occurredAt),\"data\":"
        .utf8)
    body.append(payload)
    body.append(Data("}".utf8))
    return body
  }

  /// The registrations among `candidates` this event goes to.
  public func recipients(_ candidates: [Webhook]) -> [Webhook] {
    candidates.filter { webhook in
      guard webhook.enabled else { return false }
      if let target { return webhook.id == target }
      guard kind != Self.testKind, webhook.ownerID == nil || webhook.ownerID == userID?.rawValue else {
        return false
      }
      return webhook.wants(kind)
    }
  }
}

/// A leased delivery: everything the delivery service needs to send it.
public struct WebhookClaim: Sendable, Hashable {
  /// The delivery's id.
  public var id: String
  /// Its registration.
  public var webhookID: String
  /// Where to POST.
  public var url: String
  /// The signing secret (a webhook), or the bearer token, empty for none (an ntfy channel).
  public var secret: String
  /// The `Idempotency-Key`.
  public var idempotencyKey: String
  /// The event kind.
  public var kind: String
  /// The exact body.
  public var body: Data
  /// Attempts made before this one.
  public var attempts: Int
  /// When it was queued (the abandon clock starts here).
  public var createdAt: Int64
  /// How it is sent.
  public var channel: AlertChannel
  /// The registration's owner; nil for an operator-wide one.
  public var ownerID: String?

  /// A claim.
  public init(
    id: String, webhookID: String, url: String, secret: String, idempotencyKey: String, kind: String, body: Data,
    attempts: Int, createdAt: Int64, channel: AlertChannel = .webhook, ownerID: String? = nil
  ) {
    self.channel = channel
    self.ownerID = ownerID
    self.id = id
    self.webhookID = webhookID
    self.url = url
    self.secret = secret
    self.idempotencyKey = idempotencyKey
    self.kind = kind
    self.body = body
    self.attempts = attempts
    self.createdAt = createdAt
  }
}

/// What became of one delivery attempt.
public enum WebhookOutcome: Sendable, Hashable {
  /// The receiver answered 2xx with this status.
  case delivered(status: Int)
  /// It failed; try again at this time.
  case retry(at: Int64, error: String)
  /// It failed for good (abandoned); the error is kept.
  case failed(error: String)
}

/// Why a webhook operation was refused.
public enum WebhookStoreError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The event's payload is not JSON.
  case invalidPayload
  /// The id is taken.
  case duplicateID(String)

  /// A sentence.
  public var description: String {
    switch self {
    case .invalidPayload: "A webhook event's payload must be JSON."
    case .duplicateID(let id): "The webhook id '\(id)' is taken."
    }
  }
}
