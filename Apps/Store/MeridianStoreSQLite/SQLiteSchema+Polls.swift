import PersistenceKit

extension SQLiteSchema {
  /// Appends the polls-and-rewards migrations.
  static func appendPollMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-26 polls, ballots, comments, points and coupons", polls))
  }

  /// Polls keep their counts (`votes0`, `votes1`, `votes_total`), changed in the ballot's transaction; a ballot is
  /// keyed by (user, poll), so one per person and poll. The points ledger is append-only (a trigger refuses
  /// updates), and `points_balances` holds each user's sum, which a check keeps ≥ 0; points for a poll or a vote are
  /// credited once (a unique index). A coupon's code is unique, and so is its purchase's request key per user.
  static let polls = """
    CREATE TABLE polls(
      id TEXT PRIMARY KEY NOT NULL,
      author_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      title TEXT NOT NULL,
      description TEXT NOT NULL,
      option0_text TEXT NOT NULL,
      option0_image TEXT,
      option1_text TEXT NOT NULL,
      option1_image TEXT,
      votes0 INTEGER NOT NULL DEFAULT 0 CHECK (votes0 >= 0),
      votes1 INTEGER NOT NULL DEFAULT 0 CHECK (votes1 >= 0),
      votes_total INTEGER NOT NULL DEFAULT 0 CHECK (votes_total = votes0 + votes1),
      hidden INTEGER NOT NULL DEFAULT 0,
      closes_at INTEGER,
      created_at INTEGER NOT NULL
    );
    CREATE INDEX polls_newest ON polls(hidden, created_at, id);
    CREATE INDEX polls_most_voted ON polls(hidden, votes_total, created_at, id);
    CREATE INDEX polls_author ON polls(author_id, created_at, id);
    CREATE TABLE poll_ballots(
      user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      poll_id TEXT NOT NULL REFERENCES polls(id) ON DELETE CASCADE,
      choice INTEGER NOT NULL CHECK (choice IN (0, 1)),
      created_at INTEGER NOT NULL,
      updated_at INTEGER NOT NULL,
      PRIMARY KEY (user_id, poll_id)
    ) WITHOUT ROWID;
    CREATE INDEX poll_ballots_poll ON poll_ballots(poll_id);
    CREATE TABLE poll_comments(
      id TEXT PRIMARY KEY NOT NULL,
      poll_id TEXT NOT NULL REFERENCES polls(id) ON DELETE CASCADE,
      author_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      text TEXT NOT NULL,
      hidden INTEGER NOT NULL DEFAULT 0,
      created_at INTEGER NOT NULL
    );
    CREATE INDEX poll_comments_poll ON poll_comments(poll_id, created_at, id);
    CREATE INDEX poll_comments_author ON poll_comments(author_id);
    CREATE TABLE points_ledger(
      user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      id TEXT NOT NULL,
      amount INTEGER NOT NULL CHECK (amount <> 0),
      reason TEXT NOT NULL,
      reference TEXT,
      note TEXT,
      created_at INTEGER NOT NULL,
      PRIMARY KEY (user_id, id)
    );
    CREATE INDEX points_ledger_user_time ON points_ledger(user_id, created_at);
    CREATE UNIQUE INDEX points_ledger_once ON points_ledger(user_id, reason, reference)
      WHERE reason IN ('pollPosted', 'voted');
    CREATE TRIGGER points_ledger_append_only BEFORE UPDATE ON points_ledger
    BEGIN
      SELECT RAISE(ABORT, 'the points ledger is append-only');
    END;
    CREATE TABLE points_balances(
      user_id TEXT PRIMARY KEY NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      balance INTEGER NOT NULL CHECK (balance >= 0)
    );
    CREATE TABLE coupon_offers(
      id TEXT PRIMARY KEY NOT NULL,
      shop_name TEXT NOT NULL,
      title TEXT NOT NULL,
      description TEXT NOT NULL DEFAULT '',
      discount_percent INTEGER,
      price INTEGER NOT NULL CHECK (price > 0),
      stock INTEGER NOT NULL CHECK (stock >= 0),
      sold INTEGER NOT NULL DEFAULT 0 CHECK (sold >= 0 AND sold <= stock),
      valid_until INTEGER,
      created_at INTEGER NOT NULL
    );
    CREATE TABLE coupons(
      user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      id TEXT NOT NULL,
      offer_id TEXT NOT NULL REFERENCES coupon_offers(id),
      code TEXT NOT NULL UNIQUE,
      price INTEGER NOT NULL,
      request_key TEXT,
      purchased_at INTEGER NOT NULL,
      redeemed_at INTEGER,
      PRIMARY KEY (user_id, id)
    );
    CREATE UNIQUE INDEX coupons_request ON coupons(user_id, request_key) WHERE request_key IS NOT NULL;
    CREATE INDEX coupons_offer ON coupons(offer_id);
    """
}
