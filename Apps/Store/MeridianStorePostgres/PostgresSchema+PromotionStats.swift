import PersistenceKit

extension PostgresSchema {
  /// Appends the promotion statistics migrations.
  static func appendPromotionStatsMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-26 promotion offer events", promotionOfferEvents))
  }

  /// Each offer with its time, as on SQLite; offers stored before keep their first and last time.
  static let promotionOfferEvents = """
    CREATE TABLE promotion_offer_events(
      promotion_id text NOT NULL REFERENCES venue_promotions(id) ON DELETE CASCADE,
      at bigint NOT NULL,
      user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE
    );
    CREATE INDEX promotion_offer_events_time ON promotion_offer_events(promotion_id, at, user_id);
    CREATE INDEX promotion_offer_events_user ON promotion_offer_events(user_id);
    CREATE INDEX promotion_redemptions_time ON promotion_redemptions(promotion_id, redeemed_at);
    INSERT INTO promotion_offer_events(promotion_id, at, user_id)
      SELECT promotion_id, first_at, user_id FROM promotion_offers;
    INSERT INTO promotion_offer_events(promotion_id, at, user_id)
      SELECT promotion_id, last_at, user_id FROM promotion_offers WHERE times > 1;
    """
}
