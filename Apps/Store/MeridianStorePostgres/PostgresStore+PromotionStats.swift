import DomainKit
import Foundation
import MeridianStore
import PostgresNIO

extension PostgresStore: PromotionStatsStore {
  public func promotionCounts(_ promotion: PromotionID, boundaries: [Int64]) async throws -> [PromotionCounts] {
    guard boundaries.count > 1 else { return [] }
    let starts = Array(boundaries.dropLast())
    let ends = Array(boundaries.dropFirst())
    var counts = Array(repeating: PromotionCounts(offers: 0, people: 0, redeemed: 0), count: starts.count)
    for try await (index, offers, people, redeemed) in try await client.query(
      """
      SELECT b.i,
        (SELECT COUNT(*) FROM promotion_offer_events o
          WHERE o.promotion_id = \(promotion.rawValue) AND o.at >= b.lo AND o.at < b.hi),
        (SELECT COUNT(DISTINCT o.user_id) FROM promotion_offer_events o
          WHERE o.promotion_id = \(promotion.rawValue) AND o.at >= b.lo AND o.at < b.hi),
        (SELECT COUNT(*) FROM promotion_redemptions r
          WHERE r.promotion_id = \(promotion.rawValue) AND r.redeemed_at >= b.lo AND r.redeemed_at < b.hi)
      FROM unnest(\(starts)::bigint[], \(ends)::bigint[]) WITH ORDINALITY AS b(lo, hi, i)
      """, logger: logger
    ).decode((Int, Int, Int, Int).self) where (1...counts.count).contains(index) {
      counts[index - 1] = PromotionCounts(offers: offers, people: people, redeemed: redeemed)
    }
    return counts
  }
}
