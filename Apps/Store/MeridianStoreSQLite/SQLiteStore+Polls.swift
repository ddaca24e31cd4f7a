import DomainKit
import Foundation
import GRDB
import MeridianAPI
import MeridianStore
import PersistenceKit

extension SQLiteStore {
  /// The columns of ``PollRowValues`` and the join that embeds the author's public fields.
  static let pollSelect = """
    SELECT p.id, p.author_id, p.title, p.description, p.option0_text, p.option0_image, p.option1_text,
      p.option1_image, p.votes0, p.votes1, p.hidden, p.closes_at, p.created_at,
      CASE WHEN json_extract(a.audience, '$.fullName') = 'everyone' THEN a.full_name END,
      CASE WHEN json_extract(a.audience, '$.avatar') = 'everyone' THEN a.avatar END,
      (SELECT count(*) FROM poll_comments c WHERE c.poll_id = p.id AND c.hidden = 0)
    FROM polls p LEFT JOIN profiles a ON a.user_id = p.author_id
    """

  static func pollValues(_ row: Row) -> PollRowValues {
    PollRowValues(
      id: row[0], authorID: row[1], title: row[2], description: row[3], option0Text: row[4], option0Image: row[5],
      option1Text: row[6], option1Image: row[7], votes0: row[8], votes1: row[9], hidden: row[10], closesAt: row[11],
      createdAt: row[12], authorName: row[13], authorAvatar: row[14], comments: row[15])
  }

  // MARK: Polls

  public func polls(_ query: PollFeedQuery) async throws -> PollPage {
    let cursor = try query.cursor.map { text throws(PollStoreError) in try PollCursor(text: text, order: query.order) }
    return try await database.read { db in
      var conditions = ["1 = 1"]
      var arguments: StatementArguments = []
      if let author = query.author {
        conditions.append("p.author_id = ?")
        arguments += [author.rawValue]
      }
      if query.leavesOutHidden { conditions.append("p.hidden = 0") }
      let order: String
      switch query.order {
      case .newest:
        order = "p.created_at DESC, p.id DESC"
        if let cursor {
          conditions.append("(p.created_at, p.id) < (?, ?)")
          arguments += [cursor.createdAt, cursor.id]
        }
      case .mostVoted:
        order = "p.votes_total DESC, p.created_at DESC, p.id DESC"
        if let cursor {
          conditions.append("(p.votes_total, p.created_at, p.id) < (?, ?, ?)")
          arguments += [cursor.votes ?? 0, cursor.createdAt, cursor.id]
        }
      }
      arguments += [query.limit + 1]
      let rows = try Row.fetchAll(
        db,
        sql: "\(Self.pollSelect) WHERE \(conditions.joined(separator: " AND ")) ORDER BY \(order) LIMIT ?",
        arguments: arguments)
      let values = rows.prefix(query.limit).map(Self.pollValues)
      return PollPage(
        items: try values.map { try $0.summary() },
        nextCursor: rows.count > query.limit ? values.last?.cursor(query.order).text : nil)
    }
  }

  public func setPollHidden(_ id: PollID, hidden: Bool) async throws -> Bool {
    try await database.write { db in
      try db.execute(sql: "UPDATE polls SET hidden = ? WHERE id = ?", arguments: [hidden, id.rawValue])
      return db.changesCount > 0
    }
  }

  public func deletePoll(_ id: PollID) async throws -> [String]? {
    try await database.write { db in
      guard
        let row = try Row.fetchOne(
          db, sql: "SELECT option0_image, option1_image FROM polls WHERE id = ?", arguments: [id.rawValue])
      else { return nil }
      try db.execute(sql: "DELETE FROM polls WHERE id = ?", arguments: [id.rawValue])
      return try Self.unreferencedBlobs(db, [row[0], row[1]].compactMap { BlobReference.hash(in: $0 as String?) })
    }
  }

  public func closePoll(_ id: PollID, now: Int64) async throws -> Bool {
    try await database.write { db in
      try db.execute(
        sql: "UPDATE polls SET closes_at = min(coalesce(closes_at, ?1), ?1) WHERE id = ?2",
        arguments: [now, id.rawValue])
      return db.changesCount > 0
    }
  }

