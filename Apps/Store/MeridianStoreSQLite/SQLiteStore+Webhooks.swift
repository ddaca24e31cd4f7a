import DomainKit
import Foundation
import GRDB
import MeridianAPI
import MeridianStore
import PersistenceKit

extension SQLiteStore {
  static let webhookColumns = "id, owner_id, url, events, enabled, created_at, updated_at, channel"
  static let deliveryColumns = """
    id, webhook_id, kind, idempotency_key, state, attempts, created_at, next_attempt_at, delivered_at, last_error
    """

  static func webhook(_ row: Row) throws -> Webhook {
    Webhook(
      id: row[0], ownerID: row[1], url: row[2], events: try JSONColumn.decode([String].self, from: row[3]),
      enabled: row[4], createdAt: row[5], updatedAt: row[6],
      channel: AlertChannel(rawValue: row[7]) ?? .webhook)
  }

  static func delivery(_ row: Row) -> WebhookDelivery {
    WebhookDelivery(
      id: row[0], webhookID: row[1], kind: row[2], idempotencyKey: row[3],
      state: WebhookDeliveryState(rawValue: row[4]) ?? .pending, attempts: row[5], createdAt: row[6],
      nextAttemptAt: row[7], deliveredAt: row[8], lastError: row[9])
  }

  // MARK: Registrations

