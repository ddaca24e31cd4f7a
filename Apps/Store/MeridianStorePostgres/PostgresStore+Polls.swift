import DomainKit
import Foundation
import Logging
import MeridianAPI
import MeridianSecrets
import MeridianStore
import PostgresNIO

extension PostgresStore: PollStore {
  /// The columns of ``PollRowValues`` and the join that embeds the author's public fields.
  static let pollSelect = """
    SELECT p.id, p.author_id, p.title, p.description, p.option0_text, p.option0_image, p.option1_text,
      p.option1_image, p.votes0, p.votes1, p.hidden, p.closes_at, p.created_at,
      CASE WHEN a.audience->>'fullName' = 'everyone' THEN a.full_name END,
      CASE WHEN a.audience->>'avatar' = 'everyone' THEN a.avatar END,
      (SELECT count(*) FROM poll_comments c WHERE c.poll_id = p.id AND NOT c.hidden)
    FROM polls p LEFT JOIN profiles a ON a.user_id = p.author_id
    """

  static func pollValues(_ row: PostgresRow) throws -> PollRowValues {
    let r = row.makeRandomAccess()
    return PollRowValues(
      id: try r[0].decode(String.self), authorID: try r[1].decode(String.self), title: try r[2].decode(String.self),
      description: try r[3].decode(String.self), option0Text: try r[4].decode(String.self),
      option0Image: try r[5].decode(String?.self), option1Text: try r[6].decode(String.self),
      option1Image: try r[7].decode(String?.self), votes0: try r[8].decode(Int.self), votes1: try r[9].decode(Int.self),
      hidden: try r[10].decode(Bool.self), closesAt: try r[11].decode(Int64?.self),
      createdAt: try r[12].decode(Int64.self), authorName: try r[13].decode(String?.self),
      authorAvatar: try r[14].decode(String?.self), comments: try r[15].decode(Int.self))
  }

  /// Whether `error` is a unique violation (SQLSTATE 23505).
  static func isUniqueViolation(_ error: any Error) -> Bool { sqlState(error) == "23505" }

  // MARK: Polls

  static func pollBinds(_ values: [(any PostgresEncodable & Sendable)?]) throws -> PostgresBindings {
    var binds = PostgresBindings(capacity: values.count)
    for value in values {
      if let value { try binds.append(value) } else { binds.appendNull() }
    }
    return binds
  }

  public func polls(_ query: PollFeedQuery) async throws -> PollPage {
    let cursor = try query.cursor.map { text throws(PollStoreError) in try PollCursor(text: text, order: query.order) }
    var conditions = ["true"]
    var values: [(any PostgresEncodable & Sendable)?] = []
    func bind(_ value: (any PostgresEncodable & Sendable)?) -> String {
      values.append(value)
      return "$\(values.count)"
    }
    if let author = query.author { conditions.append("p.author_id = \(bind(author.rawValue))") }
    if query.leavesOutHidden { conditions.append("NOT p.hidden") }
    let order: String
    switch query.order {
    case .newest:
      order = "p.created_at DESC, p.id DESC"
      if let cursor { conditions.append("(p.created_at, p.id) < (\(bind(cursor.createdAt)), \(bind(cursor.id)))") }
    case .mostVoted:
      order = "p.votes_total DESC, p.created_at DESC, p.id DESC"
      if let cursor {
        conditions.append(
          "(p.votes_total, p.created_at, p.id) < (\(bind(cursor.votes ?? 0)), \(bind(cursor.createdAt)), \(bind(cursor.id)))"
        )
      }
    }
    let limit = bind(query.limit + 1)
    let sql = "\(Self.pollSelect) WHERE \(conditions.joined(separator: " AND ")) ORDER BY \(order) LIMIT \(limit)"
    let found = try await rowsThatMayLag(PostgresQuery(unsafeSQL: sql, binds: try Self.pollBinds(values)))
    let page = try found.prefix(query.limit).map(Self.pollValues)
    return PollPage(
      items: try page.map { try $0.summary() },
      nextCursor: found.count > query.limit ? page.last?.cursor(query.order).text : nil)
  }

