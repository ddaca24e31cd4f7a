import DomainKit
import Foundation
import GRDB
import GeoKit
import MeridianAPI
import MeridianStore
import PersistenceKit

extension SQLiteStore {
  // MARK: Places

  public func upsertPlaces(_ places: [PlaceRecord], now: Int64) async throws {
    guard !places.isEmpty else { return }
    for record in places { try record.validate() }
    try await database.write { db in try Self.writePlaces(db, places, now: now, asVenues: false) }
  }

  /// Inserts or updates validated `places` in the caller's transaction. A venue keeps its kind; with `asVenues`
  /// (``upsertVenues(_:)``) a stored place must be a venue already, and one given without a parent keeps its own.
  static func writePlaces(_ db: Database, _ places: [PlaceRecord], now: Int64, asVenues: Bool) throws {
    let languages = try SQLiteSchema.localization.languages(db)
    let localized = languages.flatMap { ["title_\($0)", "short_title_\($0)", "description_\($0)"] }
    let columns =
      [
        "id", "parent_id", "kind", "title", "short_title", "description", "address", "city", "city_key", "site",
        "phone", "email", "venue_type", "logo_url", "time_zone", "keywords", "attributes", "latitude", "longitude",
        "title_key", "search_title", "search_text", "created_at", "updated_at", "geokey", "attribute_texts",
      ] + localized
    let kept: Set = ["id", "parent_id", "created_at"]
    let updates = columns.filter { !kept.contains($0) }.map { "\($0) = excluded.\($0)" }.joined(separator: ", ")
    let insert = try db.cachedStatement(
      sql: """
        INSERT INTO places(\(columns.joined(separator: ", ")))
        VALUES (\(Array(repeating: "?", count: columns.count).joined(separator: ", ")))
        ON CONFLICT(id) DO UPDATE SET \(updates)
        """)
    for record in places {
      var place = record.place
      let stored = try Row.fetchOne(
        db, sql: "SELECT parent_id, kind FROM places WHERE id = ?", arguments: [place.id.rawValue])
      if let stored {
        try place.checkKind(stored: PlaceKind(rawValue: stored[1]), asVenue: asVenues)
        if asVenues, place.parentID == nil { place.parentID = (stored[0] as String?).map { PlaceID($0) } }
      }
      if let parent = place.parentID,
        try Bool.fetchOne(db, sql: "SELECT EXISTS(SELECT 1 FROM places WHERE id = ?)", arguments: [parent.rawValue])
          != true
      {
        throw PlaceStoreError.unknownParent(place.id, parent: parent)
      }
      if let stored, (stored[0] as String?) != place.parentID?.rawValue {
        try Self.move(db, place.id, to: place.parentID, now: now)
      }
      var values: [(any DatabaseValueConvertible)?] = [
        place.id.rawValue, place.parentID?.rawValue, place.kind.rawValue,
        place.name.resolved(for: ["en"]) ?? "", record.shortTitle.resolved(for: ["en"]),
        place.description.resolved(for: ["en"]), place.address, place.city,
        place.city.map(PlaceSearch.fold), place.site, place.phone, place.email, place.venueType, place.logoURL,
        place.timeZone, try JSONColumn.encode(place.keywords), try JSONColumn.encode(record.attributes),
        place.location?.latitude, place.location?.longitude, record.titleKey, record.titleKey, record.searchText,
        now, now, try place.location.map { Int64(bitPattern: try GeohashCell($0, bits: Self.geokeyBits).value) },
        try JSONColumn.encode(record.attributeTexts),
      ]
      for language in languages {
        values.append(Self.translation(place.name, language))
        values.append(Self.translation(record.shortTitle, language))
        values.append(Self.translation(place.description, language))
      }
      try insert.execute(arguments: StatementArguments(values))
      if stored == nil {
        try db.execute(
          sql: """
            INSERT INTO place_closure(place_id, ancestor_id, depth)
            SELECT ?, ancestor_id, depth + 1 FROM place_closure WHERE place_id = ?
            UNION ALL SELECT ?, ?, 0
            """,
          arguments: [place.id.rawValue, place.parentID?.rawValue, place.id.rawValue, place.id.rawValue])
      }
    }
  }

  public func movePlace(_ id: PlaceID, to parent: PlaceID?, now: Int64) async throws {
    try await database.write { db in
      guard
        let current = try Row.fetchOne(db, sql: "SELECT parent_id FROM places WHERE id = ?", arguments: [id.rawValue])
      else { throw PlaceStoreError.placeNotFound(id) }
      if (current[0] as String?) == parent?.rawValue { return }
      if let parent,
        try Bool.fetchOne(db, sql: "SELECT EXISTS(SELECT 1 FROM places WHERE id = ?)", arguments: [parent.rawValue])
          != true
      {
        throw PlaceStoreError.unknownParent(id, parent: parent)
      }
      try Self.move(db, id, to: parent, now: now)
    }
  }

