import DomainKit
import Foundation
import Logging
import MeridianAPI
import MeridianStore
import PostgresNIO

extension PostgresStore: WebhookStore {
  static func webhook(_ row: PostgresRow) throws -> Webhook {
    let (id, owner, url, events, enabled, createdAt, updatedAt, channel) = try row.decode(
      (String, String?, String, String, Bool, Int64, Int64, String).self)
    return Webhook(
      id: id, ownerID: owner, url: url, events: try JSONColumn.decode([String].self, from: events), enabled: enabled,
      createdAt: createdAt, updatedAt: updatedAt, channel: AlertChannel(rawValue: channel) ?? .webhook)
  }

  static func delivery(_ row: PostgresRow) throws -> WebhookDelivery {
    let r = row.makeRandomAccess()
    return WebhookDelivery(
      id: try r[0].decode(String.self), webhookID: try r[1].decode(String.self), kind: try r[2].decode(String.self),
      idempotencyKey: try r[3].decode(String.self),
      state: WebhookDeliveryState(rawValue: try r[4].decode(String.self)) ?? .pending,
      attempts: try r[5].decode(Int.self), createdAt: try r[6].decode(Int64.self),
      nextAttemptAt: try r[7].decode(Int64.self), deliveredAt: try r[8].decode(Int64?.self),
      lastError: try r[9].decode(String?.self))
  }

  // MARK: Registrations

  public func createWebhook(_ webhook: Webhook, secret: String) async throws -> Webhook {
    let events = try JSONColumn.encode(webhook.events)
    do {
      try await execute(
        """
        INSERT INTO webhooks(id, owner_id, url, secret, events, enabled, created_at, updated_at, channel)
        VALUES (\(webhook.id), \(webhook.ownerID), \(webhook.url), \(secret), \(events), \(webhook.enabled),
          \(webhook.createdAt), \(webhook.updatedAt), \(webhook.channel.rawValue))
        """)
    } catch  where Self.sqlState(error) == "23505" {
      throw WebhookStoreError.duplicateID(webhook.id)
    }
    return webhook
  }

  public func webhook(_ id: String) async throws -> Webhook? {
    try await rows(
      "SELECT id, owner_id, url, events, enabled, created_at, updated_at, channel FROM webhooks WHERE id = \(id)"
    ).first.map(Self.webhook)
  }

  public func webhooks(_ scope: WebhookScope) async throws -> [Webhook] {
    let query: PostgresQuery =
      switch scope {
      case .user(let user):
        """
        SELECT id, owner_id, url, events, enabled, created_at, updated_at, channel FROM webhooks
        WHERE owner_id = \(user.rawValue) ORDER BY created_at, id
        """
      case .operatorWide:
        """
        SELECT id, owner_id, url, events, enabled, created_at, updated_at, channel FROM webhooks
        WHERE owner_id IS NULL ORDER BY created_at, id
        """
      case .all:
        """
        SELECT id, owner_id, url, events, enabled, created_at, updated_at, channel FROM webhooks ORDER BY created_at, id
        """
      }
    return try await rows(query).map(Self.webhook)
  }

  public func updateWebhook(_ id: String, _ update: WebhookUpdate, now: Int64) async throws -> Webhook? {
    let events = try update.events.map { try JSONColumn.encode($0) }
    return try await rows(
      """
      UPDATE webhooks SET url = coalesce(\(update.url), url), events = coalesce(\(events), events),
        enabled = coalesce(\(update.enabled), enabled), updated_at = \(now)
      WHERE id = \(id)
      RETURNING id, owner_id, url, events, enabled, created_at, updated_at, channel
      """
    ).first.map(Self.webhook)
  }

  public func deleteWebhook(_ id: String) async throws -> Bool {
    !(try await rows("DELETE FROM webhooks WHERE id = \(id) RETURNING 1").isEmpty)
  }

  // MARK: Outbox

  public func claimWebhookDeliveries(limit: Int, lease: String, leaseMilliseconds: Int64, now: Int64) async throws
    -> [WebhookClaim]
  {
    // SKIP LOCKED: a node passes over the rows another node is claiming; once that claim commits, the lease
    // condition (re-checked on the new row version) keeps them out.
    let found = try await rows(
      """
      WITH due AS (
        SELECT o.id FROM webhook_outbox o JOIN webhooks w ON w.id = o.webhook_id
        WHERE o.state = 'pending' AND o.next_attempt_at <= \(now)
          AND (o.lease_until IS NULL OR o.lease_until <= \(now)) AND w.enabled
        ORDER BY o.next_attempt_at, o.created_at LIMIT \(Int64(max(1, limit)))
        FOR UPDATE OF o SKIP LOCKED)
      UPDATE webhook_outbox o SET lease_owner = \(lease), lease_until = \(now + leaseMilliseconds)
      FROM due, webhooks w
      WHERE o.id = due.id AND w.id = o.webhook_id
      RETURNING o.id, o.webhook_id, w.url, w.secret, o.idempotency_key, o.kind, o.body, o.attempts::bigint,
        o.created_at, w.channel, w.owner_id
      """)
    return try found.map { row in
      let r = row.makeRandomAccess()
      return WebhookClaim(
        id: try r[0].decode(String.self), webhookID: try r[1].decode(String.self), url: try r[2].decode(String.self),
        secret: try r[3].decode(String.self), idempotencyKey: try r[4].decode(String.self),
        kind: try r[5].decode(String.self), body: try r[6].decode(Data.self), attempts: try r[7].decode(Int.self),
        createdAt: try r[8].decode(Int64.self),
        channel: AlertChannel(rawValue: try r[9].decode(String.self)) ?? .webhook,
        ownerID: try r[10].decode(String?.self))
    }.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
  }

