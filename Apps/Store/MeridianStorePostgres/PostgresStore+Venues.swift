import DomainKit
import Foundation
import GeoKit
import Logging
import MeridianAPI
import MeridianStore
import PersistenceKit
import PostgresNIO

extension PostgresStore: VenueStore {
  /// How much wider than the asked radius the `ST_DWithin` pre-filter is: it measures on PostGIS's sphere
  /// (radius 6,371,008.77 m) while the protocol's distance is GeoKit's haversine (6,371,008.8 m), and the two
  /// computations round differently. The exact haversine check afterwards keeps only what lies within the radius.
  static func spatialSearchRadius(_ radius: Double) -> Double { radius * (1 + 1e-6) + 0.01 }

  // MARK: Venues

  public func upsertVenues(_ venues: [VenueRecord]) async throws {
    guard !venues.isEmpty else { return }
    // One row per id, the last one given (as a row-by-row upsert would leave it): one statement may not update a
    // row twice.
    var last: [PlaceID: Int] = [:]
    for (index, record) in venues.enumerated() { last[record.place.id] = index }
    // In geohash order, so that an import lays neighbours out on the same heap pages: a radius query then reads a
    // few pages instead of one per venue.
    let unique = venues.enumerated().filter { last[$0.element.place.id] == $0.offset }
      .map { (venue: $0.element, record: $0.element.placeRecord, cell: GeohashPrefixes($0.element.location).cell6) }
      .sorted { ($0.cell, $0.record.place.id.rawValue) < ($1.cell, $1.record.place.id.rawValue) }
    for entry in unique { try entry.record.validate() }
    let now = self.now()
    try await transaction { connection in
      // A venue given with a parent is placed in the tree like any place; the others (an import's) in bulk.
      let placed = unique.filter { $0.record.place.parentID != nil }
      try await Self.writePlaces(placed.map(\.record), now: now, asVenues: true, on: connection, logger: self.logger)
      let loose = unique.filter { $0.record.place.parentID == nil }
      var start = 0
      while start < loose.count {
        let end = min(loose.count, start + Self.placeRowsPerStatement)
        try await Self.writeVenues(
          loose[start..<end].map(\.record), ratings: loose[start..<end].map(\.venue.rating), now: now,
          on: connection, logger: self.logger)
        start = end
      }
      // The places trigger made each new venue's row; the imported rating is the venue's own.
      _ = try await connection.query(
        Self.placeQuery(
          """
          INSERT INTO venues(id, rating_sum, rating_count, updated_at)
          SELECT id, rating_sum, rating_count, $4 FROM unnest($1::text[], $2::bigint[], $3::bigint[])
            AS given(id, rating_sum, rating_count)
          ON CONFLICT (id) DO UPDATE SET rating_sum = excluded.rating_sum, rating_count = excluded.rating_count,
            updated_at = excluded.updated_at
          """,
          [
            unique.map(\.venue.place.id.rawValue), unique.map { Int64($0.venue.rating.sum) },
            unique.map { Int64($0.venue.rating.count) }, now,
          ]), logger: self.logger
      ).collect()
    }
  }

  /// Inserts or updates `records` (venues without a parent, validated) with their imported `ratings` in one
  /// statement, in the caller's transaction: a stored place must be a venue and keeps its parent; a new one gets its
  /// closure row.
  static func writeVenues(
    _ records: [PlaceRecord], ratings: [RatingAggregate], now: Int64, on connection: PostgresConnection,
    logger: Logger
  ) async throws {
    let ids = records.map(\.place.id.rawValue)
    for row in try await connection.query(
      placeQuery("SELECT id, kind FROM places WHERE id = ANY($1) AND kind <> 'venue' LIMIT 1", [ids]), logger: logger
    ).collect() {
      let (id, kind) = try row.decode((String, String).self)
      throw PlaceStoreError.invalidPlace(
        PlaceID(id), "the id is taken by a place of kind '\(kind)', not a venue")
    }
    let languages = try await dataLanguages(connection, logger: logger)
    let rows = try placeRows(records, languages: languages, venueRatings: ratings)
    _ = try await connection.query(rows.upsert(now: now, kept: ["id"]), logger: logger).collect()
    _ = try await connection.query(
      placeQuery(
        """
        INSERT INTO place_closure(place_id, ancestor_id, depth) SELECT id, id, 0 FROM unnest($1::text[]) AS given(id)
        ON CONFLICT DO NOTHING
        """, [ids]), logger: logger
    ).collect()
  }