  /// Moves `id`'s subtree under `parent`: its rating leaves the old ancestors and joins the new ones, and the
  /// closure pairs between the subtree and its ancestors are replaced.
  static func move(_ db: Database, _ id: PlaceID, to parent: PlaceID?, now: Int64) throws {
    if let parent,
      try Bool.fetchOne(
        db, sql: "SELECT EXISTS(SELECT 1 FROM place_closure WHERE place_id = ? AND ancestor_id = ?)",
        arguments: [parent.rawValue, id.rawValue]) == true
    {
      throw PlaceStoreError.cycle(id)
    }
    guard
      let row = try Row.fetchOne(
        db, sql: "SELECT tree_sum, tree_count FROM places WHERE id = ?", arguments: [id.rawValue])
    else { throw PlaceStoreError.placeNotFound(id) }
    let sum: Int64 = row[0]
    let count: Int64 = row[1]
    let subtree = try JSONColumn.encode(
      String.fetchAll(db, sql: "SELECT place_id FROM place_closure WHERE ancestor_id = ?", arguments: [id.rawValue]))
    let oldAncestors = try JSONColumn.encode(
      String.fetchAll(
        db, sql: "SELECT ancestor_id FROM place_closure WHERE place_id = ? AND depth > 0", arguments: [id.rawValue]))
    try db.execute(
      sql: """
        UPDATE places SET tree_sum = tree_sum - ?, tree_count = tree_count - ?
        WHERE id IN (SELECT value FROM json_each(?))
        """, arguments: [sum, count, oldAncestors])
    try db.execute(
      sql: """
        DELETE FROM place_closure
        WHERE place_id IN (SELECT value FROM json_each(?)) AND ancestor_id IN (SELECT value FROM json_each(?))
        """, arguments: [subtree, oldAncestors])
    if let parent {
      try db.execute(
        sql: """
          INSERT INTO place_closure(place_id, ancestor_id, depth)
          SELECT sub.place_id, sup.ancestor_id, sup.depth + sub.depth + 1
          FROM place_closure sub JOIN place_closure sup ON sup.place_id = ?
          WHERE sub.ancestor_id = ?
          """, arguments: [parent.rawValue, id.rawValue])
      try db.execute(
        sql: """
          UPDATE places SET tree_sum = tree_sum + ?, tree_count = tree_count + ?
          WHERE id IN (SELECT ancestor_id FROM place_closure WHERE place_id = ?)
          """, arguments: [sum, count, parent.rawValue])
    }
    try db.execute(
      sql: "UPDATE places SET parent_id = ?, updated_at = ? WHERE id = ?",
      arguments: [parent?.rawValue, now, id.rawValue])
  }

  public func deletePlace(_ id: PlaceID) async throws -> Bool {
    try await database.write { db in
      guard
        try Bool.fetchOne(db, sql: "SELECT EXISTS(SELECT 1 FROM places WHERE id = ?)", arguments: [id.rawValue])
          == true
      else { return false }
      if try Bool.fetchOne(
        db, sql: "SELECT EXISTS(SELECT 1 FROM places WHERE parent_id = ?)", arguments: [id.rawValue]) == true
      {
        throw PlaceStoreError.hasChildren(id)
      }
      // Reviews first, while the closure still names the ancestors whose ratings lose them.
      for table in ["place_reviews", "place_favourites", "place_news", "place_closure"] {
        try db.execute(sql: "DELETE FROM \(table) WHERE place_id = ?", arguments: [id.rawValue])
      }
      try db.execute(sql: "DELETE FROM places WHERE id = ?", arguments: [id.rawValue])
      return true
    }
  }

  public func place(_ id: PlaceID) async throws -> PlaceDetails? {
    try await database.read { db in
      let languages = try SQLiteSchema.localization.languages(db)
      guard
        let row = try Row.fetchOne(db, sql: "\(Self.placeSelect) WHERE p.id = ?", arguments: [id.rawValue])
      else { return nil }
      let listing = try Self.placeListing(row, languages: languages, distance: nil)
      let ancestors = try Row.fetchAll(
        db,
        sql: """
          SELECT p.* FROM place_closure c JOIN places p ON p.id = c.ancestor_id
          WHERE c.place_id = ? AND c.depth > 0 ORDER BY c.depth DESC
          """, arguments: [id.rawValue]
      ).map { row in
        PlaceCrumb(
          id: PlaceID(row["id"] as String), kind: PlaceKind(rawValue: row["kind"]),
          title: Self.localized(row, "title", languages), shortTitle: Self.localized(row, "short_title", languages))
      }
      return PlaceDetails(listing: listing, ancestors: ancestors)
    }
  }

