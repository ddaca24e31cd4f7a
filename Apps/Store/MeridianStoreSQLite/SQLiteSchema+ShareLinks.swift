import PersistenceKit

extension SQLiteSchema {
  /// Appends the share-link migrations.
  static func appendShareLinkMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-29 share links", shareLinks))
  }

  /// Share links: the SHA-256 of each token (never the token), the devices shown (a JSON array, NULL for all the
  /// owner's devices), whether the track is shown, and when the link ends or was revoked.
  static let shareLinks = """
    CREATE TABLE share_links(
      id TEXT PRIMARY KEY NOT NULL,
      owner_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      token_hash TEXT NOT NULL UNIQUE,
      label TEXT,
      devices TEXT,
      track INTEGER NOT NULL DEFAULT 0 CHECK (track IN (0, 1)),
      created_at INTEGER NOT NULL,
      expires_at INTEGER NOT NULL CHECK (expires_at >= created_at),
      revoked_at INTEGER
    );
    CREATE INDEX share_links_owner ON share_links(owner_id, created_at);
    """
}
