import DomainKit
import Foundation
import GRDB
import MeridianStore

extension SQLiteStore {
  public func promotionCounts(_ promotion: PromotionID, boundaries: [Int64]) async throws -> [PromotionCounts] {
    guard boundaries.count > 1 else { return [] }
    return try await database.read { db in
      let offers = try db.cachedStatement(
        sql: """
          SELECT COUNT(*), COUNT(DISTINCT user_id) FROM promotion_offer_events
          WHERE promotion_id = ? AND at >= ? AND at < ?
          """)
      let redemptions = try db.cachedStatement(
        sql:
          "SELECT COUNT(*) FROM promotion_redemptions WHERE promotion_id = ? AND redeemed_at >= ? AND redeemed_at < ?")
      return try zip(boundaries, boundaries.dropFirst()).map { start, end in
        let arguments: StatementArguments = [promotion.rawValue, start, end]
        let row = try Row.fetchOne(offers, arguments: arguments)
        return PromotionCounts(
          offers: row?[0] ?? 0, people: row?[1] ?? 0,
          redeemed: try Int.fetchOne(redemptions, arguments: arguments) ?? 0)
      }
    }
  }
}
