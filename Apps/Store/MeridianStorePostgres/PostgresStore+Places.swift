import DomainKit
import Foundation
import GeoKit
import Logging
import MeridianAPI
import MeridianStore
import PostgresNIO

extension Int64 {
  /// `self + other`, or `Int64.max` past it.
  fileprivate func addingSaturated(_ other: Int64) -> Int64 {
    let (sum, overflow) = addingReportingOverflow(other)
    return overflow ? .max : sum
  }
}

extension PostgresStore {
  /// A query of `sql` with `$1…` bound to `values` (nil binds NULL).
  static func placeQuery(_ sql: String, _ values: [(any PostgresEncodable & Sendable)?]) throws -> PostgresQuery {
    PostgresQuery(unsafeSQL: sql, binds: try pollBinds(values))
  }

  static func exists(_ table: String, id: String, on connection: PostgresConnection, logger: Logger) async throws
    -> Bool
  {
    try await !connection.query(placeQuery("SELECT 1 FROM \(table) WHERE id = $1", [id]), logger: logger).collect()
      .isEmpty
  }

  // MARK: Places

  public func upsertPlaces(_ places: [PlaceRecord], now: Int64) async throws {
    guard !places.isEmpty else { return }
    for record in places { try record.validate() }
    try await transaction { connection in
      try await Self.writePlaces(places, now: now, asVenues: false, on: connection, logger: self.logger)
    }
  }

  /// The advisory lock key that serializes changes to the tree (inserts and moves) — 'plac' in ASCII.
  static let placeTreeLock: Int64 = 0x706C_6163

  public func movePlace(_ id: PlaceID, to parent: PlaceID?, now: Int64) async throws {
    try await transaction { connection in
      _ = try await connection.query("SELECT pg_advisory_xact_lock(\(Self.placeTreeLock))", logger: self.logger)
        .collect()
      guard
        let current = try await connection.query(
          Self.placeQuery("SELECT parent_id FROM places WHERE id = $1", [id.rawValue]), logger: self.logger
        ).collect().first
      else { throw PlaceStoreError.placeNotFound(id) }
      if try current.decode(String?.self) == parent?.rawValue { return }
      if let parent, try await !Self.exists("places", id: parent.rawValue, on: connection, logger: self.logger) {
        throw PlaceStoreError.unknownParent(id, parent: parent)
      }
      try await Self.move(id, to: parent, now: now, on: connection, logger: self.logger)
    }
  }

  /// Moves `id`'s subtree under `parent` (the caller holds ``placeTreeLock``): the rows of the old and new
  /// ancestors are locked in id order, the subtree's rating moves from the ones to the others, and the closure
  /// pairs between the subtree and its ancestors are replaced.
  static func move(
    _ id: PlaceID, to parent: PlaceID?, now: Int64, on connection: PostgresConnection, logger: Logger
  ) async throws {
    func run(_ sql: String, _ values: [(any PostgresEncodable & Sendable)?]) async throws -> [PostgresRow] {
      try await connection.query(placeQuery(sql, values), logger: logger).collect()
    }
    if let parent,
      try await !run(
        "SELECT 1 FROM place_closure WHERE place_id = $1 AND ancestor_id = $2", [parent.rawValue, id.rawValue]
      ).isEmpty
    {
      throw PlaceStoreError.cycle(id)
    }
    _ = try await run(
      """
      SELECT 1 FROM places WHERE id IN (SELECT ancestor_id FROM place_closure WHERE place_id = $1 OR place_id = $2)
      ORDER BY id FOR UPDATE
      """, [id.rawValue, parent?.rawValue])
    guard let row = try await run("SELECT tree_sum, tree_count FROM places WHERE id = $1", [id.rawValue]).first
    else { throw PlaceStoreError.placeNotFound(id) }
    let (sum, count) = try row.decode((Int64, Int64).self)
    let subtree = try await run("SELECT place_id FROM place_closure WHERE ancestor_id = $1", [id.rawValue])
      .map { try $0.decode(String.self) }
    let oldAncestors = try await run(
      "SELECT ancestor_id FROM place_closure WHERE place_id = $1 AND depth > 0", [id.rawValue]
    ).map { try $0.decode(String.self) }
    _ = try await run(
      "UPDATE places SET tree_sum = tree_sum - $1, tree_count = tree_count - $2 WHERE id = ANY($3)",
      [sum, count, oldAncestors])
    _ = try await run(
      "DELETE FROM place_closure WHERE place_id = ANY($1) AND ancestor_id = ANY($2)", [subtree, oldAncestors])
    if let parent {
      _ = try await run(
        """
        INSERT INTO place_closure(place_id, ancestor_id, depth)
        SELECT sub.place_id, sup.ancestor_id, sup.depth + sub.depth + 1
        FROM place_closure sub JOIN place_closure sup ON sup.place_id = $1
        WHERE sub.ancestor_id = $2
        """, [parent.rawValue, id.rawValue])
      _ = try await run(
        """
        UPDATE places SET tree_sum = tree_sum + $1, tree_count = tree_count + $2
        WHERE id IN (SELECT ancestor_id FROM place_closure WHERE place_id = $3)
        """, [sum, count, parent.rawValue])
    }
    _ = try await run(
      "UPDATE places SET parent_id = $1, updated_at = $2 WHERE id = $3", [parent?.rawValue, now, id.rawValue])
  }

  public func deletePlace(_ id: PlaceID) async throws -> Bool {
    try await transaction { connection in
      _ = try await connection.query("SELECT pg_advisory_xact_lock(\(Self.placeTreeLock))", logger: self.logger)
        .collect()
      guard try await Self.exists("places", id: id.rawValue, on: connection, logger: self.logger) else { return false }
      if try await !connection.query(
        Self.placeQuery("SELECT 1 FROM places WHERE parent_id = $1 LIMIT 1", [id.rawValue]), logger: self.logger
      ).collect().isEmpty {
        throw PlaceStoreError.hasChildren(id)
      }
      // Reviews first, while the closure still names the ancestors whose ratings lose them.
      for table in ["place_reviews", "place_favourites", "place_news", "place_closure", "places"] {
        let column = table == "places" ? "id" : "place_id"
        _ = try await connection.query(
          Self.placeQuery("DELETE FROM \(table) WHERE \(column) = $1", [id.rawValue]), logger: self.logger
        ).collect()
      }
      return true
    }
  }