  public func finishWebhookDelivery(_ id: String, lease: String, outcome: WebhookOutcome, now: Int64) async throws
    -> Bool
  {
    let (state, next, status, error): (String, Int64?, Int64?, String?) =
      switch outcome {
      case .delivered(let status): ("delivered", nil, Int64(status), nil)
      case .retry(let at, let error): ("pending", at, nil, error)
      case .failed(let error): ("failed", nil, nil, error)
      }
    let deliveredAt: Int64? = state == "delivered" ? now : nil
    return
      !(try await rows(
        """
        UPDATE webhook_outbox SET state = \(state), attempts = attempts + 1,
          next_attempt_at = coalesce(\(next), next_attempt_at), delivered_at = \(deliveredAt),
          last_status = coalesce(\(status)::integer, last_status), last_error = \(error), lease_owner = NULL,
          lease_until = NULL
        WHERE id = \(id) AND lease_owner = \(lease) AND state = 'pending'
        RETURNING 1
        """
      ).isEmpty)
  }

  public func releaseWebhookLeases(_ lease: String) async throws {
    try await execute(
      "UPDATE webhook_outbox SET lease_owner = NULL, lease_until = NULL WHERE lease_owner = \(lease)")
  }

  public func webhookDeliveries(webhook: String?, state: WebhookDeliveryState?, limit: Int) async throws
    -> [WebhookDelivery]
  {
    try await rows(
      """
      SELECT id, webhook_id, kind, idempotency_key, state, attempts::bigint, created_at, next_attempt_at, delivered_at,
        last_error
      FROM webhook_outbox
      WHERE (\(webhook)::text IS NULL OR webhook_id = \(webhook)) AND (\(state?.rawValue)::text IS NULL
        OR state = \(state?.rawValue))
      ORDER BY created_at DESC, id DESC LIMIT \(Int64(max(1, limit)))
      """
    ).map(Self.delivery)
  }

  public func retryWebhookDeliveries(webhook: String?, delivery: String?, now: Int64) async throws -> Int {
    try await rows(
      """
      UPDATE webhook_outbox SET state = 'pending', next_attempt_at = \(now), lease_owner = NULL, lease_until = NULL
      WHERE state = 'failed' AND (\(webhook)::text IS NULL OR webhook_id = \(webhook))
        AND (\(delivery)::text IS NULL OR id = \(delivery))
      RETURNING 1
      """
    ).count
  }

  public func deliveredAlertCount(owner: String, since: Int64) async throws -> Int {
    let found = try await rows(
      """
      SELECT count(*) FROM webhook_outbox o JOIN webhooks w ON w.id = o.webhook_id
      WHERE w.owner_id = \(owner) AND w.channel NOT IN ('webhook', 'homeassistant') AND o.state = 'delivered' AND o.delivered_at >= \(since)
      """)
    return Int(try found.first?.decode(Int64.self) ?? 0)
  }
}

extension PostgresTransaction {
  func webhookCandidates(for event: WebhookEvent) async throws -> [Webhook] {
    let query: PostgresQuery =
      if let target = event.target {
        "SELECT id, owner_id, url, events, enabled, created_at, updated_at, channel FROM webhooks WHERE id = \(target)"
      } else {
        """
        SELECT id, owner_id, url, events, enabled, created_at, updated_at, channel FROM webhooks
        WHERE enabled AND (owner_id IS NULL OR owner_id = \(event.userID?.rawValue))
        """
      }
    return try await rows(query).map(PostgresStore.webhook)
  }

  func insertWebhookDelivery(id: String, of event: WebhookEvent, body: Data, to webhook: String) async throws -> Bool {
    try await !rows(
      """
      INSERT INTO webhook_outbox(id, webhook_id, idempotency_key, kind, body, created_at, next_attempt_at)
      VALUES (\(id), \(webhook), \(event.idempotencyKey), \(event.kind), \(body), \(event.queuedAt),
        \(event.queuedAt))
      ON CONFLICT (webhook_id, idempotency_key) DO NOTHING RETURNING 1
      """
    ).isEmpty
  }
}