  public func createWebhook(_ webhook: Webhook, secret: String) async throws -> Webhook {
    let events = try JSONColumn.encode(webhook.events)
    return try await database.write { db in
      do {
        try db.execute(
          sql: """
            INSERT INTO webhooks(id, owner_id, url, secret, events, enabled, created_at, updated_at, channel)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
          arguments: [
            webhook.id, webhook.ownerID, webhook.url, secret, events, webhook.enabled, webhook.createdAt,
            webhook.updatedAt, webhook.channel.rawValue,
          ])
      } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_PRIMARYKEY {
        throw WebhookStoreError.duplicateID(webhook.id)
      }
      return webhook
    }
  }

  public func webhook(_ id: String) async throws -> Webhook? {
    try await database.read { db in
      try Row.fetchOne(db, sql: "SELECT \(Self.webhookColumns) FROM webhooks WHERE id = ?", arguments: [id])
        .map(Self.webhook)
    }
  }

  public func webhooks(_ scope: WebhookScope) async throws -> [Webhook] {
    try await database.read { db in
      let (condition, arguments): (String, StatementArguments) =
        switch scope {
        case .user(let user): ("owner_id = ?", [user.rawValue])
        case .operatorWide: ("owner_id IS NULL", [])
        case .all: ("1 = 1", [])
        }
      return try Row.fetchAll(
        db, sql: "SELECT \(Self.webhookColumns) FROM webhooks WHERE \(condition) ORDER BY created_at, id",
        arguments: arguments
      ).map(Self.webhook)
    }
  }

  public func updateWebhook(_ id: String, _ update: WebhookUpdate, now: Int64) async throws -> Webhook? {
    let events = try update.events.map { try JSONColumn.encode($0) }
    return try await database.write { db in
      try db.execute(
        sql: """
          UPDATE webhooks SET url = coalesce(?, url), events = coalesce(?, events), enabled = coalesce(?, enabled),
            updated_at = ?
          WHERE id = ?
          """,
        arguments: [update.url, events, update.enabled, now, id])
      guard db.changesCount > 0 else { return nil }
      return try Row.fetchOne(db, sql: "SELECT \(Self.webhookColumns) FROM webhooks WHERE id = ?", arguments: [id])
        .map(Self.webhook)
    }
  }

  public func deleteWebhook(_ id: String) async throws -> Bool {
    try await database.write { db in
      try db.execute(sql: "DELETE FROM webhook_outbox WHERE webhook_id = ?", arguments: [id])
      try db.execute(sql: "DELETE FROM webhooks WHERE id = ?", arguments: [id])
      return db.changesCount > 0
    }
  }

  // MARK: Outbox

  public func claimWebhookDeliveries(limit: Int, lease: String, leaseMilliseconds: Int64, now: Int64) async throws
    -> [WebhookClaim]
  {
    try await database.write { db in
      let rows = try Row.fetchAll(
        db,
        sql: """
          SELECT o.id, o.webhook_id, w.url, w.secret, o.idempotency_key, o.kind, o.body, o.attempts, o.created_at,
            w.channel, w.owner_id
          FROM webhook_outbox o JOIN webhooks w ON w.id = o.webhook_id
          WHERE o.state = 'pending' AND o.next_attempt_at <= ? AND (o.lease_until IS NULL OR o.lease_until <= ?)
            AND w.enabled = 1
          ORDER BY o.next_attempt_at, o.created_at LIMIT ?
          """,
        arguments: [now, now, max(1, limit)])
      let claims = rows.map { row in
        WebhookClaim(
          id: row[0], webhookID: row[1], url: row[2], secret: row[3], idempotencyKey: row[4], kind: row[5],
          body: row[6], attempts: row[7], createdAt: row[8], channel: AlertChannel(rawValue: row[9]) ?? .webhook,
          ownerID: row[10])
      }
      for claim in claims {
        try db.execute(
          sql: "UPDATE webhook_outbox SET lease_owner = ?, lease_until = ? WHERE id = ?",
          arguments: [lease, now + leaseMilliseconds, claim.id])
      }
      return claims
    }
  }

  public func finishWebhookDelivery(_ id: String, lease: String, outcome: WebhookOutcome, now: Int64) async throws
    -> Bool
  {
    let (state, next, status, error): (String, Int64?, Int?, String?) =
      switch outcome {
      case .delivered(let status): ("delivered", nil, status, nil)
      case .retry(let at, let error): ("pending", at, nil, error)
      case .failed(let error): ("failed", nil, nil, error)
      }
    return try await database.write { db in
      try db.execute(
        sql: """
          UPDATE webhook_outbox SET state = ?, attempts = attempts + 1, next_attempt_at = coalesce(?, next_attempt_at),
            delivered_at = CASE WHEN ? = 'delivered' THEN ? END, last_status = coalesce(?, last_status),
            last_error = ?, lease_owner = NULL, lease_until = NULL
          WHERE id = ? AND lease_owner = ? AND state = 'pending'
          """,
        arguments: [state, next, state, now, status, error, id, lease])
      return db.changesCount > 0
    }
  }

  public func releaseWebhookLeases(_ lease: String) async throws {
    try await database.write { db in
      try db.execute(
        sql: "UPDATE webhook_outbox SET lease_owner = NULL, lease_until = NULL WHERE lease_owner = ?",
        arguments: [lease])
    }
  }

  public func webhookDeliveries(webhook: String?, state: WebhookDeliveryState?, limit: Int) async throws
    -> [WebhookDelivery]
  {
    try await database.read { db in
      try Row.fetchAll(
        db,
        sql: """
          SELECT \(Self.deliveryColumns) FROM webhook_outbox
          WHERE (? IS NULL OR webhook_id = ?) AND (? IS NULL OR state = ?)
          ORDER BY created_at DESC, id DESC LIMIT ?
          """,
        arguments: [webhook, webhook, state?.rawValue, state?.rawValue, max(1, limit)]
      ).map(Self.delivery)
    }
  }

  public func retryWebhookDeliveries(webhook: String?, delivery: String?, now: Int64) async throws -> Int {
    try await database.write { db in
      try db.execute(
        sql: """
          UPDATE webhook_outbox SET state = 'pending', next_attempt_at = ?, lease_owner = NULL, lease_until = NULL
          WHERE state = 'failed' AND (? IS NULL OR webhook_id = ?) AND (? IS NULL OR id = ?)
          """,
        arguments: [now, webhook, webhook, delivery, delivery])
      return db.changesCount
    }
  }

  public func deliveredAlertCount(owner: String, since: Int64) async throws -> Int {
    try await database.read { db in
      try Int.fetchOne(
        db,
        sql: """
          SELECT count(*) FROM webhook_outbox o JOIN webhooks w ON w.id = o.webhook_id
          WHERE w.owner_id = ? AND w.channel NOT IN ('webhook', 'homeassistant') AND o.state = 'delivered' AND o.delivered_at >= ?
          """,
        arguments: [owner, since]) ?? 0
    }
  }
}

extension SQLiteTransaction {
  func webhookCandidates(for event: WebhookEvent) throws -> [Webhook] {
    let (condition, arguments): (String, StatementArguments) =
      if let target = event.target {
        ("id = ?", [target])
      } else {
        ("enabled = 1 AND (owner_id IS NULL OR owner_id = ?)", [event.userID?.rawValue])
      }
    return try Row.fetchAll(
      db, sql: "SELECT \(SQLiteStore.webhookColumns) FROM webhooks WHERE \(condition)", arguments: arguments
    ).map(SQLiteStore.webhook)
  }

  func insertWebhookDelivery(id: String, of event: WebhookEvent, body: Data, to webhook: String) throws -> Bool {
    try db.execute(
      sql: """
        INSERT INTO webhook_outbox(id, webhook_id, idempotency_key, kind, body, created_at, next_attempt_at)
        VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (webhook_id, idempotency_key) DO NOTHING
        """,
      arguments: [id, webhook, event.idempotencyKey, event.kind, body, event.queuedAt, event.queuedAt])
    return db.changesCount > 0
  }
}
