import PersistenceKit

extension SQLiteSchema {
  /// Appends the promotion statistics migrations.
  static func appendPromotionStatsMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-26 promotion offer events", promotionOfferEvents))
    migrator.append(.sql("2026-11-26 promotion offer slots", promotionOfferSlots))
  }

  /// Each offer with its time (`promotion_offers` keeps one row per person), so that offers and distinct people can
  /// be counted per day; offers stored before keep their first and last time. Redemptions are read by time too.
  static let promotionOfferEvents = """
    CREATE TABLE promotion_offer_events(
      promotion_id TEXT NOT NULL REFERENCES venue_promotions(id) ON DELETE CASCADE,
      at INTEGER NOT NULL,
      user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE
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

extension SQLiteSchema {
  /// The summary the statistics read: per promotion, quarter hour (UTC ms of its start; every time zone's midnight
  /// falls on one) and person, how many offers. Kept up to date by a trigger on `promotion_offer_events` in the
  /// offer's own transaction; a day's people are the distinct users of its 96 slots, far fewer rows than its offers.
  static let promotionOfferSlots = """
    CREATE TABLE promotion_offer_slots(
      promotion_id TEXT NOT NULL REFERENCES venue_promotions(id) ON DELETE CASCADE,
      slot INTEGER NOT NULL,
      user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      offers INTEGER NOT NULL CHECK (offers > 0),
      PRIMARY KEY (promotion_id, slot, user_id)
    ) WITHOUT ROWID;
    CREATE INDEX promotion_offer_slots_user ON promotion_offer_slots(user_id);
    INSERT INTO promotion_offer_slots(promotion_id, slot, user_id, offers)
      SELECT promotion_id, at - ((at % 900000) + 900000) % 900000, user_id, COUNT(*) FROM promotion_offer_events
      GROUP BY 1, 2, 3;
    CREATE TRIGGER promotion_offer_slots_count AFTER INSERT ON promotion_offer_events BEGIN
      INSERT INTO promotion_offer_slots(promotion_id, slot, user_id, offers)
        VALUES (NEW.promotion_id, NEW.at - ((NEW.at % 900000) + 900000) % 900000, NEW.user_id, 1)
        ON CONFLICT(promotion_id, slot, user_id) DO UPDATE SET offers = offers + 1;
    END;
    """
}