  /// A place's listing columns, with the database's languages in their order (`data_languages`, the same in every
  /// row, read with them in one statement: the `title_…` columns the row has).
  static let placeSelect = """
    SELECT p.*, p.keywords::text AS keywords_text, p.attributes::text AS attributes_text,
      (SELECT count(*) FROM places c WHERE c.parent_id = p.id) AS children,
      (SELECT coalesce(array_agg(code ORDER BY position), '{}')
        FROM \(PostgresSchema.quoted(PostgresSchema.languagesTable))) AS data_languages
    FROM places p
    """

  public func place(_ id: PlaceID) async throws -> PlaceDetails? {
    try await client.withConnection { connection in
      guard
        let row = try await connection.query(
          Self.placeQuery("\(Self.placeSelect) WHERE p.id = $1", [id.rawValue]), logger: self.logger
        ).collect().first?.makeRandomAccess()
      else { return nil }
      let languages = try row["data_languages"].decode([String].self)
      let listing = try Self.placeListing(row, languages: languages, distance: nil)
      let ancestors = try await connection.query(
        Self.placeQuery(
          """
          SELECT p.* FROM place_closure c JOIN places p ON p.id = c.ancestor_id
          WHERE c.place_id = $1 AND c.depth > 0 ORDER BY c.depth DESC
          """, [id.rawValue]), logger: self.logger
      ).collect().map { row in
        let r = row.makeRandomAccess()
        return PlaceCrumb(
          id: PlaceID(try r["id"].decode(String.self)), kind: PlaceKind(rawValue: try r["kind"].decode(String.self)),
          title: try Self.localized(r, "title", languages), shortTitle: try Self.localized(r, "short_title", languages))
      }
      return PlaceDetails(listing: listing, ancestors: ancestors)
    }
  }

  public func places(_ query: PlaceQuery) async throws -> PlacePage {
    let ranking = try Self.placeRanking(query)
    return try await callsThatMayLag { calls in
      try await calls.withConnection { connection in
        let page = try await Self.ranked(ranking, on: connection, logger: self.logger)
        return PlacePage(
          items: try await Self.listings(page.items, on: connection, logger: self.logger),
          nextCursor: page.nextCursor)
      }
    }
  }

  /// A page of a places query in SQL: filtered, ordered by ``PlacePaging``'s keys and cut after its cursor.
  struct PlaceRanking {
    /// One statement of a ranking, ending in `LIMIT $n`: the rows the page still lacks, bound as it runs.
    struct Step {
      var sql: String
      var values: [(any PostgresEncodable & Sendable)?]
      /// The relevance tier whose places it reads (nil: the whole ranking); `$n - 2` and `$n - 1` are then bound to
      /// the sequences it reads after and up to.
      var tier: Int?
      /// The sequence the tier starts after: the cursor's, or 0 (before every place).
      var start: Int64 = 0
      /// How many sequences it walks in order, from where the tier's walks before it ended (nil: every one after
      /// them, through the tier's index).
      var walk: Int64?
      /// Run only when the tier's step before it found a place.
      var afterAFind = false
      /// How else to read the tier's candidates after its walks, in sequence order (nil: only `sql`).
      var titleWords: TitleWordScan?
      /// A first page by distance from the nearest candidates alone: `sql` reads this many in the spatial index's
      /// order, and its rows (with `edge`, the farthest candidate's distance on PostGIS's sphere, and `candidates`)
      /// are the page when they were all there is or when every other candidate lies farther than the page's last
      /// row; otherwise the next step, the exact statement, reads the page.
      var nearest: Int?
    }

    /// Tier 1's candidates after its walks, read from `place_title_words` (``PostgresSchema/placeTitleWordTable``):
    /// the places one of whose title words starts with the query's only word, in sequence order word by word, in
    /// batches. When the word starts more than ``titleWordScanWords`` stored words, the step's `sql` reads them.
    struct TitleWordScan {
      /// The query's word.
      var word: String
      /// The statement over the given title words (letters and digits, quoted into it): the candidates after `$n-2`
      /// and up to `$n-1` in sequence order, `$n` of them, each (`candidate`) with the step's columns when the place
      /// holds its conditions (NULL otherwise).
      var sql: @Sendable ([String]) -> String
    }

    /// The statements whose rows, in turn, are the ranking: one, or some per relevance tier.
    var steps: [Step]
    var paging: PlacePaging
    var limit: Int

    /// `step` reading at most `rows` rows with sequences in `after...through` (`after` excluded; a relevance step).
    static func statement(_ step: Step, after: Int64, through: Int64, rows: Int) throws -> PostgresQuery {
      try placeQuery(step.sql, step.values + (step.tier == nil ? [] : [after, through]) + [Int64(rows)])
    }

    /// The first statement, for a whole page: the whole ranking unless the order is by relevance.
    /// - Throws: ``PlaceStoreError/invalidCursor`` for a cursor past the last relevance tier (a page of nothing).
    var statement: PostgresQuery {
      get throws {
        guard let first = steps.first else { throw PlaceStoreError.invalidCursor }
        return try Self.statement(
          first, after: first.start, through: first.walk.map { first.start.addingSaturated($0) } ?? .max,
          rows: limit + 1)
      }
    }
  }