  // MARK: Blob references

  public func blobReferences(of user: UserID) async throws -> [String] {
    try await database.read { db in
      let urls = try String?.fetchAll(
        db,
        sql: """
          SELECT avatar FROM profiles WHERE user_id = ?1
          UNION ALL SELECT option0_image FROM polls WHERE author_id = ?1
          UNION ALL SELECT option1_image FROM polls WHERE author_id = ?1
          """, arguments: [user.rawValue])
      return Set(urls.compactMap { BlobReference.hash(in: $0) }).sorted()
    }
  }

  public func unreferencedBlobs(_ hashes: [String]) async throws -> [String] {
    try await database.read { db in try Self.unreferencedBlobs(db, hashes) }
  }

  /// Those of `hashes` no stored image URL refers to (by their last component), sorted: poll options, avatars,
  /// promotion images, venue and place logos.
  static func unreferencedBlobs(_ db: Database, _ hashes: [String]) throws -> [String] {
    try Set(hashes.filter { BlobKind.isHash($0) }).sorted().filter { hash in
      let pattern = "%" + hash
      return try Bool.fetchOne(
        db,
        sql: """
          SELECT EXISTS (SELECT 1 FROM polls WHERE option0_image LIKE ?1 OR option1_image LIKE ?1)
            OR EXISTS (SELECT 1 FROM profiles WHERE avatar LIKE ?1)
            OR EXISTS (SELECT 1 FROM venue_promotions WHERE image_url LIKE ?1)
            OR EXISTS (SELECT 1 FROM places WHERE logo_url LIKE ?1)
            OR EXISTS (SELECT 1 FROM place_news WHERE image_url LIKE ?1)
          """, arguments: [pattern]) == false
    }
  }

  // MARK: Votes

  // MARK: Comments

  public func deleteComment(_ id: CommentID, on poll: PollID, by user: UserID) async throws -> Bool {
    try await database.write { db in
      try db.execute(
        sql: "DELETE FROM poll_comments WHERE id = ? AND poll_id = ? AND author_id = ?",
        arguments: [id.rawValue, poll.rawValue, user.rawValue])
      return db.changesCount > 0
    }
  }

  public func setCommentHidden(_ id: CommentID, on poll: PollID?, hidden: Bool, by pollAuthor: UserID?) async throws
    -> Bool
  {
    try await database.write { db in
      try db.execute(
        sql: """
          UPDATE poll_comments SET hidden = ?1 WHERE id = ?2 AND (?4 IS NULL OR poll_id = ?4)
            AND (?3 IS NULL OR poll_id IN (SELECT id FROM polls WHERE author_id = ?3))
          """, arguments: [hidden, id.rawValue, pollAuthor?.rawValue, poll?.rawValue])
      return db.changesCount > 0
    }
  }

  // MARK: Points

  // MARK: Coupons

  static let offerSelect = """
    SELECT id, shop_name, title, description, discount_percent, price, stock, sold, valid_until FROM coupon_offers
    """

  static func listing(_ row: Row) -> CouponListing {
    CouponListing(
      offer: CouponOffer(
        id: CouponID(row[0] as String), shopName: row[1], title: row[2], discountPercent: row[4], price: row[5],
        validUntil: row[8]), description: row[3], stock: row[6], sold: row[7])
  }

  public func upsertCouponOffer(_ offer: CouponOffer, description: String, stock: Int, now: Int64) async throws
    -> CouponListing
  {
    guard offer.price > 0 else { throw PointsError.invalidAmount(offer.price) }
    guard stock >= 0 else { throw PointsError.invalidAmount(stock) }
    return try await database.write { db in
      try db.execute(
        sql: """
          INSERT INTO coupon_offers(id, shop_name, title, description, discount_percent, price, stock, valid_until,
            created_at)
          VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
          ON CONFLICT(id) DO UPDATE SET shop_name = excluded.shop_name, title = excluded.title,
            description = excluded.description, discount_percent = excluded.discount_percent,
            price = excluded.price, stock = max(excluded.stock, coupon_offers.sold),
            valid_until = excluded.valid_until
          """,
        arguments: [
          offer.id.rawValue, offer.shopName, offer.title, description, offer.discountPercent, offer.price, stock,
          offer.validUntil, now,
        ])
      guard let row = try Row.fetchOne(db, sql: "\(Self.offerSelect) WHERE id = ?", arguments: [offer.id.rawValue])
      else { throw PollStoreError.offerNotFound(offer.id) }
      return Self.listing(row)
    }
  }