  public func places(_ query: PlaceQuery) async throws -> PlacePage {
    let ranking = try Self.placeRanking(query)
    return try await database.read { db in
      let page = try Self.ranked(db, ranking)
      return PlacePage(items: try Self.listings(db, page.items), nextCursor: page.nextCursor)
    }
  }

  /// A page of a places query in SQL: filtered, ordered by ``PlacePaging``'s keys and cut after its cursor.
  struct PlaceRanking {
    /// Statements ending in `LIMIT ?` (the argument left out) whose rows, in turn, are the ranking: one, or one per
    /// relevance tier, each reading only as many rows as the page still lacks.
    var steps: [(sql: String, arguments: StatementArguments)]
    var paging: PlacePaging
    var limit: Int

    /// The first statement: the whole ranking unless the order is by relevance.
    var sql: String { steps.first?.sql ?? "" }
  }

  /// The ranking of `query`: its conditions, its order's keys as SQL (columns `k0…`), one row more than a page.
  /// - Throws: ``PlaceStoreError`` `.invalidCursor`, `.invalidQuery`.
  static func placeRanking(_ query: PlaceQuery) throws -> PlaceRanking {
    let paging = try PlacePaging(query)
    if paging.keys == [.relevanceTier, .sequence] { return relevanceRanking(query, paging: paging) }
    var (conditions, arguments) = placeConditions(query)
    // Measured only where a radius or the order needs it (a centre also comes with other orders).
    let isCircle = if case .circle = query.area { true } else { false }
    let measures = isCircle || paging.keys.contains(.distanceMillimetres)
    var distance = "NULL"
    if measures, let center = paging.center {
      distance = "meridian_haversine(\(center.latitude), \(center.longitude), p.latitude, p.longitude)"
    }
    var outer = ["1"]
    var index = ""
    if case .circle(let center, let radius) = query.area {
      // The geokey ranges of the circle's covering (the `places_geokey` index), then the exact distance.
      if appendCovering(center: center, radius: radius, to: &conditions, &arguments) {
        // Without keywords or attributes the covering is the narrowest way in (SQLite would pick the latitude
        // band otherwise).
        if PlaceSearch.words(query.text ?? "").isEmpty && query.attributes.isEmpty {
          index = " INDEXED BY places_geokey"
        }
      }
      outer.append("d <= ?")
    }
    let venue = query.rating == .venue
    let sum = venue ? "(p.own_sum + ifnull(v.rating_sum, 0))" : "p.tree_sum"
    let count = venue ? "(p.own_count + ifnull(v.rating_count, 0))" : "p.tree_count"
    let average =
      "(CASE WHEN \(count) = 0 THEN \(PlacePaging.unratedAverage) ELSE \(sum) * \(PlacePaging.averageScale) / \(count) END)"
    // The distance is measured once a row, as `d` of the inner query; the distance key and the radius read it in the
    // outer one. The inner query's `LIMIT -1` keeps SQLite from flattening it into the outer one or pushing the
    // outer conditions into it, either of which would call the haversine function again for each use.
    let keys = paging.keys.map { key in
      switch key {
      case .relevanceTier: relevanceTier(paging.words)
      case .distanceMillimetres: "ifnull(CAST(d * 1000 + 0.5 AS INTEGER), \(PlacePaging.missingDistance))"
      case .negatedAverage: "-\(average)"
      case .negatedCount: "-\(count)"
      case .sequence: "p.seq"
      }
    }
    let names = keys.indices.map { "k\($0)" }
    let isDistance = paging.keys.map { $0 == .distanceMillimetres }
    let innerKeys = keys.indices.filter { !isDistance[$0] }.map { ", \(keys[$0]) AS \(names[$0])" }.joined()
    let outerKeys = keys.indices.map { isDistance[$0] ? "\(keys[$0]) AS \(names[$0])" : names[$0] }
    var outerArguments: [(any DatabaseValueConvertible)?] = []
    if case .circle(_, let radius) = query.area { outerArguments.append(radius) }
    if let after = paging.after {
      outer.append("(\(names.joined(separator: ", "))) > (\(after.map { _ in "?" }.joined(separator: ", ")))")
      outerArguments += after.map { $0 }
    }
    let sql = """
      SELECT seq, latitude, longitude, \(outerKeys.joined(separator: ", ")) FROM (
        SELECT p.seq, p.latitude, p.longitude, \(distance) AS d\(innerKeys)
        FROM places p\(index)\(venue ? " LEFT JOIN venues v ON v.id = p.id" : "")
        WHERE \(conditions.joined(separator: " AND "))\(measures ? " LIMIT -1" : "")
      ) WHERE \(outer.joined(separator: " AND ")) ORDER BY \(names.joined(separator: ", ")) LIMIT ?
      """
    return PlaceRanking(
      steps: [(sql, StatementArguments(arguments + outerArguments))], paging: paging, limit: query.limit)
  }