  public func venue(_ id: PlaceID, language: String?) async throws -> Venue? {
    try await client.withConnection { connection in
      let select = try await Self.venueSelect(connection, language: language, logger: self.logger)
      let rows = try await connection.query(
        PostgresQuery(unsafeSQL: "\(select.sql) AND p.id = $1", binds: Self.bindings(id.rawValue)), logger: self.logger
      ).collect()
      return try rows.first.map { try Self.venue($0.makeRandomAccess(), languages: select.languages, distance: nil) }
    }
  }

  public func nearbyVenues(_ query: VenueQuery) async throws -> VenueList {
    let ranking = try Self.placeRanking(PlaceQuery(venues: query))
    // One snapshot for the page and its rows, as SQLite's one read transaction.
    return try await client.withTransaction(isolation: .repeatableRead) { connection in
      let page = try await Self.ranked(ranking, on: connection, logger: self.logger)
      let select = try await Self.venueSelect(connection, language: query.language, logger: self.logger)
      var binds = PostgresBindings()
      binds.append(page.items.map(\.seq))
      var bySeq: [Int64: PostgresRandomAccessRow] = [:]
      for row in try await connection.query(
        PostgresQuery(unsafeSQL: "\(select.sql) AND p.seq = ANY($1)", binds: binds), logger: self.logger
      ).collect() {
        let random = row.makeRandomAccess()
        bySeq[try random["seq"].decode(Int64.self)] = random
      }
      let items = try page.items.compactMap { item in
        try bySeq[item.seq].map { try Self.venue($0, languages: select.languages, distance: item.distance) }
      }
      return VenueList(items: items, nextCursor: page.nextCursor)
    }
  }

  /// The venues within `radius` metres of `center` (optionally only of `type`), in no particular order: the GiST
  /// index on the places' `location` finds the candidates of `ST_DWithin` on the sphere (a hair wider than
  /// `radius`, see ``spatialSearchRadius(_:)``), then GeoKit's haversine distance, the one the protocol reports,
  /// keeps those within `radius` — the same set and the same distances as the SQLite engine's. `row` is the
  /// place's `seq`.
  public func venues(within radius: Double, of center: Coordinate, type: String? = nil) async throws -> [VenueMatch] {
    try await client.withConnection { connection in
      try await Self.venues(connection, within: radius, of: center, type: type, logger: self.logger)
    }
  }

  static func venues(
    _ connection: PostgresConnection, within radius: Double, of center: Coordinate, type: String?, logger: Logger
  ) async throws -> [VenueMatch] {
    guard radius >= 0, radius.isFinite else { return [] }
    var matches: [VenueMatch] = []
    for (row, id, latitude, longitude, venueType, sum, count) in try await runPrepared(
      VenuesWithin(center: center, radius: radius, type: type), on: connection, logger: logger)
    {
      let distance = center.haversineDistance(to: Coordinate(uncheckedLatitude: latitude, longitude: longitude))
      guard distance <= radius else { continue }
      matches.append(
        VenueMatch(
          row: row, id: PlaceID(id), type: venueType, rating: RatingAggregate(sum: sum, count: count),
          distance: distance))
    }
    return matches
  }