  public func setPollHidden(_ id: PollID, hidden: Bool) async throws -> Bool {
    !(try await rows("UPDATE polls SET hidden = \(hidden) WHERE id = \(id.rawValue) RETURNING 1").isEmpty)
  }

  public func deletePoll(_ id: PollID) async throws -> [String]? {
    try await transaction { connection in
      guard
        let row = try await connection.query(
          "DELETE FROM polls WHERE id = \(id.rawValue) RETURNING option0_image, option1_image", logger: self.logger
        ).collect().first
      else { return nil }
      let (first, second) = try row.decode((String?, String?).self)
      return try await Self.unreferencedBlobs(
        [first, second].compactMap { BlobReference.hash(in: $0) }, on: connection, logger: self.logger)
    }
  }

  public func closePoll(_ id: PollID, now: Int64) async throws -> Bool {
    !(try await rows(
      """
      UPDATE polls SET closes_at = least(coalesce(closes_at, \(now)), \(now)) WHERE id = \(id.rawValue) RETURNING 1
      """
    ).isEmpty)
  }

  // MARK: Blob references

  public func blobReferences(of user: UserID) async throws -> [String] {
    var hashes: Set<String> = []
    for row in try await rows(
      """
      SELECT avatar FROM profiles WHERE user_id = \(user.rawValue)
      UNION ALL SELECT option0_image FROM polls WHERE author_id = \(user.rawValue)
      UNION ALL SELECT option1_image FROM polls WHERE author_id = \(user.rawValue)
      """)
    {
      if let hash = BlobReference.hash(in: try row.decode(String?.self)) { hashes.insert(hash) }
    }
    return hashes.sorted()
  }

  public func unreferencedBlobs(_ hashes: [String]) async throws -> [String] {
    try await transaction { connection in try await Self.unreferencedBlobs(hashes, on: connection, logger: self.logger)
    }
  }

  /// Those of `hashes` no stored image URL refers to (by their last component), sorted: poll options, avatars,
  /// promotion images, venue and place logos.
  static func unreferencedBlobs(_ hashes: [String], on connection: PostgresConnection, logger: Logger) async throws
    -> [String]
  {
    var unreferenced: [String] = []
    for hash in Set(hashes.filter { BlobKind.isHash($0) }).sorted() {
      let pattern = "%" + hash
      let referenced = try await connection.query(
        """
        SELECT EXISTS (SELECT 1 FROM polls WHERE option0_image LIKE \(pattern) OR option1_image LIKE \(pattern))
          OR EXISTS (SELECT 1 FROM profiles WHERE avatar LIKE \(pattern))
          OR EXISTS (SELECT 1 FROM venue_promotions WHERE image_url LIKE \(pattern))
          OR EXISTS (SELECT 1 FROM places WHERE logo_url LIKE \(pattern))
          OR EXISTS (SELECT 1 FROM place_news WHERE image_url LIKE \(pattern))
        """, logger: logger
      ).collect().first?.decode(Bool.self)
      if referenced == false { unreferenced.append(hash) }
    }
    return unreferenced
  }

  // MARK: Comments

  public func deleteComment(_ id: CommentID, on poll: PollID, by user: UserID) async throws -> Bool {
    !(try await rows(
      """
      DELETE FROM poll_comments WHERE id = \(id.rawValue) AND poll_id = \(poll.rawValue)
        AND author_id = \(user.rawValue) RETURNING 1
      """
    ).isEmpty)
  }

  public func setCommentHidden(_ id: CommentID, on poll: PollID?, hidden: Bool, by pollAuthor: UserID?) async throws
    -> Bool
  {
    let author = pollAuthor?.rawValue
    let pollID = poll?.rawValue
    return
      !(try await rows(
        """
        UPDATE poll_comments SET hidden = \(hidden) WHERE id = \(id.rawValue)
          AND (\(pollID)::text IS NULL OR poll_id = \(pollID))
          AND (\(author)::text IS NULL OR poll_id IN (SELECT id FROM polls WHERE author_id = \(author)))
        RETURNING 1
        """
      ).isEmpty)
  }

  // MARK: Points

  // MARK: Coupons

  static let offerSelect = """
    SELECT id, shop_name, title, description, discount_percent, price, stock, sold, valid_until FROM coupon_offers
    """