  /// The relevance order as one statement per tier, from the cursor's: tier 0 reads the places whose title line
  /// equals the words (`place_title_lines`), tier 1 those whose titles hold them as a phrase, its last word a
  /// prefix (`places_fts`, titles only), tier 2 every match; each walks its candidates in sequence order and stops
  /// at the rows the page still lacks. One statement over every match ranked them all first: about 60,000 for a
  /// 3-letter prefix among a million places.
  static func relevanceRanking(_ query: PlaceQuery, paging: PlacePaging) -> PlaceRanking {
    var (conditions, arguments) = placeConditions(query, matchingText: false)
    if case .circle(let center, let radius) = query.area {
      appendCovering(center: center, radius: radius, to: &conditions, &arguments)
      // The distance from the query's centre, as the other orders and the reference measure it.
      let from = paging.center ?? center
      conditions.append("meridian_haversine(\(from.latitude), \(from.longitude), p.latitude, p.longitude) <= ?")
      arguments.append(radius)
    }
    let tier = relevanceTier(paging.words)
    var steps: [(sql: String, arguments: StatementArguments)] = []
    // A forged cursor's tier below 0 starts at 0, above 2 finds nothing, as the single statement's comparison would.
    for level in stride(from: max(0, paging.after?.first ?? 0), through: 2, by: 1) {
      var stepConditions = conditions
      var stepArguments = arguments
      if let after = paging.after, after.count == 2, after[0] == level {
        stepConditions.append("p.seq > ?")
        stepArguments.append(after[1])
      }
      let fts = "places_fts CROSS JOIN places p"
      let ftsDriver = "places_fts MATCH ? AND p.seq = places_fts.rowid"
      let (from, driver, order, match) =
        switch level {
        case 0: ("place_title_lines t CROSS JOIN places p", "t.line = ? AND p.seq = t.seq", "t.seq", paging.words)
        case 1: (fts, ftsDriver, "places_fts.rowid", "search_title : \"" + paging.words + "\"*")
        default: (fts, ftsDriver, "places_fts.rowid", textMatch(PlaceSearch.words(query.text ?? "")))
        }
      if level > 0 { stepConditions.append("\(tier) = \(level)") }
      let sql = """
        SELECT p.seq, p.latitude, p.longitude, \(level) AS k0, p.seq AS k1 FROM \(from)
        WHERE \(driver) AND \(stepConditions.joined(separator: " AND ")) ORDER BY \(order) LIMIT ?
        """
      steps.append((sql, StatementArguments([match] + stepArguments)))
    }
    return PlaceRanking(steps: steps, paging: paging, limit: query.limit)
  }

  /// Appends the condition that `p.geokey` lies in one of the ranges of the circle's covering (the
  /// `places_geokey` index) and its arguments; false, and nothing appended, when the circle has no covering.
  @discardableResult
  static func appendCovering(
    center: Coordinate, radius: Double, to conditions: inout [String],
    _ arguments: inout [(any DatabaseValueConvertible)?]
  ) -> Bool {
    guard
      let ranges = try? GeohashCovering(center: center, radius: radius, maxCells: coveringCells).ranges(
        keyBits: geokeyBits)
    else { return false }
    conditions.append(
      "(" + (ranges.isEmpty ? "0" : ranges.map { _ in "p.geokey BETWEEN ? AND ?" }.joined(separator: " OR ")) + ")")
    for range in ranges {
      arguments += [Int64(bitPattern: range.lowerBound), Int64(bitPattern: range.upperBound)]
    }
    return true
  }

  /// The FTS5 query that every one of `words` matches: a word's prefix in the title or the other text, a short word
  /// (``PlaceSearch/matchesTitlesOnly(_:)``) in the title only. The words are folded letters and digits, so quoting
  /// them is safe.
  static func textMatch(_ words: [String]) -> String {
    words.map { PlaceSearch.matchesTitlesOnly($0) ? "search_title : \"\($0)\"*" : "\"\($0)\"*" }
      .joined(separator: " ")
  }

