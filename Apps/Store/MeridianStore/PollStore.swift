import DomainKit
import Foundation
import MeridianAPI

/// Polls, their ballots and comments, the points ledger and the coupon catalogue.
///
/// The database keeps the promises: one ballot per user and poll (its key), the poll's counts changed in the
/// ballot's transaction, so they equal the ballots stored), points
/// for a poll or a vote at most once (a unique index), an append-only ledger whose sum is a per-user balance row
/// that a check keeps from going negative (spends lock that row, so concurrent spending can't overdraw), and a
/// coupon purchase that takes stock, points and a unique code in one transaction, once per `Idempotency-Key`.
///
/// Deleting an account (``AdministrationStore/deleteUser(_:dryRun:batchSize:)``) deletes the polls it posted (with
/// their ballots and comments), its comments, ledger, balance and coupons, and its ballots in other people's polls —
/// but not those votes: a poll's counts keep them, so results never change because a voter left. A poll's counts
/// are then its stored ballots plus the votes of deleted accounts.
public protocol PollStore: Sendable {
  // MARK: Polls

  /// Stores `poll` (validated by DomainKit's `Poll`) and credits its author `reward` points (none when 0), in one
  /// transaction.
  func createPoll(_ poll: Poll, closesAt: Int64?, reward: Int, now: Int64) async throws -> PollSummary
  /// One poll with `viewer`'s vote; nil when there is none, or it is hidden and `viewer` isn't its author (unless
  /// `includeHidden`, for operators).
  func poll(_ id: PollID, viewer: UserID?, includeHidden: Bool) async throws -> PollSummary?
  /// A page of visible polls (or the author's own, hidden ones included), each with its author embedded: one query.
  func polls(_ query: PollFeedQuery) async throws -> PollPage
  /// Hides or shows a poll (operators). Returns false when there is no such poll.
  func setPollHidden(_ id: PollID, hidden: Bool) async throws -> Bool
  /// Deletes a poll with its ballots and comments; returns the content hashes of its images that nothing stored
  /// refers to any more (poll options, profile avatars), for the blob store to delete, or nil when there was no
  /// such poll.
  func deletePoll(_ id: PollID) async throws -> [String]?
  /// Closes a poll at `now` (a poll that closed earlier keeps its time); votes are refused from then on. Returns
  /// false when there is no such poll.
  func closePoll(_ id: PollID, now: Int64) async throws -> Bool

  // MARK: Blob references

  /// The content hashes `user`'s rows refer to: their avatar and their polls' option images.
  func blobReferences(of user: UserID) async throws -> [String]
  /// Those of `hashes` that no stored image URL refers to (poll options, avatars, promotion images, venue and place
  /// logos), sorted: for ``BlobStore/deleteUnreferenced(_:in:now:gracePeriod:)`` once the last reference is gone.
  func unreferencedBlobs(_ hashes: [String]) async throws -> [String]

  // MARK: Votes

  /// Records `user`'s vote (or changes it) and credits `reward` points on their first vote in the poll.
  /// - Throws: ``PollStoreError`` `.pollNotFound`, `.pollHidden`, `.pollClosed`.
  func vote(_ poll: PollID, user: UserID, choice: PollChoice, reward: Int, now: Int64) async throws -> VoteOutcome

  // MARK: Comments

  /// Stores a comment (validated by DomainKit's `PollComment`).
  /// - Throws: ``PollStoreError`` `.pollNotFound` (also for a deleted poll), `.pollHidden`.
  func addComment(_ comment: PollComment) async throws -> PollCommentView
  /// A page of a poll's comments, oldest first, authors embedded; hidden ones only for their own author.
  func comments(of poll: PollID, viewer: UserID?, cursor: String?, limit: Int) async throws -> PollCommentPage
  /// Deletes `user`'s own comment on `poll`. Returns false when they have no such comment on that poll.
  func deleteComment(_ id: CommentID, on poll: PollID, by user: UserID) async throws -> Bool
  /// Hides or shows a comment on `poll` (any poll when nil): by its poll's author (`by`), or by an operator (`by`
  /// nil). Returns false when there is no such comment (on `poll`, or on a poll of `by`).
  func setCommentHidden(_ id: CommentID, on poll: PollID?, hidden: Bool, by pollAuthor: UserID?) async throws -> Bool

  // MARK: Points

