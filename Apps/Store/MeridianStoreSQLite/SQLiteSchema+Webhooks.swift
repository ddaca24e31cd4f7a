import PersistenceKit

extension SQLiteSchema {
  /// Appends the webhook migrations.
  static func appendWebhookMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-26 webhooks and their outbox", webhooks))
  }

  /// Appends the alert channel migrations.
  static func appendAlertChannelMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-29 alert channels", alertChannels))
  }

  /// A registration's channel (`webhook`, `ntfy`): how the outbox sends its deliveries; the quota counts an owner's
  /// recent deliveries by it.
  static let alertChannels = """
    ALTER TABLE webhooks ADD COLUMN channel TEXT NOT NULL DEFAULT 'webhook';
    CREATE INDEX webhook_outbox_delivered ON webhook_outbox(webhook_id, delivered_at) WHERE state = 'delivered';
    """

  /// Registrations (a person's, or operator-wide with no owner) and the outbox: one row per registration and event,
  /// unique by (registration, idempotency key), leased by one node at a time until `lease_until`.
  static let webhooks = """
    CREATE TABLE webhooks(
      id TEXT PRIMARY KEY NOT NULL,
      owner_id TEXT REFERENCES users(id) ON DELETE CASCADE,
      url TEXT NOT NULL,
      secret TEXT NOT NULL,
      events TEXT NOT NULL DEFAULT '[]',
      enabled INTEGER NOT NULL DEFAULT 1,
      created_at INTEGER NOT NULL,
      updated_at INTEGER NOT NULL
    );
    CREATE INDEX webhooks_owner ON webhooks(owner_id, created_at);
    CREATE TABLE webhook_outbox(
      id TEXT PRIMARY KEY NOT NULL,
      webhook_id TEXT NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
      idempotency_key TEXT NOT NULL,
      kind TEXT NOT NULL,
      body BLOB NOT NULL,
      state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
      attempts INTEGER NOT NULL DEFAULT 0,
      created_at INTEGER NOT NULL,
      next_attempt_at INTEGER NOT NULL,
      lease_owner TEXT,
      lease_until INTEGER,
      delivered_at INTEGER,
      last_status INTEGER,
      last_error TEXT,
      UNIQUE (webhook_id, idempotency_key)
    );
    CREATE INDEX webhook_outbox_due ON webhook_outbox(next_attempt_at) WHERE state = 'pending';
    CREATE INDEX webhook_outbox_webhook ON webhook_outbox(webhook_id, created_at);
    """
}