  public func couponOffers(validAt now: Int64?) async throws -> [CouponListing] {
    try await database.read { db in
      try Row.fetchAll(
        db, sql: "\(Self.offerSelect) WHERE ?1 IS NULL OR valid_until IS NULL OR valid_until > ?1 ORDER BY id",
        arguments: [now]
      ).map(Self.listing)
    }
  }

  public func coupons(of user: UserID) async throws -> [Coupon] {
    try await database.read { db in
      try Row.fetchAll(
        db,
        sql: "SELECT id, offer_id, code, purchased_at FROM coupons WHERE user_id = ? ORDER BY purchased_at DESC, id",
        arguments: [user.rawValue]
      ).map { row in
        Coupon(
          id: CouponID(row[0] as String), offerID: CouponID(row[1] as String), userID: user, code: row[2],
          purchasedAt: row[3])
      }
    }
  }

  public func couponStats() async throws -> [CouponStats] {
    try await database.read { db in
      try Row.fetchAll(
        db,
        sql: """
          SELECT o.id, o.stock, o.sold,
            (SELECT count(*) FROM coupons c WHERE c.offer_id = o.id AND c.redeemed_at IS NOT NULL)
          FROM coupon_offers o ORDER BY o.id
          """
      ).map { row in CouponStats(offerId: CouponID(row[0] as String), stock: row[1], bought: row[2], redeemed: row[3]) }
    }
  }
}

extension SQLiteTransaction {
  // MARK: Polls

