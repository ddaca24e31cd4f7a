import DomainKit
import Foundation
import MeridianAPI

/// Polls' primitives in one transaction (``StoreTransaction``): the rows, not the rules.
public protocol PollTransaction: Sendable {
  /// Inserts `poll`, open until `closesAt`.
  /// - Throws: ``PollStoreError/duplicateID(_:)`` when its id is taken.
  func insertPoll(_ poll: Poll, closesAt: Int64?) async throws
  /// The poll's row with its author's public fields and its visible comments (``PollRowValues``); nil when none.
  func pollRow(_ id: PollID) async throws -> PollRowValues?
  /// The poll's author, whether it is hidden and when it closes; nil when there is no such poll. `sharing`: the row
  /// can't be changed by another transaction until this one ends (a comment: the poll isn't hidden before it
  /// commits).
  func pollState(_ id: PollID, sharing: Bool) async throws -> PollState?
  /// `user`'s choice in `poll`, nil before their first vote; `lock`: their ballot's row is held until the
  /// transaction ends, which orders this voter's votes in this poll and nobody else's.
  func ballot(of user: UserID, in poll: PollID, lock: Bool) async throws -> PollChoice?
  /// Inserts `user`'s first ballot; false (nothing changed) when they have one, stored by a vote that committed
  /// meanwhile.
  /// - Throws: ``PollStoreError/pollNotFound(_:)`` when the poll is gone.
  func insertBallot(of user: UserID, in poll: PollID, choice: PollChoice, now: Int64) async throws -> Bool
  /// Changes `user`'s ballot in `poll` to `choice`.
  func updateBallot(of user: UserID, in poll: PollID, choice: PollChoice, now: Int64) async throws
  /// Adds `change` to the poll's counts when it still takes votes at `now` (``PollRules/checkOpen(_:hidden:closesAt:now:)``
  /// checked again by the same statement, so a poll hidden or closed since the check takes none) and returns the
  /// counts; nil when it takes none.
  func addVotes(_ change: PollRules.BallotChange, to poll: PollID, ifOpenAt now: Int64) async throws -> PollResults?
  /// The poll's counts (zeros when there is no such poll).
  func pollResults(_ poll: PollID) async throws -> PollResults
  /// Inserts `comment`.
  /// - Throws: ``PollStoreError/duplicateID(_:)`` when its id is taken.
  func insertComment(_ comment: PollComment) async throws
  /// Up to `limit` comments of `poll` after `cursor`, oldest first, authors embedded: the visible ones, and the
  /// hidden ones of `viewer`.
  func comments(of poll: PollID, visibleTo viewer: UserID?, after cursor: CommentCursor?, limit: Int) async throws
    -> [PollCommentView]
  /// `user`'s public name and avatar (those their audience shows everyone).
  func publicAuthor(_ user: UserID) async throws -> PublicAuthor
}

/// A poll's state as ``PollTransaction/pollState(_:sharing:)`` reads it.
public struct PollState: Sendable, Hashable {
  /// The author.
  public var authorID: String
  /// Hidden by an operator.
  public var hidden: Bool
  /// When voting ends, UTC ms.
  public var closesAt: Int64?

  /// A state.
  public init(authorID: String, hidden: Bool, closesAt: Int64?) {
    (self.authorID, self.hidden, self.closesAt) = (authorID, hidden, closesAt)
  }
}

/// The points ledger's primitives in one transaction (``StoreTransaction``).
public protocol PointsTransaction: Sendable {
  /// Whether `user` has an account.
  func userExists(_ user: UserID) async throws -> Bool
  /// `user`'s balance (0 before their first entry); `lock`: their balance row is held until the transaction ends,
  /// so that concurrent spending waits.
  func balance(of user: UserID, lock: Bool) async throws -> Int
  /// Appends an earning of `amount` to `user`'s ledger and balance, unless the ledger's unique key says it was
  /// credited before (a poll's or a vote's reward, by `reason` and `reference`); returns the points credited.
  func credit(_ amount: Int, to user: UserID, reason: PointsReason, reference: String?, note: String?, now: Int64)
    async throws -> Int
  /// Spends `amount` (> 0) of `user`'s points; the database keeps the balance from going negative, whatever ran
  /// meanwhile. Returns the balance left.
  /// - Throws: `PointsError.notEnoughPoints` when the balance is too small.
  func debit(_ amount: Int, from user: UserID, reason: PointsReason, reference: String?, note: String?, now: Int64)
    async throws -> Int
  /// `user`'s balance and their newest `limit` entries.
  func pointsStatement(of user: UserID, limit: Int) async throws -> PointsStatement
}

