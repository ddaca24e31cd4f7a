import DomainKit
import Foundation
import GRDB
import MeridianStore

extension SQLiteStore {
  public func promotionCounts(_ promotion: PromotionID, boundaries: [Int64]) async throws -> [PromotionCounts] {
    guard boundaries.count > 1 else { return [] }
    return try await database.read { db in
      // Whole quarter hours from the summary, the ends of an interval that cuts one from the events.
      let offers = try db.cachedStatement(
        sql: """
          SELECT IFNULL(SUM(n), 0), COUNT(DISTINCT user_id) FROM (
            SELECT user_id, offers AS n FROM promotion_offer_slots WHERE promotion_id = ?1 AND slot >= ?3 AND slot < ?4
            UNION ALL
            SELECT user_id, 1 FROM promotion_offer_events WHERE promotion_id = ?1 AND at >= ?2 AND at < MIN(?3, ?5)
            UNION ALL
            SELECT user_id, 1 FROM promotion_offer_events WHERE promotion_id = ?1 AND at >= ?4 AND at < ?5
          )
          """)
      let redemptions = try db.cachedStatement(
        sql:
          "SELECT COUNT(*) FROM promotion_redemptions WHERE promotion_id = ? AND redeemed_at >= ? AND redeemed_at < ?")
      return try zip(boundaries, boundaries.dropFirst()).map { start, end in
        let split = PromotionSlotSplit(start: start, end: end)
        let row = try Row.fetchOne(
          offers, arguments: [promotion.rawValue, start, split.summaryStart, split.summaryEnd, end])
        return PromotionCounts(
          offers: row?[0] ?? 0, people: row?[1] ?? 0,
          redeemed: try Int.fetchOne(redemptions, arguments: [promotion.rawValue, start, end]) ?? 0)
      }
    }
  }
}