  func insertPoll(_ poll: Poll, closesAt: Int64?) throws {
    do {
      try db.execute(
        sql: """
          INSERT INTO polls(id, author_id, title, description, option0_text, option0_image, option1_text,
            option1_image, closes_at, created_at)
          VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
          """,
        arguments: [
          poll.id.rawValue, poll.authorID.rawValue, poll.title, poll.description, poll.options[0].text,
          poll.options[0].imageURL, poll.options[1].text, poll.options[1].imageURL, closesAt, poll.createdAt,
        ])
    } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
      throw PollStoreError.duplicateID(poll.id.rawValue)
    }
  }

  func pollRow(_ id: PollID) throws -> PollRowValues? {
    try Row.fetchOne(db, sql: "\(SQLiteStore.pollSelect) WHERE p.id = ?", arguments: [id.rawValue])
      .map(SQLiteStore.pollValues)
  }

  /// `sharing` needs no lock: SQLite runs one write transaction at a time.
  func pollState(_ id: PollID, sharing: Bool) throws -> PollState? {
    try Row.fetchOne(db, sql: "SELECT author_id, hidden, closes_at FROM polls WHERE id = ?", arguments: [id.rawValue])
      .map { row in PollState(authorID: row[0], hidden: row[1], closesAt: row[2]) }
  }

  func ballot(of user: UserID, in poll: PollID, lock: Bool) throws -> PollChoice? {
    try Int.fetchOne(
      db, sql: "SELECT choice FROM poll_ballots WHERE user_id = ? AND poll_id = ?",
      arguments: [user.rawValue, poll.rawValue]
    ).flatMap(PollChoice.init(rawValue:))
  }

  func insertBallot(of user: UserID, in poll: PollID, choice: PollChoice, now: Int64) throws -> Bool {
    do {
      try db.execute(
        sql: """
          INSERT INTO poll_ballots(user_id, poll_id, choice, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?4)
          ON CONFLICT(user_id, poll_id) DO NOTHING
          """,
        arguments: [user.rawValue, poll.rawValue, choice.rawValue, now])
    } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_FOREIGNKEY {
      throw PollStoreError.pollNotFound(poll)
    }
    return db.changesCount > 0
  }

  func updateBallot(of user: UserID, in poll: PollID, choice: PollChoice, now: Int64) throws {
    try db.execute(
      sql: "UPDATE poll_ballots SET choice = ?, updated_at = ? WHERE user_id = ? AND poll_id = ?",
      arguments: [choice.rawValue, now, user.rawValue, poll.rawValue])
  }

  func addVotes(_ change: PollRules.BallotChange, to poll: PollID, ifOpenAt now: Int64) throws -> PollResults? {
    try db.execute(
      sql: """
        UPDATE polls SET votes0 = votes0 + ?, votes1 = votes1 + ?, votes_total = votes_total + ?
        WHERE id = ? AND hidden = 0 AND (closes_at IS NULL OR closes_at > ?)
        """,
      arguments: [change.first, change.second, change.total, poll.rawValue, now])
    return db.changesCount > 0 ? try pollResults(poll) : nil
  }

  func pollResults(_ poll: PollID) throws -> PollResults {
    let counts = try Row.fetchOne(db, sql: "SELECT votes0, votes1 FROM polls WHERE id = ?", arguments: [poll.rawValue])
    return PollResults(counts: [counts?[0] ?? 0, counts?[1] ?? 0])
  }

  func insertComment(_ comment: PollComment) throws {
    do {
      try db.execute(
        sql: "INSERT INTO poll_comments(id, poll_id, author_id, text, created_at) VALUES (?, ?, ?, ?, ?)",
        arguments: [
          comment.id.rawValue, comment.pollID.rawValue, comment.authorID.rawValue, comment.text, comment.createdAt,
        ])
    } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
      throw PollStoreError.duplicateID(comment.id.rawValue)
    }
  }

  func comments(of poll: PollID, visibleTo viewer: UserID?, after cursor: CommentCursor?, limit: Int) throws
    -> [PollCommentView]
  {
    var arguments: StatementArguments = [poll.rawValue, viewer?.rawValue]
    var after = ""
    if let cursor {
      after = " AND (c.created_at, c.id) > (?, ?)"
      arguments += [cursor.createdAt, cursor.id]
    }
    arguments += [limit]
    return try Row.fetchAll(
      db,
      sql: """
        SELECT c.id, c.author_id, c.text, c.hidden, c.created_at,
          CASE WHEN json_extract(a.audience, '$.fullName') = 'everyone' THEN a.full_name END,
          CASE WHEN json_extract(a.audience, '$.avatar') = 'everyone' THEN a.avatar END
        FROM poll_comments c LEFT JOIN profiles a ON a.user_id = c.author_id
        WHERE c.poll_id = ? AND (c.hidden = 0 OR c.author_id = ?)\(after)
        ORDER BY c.created_at, c.id LIMIT ?
        """, arguments: arguments
    ).map { row in
      let author = UserID(row[1] as String)
      return PollCommentView(
        comment: PollComment(
          stored: CommentID(row[0] as String), pollID: poll, authorID: author, text: row[2], createdAt: row[4]),
        author: PublicAuthor(id: author, fullName: row[5], avatar: row[6]), hidden: row[3])
    }
  }

  func publicAuthor(_ user: UserID) throws -> PublicAuthor {
    let row = try Row.fetchOne(
      db,
      sql: """
        SELECT CASE WHEN json_extract(audience, '$.fullName') = 'everyone' THEN full_name END,
          CASE WHEN json_extract(audience, '$.avatar') = 'everyone' THEN avatar END
        FROM profiles WHERE user_id = ?
        """, arguments: [user.rawValue])
    return PublicAuthor(id: user, fullName: row?[0], avatar: row?[1])
  }

  // MARK: Points

  func userExists(_ user: UserID) throws -> Bool {
    try Bool.fetchOne(db, sql: "SELECT 1 FROM users WHERE id = ?", arguments: [user.rawValue]) != nil
  }

  /// `lock` needs no lock: SQLite runs one write transaction at a time.
  func balance(of user: UserID, lock: Bool) throws -> Int {
    try Int.fetchOne(db, sql: "SELECT balance FROM points_balances WHERE user_id = ?", arguments: [user.rawValue])
      ?? 0
  }

  func credit(_ amount: Int, to user: UserID, reason: PointsReason, reference: String?, note: String?, now: Int64)
    throws -> Int
  {
    try db.execute(
      sql: """
        INSERT INTO points_ledger(user_id, id, amount, reason, reference, note, created_at)
        VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
        """,
      arguments: [user.rawValue, Self.entryID(), amount, reason.rawValue, reference, note, now])
    guard db.changesCount > 0 else { return 0 }
    try db.execute(
      sql: """
        INSERT INTO points_balances(user_id, balance) VALUES (?, ?)
        ON CONFLICT(user_id) DO UPDATE SET balance = balance + excluded.balance
        """, arguments: [user.rawValue, amount])
    return amount
  }

  /// The balance row's check and the `WHERE` keep the balance from going negative.
  func debit(_ amount: Int, from user: UserID, reason: PointsReason, reference: String?, note: String?, now: Int64)
    throws -> Int
  {
    try db.execute(
      sql: "UPDATE points_balances SET balance = balance - ? WHERE user_id = ? AND balance >= ?",
      arguments: [amount, user.rawValue, amount])
    guard db.changesCount > 0 else {
      throw PointsError.notEnoughPoints(balance: try balance(of: user, lock: false), required: amount)
    }
    try db.execute(
      sql: """
        INSERT INTO points_ledger(user_id, id, amount, reason, reference, note, created_at)
        VALUES (?, ?, ?, ?, ?, ?, ?)
        """, arguments: [user.rawValue, Self.entryID(), -amount, reason.rawValue, reference, note, now])
    return try balance(of: user, lock: false)
  }

  static func entryID() -> String { UUID().uuidString.lowercased() }

  func pointsStatement(of user: UserID, limit: Int) throws -> PointsStatement {
    let rows = try Row.fetchAll(
      db,
      sql: """
        SELECT id, amount, reason, reference, created_at FROM points_ledger WHERE user_id = ?
        ORDER BY created_at DESC, rowid DESC LIMIT ?
        """, arguments: [user.rawValue, max(0, limit)])
    let entries = rows.map { row in
      PointsEntry(
        id: LedgerEntryID(row[0] as String), userID: user, amount: row[1],
        reason: PointsReason(rawValue: row[2]) ?? .adjustment, reference: row[3], createdAt: row[4])
    }
    return PointsStatement(balance: try balance(of: user, lock: false), entries: entries)
  }

  // MARK: Coupons

  func coupon(of user: UserID, requestKey: String) throws -> Coupon? {
    try Row.fetchOne(
      db, sql: "SELECT id, offer_id, code, purchased_at FROM coupons WHERE user_id = ? AND request_key = ?",
      arguments: [user.rawValue, requestKey]
    ).map { row in
      Coupon(
        id: CouponID(row[0] as String), offerID: CouponID(row[1] as String), userID: user, code: row[2],
        purchasedAt: row[3])
    }
  }

  /// `lock` needs no lock: SQLite runs one write transaction at a time.
  func couponOffer(_ id: CouponID, lock: Bool) throws -> CouponListing? {
    try Row.fetchOne(db, sql: "\(SQLiteStore.offerSelect) WHERE id = ?", arguments: [id.rawValue])
      .map(SQLiteStore.listing)
  }

  func takeCouponFromStock(_ offer: CouponID) throws -> Bool {
    try db.execute(
      sql: "UPDATE coupon_offers SET sold = sold + 1 WHERE id = ? AND sold < stock", arguments: [offer.rawValue])
    return db.changesCount > 0
  }

  func insertCoupon(_ coupon: Coupon, price: Int, requestKey: String?) throws {
    do {
      try db.execute(
        sql: """
          INSERT INTO coupons(user_id, id, offer_id, code, price, request_key, purchased_at)
          VALUES (?, ?, ?, ?, ?, ?, ?)
          """,
        arguments: [
          coupon.userID.rawValue, coupon.id.rawValue, coupon.offerID.rawValue, coupon.code, price, requestKey,
          coupon.purchasedAt,
        ])
    } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
      throw PollStoreError.codeTaken
    }
  }
}