  static func listing(_ row: PostgresRow) throws -> CouponListing {
    let (id, shop, title, description, discount, price, stock, sold, validUntil) = try row.decode(
      (String, String, String, String, Int?, Int, Int, Int, Int64?).self)
    return CouponListing(
      offer: CouponOffer(
        id: CouponID(id), shopName: shop, title: title, discountPercent: discount, price: price,
        validUntil: validUntil), description: description, stock: stock, sold: sold)
  }

  public func upsertCouponOffer(_ offer: CouponOffer, description: String, stock: Int, now: Int64) async throws
    -> CouponListing
  {
    guard offer.price > 0 else { throw PointsError.invalidAmount(offer.price) }
    guard stock >= 0 else { throw PointsError.invalidAmount(stock) }
    let found = try await rows(
      """
      INSERT INTO coupon_offers(id, shop_name, title, description, discount_percent, price, stock, valid_until,
        created_at)
      VALUES (\(offer.id.rawValue), \(offer.shopName), \(offer.title), \(description), \(offer.discountPercent),
        \(offer.price), \(stock), \(offer.validUntil), \(now))
      ON CONFLICT (id) DO UPDATE SET shop_name = excluded.shop_name, title = excluded.title,
        description = excluded.description, discount_percent = excluded.discount_percent, price = excluded.price,
        stock = greatest(excluded.stock, coupon_offers.sold), valid_until = excluded.valid_until
      RETURNING id, shop_name, title, description, discount_percent, price, stock, sold, valid_until
      """)
    guard let row = found.first else { throw PollStoreError.offerNotFound(offer.id) }
    return try Self.listing(row)
  }

  public func couponOffers(validAt now: Int64?) async throws -> [CouponListing] {
    try await rows(
      PostgresQuery(
        unsafeSQL:
          "\(Self.offerSelect) WHERE $1::bigint IS NULL OR valid_until IS NULL OR valid_until > $1 ORDER BY id",
        binds: try Self.pollBinds([now]))
    ).map(Self.listing)
  }

  public func coupons(of user: UserID) async throws -> [Coupon] {
    try await rows(
      """
      SELECT id, offer_id, code, purchased_at FROM coupons WHERE user_id = \(user.rawValue)
      ORDER BY purchased_at DESC, id
      """
    ).map { row in
      let (id, offerID, code, purchasedAt) = try row.decode((String, String, String, Int64).self)
      return Coupon(id: CouponID(id), offerID: CouponID(offerID), userID: user, code: code, purchasedAt: purchasedAt)
    }
  }

  public func couponStats() async throws -> [CouponStats] {
    try await rows(
      """
      SELECT o.id, o.stock, o.sold,
        (SELECT count(*) FROM coupons c WHERE c.offer_id = o.id AND c.redeemed_at IS NOT NULL)
      FROM coupon_offers o ORDER BY o.id
      """
    ).map { row in
      let (id, stock, sold, redeemed) = try row.decode((String, Int, Int, Int).self)
      return CouponStats(offerId: CouponID(id), stock: stock, bought: sold, redeemed: redeemed)
    }
  }
}

extension PostgresTransaction {
  // MARK: Polls

  func insertPoll(_ poll: Poll, closesAt: Int64?) async throws {
    do {
      _ = try await rows(
        """
        INSERT INTO polls(id, author_id, title, description, option0_text, option0_image, option1_text,
          option1_image, closes_at, created_at)
        VALUES (\(poll.id.rawValue), \(poll.authorID.rawValue), \(poll.title), \(poll.description),
          \(poll.options[0].text), \(poll.options[0].imageURL), \(poll.options[1].text), \(poll.options[1].imageURL),
          \(closesAt), \(poll.createdAt))
        """)
    } catch  where PostgresStore.isUniqueViolation(error) {
      throw PollStoreError.duplicateID(poll.id.rawValue)
    }
  }

  func pollRow(_ id: PollID) async throws -> PollRowValues? {
    try await rows(
      PostgresQuery(
        unsafeSQL: "\(PostgresStore.pollSelect) WHERE p.id = $1", binds: try PostgresStore.pollBinds([id.rawValue]))
    ).first.map(PostgresStore.pollValues)
  }

