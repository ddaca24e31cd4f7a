import DomainKit
import Foundation

/// What anyone may see of a poll's or comment's author: the fields of their profile whose audience is `everyone`.
/// Wire names: `id`, `fullName`, `avatar`.
public struct PublicAuthor: Sendable, Hashable, Codable {
  /// The author.
  public var id: UserID
  /// Their full name, when its audience is `everyone`.
  public var fullName: String?
  /// Their avatar URL, when its audience is `everyone`.
  public var avatar: String?

  /// An author.
  public init(id: UserID, fullName: String? = nil, avatar: String? = nil) {
    self.id = id
    self.fullName = fullName
    self.avatar = avatar
  }
}

/// A poll as the API shows it: the poll, its author's public profile, its results, how many visible comments it
/// has, whether it is hidden or closed, and the caller's own vote. Wire names: `poll`, `author`, `results`,
/// `comments`, `hidden`, `closesAt` (UTC ms, absent when it never closes), `myChoice` (absent when the caller hasn't
/// voted, or in lists).
public struct PollSummary: Sendable, Hashable, Codable, Identifiable {
  /// The poll.
  public var poll: Poll
  /// Its author.
  public var author: PublicAuthor
  /// Counts and percentages (DomainKit's `PollResults`: they add to 100, and are all 0 without votes).
  public var results: PollResults
  /// Visible comments.
  public var comments: Int
  /// Hidden by an operator: shown to nobody but its author, and closed to votes and comments.
  public var hidden: Bool
  /// When voting ends, UTC ms.
  public var closesAt: Int64?
  /// The caller's vote, if any.
  public var myChoice: PollChoice?

  /// The poll's id.
  public var id: PollID { poll.id }

  /// A summary.
  public init(
    poll: Poll, author: PublicAuthor, results: PollResults, comments: Int = 0, hidden: Bool = false,
    closesAt: Int64? = nil, myChoice: PollChoice? = nil
  ) {
    self.poll = poll
    self.author = author
    self.results = results
    self.comments = comments
    self.hidden = hidden
    self.closesAt = closesAt
    self.myChoice = myChoice
  }

  /// Whether votes are refused at `time`.
  public func isClosed(at time: Int64) -> Bool { closesAt.map { time >= $0 } ?? false }
}

/// One page of a list read by cursor (polls, comments). Wire names: `items`, `nextCursor` (absent on the last page).
public struct CursorPage<Item: Sendable & Hashable & Codable>: Sendable, Hashable, Codable {
  /// The items of this page.
  public var items: [Item]
  /// What asks for the next page.
  public var nextCursor: String?
  /// A page.
  public init(items: [Item], nextCursor: String? = nil) {
    self.items = items
    self.nextCursor = nextCursor
  }
}

/// One page of polls.
public typealias PollPage = CursorPage<PollSummary>

/// A comment with its author's public profile. Wire names: `comment`, `author`, `hidden`.
public struct PollCommentView: Sendable, Hashable, Codable, Identifiable {
  /// The comment.
  public var comment: PollComment
  /// Its author.
  public var author: PublicAuthor
  /// Hidden by the poll's author or an operator (lists leave hidden comments out, but for their own author).
  public var hidden: Bool
  /// The comment's id.
  public var id: CommentID { comment.id }
  /// A comment.
  public init(comment: PollComment, author: PublicAuthor, hidden: Bool = false) {
    self.comment = comment
    self.author = author
    self.hidden = hidden
  }
}

/// One page of comments, oldest first.
public typealias PollCommentPage = CursorPage<PollCommentView>

/// A coupon offer with its stock. Wire names: `offer` (DomainKit's `CouponOffer`), `description`, `stock`, `sold`,
/// `remaining`.
public struct CouponListing: Sendable, Hashable, Codable, Identifiable {
  /// The offer.
  public var offer: CouponOffer
  /// What the shop says about it.
  public var description: String
  /// Coupons the shop gives out in all.
  public var stock: Int
  /// Coupons bought so far.
  public var sold: Int
  /// Coupons left.
  public var remaining: Int { max(0, stock - sold) }
  /// The offer's id.
  public var id: CouponID { offer.id }

  /// A listing.
  public init(offer: CouponOffer, description: String = "", stock: Int, sold: Int = 0) {
    self.offer = offer
    self.description = description
    self.stock = stock
    self.sold = sold
  }

  private enum CodingKeys: String, CodingKey { case offer, description, stock, sold, remaining }

  /// Decodes `offer`, `description`, `stock`, `sold` (`remaining` is derived).
  public init(from decoder: any Decoder) throws {
    let c = try decoder.container(keyedBy: CodingKeys.self)
    offer = try c.decode(CouponOffer.self, forKey: .offer)
    description = try c.decodeIfPresent(String.self, forKey: .description) ?? ""
    stock = try c.decode(Int.self, forKey: .stock)
    sold = try c.decodeIfPresent(Int.self, forKey: .sold) ?? 0
  }

  /// Encodes every field, `remaining` included.
  public func encode(to encoder: any Encoder) throws {
    var c = encoder.container(keyedBy: CodingKeys.self)
    try c.encode(offer, forKey: .offer)
    try c.encode(description, forKey: .description)
    try c.encode(stock, forKey: .stock)
    try c.encode(sold, forKey: .sold)
    try c.encode(remaining, forKey: .remaining)
  }
}

/// What a purchase bought, and the balance after it. Wire names: `coupon`, `balance`.
public struct CouponPurchase: Sendable, Hashable, Codable {
  /// The coupon, with its redemption code.
  public var coupon: Coupon
  /// The buyer's balance after the purchase.
  public var balance: Int
  /// A purchase.
  public init(coupon: Coupon, balance: Int) {
    self.coupon = coupon
    self.balance = balance
  }
}

/// A user's points: the balance (the ledger's sum) and the newest entries. Wire names: `balance`, `entries`.
public struct PointsStatement: Sendable, Hashable, Codable {
  /// The balance.
  public var balance: Int
  /// The newest entries first.
  public var entries: [PointsEntry]
  /// A statement.
  public init(balance: Int, entries: [PointsEntry]) {
    self.balance = balance
    self.entries = entries
  }
}

/// How an offer did. Wire names: `offerId`, `stock`, `bought`, `redeemed`.
public struct CouponStats: Sendable, Hashable, Codable {
  /// The offer.
  public var offerId: CouponID
  /// Coupons the shop gives out in all.
  public var stock: Int
  /// Coupons bought.
  public var bought: Int
  /// Coupons redeemed at the shop.
  public var redeemed: Int
  /// Figures.
  public init(offerId: CouponID, stock: Int, bought: Int, redeemed: Int) {
    self.offerId = offerId
    self.stock = stock
    self.bought = bought
    self.redeemed = redeemed
  }
}
