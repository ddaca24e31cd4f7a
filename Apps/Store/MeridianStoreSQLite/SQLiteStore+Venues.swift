import DomainKit
import Foundation
import GRDB
import GeoKit
import MeridianAPI
import MeridianStore
import PersistenceKit

extension SQLiteStore {
  /// Cells of the covering of a radius query: more cells fit the circle better (fewer rows filtered out by the
  /// exact distance) but cost one index range each; merged neighbours scan as one range.
  static let coveringCells = 16
  /// Bits of the integer geohash in `geokey` (as for fixes).
  static let geokeyBits = 62

  // MARK: Venues

  public func upsertVenues(_ venues: [VenueRecord]) async throws {
    guard !venues.isEmpty else { return }
    let records = venues.map(\.placeRecord)
    for record in records { try record.validate() }
    let now = self.now()
    try await database.write { db in
      try Self.writePlaces(db, records, now: now, asVenues: true)
      // The places trigger made each new venue's row; the imported rating is the venue's own.
      let rating = try db.cachedStatement(
        sql: """
          INSERT INTO venues(id, rating_sum, rating_count, updated_at) VALUES (?, ?, ?, ?)
          ON CONFLICT(id) DO UPDATE SET rating_sum = excluded.rating_sum, rating_count = excluded.rating_count,
            updated_at = excluded.updated_at
          """)
      for venue in venues {
        try rating.execute(arguments: [venue.place.id.rawValue, venue.rating.sum, venue.rating.count, now])
      }
    }
  }

  public func venue(_ id: PlaceID, language: String?) async throws -> Venue? {
    try await database.read { db in
      let select = try Self.venueSelect(db, language: language)
      return try Row.fetchOne(db, sql: "\(select.sql) AND p.id = ?", arguments: [id.rawValue]).map {
        try Self.venue($0, languages: select.languages, distance: nil)
      }
    }
  }

  public func nearbyVenues(_ query: VenueQuery) async throws -> VenueList {
    let ranking = try Self.placeRanking(PlaceQuery(venues: query))
    return try await database.read { db in
      let page = try Self.ranked(db, ranking)
      let select = try Self.venueSelect(db, language: query.language)
      let statement = try db.cachedStatement(sql: "\(select.sql) AND p.seq = ?")
      let items = try page.items.compactMap { item in
        try Row.fetchOne(statement, arguments: [item.seq]).map {
          try Self.venue($0, languages: select.languages, distance: item.distance)
        }
      }
      return VenueList(items: items, nextCursor: page.nextCursor)
    }
  }

  /// The venues within `radius` metres of `center` (optionally only of `type`), in no particular order: a geohash
  /// covering of the circle becomes a few `geokey` ranges of the places scanned in the `places_geokey` index (which
  /// holds position, kind, type and review sums), each venue's imported rating read by its key, then the exact
  /// haversine distance drops what lies outside the circle. `row` is the place's `seq`.
  public func venues(within radius: Double, of center: Coordinate, type: String? = nil) async throws -> [VenueMatch] {
    try await database.read { db in try Self.venues(db, within: radius, of: center, type: type) }
  }

  /// The venues of one `geokey` range (two arguments) between two latitudes (two more), of one type (one more) when
  /// `ofType`: read in the `places_geokey` index alone, which holds each venue's imported rating too.
  static func venuesInRangeSQL(ofType: Bool) -> String {
    """
    SELECT p.seq, p.id, p.latitude, p.longitude, p.venue_type, p.venue_rating_sum + p.own_sum,
      p.venue_rating_count + p.own_count
    FROM places p INDEXED BY places_geokey
    WHERE p.geokey BETWEEN ? AND ? AND p.latitude BETWEEN ? AND ? AND p.kind = 'venue'\(
      ofType ? " AND p.venue_type = ?" : "")
    """
  }

