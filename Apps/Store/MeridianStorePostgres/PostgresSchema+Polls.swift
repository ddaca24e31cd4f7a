import PersistenceKit

extension PostgresSchema {
  /// Appends the polls-and-rewards migrations.
  static func appendPollMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-26 polls, ballots, comments, points, coupons and blobs", polls))
  }

  /// Per-user tables lead with the user: ballots (one per user and poll: the key), the points ledger (append-only:
  /// a trigger refuses updates; poll and vote rewards once: a unique index), the balance (its sum, kept ≥ 0 by a
  /// check; spends lock its row) and coupons. Content everyone reads is keyed by its own id: polls (with their
  /// counts, changed under the poll row's lock in the ballot's transaction), comments (by poll), the coupon
  /// catalogue, and blobs (by SHA-256; in the database so every node sees them). On a distributed PostgreSQL those
  /// become reference tables or are distributed by their id.
  static let polls = """
    CREATE TABLE polls(
      id text PRIMARY KEY,
      author_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      title text NOT NULL,
      description text NOT NULL,
      option0_text text NOT NULL,
      option0_image text,
      option1_text text NOT NULL,
      option1_image text,
      votes0 bigint NOT NULL DEFAULT 0 CHECK (votes0 >= 0),
      votes1 bigint NOT NULL DEFAULT 0 CHECK (votes1 >= 0),
      votes_total bigint NOT NULL DEFAULT 0 CHECK (votes_total = votes0 + votes1),
      hidden boolean NOT NULL DEFAULT false,
      closes_at bigint,
      created_at bigint NOT NULL
    );
    CREATE INDEX polls_newest ON polls(created_at DESC, id DESC) WHERE NOT hidden;
    CREATE INDEX polls_most_voted ON polls(votes_total DESC, created_at DESC, id DESC) WHERE NOT hidden;
    CREATE INDEX polls_author ON polls(author_id, created_at DESC, id DESC);
    CREATE TABLE poll_ballots(
      user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      poll_id text NOT NULL REFERENCES polls(id) ON DELETE CASCADE,
      choice smallint NOT NULL CHECK (choice IN (0, 1)),
      created_at bigint NOT NULL,
      updated_at bigint NOT NULL,
      PRIMARY KEY (user_id, poll_id)
    );
    CREATE INDEX poll_ballots_poll ON poll_ballots(poll_id);
    CREATE TABLE poll_comments(
      poll_id text NOT NULL REFERENCES polls(id) ON DELETE CASCADE,
      id text NOT NULL UNIQUE,
      author_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      text text NOT NULL,
      hidden boolean NOT NULL DEFAULT false,
      created_at bigint NOT NULL,
      PRIMARY KEY (poll_id, created_at, id)
    );
    CREATE INDEX poll_comments_author ON poll_comments(author_id);
    CREATE TABLE points_ledger(
      user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      id text NOT NULL,
      seq bigserial,
      amount bigint NOT NULL CHECK (amount <> 0),
      reason text NOT NULL,
      reference text,
      note text,
      created_at bigint NOT NULL,
      PRIMARY KEY (user_id, id)
    );
    CREATE INDEX points_ledger_user_time ON points_ledger(user_id, created_at, seq);
    CREATE UNIQUE INDEX points_ledger_once ON points_ledger(user_id, reason, reference)
      WHERE reason IN ('pollPosted', 'voted');
    CREATE FUNCTION points_ledger_append_only() RETURNS trigger LANGUAGE plpgsql AS $f$
    BEGIN
      RAISE EXCEPTION 'the points ledger is append-only';
    END
    $f$;
    CREATE TRIGGER points_ledger_append_only BEFORE UPDATE ON points_ledger
      FOR EACH ROW EXECUTE FUNCTION points_ledger_append_only();
    CREATE TABLE points_balances(
      user_id text PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
      balance bigint NOT NULL CHECK (balance >= 0)
    );
    CREATE TABLE coupon_offers(
      id text PRIMARY KEY,
      shop_name text NOT NULL,
      title text NOT NULL,
      description text NOT NULL DEFAULT '',
      discount_percent bigint,
      price bigint NOT NULL CHECK (price > 0),
      stock bigint NOT NULL CHECK (stock >= 0),
      sold bigint NOT NULL DEFAULT 0 CHECK (sold >= 0 AND sold <= stock),
      valid_until bigint,
      created_at bigint NOT NULL
    );
    CREATE TABLE coupons(
      user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      id text NOT NULL,
      offer_id text NOT NULL REFERENCES coupon_offers(id),
      code text NOT NULL UNIQUE,
      price bigint NOT NULL,
      request_key text,
      purchased_at bigint NOT NULL,
      redeemed_at bigint,
      PRIMARY KEY (user_id, id)
    );
    CREATE UNIQUE INDEX coupons_request ON coupons(user_id, request_key) WHERE request_key IS NOT NULL;
    CREATE INDEX coupons_offer ON coupons(offer_id);
    CREATE TABLE blobs(
      hash text PRIMARY KEY,
      kind text NOT NULL,
      data bytea NOT NULL,
      created_at bigint NOT NULL
    );
    """
}