  /// The statement of ``venues(within:of:type:)``, prepared once per connection (parsing and planning it took a
  /// third of a query's millisecond): the candidates of `ST_DWithin` (GiST on `places.location`), read from `places`
  /// alone (the imported rating is kept there too), of the type when one is given. After five runs PostgreSQL may
  /// keep a generic plan, which still reads the GiST index (PostGIS's selectivity for a parameter is small);
  /// `spatialPlans` explains the custom one. A migration that changed the type of a column it selects would fail it
  /// on the connections that prepared it until they are replaced (PostgreSQL's "cached plan must not change result
  /// type"); a new column or index only makes it plan again.
  struct VenuesWithin: PostgresPreparedStatement {
    static let sql = """
      SELECT p.seq, p.id, p.latitude, p.longitude, p.venue_type, p.venue_rating_sum + p.own_sum,
        p.venue_rating_count + p.own_count
      FROM places p
      WHERE ST_DWithin(p.location, ST_SetSRID(ST_MakePoint($1, $2), 4326)::geography, $3, false)
        AND p.kind = 'venue' AND ($4::text IS NULL OR p.venue_type = $4::text)
      """
    typealias Row = (Int64, String, Double, Double, String?, Int, Int)

    var center: Coordinate
    var radius: Double
    var type: String?

    func makeBindings() throws -> PostgresBindings {
      var bindings = PostgresBindings()
      bindings.append(center.longitude)
      bindings.append(center.latitude)
      bindings.append(PostgresStore.spatialSearchRadius(radius))
      bindings.append(type)
      return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
  }

  /// ``VenuesWithin`` as a plain query, for `EXPLAIN`.
  static func venuesWithinQuery(_ radius: Double, of center: Coordinate, type: String?) throws -> PostgresQuery {
    let statement = VenuesWithin(center: center, radius: radius, type: type)
    return PostgresQuery(unsafeSQL: VenuesWithin.sql, binds: try statement.makeBindings())
  }

  // MARK: Promotions

  public func insertPromotion(_ promotion: Promotion) async throws {
    try await transaction { connection in try await self.writePromotion(promotion, connection) }
  }

  /// Inserts `promotion` or replaces the one with its id, in the caller's transaction; its venue must be stored.
  func writePromotion(_ promotion: Promotion, _ connection: PostgresConnection) async throws {
    // `FOR KEY SHARE` keeps the venue from being deleted until the promotion is stored.
    let venue = try await connection.query(
      "SELECT 1 FROM venues WHERE id = \(promotion.venueID.rawValue) FOR KEY SHARE", logger: logger
    ).collect()
    guard !venue.isEmpty else { throw VenueRecordError.unknownVenue(promotion.venueID) }
    try await connection.query(
      """
      INSERT INTO venue_promotions(id, venue_id, name, promo_code, image_url, old_price_amount,
        old_price_currency, new_price_amount, new_price_currency, audience, valid_from, valid_until, window_start,
        window_end)
      VALUES (\(promotion.id.rawValue), \(promotion.venueID.rawValue), \(promotion.name), \(promotion.promoCode),
        \(promotion.imageURL), \(promotion.oldPrice?.amount), \(promotion.oldPrice?.currency),
        \(promotion.newPrice?.amount), \(promotion.newPrice?.currency), \(promotion.audience.rawValue),
        \(promotion.validFrom), \(promotion.validUntil), \(promotion.window?.start), \(promotion.window?.end))
      ON CONFLICT (id) DO UPDATE SET venue_id = excluded.venue_id, name = excluded.name,
        promo_code = excluded.promo_code, image_url = excluded.image_url,
        old_price_amount = excluded.old_price_amount, old_price_currency = excluded.old_price_currency,
        new_price_amount = excluded.new_price_amount, new_price_currency = excluded.new_price_currency,
        audience = excluded.audience, valid_from = excluded.valid_from, valid_until = excluded.valid_until,
        window_start = excluded.window_start, window_end = excluded.window_end
      """,
      logger: logger)
  }

  public func promotions(venue: PlaceID) async throws -> [Promotion] {
    try await client.query(
      "SELECT * FROM venue_promotions WHERE venue_id = \(venue.rawValue) ORDER BY id COLLATE \"C\"", logger: logger
    ).collect().map { try Self.promotion($0.makeRandomAccess()) }
  }

  public func promotion(_ id: PromotionID) async throws -> Promotion? {
    try await client.query("SELECT * FROM venue_promotions WHERE id = \(id.rawValue)", logger: logger)
      .collect().first.map { try Self.promotion($0.makeRandomAccess()) }
  }

