import DomainKit
import MeridianAPI

/// The points rules, once for every engine: DomainKit's ledger decides against the balance the engine read (its row
/// locked), and the engine's SQL then keeps what was decided (a balance that can't go negative, stock that can't be
/// oversold).
public enum PointsRules {
  /// Checks a grant of `amount` points to `user` (negative: a take-back) against `balance`.
  /// - Throws: ``PointsError`` for a zero amount or a take-back larger than the balance.
  public static func checkGrant(_ amount: Int, to user: UserID, balance: Int, now: Int64) throws {
    var ledger = ledger(user, balance: balance, now: now)
    if amount >= 0 {
      try ledger.earn(amount, reason: .adjustment, id: "grant", at: now)
    } else {
      try ledger.spend(-amount, reason: .adjustment, id: "grant", at: now)
    }
  }

  /// The coupon `user` buys from `listing` with `balance` points at `now`.
  /// - Throws: ``PointsError`` for an expired offer or too few points; ``PollStoreError/outOfStock(_:)`` when none
  ///   is left.
  public static func purchase(
    _ listing: CouponListing, couponID: CouponID, code: String, by user: UserID, balance: Int, now: Int64
  ) throws -> Coupon {
    if let validUntil = listing.offer.validUntil, now >= validUntil { throw PointsError.offerExpired }
    guard listing.remaining > 0 else { throw PollStoreError.outOfStock(listing.offer.id) }
    var ledger = ledger(user, balance: balance, now: now)
    return try ledger.purchase(listing.offer, couponID: couponID, code: code, entryID: "purchase", at: now)
  }

  /// A ledger holding `balance` as one entry: what the rules decide against.
  static func ledger(_ user: UserID, balance: Int, now: Int64) -> PointsLedger {
    PointsLedger(
      userID: user,
      entries: [PointsEntry(id: "balance", userID: user, amount: balance, reason: .adjustment, createdAt: now)])
  }
}