  /// `user`'s balance (the sum of their ledger) and their newest `limit` entries.
  func points(of user: UserID, limit: Int) async throws -> PointsStatement
  /// Appends an operator's entry: `amount` may be negative, but never below a zero balance.
  /// - Throws: `PointsError.notEnoughPoints` when a negative grant would overdraw, `.invalidAmount` for 0.
  func grantPoints(_ amount: Int, to user: UserID, note: String, now: Int64) async throws -> PointsStatement

  // MARK: Coupons

  /// Inserts an offer with its stock, or updates the one with its id (its stock never below what was sold).
  func upsertCouponOffer(_ offer: CouponOffer, description: String, stock: Int, now: Int64) async throws
    -> CouponListing
  /// The offers still valid at `now` (all of them when nil), by id.
  func couponOffers(validAt now: Int64?) async throws -> [CouponListing]
  /// Buys one coupon of `offer` for `user`: takes one from stock, spends its price and stores the coupon under
  /// `code`, all at once. With a `requestKey`, a retry returns the first purchase and changes nothing.
  /// - Throws: `PointsError.notEnoughPoints`, `.offerExpired`; ``PollStoreError`` `.offerNotFound`, `.outOfStock`,
  ///   `.codeTaken` (the caller draws another code).
  func purchaseCoupon(
    _ offer: CouponID, user: UserID, couponID: CouponID, code: String, requestKey: String?, now: Int64
  ) async throws -> CouponPurchase
  /// The coupons `user` bought, newest first.
  func coupons(of user: UserID) async throws -> [Coupon]
  /// Stock, coupons bought and redeemed, per offer.
  func couponStats() async throws -> [CouponStats]
}

extension PollStore {
  /// One poll with `viewer`'s vote; nil when there is none, or it is hidden and `viewer` isn't its author.
  public func poll(_ id: PollID, viewer: UserID?) async throws -> PollSummary? {
    try await poll(id, viewer: viewer, includeHidden: false)
  }
}

/// Which polls a feed page lists, in which order, from where.
public struct PollFeedQuery: Sendable, Hashable {
  /// The order.
  public enum Order: String, Sendable, Hashable, Codable, CaseIterable {
    /// Newest first.
    case newest
    /// Most votes first (then newest).
    case mostVoted = "most_voted"
  }

  /// The order.
  public var order: Order
  /// Only this author's polls (hidden ones included when they are the viewer).
  public var author: UserID?
  /// Who asks.
  public var viewer: UserID?
  /// The previous page's `nextCursor`.
  public var cursor: String?
  /// Page size, 1…100.
  public var limit: Int
  /// Hidden polls too (operators).
  public var includeHidden: Bool

  /// A query; `limit` is clamped to 1…100.
  public init(
    order: Order = .newest, author: UserID? = nil, viewer: UserID? = nil, cursor: String? = nil, limit: Int = 10,
    includeHidden: Bool = false
  ) {
    self.order = order
    self.author = author
    self.viewer = viewer
    self.cursor = cursor
    self.limit = min(100, max(1, limit))
    self.includeHidden = includeHidden
  }

  /// Whether hidden polls are left out: unless asked for, or the viewer lists their own.
  public var leavesOutHidden: Bool { !includeHidden && (author == nil || author != viewer) }
}

/// A position in a poll feed: the last item's vote total (most-voted order), creation time and id.
public struct PollCursor: Sendable, Hashable {
  /// The last item's vote total (most-voted order only).
  public var votes: Int64?
  /// Its creation time.
  public var createdAt: Int64
  /// Its id (tie-break).
  public var id: String

  /// A cursor.
  public init(votes: Int64? = nil, createdAt: Int64, id: String) {
    self.votes = votes
    self.createdAt = createdAt
    self.id = id
  }

  /// `createdAt.id` or `votes.createdAt.id`.
  public var text: String { (votes.map { "\($0)." } ?? "") + "\(createdAt).\(id)" }

  /// Parses the wire form of `order`.
  /// - Throws: ``PollStoreError/invalidCursor``.
  public init(text: String, order: PollFeedQuery.Order) throws(PollStoreError) {
    let parts = text.split(separator: ".", maxSplits: order == .mostVoted ? 2 : 1, omittingEmptySubsequences: false)
    switch order {
    case .newest:
      guard parts.count == 2, let createdAt = Int64(parts[0]), !parts[1].isEmpty else { throw .invalidCursor }
      self.init(createdAt: createdAt, id: String(parts[1]))
    case .mostVoted:
      guard parts.count == 3, let votes = Int64(parts[0]), let createdAt = Int64(parts[1]), !parts[2].isEmpty else {
        throw .invalidCursor
      }
      self.init(votes: votes, createdAt: createdAt, id: String(parts[2]))
    }
  }
}