  public func recordOffers(_ promotions: [PromotionID], to viewer: UserID, at time: Int64) async throws {
    guard !promotions.isEmpty else { return }
    // One statement; a promotion named twice counts twice, as two row-by-row upserts would.
    var counts: [String: Int64] = [:]
    var order: [String] = []
    for promotion in promotions {
      if counts[promotion.rawValue] == nil { order.append(promotion.rawValue) }
      counts[promotion.rawValue, default: 0] += 1
    }
    let times = order.map { counts[$0] ?? 1 }
    // Each offer with its time too, for the daily figures (PromotionStats), in the same statement.
    try await client.query(
      """
      WITH events AS (
        INSERT INTO promotion_offer_events(promotion_id, at, user_id)
        SELECT p, \(time), \(viewer.rawValue) FROM unnest(\(promotions.map(\.rawValue))::text[]) AS p
      )
      INSERT INTO promotion_offers(user_id, promotion_id, first_at, last_at, times)
      SELECT \(viewer.rawValue), p.id, \(time), \(time), p.times
      FROM unnest(\(order)::text[], \(times)::bigint[]) AS p(id, times)
      ORDER BY p.id
      ON CONFLICT (user_id, promotion_id)
        DO UPDATE SET last_at = excluded.last_at, times = promotion_offers.times + excluded.times
      """, logger: logger)
  }

  public func wasOffered(_ promotion: PromotionID, to user: UserID) async throws -> Bool {
    try await !client.query(
      "SELECT 1 FROM promotion_offers WHERE user_id = \(user.rawValue) AND promotion_id = \(promotion.rawValue)",
      logger: logger
    ).collect().isEmpty
  }

  /// Exactly once, however many requests race: the insert needs the offer and yields to a concurrent one on the
  /// key (`ON CONFLICT DO NOTHING` waits for the other transaction and then skips); when it stored nothing, a second
  /// statement (a new snapshot, which sees the winner's commit) reads the earlier redemption.
  public func redeem(_ promotion: PromotionID, by user: UserID, at time: Int64) async throws -> RedemptionOutcome {
    try await client.withConnection { connection in
      let inserted = try await connection.query(
        """
        INSERT INTO promotion_redemptions(user_id, promotion_id, redeemed_at)
        SELECT user_id, promotion_id, \(time) FROM promotion_offers
        WHERE user_id = \(user.rawValue) AND promotion_id = \(promotion.rawValue)
        ON CONFLICT (user_id, promotion_id) DO NOTHING
        RETURNING 1
        """, logger: self.logger
      ).collect()
      if !inserted.isEmpty { return .redeemed }
      for try await earlier in try await connection.query(
        """
        SELECT redeemed_at FROM promotion_redemptions
        WHERE user_id = \(user.rawValue) AND promotion_id = \(promotion.rawValue)
        """, logger: self.logger
      ).decode(Int64.self) {
        return .alreadyRedeemed(at: earlier)
      }
      return .notOffered
    }
  }

  public func promotionActivity(venue: PlaceID) async throws -> [PromotionActivity] {
    var activity: [PromotionActivity] = []
    for try await (id, offeredUsers, offers, redeemed) in try await client.query(
      """
      SELECT p.id,
        (SELECT COUNT(*) FROM promotion_offers o WHERE o.promotion_id = p.id) AS offered_users,
        (SELECT COALESCE(SUM(o.times), 0)::bigint FROM promotion_offers o WHERE o.promotion_id = p.id) AS offers,
        (SELECT COUNT(*) FROM promotion_redemptions r WHERE r.promotion_id = p.id) AS redeemed
      FROM venue_promotions p WHERE p.venue_id = \(venue.rawValue) ORDER BY p.id COLLATE "C"
      """, logger: logger
    ).decode((String, Int, Int, Int).self) {
      activity.append(
        PromotionActivity(
          promotionID: PromotionID(id), offeredUsers: offeredUsers, offers: offers, redeemed: redeemed))
    }
    return activity
  }

  // MARK: Helpers

  /// Bindings of one text value.
  static func bindings(_ value: String) -> PostgresBindings {
    var binds = PostgresBindings()
    binds.append(value)
    return binds
  }