  func pollState(_ id: PollID, sharing: Bool) async throws -> PollState? {
    let sql = "SELECT author_id, hidden, closes_at FROM polls WHERE id = $1" + (sharing ? " FOR SHARE" : "")
    return try await rows(PostgresQuery(unsafeSQL: sql, binds: try PostgresStore.pollBinds([id.rawValue])))
      .first.map { row in
        let (author, hidden, closesAt) = try row.decode((String, Bool, Int64?).self)
        return PollState(authorID: author, hidden: hidden, closesAt: closesAt)
      }
  }

  func ballot(of user: UserID, in poll: PollID, lock: Bool) async throws -> PollChoice? {
    let sql =
      "SELECT choice::bigint FROM poll_ballots WHERE user_id = $1 AND poll_id = $2" + (lock ? " FOR UPDATE" : "")
    return try await rows(
      PostgresQuery(unsafeSQL: sql, binds: try PostgresStore.pollBinds([user.rawValue, poll.rawValue]))
    ).first.flatMap { PollChoice(rawValue: try $0.decode(Int.self)) }
  }

  func insertBallot(of user: UserID, in poll: PollID, choice: PollChoice, now: Int64) async throws -> Bool {
    do {
      return try await !rows(
        """
        INSERT INTO poll_ballots(user_id, poll_id, choice, created_at, updated_at)
        VALUES (\(user.rawValue), \(poll.rawValue), \(Int16(choice.rawValue)), \(now), \(now))
        ON CONFLICT (user_id, poll_id) DO NOTHING RETURNING 1
        """
      ).isEmpty
    } catch  where PostgresStore.sqlState(error) == "23503" {
      throw PollStoreError.pollNotFound(poll)
    }
  }

  func updateBallot(of user: UserID, in poll: PollID, choice: PollChoice, now: Int64) async throws {
    _ = try await rows(
      """
      UPDATE poll_ballots SET choice = \(Int16(choice.rawValue)), updated_at = \(now)
      WHERE user_id = \(user.rawValue) AND poll_id = \(poll.rawValue)
      """)
  }

  func addVotes(_ change: PollRules.BallotChange, to poll: PollID, ifOpenAt now: Int64) async throws -> PollResults? {
    try await rows(
      """
      UPDATE polls SET votes0 = votes0 + \(change.first), votes1 = votes1 + \(change.second),
        votes_total = votes_total + \(change.total)
      WHERE id = \(poll.rawValue) AND NOT hidden AND (closes_at IS NULL OR closes_at > \(now))
      RETURNING votes0, votes1
      """
    ).first.map { row in
      let (votes0, votes1) = try row.decode((Int, Int).self)
      return PollResults(counts: [votes0, votes1])
    }
  }

  func pollResults(_ poll: PollID) async throws -> PollResults {
    let counts = try await rows("SELECT votes0, votes1 FROM polls WHERE id = \(poll.rawValue)").first
    let (votes0, votes1) = try counts?.decode((Int, Int).self) ?? (0, 0)
    return PollResults(counts: [votes0, votes1])
  }

  func insertComment(_ comment: PollComment) async throws {
    do {
      _ = try await rows(
        """
        INSERT INTO poll_comments(poll_id, id, author_id, text, created_at)
        VALUES (\(comment.pollID.rawValue), \(comment.id.rawValue), \(comment.authorID.rawValue), \(comment.text),
          \(comment.createdAt))
        """)
    } catch  where PostgresStore.isUniqueViolation(error) {
      throw PollStoreError.duplicateID(comment.id.rawValue)
    }
  }

