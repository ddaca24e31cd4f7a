import DomainKit
import Foundation
import MeridianStore
import PostgresNIO

extension PostgresStore: PromotionStatsStore {
  public func promotionCounts(_ promotion: PromotionID, boundaries: [Int64]) async throws -> [PromotionCounts] {
    guard boundaries.count > 1 else { return [] }
    let splits = zip(boundaries, boundaries.dropFirst()).map { PromotionSlotSplit(start: $0, end: $1) }
    var counts = Array(repeating: PromotionCounts(offers: 0, people: 0, redeemed: 0), count: splits.count)
    // Whole quarter hours from the summary, the ends of an interval that cuts one from the events.
    for try await (index, offers, people, redeemed) in try await client.query(
      """
      SELECT b.i, o.offers, o.people,
        (SELECT COUNT(*) FROM promotion_redemptions r
          WHERE r.promotion_id = \(promotion.rawValue) AND r.redeemed_at >= b.lo AND r.redeemed_at < b.hi)
      FROM unnest(\(splits.map(\.start))::bigint[], \(splits.map(\.summaryStart))::bigint[],
        \(splits.map(\.summaryEnd))::bigint[], \(splits.map(\.end))::bigint[]) WITH ORDINALITY AS b(lo, a, z, hi, i)
      CROSS JOIN LATERAL (
        SELECT COALESCE(SUM(n), 0)::bigint AS offers, COUNT(DISTINCT user_id) AS people FROM (
          SELECT s.user_id, s.offers AS n FROM promotion_offer_slots s
            WHERE s.promotion_id = \(promotion.rawValue) AND s.slot >= b.a AND s.slot < b.z
          UNION ALL
          SELECT e.user_id, 1 FROM promotion_offer_events e
            WHERE e.promotion_id = \(promotion.rawValue) AND e.at >= b.lo AND e.at < LEAST(b.a, b.hi)
          UNION ALL
          SELECT e.user_id, 1 FROM promotion_offer_events e
            WHERE e.promotion_id = \(promotion.rawValue) AND e.at >= b.z AND e.at < b.hi
        ) AS u
      ) AS o
      """, logger: logger
    ).decode((Int, Int, Int, Int).self) where (1...counts.count).contains(index) {
      counts[index - 1] = PromotionCounts(offers: offers, people: people, redeemed: redeemed)
    }
    return counts
  }
}