  static func venues(_ db: Database, within radius: Double, of center: Coordinate, type: String?) throws
    -> [VenueMatch]
  {
    let ranges = try GeohashCovering(center: center, radius: radius, maxCells: coveringCells).ranges(
      keyBits: geokeyBits)
    let (south, north) = latitudeBounds(center, radius)
    let statement = try db.cachedStatement(sql: venuesInRangeSQL(ofType: type != nil))
    var matches: [VenueMatch] = []
    for range in ranges {
      var arguments: StatementArguments = [
        Int64(bitPattern: range.lowerBound), Int64(bitPattern: range.upperBound), south, north,
      ]
      if let type { arguments += [type] }
      let rows = try Row.fetchCursor(statement, arguments: arguments)
      while let row = try rows.next() {
        let point = Coordinate(uncheckedLatitude: row[2], longitude: row[3])
        let distance = center.haversineDistance(to: point)
        guard distance <= radius else { continue }
        matches.append(
          VenueMatch(
            row: row[0], id: PlaceID(row[1] as String), type: row[4],
            rating: RatingAggregate(sum: row[5], count: row[6]), distance: distance))
      }
    }
    return matches
  }

  // MARK: Promotions

  public func insertPromotion(_ promotion: Promotion) async throws {
    try await database.write { db in try Self.writePromotion(promotion, db) }
  }

  /// Inserts `promotion` or replaces the one with its id, in the caller's transaction; its venue must be stored.
  static func writePromotion(_ promotion: Promotion, _ db: Database) throws {
    guard
      try Row.fetchOne(db, sql: "SELECT 1 FROM venues WHERE id = ?", arguments: [promotion.venueID.rawValue])
        != nil
    else { throw VenueRecordError.unknownVenue(promotion.venueID) }
    try db.execute(
      sql: """
        INSERT INTO venue_promotions(id, venue_id, name, promo_code, image_url, old_price_amount,
          old_price_currency, new_price_amount, new_price_currency, audience, valid_from, valid_until, window_start,
          window_end)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT(id) DO UPDATE SET venue_id = excluded.venue_id, name = excluded.name,
          promo_code = excluded.promo_code, image_url = excluded.image_url,
          old_price_amount = excluded.old_price_amount, old_price_currency = excluded.old_price_currency,
          new_price_amount = excluded.new_price_amount, new_price_currency = excluded.new_price_currency,
          audience = excluded.audience, valid_from = excluded.valid_from, valid_until = excluded.valid_until,
          window_start = excluded.window_start, window_end = excluded.window_end
        """,
      arguments: [
        promotion.id.rawValue, promotion.venueID.rawValue, promotion.name, promotion.promoCode,
        promotion.imageURL, promotion.oldPrice?.amount, promotion.oldPrice?.currency, promotion.newPrice?.amount,
        promotion.newPrice?.currency, promotion.audience.rawValue, promotion.validFrom, promotion.validUntil,
        promotion.window?.start, promotion.window?.end,
      ])
  }

  public func promotions(venue: PlaceID) async throws -> [Promotion] {
    try await database.read { db in
      try Row.fetchAll(
        db, sql: "SELECT * FROM venue_promotions WHERE venue_id = ? ORDER BY id", arguments: [venue.rawValue]
      ).map(Self.promotion)
    }
  }

  public func promotion(_ id: PromotionID) async throws -> Promotion? {
    try await database.read { db in
      try Row.fetchOne(db, sql: "SELECT * FROM venue_promotions WHERE id = ?", arguments: [id.rawValue])
        .map(Self.promotion)
    }
  }

  public func recordOffers(_ promotions: [PromotionID], to viewer: UserID, at time: Int64) async throws {
    guard !promotions.isEmpty else { return }
    try await database.write { db in
      let statement = try db.cachedStatement(
        sql: """
          INSERT INTO promotion_offers(promotion_id, user_id, first_at, last_at, times) VALUES (?, ?, ?, ?, 1)
          ON CONFLICT(promotion_id, user_id) DO UPDATE SET last_at = excluded.last_at, times = times + 1
          """)
      // Each offer with its time too, for the daily figures (PromotionStats).
      let event = try db.cachedStatement(
        sql: "INSERT INTO promotion_offer_events(promotion_id, at, user_id) VALUES (?, ?, ?)")
      for promotion in promotions {
        try statement.execute(arguments: [promotion.rawValue, viewer.rawValue, time, time])
        try event.execute(arguments: [promotion.rawValue, time, viewer.rawValue])
      }
    }
  }