/// The coupon catalogue's primitives in one transaction (``StoreTransaction``).
public protocol CouponTransaction: Sendable {
  /// The coupon `user` bought with the request key `requestKey`, nil when none.
  func coupon(of user: UserID, requestKey: String) async throws -> Coupon?
  /// The offer with its stock; `lock`: its row is held until the transaction ends.
  func couponOffer(_ id: CouponID, lock: Bool) async throws -> CouponListing?
  /// Takes one coupon of `offer` from its stock; false when none is left.
  func takeCouponFromStock(_ offer: CouponID) async throws -> Bool
  /// Stores `coupon`, bought for `price` points with `requestKey`.
  /// - Throws: ``PollStoreError/codeTaken`` when its code is taken.
  func insertCoupon(_ coupon: Coupon, price: Int, requestKey: String?) async throws
}

// MARK: The rules, once for every engine

extension StoreTransaction {
  /// Stores `poll` and credits its author `reward` points (none when 0).
  /// - Throws: ``PollStoreError/duplicateID(_:)``.
  public func createPoll(_ poll: Poll, closesAt: Int64?, reward: Int, now: Int64) async throws -> PollSummary {
    try await insertPoll(poll, closesAt: closesAt)
    if reward > 0 {
      _ = try await credit(
        reward, to: poll.authorID, reason: .pollPosted, reference: poll.id.rawValue, note: nil, now: now)
    }
    guard let row = try await pollRow(poll.id) else { throw PollStoreError.pollNotFound(poll.id) }
    return try row.summary()
  }

  /// One poll with `viewer`'s vote; nil when there is none, or ``PollRules/isVisible(hidden:authorID:to:includeHidden:)``
  /// hides it from `viewer`.
  public func poll(_ id: PollID, viewer: UserID?, includeHidden: Bool) async throws -> PollSummary? {
    guard let values = try await pollRow(id),
      PollRules.isVisible(hidden: values.hidden, authorID: values.authorID, to: viewer, includeHidden: includeHidden)
    else { return nil }
    var choice: PollChoice?
    if let viewer { choice = try await ballot(of: viewer, in: id, lock: false) }
    return try values.summary(myChoice: choice)
  }

  /// A page of a poll's comments, oldest first, authors embedded; hidden ones only for their own author.
  /// - Throws: ``PollStoreError`` `.pollNotFound` (also for a poll `viewer` does not see), `.invalidCursor`.
  public func comments(of poll: PollID, viewer: UserID?, cursor: String?, limit: Int) async throws
    -> PollCommentPage
  {
    let cursor = try cursor.map { text throws(PollStoreError) in try CommentCursor(text: text) }
    let limit = min(100, max(1, limit))
    guard let state = try await pollState(poll, sharing: false),
      PollRules.isVisible(hidden: state.hidden, authorID: state.authorID, to: viewer)
    else { throw PollStoreError.pollNotFound(poll) }
    let found = try await comments(of: poll, visibleTo: viewer, after: cursor, limit: limit + 1)
    let items = Array(found.prefix(limit))
    let next =
      found.count > limit
      ? items.last.map { CommentCursor(createdAt: $0.comment.createdAt, id: $0.id.rawValue).text } : nil
    return PollCommentPage(items: items, nextCursor: next)
  }

  /// Records `user`'s vote (or changes it) and credits `reward` points on their first vote in the poll, once.
  ///
  /// The order is what keeps concurrent votes apart on an engine with row locks: the poll's state is checked
  /// without a lock, the voter's ballot is locked next (their own row: only their votes in this poll wait), and the
  /// poll's row last, by the one statement that adds to its counts, so a popular poll is held for that statement
  /// and the commit only.
  /// - Throws: ``PollStoreError`` `.pollNotFound`, `.pollHidden`, `.pollClosed`.
  public func vote(_ poll: PollID, user: UserID, choice: PollChoice, reward: Int, now: Int64) async throws
    -> VoteOutcome
  {
    try await checkVotable(poll, now: now)
    var previous = try await ballot(of: user, in: poll, lock: true)
    // A vote of this voter that committed meanwhile makes this one a change of it.
    if previous == nil, try await !insertBallot(of: user, in: poll, choice: choice, now: now) {
      previous = try await ballot(of: user, in: poll, lock: true)
    }
    let change = PollRules.ballot(previous: previous, choice: choice)
    if change == .none {
      return VoteOutcome(results: try await pollResults(poll), previous: previous, awarded: 0)
    }
    if previous != nil { try await updateBallot(of: user, in: poll, choice: choice, now: now) }
    var awarded = 0
    if change.earnsReward && reward > 0 {
      awarded = try await credit(reward, to: user, reason: .voted, reference: poll.rawValue, note: nil, now: now)
    }
    guard let results = try await addVotes(change, to: poll, ifOpenAt: now) else {
      // Hidden or closed since the check: say which; nothing is stored (the transaction rolls back).
      try await checkVotable(poll, now: now)
      throw PollStoreError.pollNotFound(poll)
    }
    return VoteOutcome(results: results, previous: previous, awarded: awarded)
  }

  /// Throws unless `poll` exists and takes votes at `now`.
  func checkVotable(_ poll: PollID, now: Int64) async throws {
    guard let state = try await pollState(poll, sharing: false) else { throw PollStoreError.pollNotFound(poll) }
    try PollRules.checkOpen(poll, hidden: state.hidden, closesAt: state.closesAt, now: now)
  }