  /// The page of `ranking`: sequences with distances, and the next page's cursor.
  static func ranked(_ db: Database, _ ranking: PlaceRanking) throws -> (
    items: [(seq: Int64, distance: Double?)], nextCursor: String?
  ) {
    db.add(function: haversineFunction())
    var rows: [PlacePaging.Row] = []
    for step in ranking.steps where rows.count <= ranking.limit {
      // What the page still lacks, and one row more for the next cursor.
      let arguments = step.arguments + [ranking.limit + 1 - rows.count]
      rows += try Row.fetchAll(db, sql: step.sql, arguments: arguments).map { row in
        let latitude: Double? = row[1]
        let longitude: Double? = row[2]
        return PlacePaging.Row(
          sequence: row[0],
          location: latitude.flatMap { lat in longitude.map { Coordinate(uncheckedLatitude: lat, longitude: $0) } },
          keys: ranking.paging.keys.indices.map { row[3 + $0] })
      }
    }
    return ranking.paging.page(rows, limit: ranking.limit)
  }

  /// The relevance tier as SQL over `p.title_key` (lines of folded titles), as ``PlaceSearch/tier(titleKey:query:)``:
  /// 0 when a line equals the words, 1 when a line starts with them or has them after a space, else 2. The words
  /// are letters, digits and spaces (``PlacePaging/words``), quoted here.
  static func relevanceTier(_ words: String) -> String {
    let quoted = "'" + words.replacingOccurrences(of: "'", with: "''") + "'"
    return """
      (CASE WHEN instr(char(10) || p.title_key || char(10), char(10) || \(quoted) || char(10)) > 0 THEN 0 \
      WHEN instr(char(10) || p.title_key, char(10) || \(quoted)) > 0 \
      OR instr(p.title_key, ' ' || \(quoted)) > 0 THEN 1 ELSE 2 END)
      """
  }

  /// GeoKit's haversine distance as the SQL function `meridian_haversine(lat1, lon1, lat2, lon2)` (NULL when a
  /// value is NULL): the distance the lists report, so an order and a radius decided in SQL agree with them.
  static func haversineFunction() -> DatabaseFunction {
    DatabaseFunction("meridian_haversine", argumentCount: 4, pure: true) { values in
      let numbers = values.compactMap { Double.fromDatabaseValue($0) }
      guard numbers.count == 4 else { return nil }
      return Coordinate(uncheckedLatitude: numbers[0], longitude: numbers[1])
        .haversineDistance(to: Coordinate(uncheckedLatitude: numbers[2], longitude: numbers[3]))
    }
  }

  /// The conditions of `query` on the place aliased `p`: scope, kinds, venue type, city, keywords (FTS5; not with
  /// `matchingText` false, for a statement that reads the index itself),
  /// attributes (JSON1) and the area's latitude and longitude bounds.
  static func placeConditions(_ query: PlaceQuery, matchingText: Bool = true) -> (
    conditions: [String], arguments: [(any DatabaseValueConvertible)?]
  ) {
    var conditions = ["1"]
    var arguments: [(any DatabaseValueConvertible)?] = []
    switch query.scope {
    case .all: break
    case .roots: conditions.append("p.parent_id IS NULL")
    case .children(let parent):
      conditions.append("p.parent_id = ?")
      arguments.append(parent.rawValue)
    }
    if !query.kinds.isEmpty {
      conditions.append("p.kind IN (\(query.kinds.map { _ in "?" }.joined(separator: ", ")))")
      arguments += query.kinds.map(\.rawValue)
    }
    if let type = query.venueType {
      conditions.append("p.venue_type = ?")
      arguments.append(type)
    }
    if let city = query.city {
      conditions.append("p.city_key = ?")
      arguments.append(PlaceSearch.fold(city))
    }
    // Folded as the indexed columns were (letters and digits only, so quoting them is safe); short words match
    // titles only.
    let words = PlaceSearch.words(query.text ?? "")
    if matchingText, !words.isEmpty {
      conditions.append("p.seq IN (SELECT rowid FROM places_fts WHERE places_fts MATCH ?)")
      arguments.append(textMatch(words))
    }
    for filter in query.attributes {
      let (condition, values) = attributeCondition(filter)
      conditions.append(condition)
      arguments += values
    }
    if let bounds = query.bounds {
      conditions.append("p.latitude BETWEEN ? AND ?")
      arguments += [bounds.south, bounds.north]
      if let west = bounds.west, let east = bounds.east {
        conditions.append("p.longitude BETWEEN ? AND ?")
        arguments += [west, east]
      } else if case .box(_, let west, _, let east) = query.area {
        conditions.append("(p.longitude >= ? OR p.longitude <= ?)")
        arguments += [west, east]
      }
    }
    return (conditions, arguments)
  }