  public func wasOffered(_ promotion: PromotionID, to user: UserID) async throws -> Bool {
    try await database.read { db in try Self.wasOffered(promotion, to: user, db) }
  }

  private static func wasOffered(_ promotion: PromotionID, to user: UserID, _ db: Database) throws -> Bool {
    try Bool.fetchOne(
      db, sql: "SELECT EXISTS(SELECT 1 FROM promotion_offers WHERE promotion_id = ? AND user_id = ?)",
      arguments: [promotion.rawValue, user.rawValue]) == true
  }

  public func redeem(_ promotion: PromotionID, by user: UserID, at time: Int64) async throws -> RedemptionOutcome {
    try await database.write { db in
      if let earlier = try Int64.fetchOne(
        db, sql: "SELECT redeemed_at FROM promotion_redemptions WHERE promotion_id = ? AND user_id = ?",
        arguments: [promotion.rawValue, user.rawValue])
      {
        return .alreadyRedeemed(at: earlier)
      }
      // Checked again inside the transaction, so the store keeps the rule whoever calls it.
      guard try Self.wasOffered(promotion, to: user, db) else { return .notOffered }
      try db.execute(
        sql: "INSERT INTO promotion_redemptions(promotion_id, user_id, redeemed_at) VALUES (?, ?, ?)",
        arguments: [promotion.rawValue, user.rawValue, time])
      return .redeemed
    }
  }

  public func promotionActivity(venue: PlaceID) async throws -> [PromotionActivity] {
    try await database.read { db in
      try Row.fetchAll(
        db,
        sql: """
          SELECT p.id,
            (SELECT COUNT(*) FROM promotion_offers o WHERE o.promotion_id = p.id) AS offered_users,
            (SELECT IFNULL(SUM(o.times), 0) FROM promotion_offers o WHERE o.promotion_id = p.id) AS offers,
            (SELECT COUNT(*) FROM promotion_redemptions r WHERE r.promotion_id = p.id) AS redeemed
          FROM venue_promotions p WHERE p.venue_id = ? ORDER BY p.id
          """,
        arguments: [venue.rawValue]
      ).map { row in
        PromotionActivity(
          promotionID: PromotionID(row["id"] as String), offeredUsers: row["offered_users"], offers: row["offers"],
          redeemed: row["redeemed"])
      }
    }
  }

  // MARK: Fixes near a point

  public func fixRuns(owner: UserID, near center: Coordinate, radius: Double, from: Int64, to: Int64) async throws
    -> [[LocationFix]]
  {
    let near = try Self.nearbyFixes(center, radius)
    // `previous_id` is the fix just before each one in the owner's whole history: a run ends where it is not the
    // previous fix kept.
    let sql = """
      SELECT f.*, (
        SELECT p.id FROM fixes p
        WHERE p.user_id = f.user_id AND p.timestamp <= f.timestamp AND (p.timestamp < f.timestamp OR p.id < f.id)
        ORDER BY p.timestamp DESC, p.id DESC LIMIT 1
      ) AS previous_id
      FROM fixes f
      WHERE f.user_id = ? AND f.timestamp BETWEEN ? AND ? AND \(near.sql)
      ORDER BY f.timestamp, f.id
      """
    let values: StatementArguments = [owner.rawValue, from, to] + near.arguments
    return try await database.read { db in
      var runs: [[LocationFix]] = []
      var last: Int64?
      let rows = try Row.fetchCursor(db, sql: sql, arguments: values)
      while let row = try rows.next() {
        let fix = try FixRow.fix(row)
        guard fix.coordinate.haversineDistance(to: center) <= radius else { continue }
        let id: Int64 = row["id"]
        let previous: Int64? = row["previous_id"]
        if let last, previous == last, !runs.isEmpty {
          runs[runs.count - 1].append(fix)
        } else {
          runs.append([fix])
        }
        last = id
      }
      return runs
    }
  }

  // MARK: Helpers