  /// Stores a comment on a poll that takes comments.
  /// - Throws: ``PollStoreError`` `.pollNotFound`, `.pollHidden`, `.duplicateID`.
  public func addComment(_ comment: PollComment) async throws -> PollCommentView {
    guard let state = try await pollState(comment.pollID, sharing: true) else {
      throw PollStoreError.pollNotFound(comment.pollID)
    }
    try PollRules.checkCommentable(comment.pollID, hidden: state.hidden)
    try await insertComment(comment)
    return PollCommentView(comment: comment, author: try await publicAuthor(comment.authorID))
  }

  /// Appends an operator's entry: `amount` may be negative, but never below a zero balance.
  /// - Throws: ``PollStoreError/userNotFound(_:)``; `PointsError.notEnoughPoints`, `.invalidAmount`.
  public func grantPoints(_ amount: Int, to user: UserID, note: String, now: Int64) async throws -> PointsStatement {
    guard try await userExists(user) else { throw PollStoreError.userNotFound(user) }
    try PointsRules.checkGrant(amount, to: user, balance: try await balance(of: user, lock: true), now: now)
    if amount >= 0 {
      _ = try await credit(amount, to: user, reason: .adjustment, reference: nil, note: note, now: now)
    } else {
      _ = try await debit(-amount, from: user, reason: .adjustment, reference: nil, note: note, now: now)
    }
    return try await pointsStatement(of: user, limit: 20)
  }

  /// Buys one coupon of `offer` for `user`: takes one from stock, spends its price and stores the coupon under
  /// `code`, all in this transaction. With a `requestKey`, a retry returns the first purchase and changes nothing.
  ///
  /// The buyer's balance row is locked first (every purchase of theirs waits there, so a retry finds the first
  /// purchase), then the offer's row: always in this order, so purchases never deadlock.
  /// - Throws: `PointsError.notEnoughPoints`, `.offerExpired`; ``PollStoreError`` `.offerNotFound`, `.outOfStock`,
  ///   `.codeTaken`.
  public func purchaseCoupon(
    _ offer: CouponID, user: UserID, couponID: CouponID, code: String, requestKey: String?, now: Int64
  ) async throws -> CouponPurchase {
    let balance = try await balance(of: user, lock: true)
    if let requestKey, let coupon = try await coupon(of: user, requestKey: requestKey) {
      return CouponPurchase(coupon: coupon, balance: balance)
    }
    guard let listing = try await couponOffer(offer, lock: true) else { throw PollStoreError.offerNotFound(offer) }
    let coupon = try PointsRules.purchase(listing, couponID: couponID, code: code, by: user, balance: balance, now: now)
    let remaining = try await debit(
      listing.offer.price, from: user, reason: .couponPurchase, reference: couponID.rawValue, note: nil, now: now)
    guard try await takeCouponFromStock(offer) else { throw PollStoreError.outOfStock(offer) }
    try await insertCoupon(coupon, price: listing.offer.price, requestKey: requestKey)
    return CouponPurchase(coupon: coupon, balance: remaining)
  }
}

extension PollStore where Self: StoreTransactions {
  public func comments(of poll: PollID, viewer: UserID?, cursor: String?, limit: Int) async throws
    -> PollCommentPage
  {
    try await read { tx in try await tx.comments(of: poll, viewer: viewer, cursor: cursor, limit: limit) }
  }

  public func poll(_ id: PollID, viewer: UserID?, includeHidden: Bool) async throws -> PollSummary? {
    try await read { tx in try await tx.poll(id, viewer: viewer, includeHidden: includeHidden) }
  }

  public func createPoll(_ poll: Poll, closesAt: Int64?, reward: Int, now: Int64) async throws -> PollSummary {
    try await write { tx in try await tx.createPoll(poll, closesAt: closesAt, reward: reward, now: now) }
  }

  public func vote(_ poll: PollID, user: UserID, choice: PollChoice, reward: Int, now: Int64) async throws
    -> VoteOutcome
  {
    try await write { tx in try await tx.vote(poll, user: user, choice: choice, reward: reward, now: now) }
  }

  public func addComment(_ comment: PollComment) async throws -> PollCommentView {
    try await write { tx in try await tx.addComment(comment) }
  }

  public func points(of user: UserID, limit: Int) async throws -> PointsStatement {
    try await read { tx in try await tx.pointsStatement(of: user, limit: limit) }
  }

  public func grantPoints(_ amount: Int, to user: UserID, note: String, now: Int64) async throws -> PointsStatement {
    try await write { tx in try await tx.grantPoints(amount, to: user, note: note, now: now) }
  }

  public func purchaseCoupon(
    _ offer: CouponID, user: UserID, couponID: CouponID, code: String, requestKey: String?, now: Int64
  ) async throws -> CouponPurchase {
    try await write { tx in
      try await tx.purchaseCoupon(offer, user: user, couponID: couponID, code: code, requestKey: requestKey, now: now)
    }
  }
}