  /// The ranking of `query`: its conditions, its order's keys as SQL (columns `k0…`), one row more than a page.
  /// - Throws: ``PlaceStoreError`` `.invalidCursor`, `.invalidQuery`.
  static func placeRanking(_ query: PlaceQuery) throws -> PlaceRanking {
    let paging = try PlacePaging(query)
    if paging.keys == [.relevanceTier, .sequence] { return relevanceRanking(query, paging: paging) }
    var (conditions, values) = placeConditions(query)
    func bind(_ value: (any PostgresEncodable & Sendable)?) -> String {
      values.append(value)
      return "$\(values.count)"
    }
    // Measured only where a radius or the order needs it, once a row: the inner query's `d`, which its `OFFSET 0`
    // keeps PostgreSQL from writing out again in the keys and the radius (three haversines a candidate, 0.2 ms of a
    // 1 km query's 1.1 over 2,000,000 places).
    let isCircle = if case .circle = query.area { true } else { false }
    let measures = isCircle || paging.keys.contains(.distanceMillimetres)
    var distance = "NULL::double precision"
    if measures, let center = paging.center {
      distance = haversineSQL(center)
    }
    var outer = ["true"]
    if case .circle(let center, let radius) = query.area {
      conditions.append(nearCircle(center, radius, bind: bind))
      outer.append("d <= \(bind(radius))")
    }
    let venue = query.rating == .venue
    let sum = venue ? "(p.own_sum + COALESCE(v.rating_sum, 0))" : "p.tree_sum"
    let count = venue ? "(p.own_count + COALESCE(v.rating_count, 0))" : "p.tree_count"
    let average =
      "(CASE WHEN \(count) = 0 THEN \(PlacePaging.unratedAverage) ELSE \(sum) * \(PlacePaging.averageScale) / \(count) END)"
    // Each key as a column of the inner query (`k0…`), but the distance's: the outer query's, from `d`.
    let keys = paging.keys.enumerated().map { index, key in
      key == .distanceMillimetres
        ? "COALESCE(floor(d * 1000 + 0.5)::bigint, \(PlacePaging.missingDistance))" : "k\(index)"
    }
    let innerKeys = paging.keys.enumerated().compactMap { index, key -> String? in
      let sql: String? =
        switch key {
        case .relevanceTier: relevanceTier(paging.words)
        case .distanceMillimetres: nil
        case .negatedAverage: "-\(average)"
        case .negatedCount: "-\(count)"
        case .sequence: "p.seq"
        }
      return sql.map { ", (\($0))::bigint AS k\(index)" }
    }
    let names = keys.indices.map { "k\($0)" }
    if let after = paging.after {
      outer.append("(\(keys.joined(separator: ", "))) > (\(after.map { bind($0) }.joined(separator: ", ")))")
    }
    let sql = """
      SELECT seq, latitude, longitude, \(zip(keys, names).map { "\($0) AS \($1)" }.joined(separator: ", ")) FROM (
        SELECT p.seq, p.latitude, p.longitude, \(distance) AS d\(innerKeys.joined())
        FROM places p\(venue ? " LEFT JOIN venues v ON v.id = p.id" : "") WHERE \(conditions.joined(separator: " AND "))
        \(measures ? "OFFSET 0" : "")
      ) AS ranked WHERE \(outer.joined(separator: " AND ")) ORDER BY \(names.joined(separator: ", "))
      LIMIT $\(values.count + 1)
      """
    var steps = [PlaceRanking.Step(sql: sql, values: values)]
    if case .circle(let circleCenter, let radius) = query.area, paging.keys == [.distanceMillimetres, .sequence],
      paging.after == nil, let center = paging.center
    {
      // The first page by distance: the nearest candidates first, in the spatial index's order (`<->`). Without the
      // circle's latitude and longitude bounds, which would have PostgreSQL read the circle's candidates through
      // both indexes and sort them all.
      var (nearConditions, nearValues) = placeConditions(query, boundingBox: false)
      func bindNear(_ value: (any PostgresEncodable & Sendable)?) -> String {
        nearValues.append(value)
        return "$\(nearValues.count)"
      }
      nearConditions.append(nearCircle(circleCenter, radius, bind: bindNear))
      let within = "d <= \(bindNear(radius))"
      let point =
        "ST_SetSRID(ST_MakePoint(\(bindNear(center.longitude)), \(bindNear(center.latitude))), 4326)::geography"
      // Enough for a page and as many again (the page's last row must be nearer than the farthest candidate).
      let candidates = max(nearestCandidates, 2 * (query.limit + 1))
      let nearest = """
        WITH c AS (
          SELECT p.seq, p.latitude, p.longitude, \(distance) AS d, p.location <-> \(point) AS knn
          FROM places p WHERE \(nearConditions.joined(separator: " AND ")) ORDER BY p.location <-> \(point)
          LIMIT \(candidates)
        ), e AS (SELECT max(knn) AS edge, count(*) AS candidates FROM c)
        SELECT r.*, e.edge, e.candidates FROM e LEFT JOIN LATERAL (
          SELECT seq, latitude, longitude, COALESCE(floor(d * 1000 + 0.5)::bigint, \(PlacePaging.missingDistance)) AS k0,
            seq AS k1
          FROM c WHERE \(within) ORDER BY k0, k1 LIMIT $\(nearValues.count + 1)
        ) r ON true
        ORDER BY r.k0, r.k1
        """
      steps.insert(.init(sql: nearest, values: nearValues, nearest: candidates), at: 0)
    }
    return PlaceRanking(steps: steps, paging: paging, limit: query.limit)
  }

  /// How many of the nearest candidates the first page by distance reads at least (``PlaceRanking/Step/nearest``;
  /// twice a page and its next row when more): a page and its margin, where the exact statement measures every
  /// candidate in the circle (about 1,400 within a kilometre in the benchmark's cities, 1.0 / 1.6 ms p50 / p99; the
  /// nearest 0.5 / 0.7).
  static let nearestCandidates = 75

  /// The condition that the place aliased `p` lies near the circle, through the spatial index (`places_location`):
  /// within ``spatialSearchRadius(_:)``, which the exact distance then narrows.
  static func nearCircle(
    _ center: Coordinate, _ radius: Double, bind: ((any PostgresEncodable & Sendable)?) -> String
  ) -> String {
    "ST_DWithin(p.location, ST_SetSRID(ST_MakePoint(\(bind(center.longitude)), \(bind(center.latitude))), 4326)"
      + "::geography, \(bind(spatialSearchRadius(radius))), false)"
  }

  /// How many sequences a relevance tier's walks read in order: a first short walk, and a longer one when the first
  /// found a place but too few for the page (one place in a thousand or more matches: the longer walk then finds the
  /// rest, where the index would read thousands of rows).
  static let relevanceWalks: (first: Int64, then: Int64) = (1_000, 16_000)