  /// The condition on the fixes aliased `f` that keeps those that may lie within `radius` metres of `center`: the
  /// `geokey` ranges of the circle's geohash covering (the `fixes_geokey` index) and the latitude band. It can keep
  /// a few fixes outside the circle, never drop one inside; check the exact distance afterwards.
  static func nearbyFixes(_ center: Coordinate, _ radius: Double) throws -> (sql: String, arguments: StatementArguments)
  {
    let ranges = try GeohashCovering(center: center, radius: radius, maxCells: coveringCells).ranges(
      keyBits: geokeyBits)
    let (south, north) = latitudeBounds(center, radius)
    var arguments: StatementArguments = [south, north]
    for range in ranges { arguments += [Int64(bitPattern: range.lowerBound), Int64(bitPattern: range.upperBound)] }
    let cells =
      ranges.isEmpty
      ? "0" : Array(repeating: "f.geokey BETWEEN ? AND ?", count: ranges.count).joined(separator: " OR ")
    return ("f.latitude BETWEEN ? AND ? AND (\(cells))", arguments)
  }

  /// Latitudes that can hold a point within `radius` of `center` (a cheap pre-filter on the index's `latitude`).
  static func latitudeBounds(_ center: Coordinate, _ radius: Double) -> (Double, Double) {
    let degrees = (radius * 1.006 + 0.01) / meanEarthRadius * 180 / Double.pi
    return (max(-90, center.latitude - degrees), min(90, center.latitude + degrees))
  }

  /// The text of `text` in the column language `language` (`pt_br` matches `pt-BR`), or nil.
  static func translation(_ text: LocalizedText, _ language: String) -> String? {
    text.values.first { key, value in
      !value.isEmpty && (try? LocalizationRegistry.normalizedLanguage(key)) == language
    }?.value
  }

  /// `SELECT` of a venue — a located place of kind `venue` with its `venues` row — with `name` and `description`
  /// resolved for `language` through the places' localized titles and descriptions (then English, then the base
  /// value), its rating the imported one plus its reviews, and the languages the database has; ends in a `WHERE`
  /// clause to add conditions to with `AND`.
  static func venueSelect(_ db: Database, language: String?) throws -> (sql: String, languages: [String]) {
    let languages = try SQLiteSchema.localization.languages(db)
    let chain = LocalizationRegistry.fallbackChain(for: language ?? "en", fallbacks: ["en"], available: languages)
    let name = try LocalizationRegistry.resolvedExpression(
      field: "title", languages: chain, table: "p", as: "resolved_name")
    let description = try LocalizationRegistry.resolvedExpression(
      field: "description", languages: chain, table: "p", as: "resolved_description")
    return (
      """
      SELECT p.*, v.rating_sum + p.own_sum AS total_rating_sum, v.rating_count + p.own_count AS total_rating_count,
        \(name), \(description)
      FROM places p JOIN venues v ON v.id = p.id WHERE p.kind = 'venue' AND p.latitude IS NOT NULL
      """, languages
    )
  }

  static func venue(_ row: Row, languages: [String], distance: Double?) throws -> Venue {
    Venue(
      id: PlaceID(row["id"] as String), name: row["resolved_name"], names: localized(row, "title", languages),
      description: row["resolved_description"], type: row["venue_type"],
      location: Coordinate(uncheckedLatitude: row["latitude"], longitude: row["longitude"]), address: row["address"],
      city: row["city"], site: row["site"], phone: row["phone"], email: row["email"], logoURL: row["logo_url"],
      timeZone: row["time_zone"],
      rating: RatingAggregate(sum: row["total_rating_sum"], count: row["total_rating_count"]), distance: distance)
  }

  static func promotion(_ row: Row) throws -> Promotion {
    func money(_ prefix: String) -> Money? {
      guard let amount: Int = row["\(prefix)_amount"], let currency: String = row["\(prefix)_currency"] else {
        return nil
      }
      return Money(amount: amount, currency: currency)
    }
    var window: TimeOfDayWindow?
    if let start: Int = row["window_start"], let end: Int = row["window_end"] {
      window = try TimeOfDayWindow(start: start, end: end)
    }
    return Promotion(
      id: PromotionID(row["id"] as String), venueID: PlaceID(row["venue_id"] as String), name: row["name"],
      promoCode: row["promo_code"], imageURL: row["image_url"], oldPrice: money("old_price"),
      newPrice: money("new_price"),
      audience: PromotionAudience(rawValue: row["audience"] as String) ?? .special, validFrom: row["valid_from"],
      validUntil: row["valid_until"], window: window)
  }
}