  /// The condition that `filter` holds for the place aliased `p`, on its `attributes` (JSON1) and, for text
  /// equality, its folded `attribute_texts`. A plain name (letters, digits, `_`, `-`) is written out as a JSON
  /// path, the expression the attribute indexes cover (``SQLiteSchema/placeAttributeIndexes``); any other name is
  /// looked up with `json_each`.
  static func attributeCondition(_ filter: PlaceAttributeFilter) -> (String, [(any DatabaseValueConvertible)?]) {
    let name = filter.name
    guard !name.contains("\0") else { return ("0", []) }
    let literal = "'" + name.replacingOccurrences(of: "'", with: "''") + "'"
    let plain = !name.isEmpty && name.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" }
    let path = "'$.\"" + name.replacingOccurrences(of: "'", with: "''") + "\"'"
    let type = plain ? "json_type(p.attributes, \(path))" : "a.type"
    let value = plain ? "json_extract(p.attributes, \(path))" : "a.value"
    let text =
      plain
      ? "json_extract(p.attribute_texts, \(path))"
      : "(SELECT t.value FROM json_each(p.attribute_texts) t WHERE t.key = \(literal))"
    var parts = ["\(type) IS NOT NULL"]
    var arguments: [(any DatabaseValueConvertible)?] = []
    if let range = filter.numberRange {
      parts.append(range.matchesNothing ? "0" : "\(type) IN ('integer', 'real')")
      if let minimum = range.minimum {
        parts.append("\(value) >= ?")
        arguments.append(minimum)
      }
      if let maximum = range.maximum {
        parts.append("\(value) <= ?")
        arguments.append(maximum)
      }
    }
    if let equality = filter.equality {
      var options = ["\(text) = ?"]
      arguments.append(equality.text)
      if let flag = equality.flag { options.append("\(type) = '\(flag)'") }
      if let number = equality.number {
        options.append("(\(type) IN ('integer', 'real') AND \(value) = ?)")
        arguments.append(number)
      }
      parts.append("(" + options.joined(separator: " OR ") + ")")
    }
    let condition = parts.joined(separator: " AND ")
    return (
      plain
        ? "(\(condition))"
        : "EXISTS (SELECT 1 FROM json_each(p.attributes) a WHERE a.key = \(literal) AND \(condition))",
      arguments
    )
  }

  /// The whole rows of `items` (by sequence), in order.
  static func listings(_ db: Database, _ items: [(seq: Int64, distance: Double?)]) throws -> [PlaceListing] {
    let languages = try SQLiteSchema.localization.languages(db)
    let statement = try db.cachedStatement(sql: "\(placeSelect) WHERE p.seq = ?")
    return try items.compactMap { item in
      try Row.fetchOne(statement, arguments: [item.seq]).map {
        try placeListing($0, languages: languages, distance: item.distance)
      }
    }
  }

  static let placeSelect = """
    SELECT p.*, (SELECT count(*) FROM places c WHERE c.parent_id = p.id) AS children FROM places p
    """

  static func localized(_ row: Row, _ field: String, _ languages: [String]) -> LocalizedText {
    var text = LocalizedText()
    for language in languages {
      if let value: String = row["\(field)_\(language)"], !value.isEmpty {
        text.set(value, for: language.replacingOccurrences(of: "_", with: "-"))
      }
    }
    return text
  }

  static func placeListing(_ row: Row, languages: [String], distance: Double?) throws -> PlaceListing {
    let latitude: Double? = row["latitude"]
    let longitude: Double? = row["longitude"]
    var place = try Place(
      id: PlaceID(row["id"] as String), parentID: (row["parent_id"] as String?).map { PlaceID($0) },
      kind: PlaceKind(rawValue: row["kind"]), name: localized(row, "title", languages),
      description: localized(row, "description", languages), address: row["address"],
      location: latitude.flatMap { lat in longitude.map { Coordinate(uncheckedLatitude: lat, longitude: $0) } },
      city: row["city"], site: row["site"], phone: row["phone"], email: row["email"], venueType: row["venue_type"],
      logoURL: row["logo_url"], keywords: try JSONColumn.decode([String].self, from: row["keywords"]))
    try? place.setTimeZone(row["time_zone"])
    let record = PlaceRecord(
      place: place, shortTitle: localized(row, "short_title", languages),
      attributes: try JSONColumn.decode([String: PlaceAttribute].self, from: row["attributes"]))
    return PlaceListing(
      record: record,
      rating: PlaceRating(
        own: RatingAggregate(sum: row["own_sum"], count: row["own_count"]),
        subtree: RatingAggregate(sum: row["tree_sum"], count: row["tree_count"])),
      favourites: row["favourites"], children: row["children"], distance: distance)
  }