  /// The relevance order, tier by tier from the cursor's: tier 0's candidates are the places one of whose title
  /// lines equals the words (`places_title_lines`), tier 1's those whose titles hold the words after a space
  /// (`places_title_words`, trigrams), tier 2's every match. Tiers 1 and 2 first walk the next sequences in order
  /// (``relevanceWalks``), each walk stopping at the rows the page still lacks: a common prefix fills the page
  /// within some hundred places. Then, only when the walks fell short, the tier's candidates after them are read
  /// through the search indexes and sorted: the walks fell short because they are rare (or come later in sequence
  /// order). Tier 0 only has the latter, exact
  /// titles being rare. A walk covers a range of sequences, not a count of places, so that the statements of a page
  /// agree on where each ends whatever is written meanwhile; where sequences are sparse (the first places deleted,
  /// or new ones after upserts that used up numbers) the walks find fewer places and the index reads the rest. One
  /// statement over every match ranked them all: about 60,000 for a 3-letter prefix among a million places, 40–60 ms;
  /// reading a candidate through the index costs about 5 µs (a random page), a place walked about 0.4 µs.
  static func relevanceRanking(_ query: PlaceQuery, paging: PlacePaging) -> PlaceRanking {
    var (conditions, values) = placeConditions(query)
    // Tier 0 reads its candidates through its own index, then tests the keywords.
    var exactTitleConditions = placeConditions(query, wordsThroughIndexes: false).conditions
    func bind(_ value: (any PostgresEncodable & Sendable)?, to values: inout [(any PostgresEncodable & Sendable)?])
      -> String
    {
      values.append(value)
      return "$\(values.count)"
    }
    if case .circle(let center, let radius) = query.area {
      let circle = [
        nearCircle(center, radius) { bind($0, to: &values) },
        // The distance from the query's centre, as the other orders and the reference measure it.
        "\(haversineSQL(paging.center ?? center)) <= \(bind(radius, to: &values))",
      ]
      conditions += circle
      exactTitleConditions += circle
    }
    let tier = relevanceTier(paging.words)
    var steps: [PlaceRanking.Step] = []
    // A forged cursor's tier below 0 starts at 0, above 2 finds nothing, as the single statement's comparison would.
    for level in stride(from: max(0, paging.after?.first ?? 0), through: 2, by: 1) {
      var stepValues = values
      let start = paging.after.flatMap { $0.count == 2 && $0[0] == level ? $0[1] : nil } ?? 0
      let candidates =
        switch level {
        case 0: "\(PostgresSchema.placeTitleLines) @> ARRAY[\(bind(paging.words, to: &stepValues))]::text[]"
        case 1:
          "\(PostgresSchema.placeTitleWords) LIKE \(bind("% \(paging.words)%", to: &stepValues)) AND \(tier) = 1"
        default: "\(tier) = 2"
        }
      let filter = ((level == 0 ? exactTitleConditions : conditions) + [candidates]).joined(separator: " AND ")
      let (after, through, limit) = (stepValues.count + 1, stepValues.count + 2, stepValues.count + 3)
      let columns = "SELECT p.seq, p.latitude, p.longitude, \(level)::bigint AS k0, p.seq AS k1"
      var titleWords: PlaceRanking.TitleWordScan?
      let queryWords = paging.words.split(separator: " ").map(String.init)
      // Only for one word and no other condition: each candidate is then a match unless its title is the word
      // (tier 0). A city, a kind, an area or a common first word of several would leave most candidates out, where
      // the trigram statement's plan can combine the indexes.
      let onlyTheWord =
        query.scope == .all && query.kinds.isEmpty && query.city == nil && query.area == nil
        && query.attributes.isEmpty && query.venueType == nil && queryWords.count == 1
      if level == 1, onlyTheWord, let first = queryWords.first,
        first.unicodeScalars.count <= PostgresSchema.titleWordLength
      {
        titleWords = .init(word: first) { words in
          let list = words.map { "'" + $0.replacingOccurrences(of: "'", with: "''") + "'" }.joined(separator: ", ")
          return """
            WITH candidates AS (
              SELECT DISTINCT s.seq FROM unnest(ARRAY[\(list)]::text[]) AS w(word) CROSS JOIN LATERAL (
                SELECT t.seq FROM place_title_words t
                WHERE t.word = w.word AND t.seq > $\(after) AND t.seq <= $\(through) ORDER BY t.seq LIMIT $\(limit)
              ) s
              ORDER BY s.seq LIMIT $\(limit)
            )
            SELECT c.seq AS candidate, m.* FROM candidates c
            LEFT JOIN LATERAL (\(columns) FROM places p WHERE p.seq = c.seq AND \(filter)) m ON true
            ORDER BY c.seq
            """
        }
      }
      if level > 0 {
        for (index, length) in [relevanceWalks.first, relevanceWalks.then].enumerated() {
          // The `LIMIT` tells PostgreSQL that the range is read in order and not to the end.
          let walk = "SELECT * FROM places WHERE seq > $\(after) AND seq <= $\(through) ORDER BY seq LIMIT \(length)"
          steps.append(
            .init(
              sql: "\(columns) FROM (\(walk)) p WHERE \(filter) ORDER BY p.seq LIMIT $\(limit)", values: stepValues,
              tier: Int(level), start: start, walk: length, afterAFind: index > 0))
        }
      }
      // `p.seq + 0`: not the order of an index, so PostgreSQL reads the candidates through their own.
      steps.append(
        .init(
          sql: """
            \(columns) FROM places p WHERE p.seq > $\(after) AND p.seq <= $\(through) AND \(filter)
            ORDER BY p.seq + 0 LIMIT $\(limit)
            """,
          values: stepValues, tier: Int(level), start: start, titleWords: titleWords))
    }
    return PlaceRanking(steps: steps, paging: paging, limit: query.limit)
  }

  /// How PostgreSQL would run `query`'s ranking now (`EXPLAIN`'s text, one line per node; by relevance, its first
  /// statement): what the tests check for the attribute indexes, and what an operator looks at when a filtered list
  /// is slow.
  /// - Throws: ``PlaceStoreError`` `.invalidCursor`, `.invalidQuery`.
  public func placesPlan(_ query: PlaceQuery) async throws -> String {
    let statement = try Self.placeRanking(query).statement
    return try await planLines(statement).joined(separator: "\n")
  }

  /// The page of `ranking`: sequences with distances, and the next page's cursor.
  static func ranked(_ ranking: PlaceRanking, on connection: PostgresConnection, logger: Logger) async throws -> (
    items: [(seq: Int64, distance: Double?)], nextCursor: String?
  ) {
    let names = ranking.paging.keys.indices.map { "k\($0)" }
    var rows: [PlacePaging.Row] = []
    var tier: Int?
    var walked: Int64 = 0
    var found = 0
    // The largest sequence stored, read once a walk fell short: the steps that would start past it are left out
    // (a small directory's page would otherwise run every tier's longer walk and index read over nothing).
    var last: Int64?
    var settled = false
    for step in ranking.steps where rows.count <= ranking.limit && !settled {
      if let candidates = step.nearest {
        if let page = try await nearestPage(
          step, candidates: candidates, rows: ranking.limit + 1, on: connection, logger: logger)
        {
          (rows, settled) = (page, true)
        }
        continue
      }
      if step.tier != tier { (tier, walked, found) = (step.tier, step.start, 0) }
      if step.afterAFind && found == 0 { continue }
      if step.tier != nil && (walked != step.start || last != nil) {
        if last == nil {
          var stored: Int64 = 0
          let maximum = try await connection.query("SELECT coalesce(max(seq), 0) FROM places", logger: logger)
          for try await value in maximum.decode(Int64.self) { stored = value }
          last = stored
        }
        if let last, walked >= last { continue }
      }
      let through = step.walk.map { walked.addingSaturated($0) } ?? .max
      let before = rows.count
      if let scan = step.titleWords, let words = try await titleWords(scan, on: connection, logger: logger) {
        if !words.isEmpty {
          try await readTitleWordCandidates(
            scan.sql(words), of: step, after: walked, through: through, into: &rows, limit: ranking.limit,
            on: connection, logger: logger)
        }
      } else {
        // What the page still lacks, and one row more for the next cursor.
        let statement = try PlaceRanking.statement(
          step, after: walked, through: through, rows: ranking.limit + 1 - rows.count)
        for try await row in try await connection.query(statement, logger: logger) {
          rows.append(try rankedRow(row.makeRandomAccess(), keys: names))
        }
      }
      walked = through
      found = rows.count - before
    }
    return ranking.paging.page(rows, limit: ranking.limit)
  }