  func comments(of poll: PollID, visibleTo viewer: UserID?, after cursor: CommentCursor?, limit: Int) async throws
    -> [PollCommentView]
  {
    try await rows(
      """
      SELECT c.id, c.author_id, c.text, c.hidden, c.created_at,
        CASE WHEN a.audience->>'fullName' = 'everyone' THEN a.full_name END,
        CASE WHEN a.audience->>'avatar' = 'everyone' THEN a.avatar END
      FROM poll_comments c LEFT JOIN profiles a ON a.user_id = c.author_id
      WHERE c.poll_id = \(poll.rawValue) AND (NOT c.hidden OR c.author_id = \(viewer?.rawValue))
        AND (c.created_at, c.id) > (\(cursor?.createdAt ?? Int64.min), \(cursor?.id ?? ""))
      ORDER BY c.created_at, c.id LIMIT \(limit)
      """
    ).map { row in
      let (id, authorID, text, hidden, createdAt, name, avatar) = try row.decode(
        (String, String, String, Bool, Int64, String?, String?).self)
      return PollCommentView(
        comment: PollComment(
          stored: CommentID(id), pollID: poll, authorID: UserID(authorID), text: text, createdAt: createdAt),
        author: PublicAuthor(id: UserID(authorID), fullName: name, avatar: avatar), hidden: hidden)
    }
  }

  func publicAuthor(_ user: UserID) async throws -> PublicAuthor {
    let row = try await rows(
      """
      SELECT CASE WHEN audience->>'fullName' = 'everyone' THEN full_name END,
        CASE WHEN audience->>'avatar' = 'everyone' THEN avatar END
      FROM profiles WHERE user_id = \(user.rawValue)
      """
    ).first
    let (name, avatar) = try row?.decode((String?, String?).self) ?? (nil, nil)
    return PublicAuthor(id: user, fullName: name, avatar: avatar)
  }

  // MARK: Points

  func userExists(_ user: UserID) async throws -> Bool {
    try await !rows("SELECT 1 FROM users WHERE id = \(user.rawValue)").isEmpty
  }

  func balance(of user: UserID, lock: Bool) async throws -> Int {
    let sql = "SELECT balance FROM points_balances WHERE user_id = $1" + (lock ? " FOR UPDATE" : "")
    return try await rows(PostgresQuery(unsafeSQL: sql, binds: try PostgresStore.pollBinds([user.rawValue])))
      .first?.decode(Int.self) ?? 0
  }

  func credit(_ amount: Int, to user: UserID, reason: PointsReason, reference: String?, note: String?, now: Int64)
    async throws -> Int
  {
    let inserted = try await rows(
      """
      INSERT INTO points_ledger(user_id, id, amount, reason, reference, note, created_at)
      VALUES (\(user.rawValue), \(Self.entryID()), \(amount), \(reason.rawValue), \(reference), \(note), \(now))
      ON CONFLICT DO NOTHING RETURNING 1
      """)
    guard !inserted.isEmpty else { return 0 }
    _ = try await rows(
      """
      INSERT INTO points_balances(user_id, balance) VALUES (\(user.rawValue), \(amount))
      ON CONFLICT (user_id) DO UPDATE SET balance = points_balances.balance + excluded.balance
      """)
    return amount
  }

  /// The `UPDATE` waits for the balance row's lock and re-checks the balance after it (read committed), and the
  /// row's check is the last word: never below zero.
  func debit(_ amount: Int, from user: UserID, reason: PointsReason, reference: String?, note: String?, now: Int64)
    async throws -> Int
  {
    guard
      let row = try await rows(
        """
        UPDATE points_balances SET balance = balance - \(amount)
        WHERE user_id = \(user.rawValue) AND balance >= \(amount) RETURNING balance
        """
      ).first
    else {
      throw PointsError.notEnoughPoints(balance: try await balance(of: user, lock: false), required: amount)
    }
    _ = try await rows(
      """
      INSERT INTO points_ledger(user_id, id, amount, reason, reference, note, created_at)
      VALUES (\(user.rawValue), \(Self.entryID()), \(-amount), \(reason.rawValue), \(reference), \(note), \(now))
      """)
    return try row.decode(Int.self)
  }

  static func entryID() -> String { UUID().uuidString.lowercased() }

  func pointsStatement(of user: UserID, limit: Int) async throws -> PointsStatement {
    let found = try await rows(
      """
      SELECT id, amount, reason, reference, created_at FROM points_ledger WHERE user_id = \(user.rawValue)
      ORDER BY created_at DESC, seq DESC LIMIT \(max(0, limit))
      """)
    let entries = try found.map { row in
      let (id, amount, reason, reference, createdAt) = try row.decode((String, Int, String, String?, Int64).self)
      return PointsEntry(
        id: LedgerEntryID(id), userID: user, amount: amount, reason: PointsReason(rawValue: reason) ?? .adjustment,
        reference: reference, createdAt: createdAt)
    }
    return PointsStatement(balance: try await balance(of: user, lock: false), entries: entries)
  }

