import DomainKit
import Foundation

/// Counts of a promotion's offers and redemptions over time, for its statistics (``PromotionStats``).
public protocol PromotionStatsStore: Sendable {
  /// For each interval `[boundaries[i], boundaries[i + 1])` (UTC ms, ascending): how often `promotion` was offered,
  /// to how many distinct people, and how many redeemed it.
  func promotionCounts(_ promotion: PromotionID, boundaries: [Int64]) async throws -> [PromotionCounts]
}

/// A promotion's exact counts in one interval; shown to advertisers only through ``PromotionStatsRow``.
public struct PromotionCounts: Sendable, Hashable {
  /// Offers (a person listing the venue twice counts twice).
  public var offers: Int
  /// Distinct people offered.
  public var people: Int
  /// Redemptions.
  public var redeemed: Int

  /// Counts.
  public init(offers: Int, people: Int, redeemed: Int) {
    self.offers = offers
    self.people = people
    self.redeemed = redeemed
  }
}