  /// The rows of a ``PlaceRanking/Step/nearest`` step, `rows` at most, when they are the page's: when the step read
  /// fewer candidates than it may (every candidate in the circle), or when its last row is nearer by 2 mm than the
  /// farthest candidate it read (the others lie farther still; the margin covers the millimetre rounding and the
  /// sphere PostGIS measures on, its radius 0.03 m shorter than GeoKit's). Else nil.
  static func nearestPage(
    _ step: PlaceRanking.Step, candidates: Int, rows: Int, on connection: PostgresConnection, logger: Logger
  ) async throws -> [PlacePaging.Row]? {
    var page: [PlacePaging.Row] = []
    var (edge, read) = (0.0, Int64(0))
    let statement = try PlaceRanking.statement(step, after: 0, through: 0, rows: rows)
    for try await row in try await connection.query(statement, logger: logger) {
      let random = row.makeRandomAccess()
      edge = try random["edge"].decode(Double?.self) ?? 0
      read = try random["candidates"].decode(Int64.self)
      if try random["seq"].decode(Int64?.self) != nil { page.append(try rankedRow(random, keys: ["k0", "k1"])) }
    }
    if read < candidates { return page }
    guard page.count == rows, let last = page.last?.keys.first, Double(last) + 2 < edge * 1000 else { return nil }
    return page
  }

  /// A row of a ranking's statement: its sequence, location and keys (`k0…`).
  static func rankedRow(_ row: PostgresRandomAccessRow, keys: [String]) throws -> PlacePaging.Row {
    let latitude = try row["latitude"].decode(Double?.self)
    let longitude = try row["longitude"].decode(Double?.self)
    return PlacePaging.Row(
      sequence: try row["seq"].decode(Int64.self),
      location: latitude.flatMap { lat in longitude.map { Coordinate(uncheckedLatitude: lat, longitude: $0) } },
      keys: try keys.map { try row[$0].decode(Int64.self) })
  }

  /// The most title words a ``PlaceRanking/TitleWordScan`` reads word by word: a shorter prefix starts more words,
  /// and is common enough for the walks to fill the page or rare enough for the search indexes.
  static let titleWordScanWords = 32

  /// The most candidates a ``PlaceRanking/TitleWordScan`` statement reads: each batch doubles up to it.
  static let titleWordBatch = 4_096

