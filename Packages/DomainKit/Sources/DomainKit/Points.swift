import Foundation

/// Why points were earned or spent. Raw values are the wire names.
public enum PointsReason: String, Sendable, Hashable, Codable, CaseIterable {
  /// Posting a poll.
  case pollPosted
  /// Voting in a poll.
  case voted
  /// Buying a coupon (negative amount).
  case couponPurchase
  /// A manual correction by an operator.
  case adjustment
}

/// One entry of a user's points ledger. Wire names: `id`, `userId`, `amount` (positive earns, negative spends),
/// `reason`, `reference` (e.g. the poll or coupon id), `createdAt`.
public struct PointsEntry: Sendable, Hashable, Codable, Identifiable {
  /// The entry id.
  public var id: LedgerEntryID
  /// The user.
  public var userID: UserID
  /// Points added (> 0) or removed (< 0).
  public var amount: Int
  /// Why.
  public var reason: PointsReason
  /// What the entry refers to (poll id, coupon id).
  public var reference: String?
  /// UTC ms.
  public var createdAt: Int64

  /// An entry.
  public init(
    id: LedgerEntryID, userID: UserID, amount: Int, reason: PointsReason, reference: String? = nil, createdAt: Int64
  ) {
    self.id = id
    self.userID = userID
    self.amount = amount
    self.reason = reason
    self.reference = reference
    self.createdAt = createdAt
  }

  private enum CodingKeys: String, CodingKey {
    case id
    case userID = "userId"
    case amount, reason, reference, createdAt
  }
}

/// How many points each action earns.
public struct PointsRewards: Sendable, Hashable, Codable {
  /// Points for posting a poll.
  public var pollPosted: Int
  /// Points for voting.
  public var voted: Int

  /// Rewards; by default 10 for a poll and 1 for a vote.
  public init(pollPosted: Int = 10, voted: Int = 1) {
    self.pollPosted = pollPosted
    self.voted = voted
  }
}

/// Why a points operation was refused.
public enum PointsError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The balance is lower than the price.
  case notEnoughPoints(balance: Int, required: Int)
  /// The offer is no longer available.
  case offerExpired
  /// Amounts must be positive.
  case invalidAmount(Int)

  /// A sentence for the person, e.g. "Not enough points: this coupon costs 12 and you have 11."
  public var description: String {
    switch self {
    case .notEnoughPoints(let balance, let required):
      "Not enough points: this coupon costs \(required) and you have \(balance)."
    case .offerExpired: "This offer has ended."
    case .invalidAmount(let amount): "\(amount) is not a valid number of points."
    }
  }
}

/// A user's points: the ledger (append-only) and its balance.
public struct PointsLedger: Sendable, Hashable, Codable {
  /// The user.
  public var userID: UserID
  /// Every entry, oldest first.
  public private(set) var entries: [PointsEntry]

  /// A ledger from existing entries.
  public init(userID: UserID, entries: [PointsEntry] = []) {
    self.userID = userID
    self.entries = entries
  }

  /// The sum of all entries (saturating at `Int.min`/`Int.max` rather than trapping on absurd ledgers).
  public var balance: Int {
    entries.reduce(0) { sum, entry in
      let (value, overflow) = sum.addingReportingOverflow(entry.amount)
      return overflow ? (entry.amount > 0 ? .max : .min) : value
    }
  }

  /// Adds earned points.
  /// - Throws: ``PointsError/invalidAmount(_:)`` when `amount` ≤ 0.
  @discardableResult
  public mutating func earn(
    _ amount: Int, reason: PointsReason, reference: String? = nil, id: LedgerEntryID, at time: Int64
  ) throws(PointsError) -> PointsEntry {
    guard amount > 0 else { throw .invalidAmount(amount) }
    let entry = PointsEntry(
      id: id, userID: userID, amount: amount, reason: reason, reference: reference, createdAt: time)
    entries.append(entry)
    return entry
  }

  /// Spends points; the balance never goes negative.
  /// - Throws: ``PointsError/notEnoughPoints(balance:required:)``, ``PointsError/invalidAmount(_:)``.
  @discardableResult
  public mutating func spend(
    _ amount: Int, reason: PointsReason, reference: String? = nil, id: LedgerEntryID, at time: Int64
  ) throws(PointsError) -> PointsEntry {
    guard amount > 0 else { throw .invalidAmount(amount) }
    let balance = balance
    guard balance >= amount else { throw .notEnoughPoints(balance: balance, required: amount) }
    let entry = PointsEntry(
      id: id, userID: userID, amount: -amount, reason: reason, reference: reference, createdAt: time)
    entries.append(entry)
    return entry
  }
}

/// A discount coupon a partner shop offers for points. Wire names: `id`, `shopName`, `title`, `discountPercent`,
/// `price` (points), `validUntil` (UTC ms, optional).
public struct CouponOffer: Sendable, Hashable, Codable, Identifiable {
  /// The offer id.
  public var id: CouponID
  /// The partner shop.
  public var shopName: String
  /// What the coupon gives.
  public var title: String
  /// Discount in percent, if it is a percentage discount.
  public var discountPercent: Int?
  /// Price in points.
  public var price: Int
  /// End of the offer, UTC ms.
  public var validUntil: Int64?

  /// An offer.
  public init(
    id: CouponID, shopName: String, title: String, discountPercent: Int? = nil, price: Int, validUntil: Int64? = nil
  ) {
    self.id = id
    self.shopName = shopName
    self.title = title
    self.discountPercent = discountPercent
    self.price = price
    self.validUntil = validUntil
  }
}

/// A coupon a user bought ("my coupons"). Wire names: `id`, `offerId`, `userId`, `code`, `purchasedAt`.
public struct Coupon: Sendable, Hashable, Codable, Identifiable {
  /// The coupon id.
  public var id: CouponID
  /// The offer bought.
  public var offerID: CouponID
  /// The owner.
  public var userID: UserID
  /// The code shown at the shop.
  public var code: String
  /// UTC ms.
  public var purchasedAt: Int64

  /// A coupon.
  public init(id: CouponID, offerID: CouponID, userID: UserID, code: String, purchasedAt: Int64) {
    self.id = id
    self.offerID = offerID
    self.userID = userID
    self.code = code
    self.purchasedAt = purchasedAt
  }

  private enum CodingKeys: String, CodingKey {
    case id
    case offerID = "offerId"
    case userID = "userId"
    case code, purchasedAt
  }
}

extension PointsLedger {
  /// Buys `offer`: spends its price and returns the coupon. Nothing changes when it fails.
  /// - Throws: ``PointsError/notEnoughPoints(balance:required:)`` or ``PointsError/offerExpired``.
  public mutating func purchase(
    _ offer: CouponOffer, couponID: CouponID, code: String, entryID: LedgerEntryID, at time: Int64
  ) throws(PointsError) -> Coupon {
    if let validUntil = offer.validUntil, time >= validUntil { throw .offerExpired }
    try spend(offer.price, reason: .couponPurchase, reference: couponID.rawValue, id: entryID, at: time)
    return Coupon(id: couponID, offerID: offer.id, userID: userID, code: code, purchasedAt: time)
  }
}