/// A comment page's position: the last comment's creation time and id.
public struct CommentCursor: Sendable, Hashable {
  /// Creation time.
  public var createdAt: Int64
  /// Id (tie-break).
  public var id: String
  /// A cursor.
  public init(createdAt: Int64, id: String) {
    self.createdAt = createdAt
    self.id = id
  }
  /// `createdAt.id`.
  public var text: String { "\(createdAt).\(id)" }
  /// Parses the wire form.
  /// - Throws: ``PollStoreError/invalidCursor``.
  public init(text: String) throws(PollStoreError) {
    let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
    guard parts.count == 2, let createdAt = Int64(parts[0]), !parts[1].isEmpty else { throw .invalidCursor }
    self.init(createdAt: createdAt, id: String(parts[1]))
  }
}

/// What a vote did.
public struct VoteOutcome: Sendable, Hashable {
  /// The poll's results after the vote.
  public var results: PollResults
  /// The user's choice before (nil on their first vote).
  public var previous: PollChoice?
  /// Points credited for this vote (only the first vote in a poll earns).
  public var awarded: Int
  /// An outcome.
  public init(results: PollResults, previous: PollChoice?, awarded: Int) {
    self.results = results
    self.previous = previous
    self.awarded = awarded
  }
}

/// Why a poll, comment or coupon operation was refused.
public enum PollStoreError: Error, Sendable, Hashable, CustomStringConvertible {
  /// No such poll (or it was deleted).
  case pollNotFound(PollID)
  /// The poll is hidden.
  case pollHidden(PollID)
  /// Voting has ended.
  case pollClosed(PollID)
  /// No such comment.
  case commentNotFound(CommentID)
  /// No such coupon offer.
  case offerNotFound(CouponID)
  /// The offer has no coupons left.
  case outOfStock(CouponID)
  /// The redemption code is taken; draw another.
  case codeTaken
  /// A cursor that no page gave.
  case invalidCursor
  /// The poll, comment or offer id is taken.
  case duplicateID(String)
  /// No such user.
  case userNotFound(UserID)

  /// A sentence for the person.
  public var description: String {
    switch self {
    case .pollNotFound(let id): "There is no poll \(QuotedValue.quote("\(id)"))."
    case .pollHidden: "This poll is hidden; it takes no votes or comments."
    case .pollClosed: "Voting in this poll has ended."
    case .commentNotFound(let id): "There is no comment \(QuotedValue.quote("\(id)"))."
    case .offerNotFound(let id): "There is no coupon offer \(QuotedValue.quote("\(id)"))."
    case .outOfStock: "This coupon is sold out."
    case .codeTaken: "The redemption code is taken."
    case .invalidCursor: "The cursor is not one a page gave; start again without it."
    case .duplicateID(let id): "The id \(QuotedValue.quote("\(id)")) is taken."
    case .userNotFound(let id): "There is no user \(QuotedValue.quote("\(id)"))."
    }
  }
}

/// The polls' rules, once for every engine: who sees a hidden poll, what takes a vote or a comment, and what a
/// ballot changes. Engines read the rows, ask these, and write what they say in the same transaction.
public enum PollRules {
  /// Whether `viewer` sees a poll by `authorID` that is `hidden`: a hidden poll only its author, or a caller that
  /// asks for hidden ones (moderators, the admin).
  public static func isVisible(hidden: Bool, authorID: String, to viewer: UserID?, includeHidden: Bool = false) -> Bool
  {
    !hidden || includeHidden || authorID == viewer?.rawValue
  }

  /// Throws unless the poll takes votes at `now`: hidden polls and closed ones (`closesAt` reached) take none.
  public static func checkOpen(_ poll: PollID, hidden: Bool, closesAt: Int64?, now: Int64) throws(PollStoreError) {
    if hidden { throw .pollHidden(poll) }
    if let closesAt, now >= closesAt { throw .pollClosed(poll) }
  }

  /// Throws unless the poll takes comments: a hidden poll takes none (a closed one still does).
  public static func checkCommentable(_ poll: PollID, hidden: Bool) throws(PollStoreError) {
    if hidden { throw .pollHidden(poll) }
  }

  /// What a ballot changes: the counts of the two options and of voters, and whether the vote earns the reward.
  public struct BallotChange: Sendable, Hashable {
    /// Added to `votes0`, `votes1` and `votes_total`.
    public var first: Int, second: Int, total: Int
    /// A first vote earns the poll's reward; a changed one does not.
    public var earnsReward: Bool