  /// The title words `scan` reads: the stored words its word starts, in order (`place_title_words`' key, one index
  /// probe each); nil when those are more than ``titleWordScanWords``.
  static func titleWords(_ scan: PlaceRanking.TitleWordScan, on connection: PostgresConnection, logger: Logger)
    async throws -> [String]?
  {
    // Words are letters and digits; the escapes keep LIKE's own characters plain all the same.
    let pattern =
      scan.word.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "%", with: "\\%")
      .replacingOccurrences(of: "_", with: "\\_") + "%"
    let found = try await connection.query(
      placeQuery(
        """
        WITH RECURSIVE found(word) AS (
          (SELECT word FROM place_title_words WHERE word LIKE $1 ORDER BY word LIMIT 1)
          UNION ALL
          SELECT (SELECT t.word FROM place_title_words t WHERE t.word > f.word AND t.word LIKE $1 ORDER BY t.word LIMIT 1)
          FROM found f WHERE f.word IS NOT NULL
        )
        SELECT word FROM found WHERE word IS NOT NULL LIMIT $2
        """, [pattern, Int64(titleWordScanWords + 1)]), logger: logger
    ).collect().map { try $0.decode(String.self) }
    return found.count > titleWordScanWords ? nil : found
  }

  /// Appends to `rows`, up to one more than `limit`, the places of `step`'s tier among the candidates `sql` reads
  /// (``PlaceRanking/TitleWordScan/sql``) after `after` and up to `through`: batches of candidates in sequence
  /// order, each twice the last (up to ``titleWordBatch``), until the page is full or the candidates end.
  static func readTitleWordCandidates(
    _ sql: String, of step: PlaceRanking.Step, after: Int64, through: Int64, into rows: inout [PlacePaging.Row],
    limit: Int, on connection: PostgresConnection, logger: Logger
  ) async throws {
    var scan = step
    scan.sql = sql
    var after = after
    var batch = max(64, 2 * (limit + 1 - rows.count))
    while rows.count <= limit {
      var read = 0
      let statement = try PlaceRanking.statement(scan, after: after, through: through, rows: batch)
      for try await row in try await connection.query(statement, logger: logger) {
        let random = row.makeRandomAccess()
        read += 1
        after = try random["candidate"].decode(Int64.self)
        if rows.count <= limit, try random["seq"].decode(Int64?.self) != nil {
          rows.append(try rankedRow(random, keys: ["k0", "k1"]))
        }
      }
      if read < batch { return }
      batch = min(2 * batch, titleWordBatch)
    }
  }

  /// The relevance tier as SQL over `p.title_key` (lines of folded titles), as ``PlaceSearch/tier(titleKey:query:)``:
  /// 0 when a line equals the words, 1 when a line starts with them or has them after a space, else 2. The words
  /// are letters, digits and spaces (``PlacePaging/words``), quoted here.
  static func relevanceTier(_ words: String) -> String {
    let quoted = "'" + words.replacingOccurrences(of: "'", with: "''") + "'"
    return """
      (CASE WHEN strpos(chr(10) || p.title_key || chr(10), chr(10) || \(quoted) || chr(10)) > 0 THEN 0 \
      WHEN strpos(chr(10) || p.title_key, chr(10) || \(quoted)) > 0 \
      OR strpos(p.title_key, ' ' || \(quoted)) > 0 THEN 1 ELSE 2 END)
      """
  }

  /// GeoKit's haversine distance from `center` to the place aliased `p` in SQL, term by term as GeoKit computes it
  /// (three sines, the same sphere), so that an order and a radius decided in SQL agree with the distances reported.
  static func haversineSQL(_ center: Coordinate) -> String {
    let half = Double.pi / 360
    let dLat = "sin((p.latitude - (\(center.latitude))) * \(half))"
    let sLat = "sin((p.latitude + (\(center.latitude))) * \(half))"
    let dLon = "sin((p.longitude - (\(center.longitude))) * \(half))"
    let a = "(\(dLat) * \(dLat) + (1 - \(dLat) * \(dLat) - \(sLat) * \(sLat)) * \(dLon) * \(dLon))"
    return "(\(2 * meanEarthRadius)::double precision * asin(least(1, sqrt(\(a)))))"
  }

  /// The conditions of `query` on the place aliased `p`: scope, kinds, city, keywords, attributes and the area's
  /// latitude and longitude bounds (unless not `boundingBox`: a circle's spatial condition holds them), with their
  /// values (`$1…`). Without `wordsThroughIndexes`, the keywords' are
  /// written `IS TRUE`: the same conditions, which no index serves, for exact titles, whose own index is the way in
  /// (PostgreSQL would otherwise read every place matching a 3-letter prefix through `places_search`, and intersect
  /// them with the few exact titles).
  static func placeConditions(_ query: PlaceQuery, wordsThroughIndexes: Bool = true, boundingBox: Bool = true) -> (
    conditions: [String], values: [(any PostgresEncodable & Sendable)?]
  ) {
    var conditions = ["true"]
    var values: [(any PostgresEncodable & Sendable)?] = []
    func bind(_ value: (any PostgresEncodable & Sendable)?) -> String {
      values.append(value)
      return "$\(values.count)"
    }
    switch query.scope {
    case .all: break
    case .roots: conditions.append("p.parent_id IS NULL")
    case .children(let parent): conditions.append("p.parent_id = \(bind(parent.rawValue))")
    }
    if !query.kinds.isEmpty { conditions.append("p.kind = ANY(\(bind(query.kinds.map(\.rawValue))))") }
    // No stored text holds NUL (PostgreSQL's text can't), and a bound one would be refused: nothing matches it.
    if let type = query.venueType {
      conditions.append(type.contains("\0") ? "false" : "p.venue_type = \(bind(type))")
    }
    if let city = query.city {
      conditions.append(city.contains("\0") ? "false" : "p.city_key = \(bind(PlaceSearch.fold(city)))")
    }
    func filter(_ condition: String) -> String { wordsThroughIndexes ? condition : "(\(condition)) IS TRUE" }
    let words = PlaceSearch.words(query.text ?? "")
    let titleWords = words.filter(PlaceSearch.matchesTitlesOnly)
    let otherWords = words.filter { !PlaceSearch.matchesTitlesOnly($0) }
    if !otherWords.isEmpty {
      // Words are letters and digits only, so quoting them is safe.
      let text = otherWords.map { "'\($0)':*" }.joined(separator: " & ")
      conditions.append(filter("p.search @@ to_tsquery('simple', \(bind(text)))"))
    }
    // Short words start a title word: the trigram index (places_title_words) finds the candidates.
    for word in titleWords {
      conditions.append(filter("\(PostgresSchema.placeTitleWords) LIKE \(bind("% \(word)%"))"))
    }
    for filter in query.attributes { conditions.append(attributeCondition(filter, bind: bind)) }
    if boundingBox, let bounds = query.bounds {
      conditions.append("p.latitude BETWEEN \(bind(bounds.south)) AND \(bind(bounds.north))")
      if let west = bounds.west, let east = bounds.east {
        conditions.append("p.longitude BETWEEN \(bind(west)) AND \(bind(east))")
      } else if case .box(_, let west, _, let east) = query.area {
        conditions.append("(p.longitude >= \(bind(west)) OR p.longitude <= \(bind(east)))")
      }
    }
    return (conditions, values)
  }

  /// The condition that `filter` holds for the place aliased `p`, on its `attributes` (`jsonb`) and, for text
  /// equality, its folded `attribute_texts`. The name is written out as a literal, so that `p.attributes -> 'name'`
  /// is the expression the attribute indexes cover (``PostgresSchema/placeAttributeIndexes``); numbers are bound as
  /// JSON numbers and compared as `jsonb` (numerically).
  static func attributeCondition(
    _ filter: PlaceAttributeFilter, bind: ((any PostgresEncodable & Sendable)?) -> String
  ) -> String {
    // No stored name holds NUL (neither `text` nor `jsonb` can).
    guard !filter.name.contains("\0") else { return "false" }
    let literal = "'" + filter.name.replacingOccurrences(of: "'", with: "''") + "'"
    let value = "(p.attributes -> \(literal))"
    func number(_ value: Double) -> String { bind("\(value)") + "::jsonb" }
    var parts = ["\(value) IS NOT NULL"]
    if let range = filter.numberRange {
      parts.append(range.matchesNothing ? "false" : "jsonb_typeof(\(value)) = 'number'")
      if let minimum = range.minimum { parts.append("\(value) >= \(number(minimum))") }
      if let maximum = range.maximum { parts.append("\(value) <= \(number(maximum))") }
    }
    if let equality = filter.equality {
      var options = [
        equality.text.contains("\0") ? "false" : "(p.attribute_texts ->> \(literal)) = \(bind(equality.text))"
      ]
      if let flag = equality.flag { options.append("\(value) = '\(flag)'::jsonb") }
      if let equal = equality.number {
        options.append("(jsonb_typeof(\(value)) = 'number' AND \(value) = \(number(equal)))")
      }
      parts.append("(" + options.joined(separator: " OR ") + ")")
    }
    return "(" + parts.joined(separator: " AND ") + ")"
  }

  /// The whole rows of `items` (by sequence), in order: one query.
  static func listings(
    _ items: [(seq: Int64, distance: Double?)], on connection: PostgresConnection, logger: Logger
  ) async throws -> [PlaceListing] {
    guard !items.isEmpty else { return [] }
    var languages: [String] = []
    var bySeq: [Int64: PostgresRandomAccessRow] = [:]
    for row in try await connection.query(
      placeQuery("\(placeSelect) WHERE p.seq = ANY($1)", [items.map(\.seq)]), logger: logger
    ).collect() {
      let r = row.makeRandomAccess()
      if bySeq.isEmpty { languages = try r["data_languages"].decode([String].self) }
      bySeq[try r["seq"].decode(Int64.self)] = r
    }
    return try items.compactMap { item in
      try bySeq[item.seq].map { try placeListing($0, languages: languages, distance: item.distance) }
    }
  }

  static func localized(_ row: PostgresRandomAccessRow, _ field: String, _ languages: [String]) throws
    -> LocalizedText
  {
    var text = LocalizedText()
    for language in languages {
      if let value = try row["\(field)_\(language)"].decode(String?.self), !value.isEmpty {
        text.set(value, for: language.replacingOccurrences(of: "_", with: "-"))
      }
    }
    return text
  }

  static func placeListing(_ row: PostgresRandomAccessRow, languages: [String], distance: Double?) throws
    -> PlaceListing
  {
    let latitude = try row["latitude"].decode(Double?.self)
    let longitude = try row["longitude"].decode(Double?.self)
    var place = try Place(
      id: PlaceID(try row["id"].decode(String.self)),
      parentID: try row["parent_id"].decode(String?.self).map { PlaceID($0) },
      kind: PlaceKind(rawValue: try row["kind"].decode(String.self)), name: try localized(row, "title", languages),
      description: try localized(row, "description", languages), address: try row["address"].decode(String?.self),
      location: latitude.flatMap { lat in longitude.map { Coordinate(uncheckedLatitude: lat, longitude: $0) } },
      city: try row["city"].decode(String?.self), site: try row["site"].decode(String?.self),
      phone: try row["phone"].decode(String?.self), email: try row["email"].decode(String?.self),
      venueType: try row["venue_type"].decode(String?.self), logoURL: try row["logo_url"].decode(String?.self),
      keywords: try JSONColumn.decode([String].self, from: try row["keywords_text"].decode(String.self)))
    try? place.setTimeZone(try row["time_zone"].decode(String?.self))
    let record = PlaceRecord(
      place: place, shortTitle: try localized(row, "short_title", languages),
      attributes: try JSONColumn.decode(
        [String: PlaceAttribute].self, from: try row["attributes_text"].decode(String.self)))
    return PlaceListing(
      record: record,
      rating: PlaceRating(
        own: RatingAggregate(sum: try row["own_sum"].decode(Int.self), count: try row["own_count"].decode(Int.self)),
        subtree: RatingAggregate(
          sum: try row["tree_sum"].decode(Int.self), count: try row["tree_count"].decode(Int.self))),
      favourites: try row["favourites"].decode(Int.self), children: try row["children"].decode(Int.self),
      distance: distance)
  }

  // MARK: Reviews

  public func saveReview(_ review: Review, now: Int64) async throws -> (review: Review, created: Bool) {
    let grades = try JSONColumn.encode(review.grades)
    return try await transaction { connection in
      func run(_ sql: String, _ values: [(any PostgresEncodable & Sendable)?]) async throws -> [PostgresRow] {
        try await connection.query(Self.placeQuery(sql, values), logger: self.logger).collect()
      }
      // The place and its ancestors, locked in id order: the trigger then changes their sums without deadlocks.
      let locked = try await run(
        """
        SELECT id FROM places WHERE id IN (SELECT ancestor_id FROM place_closure WHERE place_id = $1)
        ORDER BY id FOR UPDATE
        """, [review.placeID.rawValue])
      guard !locked.isEmpty else { throw PlaceStoreError.placeNotFound(review.placeID) }
      if let existing = try await run(
        "SELECT id, created_at FROM place_reviews WHERE place_id = $1 AND author_id = $2",
        [review.placeID.rawValue, review.authorID.rawValue]
      ).first {
        let (id, createdAt) = try existing.decode((String, Int64).self)
        _ = try await run(
          "UPDATE place_reviews SET grade = $1, grades = $2::jsonb, text = $3, updated_at = $4 WHERE id = $5",
          [review.grade, grades, review.text, now, id])
        var stored = review
        stored.id = ReviewID(id)
        stored.createdAt = createdAt
        return (stored, false)
      }
      do {
        _ = try await run(
          """
          INSERT INTO place_reviews(id, place_id, author_id, grade, grades, text, created_at, updated_at)
          VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7, $8)
          """,
          [
            review.id.rawValue, review.placeID.rawValue, review.authorID.rawValue, review.grade, grades, review.text,
            review.createdAt, now,
          ])
      } catch  where Self.sqlState(error) == "23503" {
        throw PlaceStoreError.invalidReview("the author '\(review.authorID)' is not a stored user")
      } catch  where Self.isUniqueViolation(error) {
        throw PlaceStoreError.invalidReview("the review id '\(review.id)' is taken")
      }
      return (review, true)
    }
  }

  public func deleteReview(place: PlaceID, author: UserID) async throws -> Bool {
    try await transaction { connection in
      _ = try await connection.query(
        Self.placeQuery(
          """
          SELECT id FROM places WHERE id IN (SELECT ancestor_id FROM place_closure WHERE place_id = $1)
          ORDER BY id FOR UPDATE
          """, [place.rawValue]), logger: self.logger
      ).collect()
      return try await !connection.query(
        Self.placeQuery(
          "DELETE FROM place_reviews WHERE place_id = $1 AND author_id = $2 RETURNING 1",
          [place.rawValue, author.rawValue]), logger: self.logger
      ).collect().isEmpty
    }
  }

  public func setReviewHidden(_ id: ReviewID, hidden: Bool) async throws -> Bool {
    try await transaction { connection in
      _ = try await connection.query(
        Self.placeQuery(
          """
          SELECT id FROM places WHERE id IN (SELECT c.ancestor_id FROM place_closure c
            JOIN place_reviews r ON r.place_id = c.place_id WHERE r.id = $1)
          ORDER BY id FOR UPDATE
          """, [id.rawValue]), logger: self.logger
      ).collect()
      return try await !connection.query(
        Self.placeQuery(
          "UPDATE place_reviews SET hidden = $1 WHERE id = $2 RETURNING 1", [hidden, id.rawValue]), logger: self.logger
      ).collect().isEmpty
    }
  }

  public func reviews(of place: PlaceID, cursor: String?, limit: Int) async throws -> ReviewPage {
    let after = try cursor.map { text throws(PlaceStoreError) in try TimeCursor(text: text) }
    let limit = min(100, max(1, limit))
    var sql = """
      SELECT seq, id, place_id, author_id, grade, grades::text, text, created_at FROM place_reviews
      WHERE place_id = $1 AND NOT hidden
      """
    var values: [(any PostgresEncodable & Sendable)?] = [place.rawValue]
    if let after {
      sql += " AND (created_at, seq) < ($2, $3)"
      values += [after.time, after.seq]
    }
    let found = try await rowsThatMayLag(
      Self.placeQuery(sql + " ORDER BY created_at DESC, seq DESC LIMIT \(limit + 1)", values))
    let page = try found.prefix(limit).map(Self.review)
    return ReviewPage(
      items: page.map(\.review),
      nextCursor: found.count > limit ? page.last.map { TimeCursor(time: $0.review.createdAt, seq: $0.seq).text } : nil
    )
  }

  public func allVisibleReviews() async throws -> [Review] {
    try await rows(
      "SELECT seq, id, place_id, author_id, grade, grades::text, text, created_at FROM place_reviews WHERE NOT hidden"
    ).map { try Self.review($0).review }
  }

  static func review(_ row: PostgresRow) throws -> (seq: Int64, review: Review) {
    let (seq, id, place, author, grade, grades, text, createdAt) = try row.decode(
      (Int64, String, String, String, Int, String, String, Int64).self)
    return (
      seq,
      Review(
        stored: ReviewID(id), placeID: PlaceID(place), authorID: UserID(author), grade: grade,
        grades: try JSONColumn.decode([String: Int].self, from: grades), text: text, createdAt: createdAt)
    )
  }

  // MARK: Favourites

  public func addFavourite(_ place: PlaceID, user: UserID, now: Int64) async throws -> Bool {
    try await transaction { connection in
      guard
        let row = try await connection.query(
          Self.placeQuery("SELECT seq FROM places WHERE id = $1", [place.rawValue]), logger: self.logger
        ).collect().first
      else { throw PlaceStoreError.placeNotFound(place) }
      return try await !connection.query(
        Self.placeQuery(
          """
          INSERT INTO place_favourites(user_id, place_id, seq, created_at) VALUES ($1, $2, $3, $4)
          ON CONFLICT DO NOTHING RETURNING 1
          """, [user.rawValue, place.rawValue, try row.decode(Int64.self), now]), logger: self.logger
      ).collect().isEmpty
    }
  }

  public func removeFavourite(_ place: PlaceID, user: UserID) async throws -> Bool {
    try await !rows(
      Self.placeQuery(
        "DELETE FROM place_favourites WHERE user_id = $1 AND place_id = $2 RETURNING 1",
        [user.rawValue, place.rawValue])
    ).isEmpty
  }

  public func favourites(of user: UserID, cursor: String?, limit: Int) async throws -> PlacePage {
    let after = try cursor.map { text throws(PlaceStoreError) in try TimeCursor(text: text) }
    let limit = min(100, max(1, limit))
    var sql = "SELECT seq, created_at FROM place_favourites WHERE user_id = $1"
    var values: [(any PostgresEncodable & Sendable)?] = [user.rawValue]
    if let after {
      sql += " AND (created_at, seq) < ($2, $3)"
      values += [after.time, after.seq]
    }
    let statement = try Self.placeQuery(sql + " ORDER BY created_at DESC, seq DESC LIMIT \(limit + 1)", values)
    return try await client.withConnection { connection in
      let found = try await connection.query(statement, logger: self.logger).collect().map {
        try $0.decode((Int64, Int64).self)
      }
      let page = found.prefix(limit)
      return PlacePage(
        items: try await Self.listings(page.map { ($0.0, nil) }, on: connection, logger: self.logger),
        nextCursor: found.count > limit ? page.last.map { TimeCursor(time: $0.1, seq: $0.0).text } : nil)
    }
  }

  // MARK: News

  public func saveNews(_ item: NewsItem) async throws {
    let title = try JSONColumn.encode(item.title)
    let body = try JSONColumn.encode(item.body)
    try await transaction { connection in
      if let place = item.placeID,
        try await !Self.exists("places", id: place.rawValue, on: connection, logger: self.logger)
      {
        throw PlaceStoreError.placeNotFound(place)
      }
      _ = try await connection.query(
        Self.placeQuery(
          """
          INSERT INTO place_news(id, place_id, title, body, image_url, published_at)
          VALUES ($1, $2, $3::jsonb, $4::jsonb, $5, $6)
          ON CONFLICT(id) DO UPDATE SET place_id = excluded.place_id, title = excluded.title, body = excluded.body,
            image_url = excluded.image_url, published_at = excluded.published_at
          """, [item.id.rawValue, item.placeID?.rawValue, title, body, item.imageURL, item.publishedAt]),
        logger: self.logger
      ).collect()
    }
  }

  public func deleteNews(_ id: NewsID) async throws -> Bool {
    try await !rows(Self.placeQuery("DELETE FROM place_news WHERE id = $1 RETURNING 1", [id.rawValue])).isEmpty
  }

  public func news(_ query: NewsQuery) async throws -> NewsPage {
    let after = try query.cursor.map { text throws(PlaceStoreError) in try TimeCursor(text: text) }
    var sql = """
      SELECT n.seq, n.id, n.place_id, n.title::text, n.body::text, n.image_url, n.published_at FROM place_news n
      WHERE true
      """
    var values: [(any PostgresEncodable & Sendable)?] = []
    switch query.scope {
    case .all: break
    case .subtree(let place):
      values.append(place.rawValue)
      sql += " AND (n.place_id IS NULL OR n.place_id IN (SELECT place_id FROM place_closure WHERE ancestor_id = $1))"
    case .favourites(let user):
      values.append(user.rawValue)
      sql += """
         AND (n.place_id IS NULL OR n.place_id IN (SELECT c.place_id FROM place_favourites f
          JOIN place_closure c ON c.ancestor_id = f.place_id WHERE f.user_id = $1))
        """
    }
    if let after {
      values += [after.time, after.seq]
      sql += " AND (n.published_at, n.seq) < ($\(values.count - 1), $\(values.count))"
    }
    let found = try await rowsThatMayLag(
      Self.placeQuery(sql + " ORDER BY n.published_at DESC, n.seq DESC LIMIT \(query.limit + 1)", values))
    let page = try found.prefix(query.limit).map { row in
      let (seq, id, place, title, body, image, publishedAt) = try row.decode(
        (Int64, String, String?, String, String, String?, Int64).self)
      return (
        seq,
        NewsItem(
          id: NewsID(id), placeID: place.map { PlaceID($0) },
          title: try JSONColumn.decode(LocalizedText.self, from: title),
          body: try JSONColumn.decode(LocalizedText.self, from: body), imageURL: image, publishedAt: publishedAt)
      )
    }
    return NewsPage(
      items: page.map(\.1),
      nextCursor: found.count > query.limit ? page.last.map { TimeCursor(time: $0.1.publishedAt, seq: $0.0).text } : nil
    )
  }
}
