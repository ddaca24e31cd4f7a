import DomainKit
import Foundation
import MeridianStore
import PostgresNIO

extension PostgresStore: PromotionStatsStore {
  public func promotionCounts(_ promotion: PromotionID, boundaries: [Int64]) async throws -> [PromotionCounts] {
    guard boundaries.count > 1 else { return [] }
    let splits = zip(boundaries, boundaries.dropFirst()).map { PromotionSlotSplit(start: $0, end: $1) }
    var counts = Array(repeating: PromotionCounts(offers: 0, people: 0, redeemed: 0), count: splits.count)
    // Whole quarter hours from the summary, the ends of an interval that cuts one from the events (only those that
    // are not empty: a probe of the events' index for each end of a year's days, all empty, cost 2 ms); one grouped
    // join over all intervals (a lateral subquery per interval took half again as long).
    let events = splits.enumerated().flatMap { index, split in split.eventRanges.map { (index + 1, $0) } }
    let rows = try await rowsThatMayLag(
      """
      WITH b(lo, a, z, hi, i) AS (
        SELECT * FROM unnest(\(splits.map(\.start))::bigint[], \(splits.map(\.summaryStart))::bigint[],
          \(splits.map(\.summaryEnd))::bigint[], \(splits.map(\.end))::bigint[]) WITH ORDINALITY
      ),
      cut(i, lo, hi) AS (
        SELECT * FROM unnest(\(events.map { Int64($0.0) })::bigint[], \(events.map(\.1.lowerBound))::bigint[],
          \(events.map(\.1.upperBound))::bigint[])
      ),
      u(i, user_id, n) AS (
        SELECT b.i, s.user_id, s.offers FROM b JOIN promotion_offer_slots s
          ON s.promotion_id = \(promotion.rawValue) AND s.slot >= b.a AND s.slot < b.z
        UNION ALL
        SELECT cut.i, e.user_id, 1 FROM cut JOIN promotion_offer_events e
          ON e.promotion_id = \(promotion.rawValue) AND e.at >= cut.lo AND e.at < cut.hi
      )
      SELECT i, SUM(n)::bigint, COUNT(DISTINCT user_id), 0::bigint FROM u GROUP BY i
      UNION ALL
      SELECT b.i, 0, 0, COUNT(*) FROM b JOIN promotion_redemptions r
        ON r.promotion_id = \(promotion.rawValue) AND r.redeemed_at >= b.lo AND r.redeemed_at < b.hi
      GROUP BY b.i
      """)
    for (index, offers, people, redeemed) in try rows.map({ try $0.decode((Int, Int, Int, Int).self) })
    where (1...counts.count).contains(index) {
      counts[index - 1].offers += offers
      counts[index - 1].people += people
      counts[index - 1].redeemed += redeemed
    }
    return counts
  }
}