    /// A change of the counts by `first`, `second` and `total`.
    public init(first: Int, second: Int, total: Int, earnsReward: Bool) {
      (self.first, self.second, self.total, self.earnsReward) = (first, second, total, earnsReward)
    }

    /// A vote that changes nothing (the same choice again).
    public static let none = BallotChange(first: 0, second: 0, total: 0, earnsReward: false)
  }

  /// The change of `choice` by a voter whose ballot was `previous` (nil: a first vote).
  public static func ballot(previous: PollChoice?, choice: PollChoice) -> BallotChange {
    switch (previous, choice) {
    case (nil, .first): BallotChange(first: 1, second: 0, total: 1, earnsReward: true)
    case (nil, .second): BallotChange(first: 0, second: 1, total: 1, earnsReward: true)
    case (.first, .second): BallotChange(first: -1, second: 1, total: 0, earnsReward: false)
    case (.second, .first): BallotChange(first: 1, second: -1, total: 0, earnsReward: false)
    default: .none
    }
  }
}

/// A poll row as both engines read it (the feed's one query: the poll, its author's public fields, the visible
/// comment count), turned into the API's ``PollSummary`` by one rule.
public struct PollRowValues: Sendable {
  /// `polls` columns.
  public var id: String, authorID: String, title: String, description: String
  /// Option captions and images.
  public var option0Text: String, option0Image: String?, option1Text: String, option1Image: String?
  /// Counts.
  public var votes0: Int, votes1: Int
  /// State.
  public var hidden: Bool, closesAt: Int64?, createdAt: Int64
  /// The author's name and avatar when their audience is `everyone` (the SQL decides).
  public var authorName: String?, authorAvatar: String?
  /// Visible comments.
  public var comments: Int

  /// The values of one row.
  public init(
    id: String, authorID: String, title: String, description: String, option0Text: String, option0Image: String?,
    option1Text: String, option1Image: String?, votes0: Int, votes1: Int, hidden: Bool, closesAt: Int64?,
    createdAt: Int64, authorName: String?, authorAvatar: String?, comments: Int
  ) {
    self.id = id
    self.authorID = authorID
    self.title = title
    self.description = description
    self.option0Text = option0Text
    self.option0Image = option0Image
    self.option1Text = option1Text
    self.option1Image = option1Image
    self.votes0 = votes0
    self.votes1 = votes1
    self.hidden = hidden
    self.closesAt = closesAt
    self.createdAt = createdAt
    self.authorName = authorName
    self.authorAvatar = authorAvatar
    self.comments = comments
  }

  /// The summary (`myChoice` as given).
  public func summary(myChoice: PollChoice? = nil) throws -> PollSummary {
    let poll = Poll(
      stored: PollID(id), authorID: UserID(authorID), title: title, description: description,
      first: PollOption(text: option0Text, imageURL: option0Image),
      second: PollOption(text: option1Text, imageURL: option1Image), createdAt: createdAt)
    return PollSummary(
      poll: poll, author: PublicAuthor(id: UserID(authorID), fullName: authorName, avatar: authorAvatar),
      results: PollResults(counts: [votes0, votes1]), comments: comments, hidden: hidden, closesAt: closesAt,
      myChoice: myChoice)
  }

  /// The feed cursor after this row in `order`.
  public func cursor(_ order: PollFeedQuery.Order) -> PollCursor {
    PollCursor(votes: order == .mostVoted ? Int64(votes0 + votes1) : nil, createdAt: createdAt, id: id)
  }
}

/// The one form of an image reference a person gives (a poll option's image, an avatar, a promotion's image):
/// exactly `/v1/blobs/<hash>`, the `url` `POST /v1/blobs` answers. Nothing else is a reference: no other host or
/// scheme, no query, no fragment, no bare hash. ``BlobStore/isUploadedImage(_:)`` adds that the blob is stored.
public enum BlobReference {
  /// The path every reference starts with.
  public static let prefix = "/v1/blobs/"

  /// The reference to the blob `hash`.
  public static func url(of hash: String) -> String { prefix + hash }

  /// The hash `url` refers to when it is exactly `/v1/blobs/<hash>`, else nil.
  public static func hash(in url: String?) -> String? {
    guard let url, url.hasPrefix(prefix) else { return nil }
    let hash = url.dropFirst(prefix.count)
    return BlobKind.isHash(hash) ? String(hash) : nil
  }
}
