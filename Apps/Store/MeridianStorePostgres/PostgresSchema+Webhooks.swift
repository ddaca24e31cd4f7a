import PersistenceKit

extension PostgresSchema {
  /// Appends the webhook migrations.
  public static func appendWebhookMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-26 webhooks and their outbox", webhooks))
  }

  /// Appends the alert channel migrations.
  public static func appendAlertChannelMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-29 alert channels", alertChannels))
  }

  /// A registration's channel (`webhook`, `ntfy`): how the outbox sends its deliveries; the quota counts an owner's
  /// recent deliveries by it.
  static let alertChannels = """
    ALTER TABLE webhooks ADD COLUMN channel text NOT NULL DEFAULT 'webhook';
    CREATE INDEX webhook_outbox_delivered ON webhook_outbox(webhook_id, delivered_at) WHERE state = 'delivered';
    """

  /// Registrations (a person's, or operator-wide with no owner) and the outbox: one row per registration and event,
  /// unique by (registration, idempotency key), leased by one node at a time (`FOR UPDATE SKIP LOCKED`) until
  /// `lease_until`.
  static let webhooks = """
    CREATE TABLE webhooks(
      id text PRIMARY KEY,
      owner_id text REFERENCES users(id) ON DELETE CASCADE,
      url text NOT NULL,
      secret text NOT NULL,
      events text NOT NULL DEFAULT '[]',
      enabled boolean NOT NULL DEFAULT true,
      created_at bigint NOT NULL,
      updated_at bigint NOT NULL
    );
    CREATE INDEX webhooks_owner ON webhooks(owner_id, created_at);
    CREATE TABLE webhook_outbox(
      id text PRIMARY KEY,
      webhook_id text NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
      idempotency_key text NOT NULL,
      kind text NOT NULL,
      body bytea NOT NULL,
      state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
      attempts integer NOT NULL DEFAULT 0,
      created_at bigint NOT NULL,
      next_attempt_at bigint NOT NULL,
      lease_owner text,
      lease_until bigint,
      delivered_at bigint,
      last_status integer,
      last_error text,
      UNIQUE (webhook_id, idempotency_key)
    );
    CREATE INDEX webhook_outbox_due ON webhook_outbox(next_attempt_at) WHERE state = 'pending';
    CREATE INDEX webhook_outbox_webhook ON webhook_outbox(webhook_id, created_at);
    """
}