  /// The languages the localized data has columns for, in the order they were added.
  static func dataLanguages(_ connection: PostgresConnection, logger: Logger) async throws -> [String] {
    var languages: [String] = []
    for try await code in try await connection.query(
      PostgresQuery(
        unsafeSQL: "SELECT code FROM \(PostgresSchema.quoted(PostgresSchema.languagesTable)) ORDER BY position"),
      logger: logger
    ).decode(String.self) {
      languages.append(code)
    }
    return languages
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
  static func venueSelect(_ connection: PostgresConnection, language: String?, logger: Logger) async throws
    -> (sql: String, languages: [String])
  {
    let languages = try await dataLanguages(connection, logger: logger)
    let chain = LocalizationRegistry.fallbackChain(for: language ?? "en", fallbacks: ["en"], available: languages)
    let name = try LocalizationRegistry.resolvedExpression(
      field: "title", languages: chain, table: "p", as: "resolved_name")
    let description = try LocalizationRegistry.resolvedExpression(
      field: "description", languages: chain, table: "p", as: "resolved_description")
    let localized = languages.map { "p." + PostgresSchema.quoted("title_\($0)") }
    let columns =
      [
        "p.seq", "p.id", "p.venue_type", "p.latitude", "p.longitude", "p.address", "p.city", "p.site", "p.phone",
        "p.email",
        "p.logo_url", "p.time_zone", "v.rating_sum + p.own_sum AS rating_sum",
        "v.rating_count + p.own_count AS rating_count",
      ] + localized
    return (
      """
      SELECT \(columns.joined(separator: ", ")), \(name), \(description)
      FROM places p JOIN venues v ON v.id = p.id WHERE p.kind = 'venue' AND p.latitude IS NOT NULL
      """, languages
    )
  }

  static func venue(_ row: PostgresRandomAccessRow, languages: [String], distance: Double?) throws -> Venue {
    Venue(
      id: PlaceID(try row["id"].decode(String.self)), name: try row["resolved_name"].decode(String.self),
      names: try localized(row, "title", languages),
      description: try row["resolved_description"].decode(String?.self),
      type: try row["venue_type"].decode(String?.self),
      location: Coordinate(
        uncheckedLatitude: try row["latitude"].decode(Double.self),
        longitude: try row["longitude"].decode(Double.self)),
      address: try row["address"].decode(String?.self), city: try row["city"].decode(String?.self),
      site: try row["site"].decode(String?.self), phone: try row["phone"].decode(String?.self),
      email: try row["email"].decode(String?.self), logoURL: try row["logo_url"].decode(String?.self),
      timeZone: try row["time_zone"].decode(String?.self),
      rating: RatingAggregate(
        sum: try row["rating_sum"].decode(Int.self), count: try row["rating_count"].decode(Int.self)),
      distance: distance)
  }

  static func promotion(_ row: PostgresRandomAccessRow) throws -> Promotion {
    func money(_ prefix: String) throws -> Money? {
      guard let amount = try row["\(prefix)_amount"].decode(Int?.self),
        let currency = try row["\(prefix)_currency"].decode(String?.self)
      else { return nil }
      return Money(amount: amount, currency: currency)
    }
    var window: TimeOfDayWindow?
    if let start = try row["window_start"].decode(Int?.self), let end = try row["window_end"].decode(Int?.self) {
      window = try TimeOfDayWindow(start: start, end: end)
    }
    return Promotion(
      id: PromotionID(try row["id"].decode(String.self)), venueID: PlaceID(try row["venue_id"].decode(String.self)),
      name: try row["name"].decode(String.self), promoCode: try row["promo_code"].decode(String.self),
      imageURL: try row["image_url"].decode(String?.self), oldPrice: try money("old_price"),
      newPrice: try money("new_price"),
      audience: PromotionAudience(rawValue: try row["audience"].decode(String.self)) ?? .special,
      validFrom: try row["valid_from"].decode(Int64?.self), validUntil: try row["valid_until"].decode(Int64?.self),
      window: window)
  }
}