  // MARK: Reviews

  public func saveReview(_ review: Review, now: Int64) async throws -> (review: Review, created: Bool) {
    let grades = try JSONColumn.encode(review.grades)
    return try await database.write { db in
      guard
        try Bool.fetchOne(
          db, sql: "SELECT EXISTS(SELECT 1 FROM places WHERE id = ?)", arguments: [review.placeID.rawValue]) == true
      else { throw PlaceStoreError.placeNotFound(review.placeID) }
      if let existing = try Row.fetchOne(
        db, sql: "SELECT id, created_at FROM place_reviews WHERE place_id = ? AND author_id = ?",
        arguments: [review.placeID.rawValue, review.authorID.rawValue])
      {
        try db.execute(
          sql: "UPDATE place_reviews SET grade = ?, grades = ?, text = ?, updated_at = ? WHERE id = ?",
          arguments: [review.grade, grades, review.text, now, existing[0] as String])
        var stored = review
        stored.id = ReviewID(existing[0] as String)
        stored.createdAt = existing[1]
        return (stored, false)
      }
      do {
        try db.execute(
          sql: """
            INSERT INTO place_reviews(id, place_id, author_id, grade, grades, text, created_at, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """,
          arguments: [
            review.id.rawValue, review.placeID.rawValue, review.authorID.rawValue, review.grade, grades, review.text,
            review.createdAt, now,
          ])
      } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_FOREIGNKEY {
        throw PlaceStoreError.invalidReview("the author '\(review.authorID)' is not a stored user")
      } catch let error as DatabaseError
        where [.SQLITE_CONSTRAINT_UNIQUE, .SQLITE_CONSTRAINT_PRIMARYKEY].contains(error.extendedResultCode)
      {
        throw PlaceStoreError.invalidReview("the review id '\(review.id)' is taken")
      }
      return (review, true)
    }
  }

  public func deleteReview(place: PlaceID, author: UserID) async throws -> Bool {
    try await database.write { db in
      try db.execute(
        sql: "DELETE FROM place_reviews WHERE place_id = ? AND author_id = ?",
        arguments: [place.rawValue, author.rawValue])
      return db.changesCount > 0
    }
  }

  public func setReviewHidden(_ id: ReviewID, hidden: Bool) async throws -> Bool {
    try await database.write { db in
      try db.execute(sql: "UPDATE place_reviews SET hidden = ? WHERE id = ?", arguments: [hidden, id.rawValue])
      return db.changesCount > 0
    }
  }

  public func reviews(of place: PlaceID, cursor: String?, limit: Int) async throws -> ReviewPage {
    let after = try cursor.map { text throws(PlaceStoreError) in try TimeCursor(text: text) }
    return try await database.read { db in
      let (rows, next) = try Self.newestFirst(
        db, "SELECT *, created_at AS page_time FROM place_reviews WHERE place_id = ? AND hidden = 0",
        [place.rawValue], time: "created_at", after: after, limit: limit)
      return ReviewPage(items: try rows.map(Self.review), nextCursor: next)
    }
  }

  /// A newest-first page of `select` (ending in its `WHERE` conditions, with the time as `page_time` and a `seq`
  /// column) after `after`, and the next page's cursor.
  static func newestFirst(
    _ db: Database, _ select: String, _ arguments: StatementArguments, time: String, after: TimeCursor?, limit: Int
  ) throws -> (rows: [Row], next: String?) {
    let limit = min(100, max(1, limit))
    var sql = select
    var arguments = arguments
    if let after {
      sql += " AND (\(time) < ? OR (\(time) = ? AND seq < ?))"
      arguments += [after.time, after.time, after.seq]
    }
    let rows = try Row.fetchAll(
      db, sql: sql + " ORDER BY \(time) DESC, seq DESC LIMIT ?", arguments: arguments + [limit + 1])
    let page = Array(rows.prefix(limit))
    let next = rows.count > limit ? page.last.map { TimeCursor(time: $0["page_time"], seq: $0["seq"]).text } : nil
    return (page, next)
  }

  public func allVisibleReviews() async throws -> [Review] {
    try await database.read { db in
      try Row.fetchAll(db, sql: "SELECT * FROM place_reviews WHERE hidden = 0").map(Self.review)
    }
  }

