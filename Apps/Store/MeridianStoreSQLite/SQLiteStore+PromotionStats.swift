import DomainKit
import Foundation
import GRDB
import MeridianStore

extension SQLiteStore {
  public func promotionCounts(_ promotion: PromotionID, boundaries: [Int64]) async throws -> [PromotionCounts] {
    guard boundaries.count > 1 else { return [] }
    let splits = zip(boundaries, boundaries.dropFirst()).map { PromotionSlotSplit(start: $0, end: $1) }
    // The intervals as a JSON array of [start, summaryStart, summaryEnd, end], read by json_each: one statement.
    let intervals =
      "["
      + splits.map { "[\($0.start),\($0.summaryStart),\($0.summaryEnd),\($0.end)]" }
      .joined(separator: ",") + "]"
    return try await database.read { db in
      var counts = Array(repeating: PromotionCounts(offers: 0, people: 0, redeemed: 0), count: splits.count)
      // Whole quarter hours from the summary, the ends of an interval that cuts one from the events.
      let rows = try Row.fetchCursor(
        db,
        sql: """
          WITH b(i, lo, a, z, hi) AS (
            SELECT CAST(key AS INTEGER), json_extract(value, '$[0]'), json_extract(value, '$[1]'),
              json_extract(value, '$[2]'), json_extract(value, '$[3]')
            FROM json_each(?2)
          ),
          u(i, user_id, n) AS (
            SELECT b.i, s.user_id, s.offers FROM b JOIN promotion_offer_slots s
              ON s.promotion_id = ?1 AND s.slot >= b.a AND s.slot < b.z
            UNION ALL
            SELECT b.i, e.user_id, 1 FROM b JOIN promotion_offer_events e
              ON e.promotion_id = ?1 AND e.at >= b.lo AND e.at < MIN(b.a, b.hi)
            UNION ALL
            SELECT b.i, e.user_id, 1 FROM b JOIN promotion_offer_events e
              ON e.promotion_id = ?1 AND e.at >= b.z AND e.at < b.hi
          )
          SELECT i, SUM(n), COUNT(DISTINCT user_id), 0 FROM u GROUP BY i
          UNION ALL
          SELECT b.i, 0, 0, COUNT(*) FROM b JOIN promotion_redemptions r
            ON r.promotion_id = ?1 AND r.redeemed_at >= b.lo AND r.redeemed_at < b.hi
          GROUP BY b.i
          """,
        arguments: [promotion.rawValue, intervals])
      while let row = try rows.next() {
        let index: Int = row[0]
        guard counts.indices.contains(index) else { continue }
        counts[index].offers += row[1] as Int
        counts[index].people += row[2] as Int
        counts[index].redeemed += row[3] as Int
      }
      return counts
    }
  }
}