  // MARK: Coupons

  func coupon(of user: UserID, requestKey: String) async throws -> Coupon? {
    try await rows(
      """
      SELECT id, offer_id, code, purchased_at FROM coupons
      WHERE user_id = \(user.rawValue) AND request_key = \(requestKey)
      """
    ).first.map { row in
      let (id, offerID, code, purchasedAt) = try row.decode((String, String, String, Int64).self)
      return Coupon(id: CouponID(id), offerID: CouponID(offerID), userID: user, code: code, purchasedAt: purchasedAt)
    }
  }

  func couponOffer(_ id: CouponID, lock: Bool) async throws -> CouponListing? {
    let sql = "\(PostgresStore.offerSelect) WHERE id = $1" + (lock ? " FOR UPDATE" : "")
    return try await rows(PostgresQuery(unsafeSQL: sql, binds: try PostgresStore.pollBinds([id.rawValue])))
      .first.map(PostgresStore.listing)
  }

  func takeCouponFromStock(_ offer: CouponID) async throws -> Bool {
    try await !rows(
      "UPDATE coupon_offers SET sold = sold + 1 WHERE id = \(offer.rawValue) AND sold < stock RETURNING 1"
    ).isEmpty
  }

  func insertCoupon(_ coupon: Coupon, price: Int, requestKey: String?) async throws {
    do {
      _ = try await rows(
        """
        INSERT INTO coupons(user_id, id, offer_id, code, price, request_key, purchased_at)
        VALUES (\(coupon.userID.rawValue), \(coupon.id.rawValue), \(coupon.offerID.rawValue), \(coupon.code),
          \(price), \(requestKey), \(coupon.purchasedAt))
        """)
    } catch  where PostgresStore.isUniqueViolation(error) {
      throw PollStoreError.codeTaken
    }
  }
}

extension PostgresStore: BlobStore {
  public func putBlob(_ data: Data, kind: BlobKind, now: Int64) async throws -> String {
    let hash = SecretHash.sha256(data)
    try await execute(
      """
      INSERT INTO blobs(hash, kind, data, created_at) VALUES (\(hash), \(kind.rawValue), \(data), \(now))
      ON CONFLICT (hash) DO UPDATE SET created_at = excluded.created_at WHERE blobs.created_at < excluded.created_at
      """)
    return hash
  }

  public func blob(_ hash: String) async throws -> StoredBlob? {
    guard BlobKind.isHash(hash),
      let row = try await rows("SELECT kind, data FROM blobs WHERE hash = \(hash)").first
    else { return nil }
    let (kind, data) = try row.decode((String, Data).self)
    return BlobKind(rawValue: kind).map { StoredBlob(hash: hash, kind: $0, data: data) }
  }

  public func hasBlob(_ hash: String) async throws -> Bool {
    !(try await rows("SELECT 1 FROM blobs WHERE hash = \(hash)").isEmpty)
  }

  public func deleteBlob(_ hash: String) async throws -> Bool {
    !(try await rows("DELETE FROM blobs WHERE hash = \(hash) RETURNING 1").isEmpty)
  }

  /// `created_at` is the blob's last upload.
  public func deleteBlob(_ hash: String, uploadedAtOrBefore cutoff: Int64) async throws -> Bool {
    !(try await rows("DELETE FROM blobs WHERE hash = \(hash) AND created_at <= \(cutoff) RETURNING 1").isEmpty)
  }

  public func blobHashes(uploadedAtOrBefore cutoff: Int64, after: String?, limit: Int) async throws -> [String] {
    try await rows(
      """
      SELECT hash FROM blobs WHERE created_at <= \(cutoff) AND hash > \(after ?? "")
      ORDER BY hash LIMIT \(Int64(max(0, limit)))
      """
    ).map { try $0.decode(String.self) }
  }
}