  static func review(_ row: Row) throws -> Review {
    Review(
      stored: ReviewID(row["id"] as String), placeID: PlaceID(row["place_id"] as String),
      authorID: UserID(row["author_id"] as String), grade: row["grade"],
      grades: try JSONColumn.decode([String: Int].self, from: row["grades"]), text: row["text"],
      createdAt: row["created_at"])
  }

  // MARK: Favourites

  public func addFavourite(_ place: PlaceID, user: UserID, now: Int64) async throws -> Bool {
    try await database.write { db in
      guard let seq = try Int64.fetchOne(db, sql: "SELECT seq FROM places WHERE id = ?", arguments: [place.rawValue])
      else { throw PlaceStoreError.placeNotFound(place) }
      try db.execute(
        sql: "INSERT OR IGNORE INTO place_favourites(user_id, place_id, seq, created_at) VALUES (?, ?, ?, ?)",
        arguments: [user.rawValue, place.rawValue, seq, now])
      return db.changesCount > 0
    }
  }

  public func removeFavourite(_ place: PlaceID, user: UserID) async throws -> Bool {
    try await database.write { db in
      try db.execute(
        sql: "DELETE FROM place_favourites WHERE user_id = ? AND place_id = ?",
        arguments: [user.rawValue, place.rawValue])
      return db.changesCount > 0
    }
  }

  public func favourites(of user: UserID, cursor: String?, limit: Int) async throws -> PlacePage {
    let after = try cursor.map { text throws(PlaceStoreError) in try TimeCursor(text: text) }
    return try await database.read { db in
      let (rows, next) = try Self.newestFirst(
        db, "SELECT seq, created_at AS page_time FROM place_favourites WHERE user_id = ?", [user.rawValue],
        time: "created_at", after: after, limit: limit)
      return PlacePage(items: try Self.listings(db, rows.map { ($0["seq"], nil) }), nextCursor: next)
    }
  }

  // MARK: News

  public func saveNews(_ item: NewsItem) async throws {
    let title = try JSONColumn.encode(item.title)
    let body = try JSONColumn.encode(item.body)
    try await database.write { db in
      if let place = item.placeID,
        try Bool.fetchOne(db, sql: "SELECT EXISTS(SELECT 1 FROM places WHERE id = ?)", arguments: [place.rawValue])
          != true
      {
        throw PlaceStoreError.placeNotFound(place)
      }
      try db.execute(
        sql: """
          INSERT INTO place_news(id, place_id, title, body, image_url, published_at) VALUES (?, ?, ?, ?, ?, ?)
          ON CONFLICT(id) DO UPDATE SET place_id = excluded.place_id, title = excluded.title, body = excluded.body,
            image_url = excluded.image_url, published_at = excluded.published_at
          """, arguments: [item.id.rawValue, item.placeID?.rawValue, title, body, item.imageURL, item.publishedAt])
    }
  }

  public func deleteNews(_ id: NewsID) async throws -> Bool {
    try await database.write { db in
      try db.execute(sql: "DELETE FROM place_news WHERE id = ?", arguments: [id.rawValue])
      return db.changesCount > 0
    }
  }

  public func news(_ query: NewsQuery) async throws -> NewsPage {
    let after = try query.cursor.map { text throws(PlaceStoreError) in try TimeCursor(text: text) }
    return try await database.read { db in
      var sql = "SELECT n.*, n.published_at AS page_time FROM place_news n WHERE 1"
      var arguments: StatementArguments = []
      switch query.scope {
      case .all: break
      case .subtree(let place):
        sql += " AND (n.place_id IS NULL OR n.place_id IN (SELECT place_id FROM place_closure WHERE ancestor_id = ?))"
        arguments += [place.rawValue]
      case .favourites(let user):
        sql += """
           AND (n.place_id IS NULL OR n.place_id IN (SELECT c.place_id FROM place_favourites f
            JOIN place_closure c ON c.ancestor_id = f.place_id WHERE f.user_id = ?))
          """
        arguments += [user.rawValue]
      }
      let (rows, next) = try Self.newestFirst(
        db, sql, arguments, time: "n.published_at", after: after, limit: query.limit)
      return NewsPage(
        items: try rows.map { row in
          NewsItem(
            id: NewsID(row["id"] as String), placeID: (row["place_id"] as String?).map { PlaceID($0) },
            title: try JSONColumn.decode(LocalizedText.self, from: row["title"]),
            body: try JSONColumn.decode(LocalizedText.self, from: row["body"]), imageURL: row["image_url"],
            publishedAt: row["published_at"])
        }, nextCursor: next)
    }
  }
}
