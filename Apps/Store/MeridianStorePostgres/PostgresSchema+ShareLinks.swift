import PersistenceKit

extension PostgresSchema {
  /// Appends the share-link migrations.
  public static func appendShareLinkMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-29 share links", shareLinks))
  }

  /// Share links: a lookup table keyed by what a request presents (the SHA-256 of the token, never the token), with
  /// the devices shown (NULL for all the owner's devices), whether the track is shown, and when the link ends or
  /// was revoked.
  static let shareLinks = """
    CREATE TABLE share_links(
      id text PRIMARY KEY,
      owner_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      token_hash text NOT NULL UNIQUE,
      label text,
      devices text[],
      track boolean NOT NULL DEFAULT false,
      created_at bigint NOT NULL,
      expires_at bigint NOT NULL CHECK (expires_at >= created_at),
      revoked_at bigint
    );
    CREATE INDEX share_links_owner ON share_links(owner_id, created_at);
    """
}
