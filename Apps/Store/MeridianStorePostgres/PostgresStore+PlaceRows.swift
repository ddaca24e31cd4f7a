import DomainKit
import Logging
import MeridianStore
import PostgresNIO

/// The rows of one bulk write into `places`, a column at a time: one statement writes them all —
/// `INSERT … SELECT … FROM unnest($1::text[], …) WITH ORDINALITY … ON CONFLICT (id) DO UPDATE` — each column one
/// array bind, so the statement has as many parameters as columns whatever the number of rows (PostgreSQL allows
/// 65,535), and new rows take their `seq` in the order given.
struct PlaceRows {
  private var columns: [String] = []
  private var arrays: [String] = []
  private var selected: [String] = []
  private var searchText: String?
  private var binds = PostgresBindings()

  /// A `text` column, NULL where a value is nil.
  mutating func text(_ column: String, _ values: [String?]) throws {
    try binds.appendNullable(values)
    add(column, array: "text[]", select: alias(arrays.count))
  }

  /// A `double precision` column, NULL where a value is nil.
  mutating func number(_ column: String, _ values: [Double?]) throws {
    try binds.appendNullable(values)
    add(column, array: "float8[]", select: alias(arrays.count))
  }

  /// A `bigint` column.
  mutating func integer(_ column: String, _ values: [Int64]) {
    binds.append(values)
    add(column, array: "int8[]", select: alias(arrays.count))
  }

  /// A `jsonb` column of JSON texts.
  mutating func json(_ column: String, _ values: [String]) {
    binds.append(values)
    add(column, array: "text[]", select: "\(alias(arrays.count))::jsonb")
  }

  /// `search`: the `title_key` column (given already) at weight A and `texts` (keywords and descriptions) at C.
  mutating func search(_ texts: [String]) {
    binds.append(texts)
    searchText = alias(arrays.count)
    arrays.append("text[]")
  }

  /// The upsert of the rows, made at `now`: a stored row keeps the columns `kept` (and `created_at`) and takes the
  /// others.
  func upsert(now: Int64, kept: Set<String>) -> PostgresQuery {
    var binds = binds
    binds.append(now)
    var names = columns
    var values = selected
    if let searchText, let titles = columns.firstIndex(of: "title_key").map({ selected[$0] }) {
      names.append("search")
      values.append(
        "setweight(to_tsvector('simple', \(titles)), 'A') || setweight(to_tsvector('simple', \(searchText)), 'C')"
      )
    }
    names += ["created_at", "updated_at"]
    values += ["$\(binds.count)::bigint", "$\(binds.count)::bigint"]
    let updates = names.filter { !kept.contains($0) && $0 != "created_at" }
      .map { "\(PostgresSchema.quoted($0)) = excluded.\(PostgresSchema.quoted($0))" }
    let unnested = arrays.indices.map { "$\($0 + 1)::\(arrays[$0])" }
    let aliases = arrays.indices.map { "c\($0)" } + ["ord"]
    return PostgresQuery(
      unsafeSQL: """
        INSERT INTO places(\(names.map(PostgresSchema.quoted).joined(separator: ", ")))
        SELECT \(values.joined(separator: ", "))
        FROM unnest(\(unnested.joined(separator: ", "))) WITH ORDINALITY AS g(\(aliases.joined(separator: ", ")))
        ORDER BY g.ord
        ON CONFLICT (id) DO UPDATE SET \(updates.joined(separator: ", "))
        """, binds: binds)
  }

  private mutating func add(_ column: String, array: String, select: String) {
    columns.append(column)
    arrays.append(array)
    selected.append(select)
  }

  private func alias(_ index: Int) -> String { "g.c\(index)" }
}

extension PostgresStore {
  /// Rows per statement of ``writePlaces(_:now:asVenues:on:logger:)`` and ``writeVenues(_:ratings:now:on:logger:)``: a
  /// chunk's arrays are a few MB at most. Measured writing 40,800 places in one call (debug build, a loaded 2-core
  /// machine): 1,000 rows 980–1,340 places/s, 2,000 1,510–1,670, 5,000 1,790–1,830, 10,000 1,710.
  static let placeRowsPerStatement = 5_000

  /// Ids per `= ANY($1)` lookup of what is stored.
  static let placeIDsPerLookup = 10_000

  /// Inserts or updates validated `places` in the caller's transaction. A venue keeps its kind; with `asVenues`
  /// (``upsertVenues(_:)``) a stored place must be a venue already, and one given without a parent keeps its own.
  ///
  /// The rules are checked in Swift in the order given, against what is stored of the places and their parents
  /// (read in one lookup per ``placeIDsPerLookup`` ids) and what the batch wrote before — so a parent must be
  /// stored or come earlier, and a place given twice is checked against its first copy, as one write at a time
  /// would. The rows are then written a chunk (``placeRowsPerStatement``) per statement, a place given twice once
  /// with its last values; a changed parent is a ``move(_:to:now:on:logger:)`` between chunks.
  static func writePlaces(
    _ places: [PlaceRecord], now: Int64, asVenues: Bool, on connection: PostgresConnection, logger: Logger
  ) async throws {
    guard !places.isEmpty else { return }
    // Structure changes (inserts, moves) one at a time, so closure rows and the ratings they carry stay in step.
    _ = try await connection.query("SELECT pg_advisory_xact_lock(\(Self.placeTreeLock))", logger: logger).collect()
    let languages = try await Self.dataLanguages(connection, logger: logger)
    var known = try await storedPlaces(
      Set(places.flatMap { [$0.place.id.rawValue] + ($0.place.parentID.map { [$0.rawValue] } ?? []) }),
      on: connection, logger: logger)
    var chunk = PlaceChunk()
    func flush() async throws {
      guard !chunk.records.isEmpty else { return }
      try await writePlaceRows(chunk, languages: languages, now: now, on: connection, logger: logger)
      chunk = PlaceChunk()
    }
    for var record in places {
      let id = record.place.id.rawValue
      let stored = known[id]
      if let stored {
        try record.place.checkKind(stored: PlaceKind(rawValue: stored.kind), asVenue: asVenues)
        if asVenues, record.place.parentID == nil { record.place.parentID = stored.parent.map { PlaceID($0) } }
      }
      if let parent = record.place.parentID, known[parent.rawValue] == nil {
        throw PlaceStoreError.unknownParent(record.place.id, parent: parent)
      }
      if let stored, stored.parent != record.place.parentID?.rawValue {
        try await flush()
        try await move(record.place.id, to: record.place.parentID, now: now, on: connection, logger: logger)
      }
      if !chunk.contains(id), chunk.records.count >= placeRowsPerStatement { try await flush() }
      chunk.add(record, isNew: stored == nil)
      known[id] = (record.place.parentID?.rawValue, record.place.kind.rawValue)
    }
    try await flush()
  }

  /// The parent and kind of each of `ids` that is stored.
  static func storedPlaces(_ ids: Set<String>, on connection: PostgresConnection, logger: Logger) async throws
    -> [String: (parent: String?, kind: String)]
  {
    var stored: [String: (parent: String?, kind: String)] = [:]
    let ids = Array(ids)
    for chunk in ids.chunks(of: placeIDsPerLookup) {
      let slice = Array(chunk)
      for try await (id, parent, kind) in try await connection.query(
        placeQuery("SELECT id, parent_id, kind FROM places WHERE id = ANY($1)", [slice]), logger: logger
      ).decode((String, String?, String).self) {
        stored[id] = (parent, kind)
      }
    }
    return stored
  }

  /// The columns of `records` for ``PlaceRows``: every column the store writes, or with `venueRatings` (one per
  /// record) those of a venue import (``writeVenues(_:ratings:now:on:logger:)``), which leaves a stored place's
  /// parent, short titles and attributes as they are and writes each venue's imported rating. The `venues` row and
  /// the places row then agree from the start, and the `venues_rating` triggers have nothing to rewrite.
  static func placeRows(_ records: [PlaceRecord], languages: [String], venueRatings: [RatingAggregate]? = nil) throws
    -> PlaceRows
  {
    let venueImport = venueRatings != nil
    let places = records.map(\.place)
    var rows = PlaceRows()
    try rows.text("id", places.map(\.id.rawValue))
    if !venueImport { try rows.text("parent_id", places.map(\.parentID?.rawValue)) }
    try rows.text("kind", places.map(\.kind.rawValue))
    try rows.text("title", places.map { $0.name.resolved(for: ["en"]) ?? "" })
    if !venueImport { try rows.text("short_title", records.map { $0.shortTitle.resolved(for: ["en"]) }) }
    try rows.text("description", places.map { $0.description.resolved(for: ["en"]) })
    try rows.text("address", places.map(\.address))
    try rows.text("city", places.map(\.city))
    try rows.text("city_key", places.map { $0.city.map(PlaceSearch.fold) })
    try rows.text("site", places.map(\.site))
    try rows.text("phone", places.map(\.phone))
    try rows.text("email", places.map(\.email))
    try rows.text("venue_type", places.map(\.venueType))
    try rows.text("logo_url", places.map(\.logoURL))
    try rows.text("time_zone", places.map(\.timeZone))
    rows.json("keywords", try places.map { try JSONColumn.encode($0.keywords) })
    if !venueImport {
      rows.json("attributes", try records.map { try JSONColumn.encode($0.attributes) })
      rows.json("attribute_texts", try records.map { try JSONColumn.encode($0.attributeTexts) })
    }
    try rows.number("latitude", places.map { $0.location?.latitude })
    try rows.number("longitude", places.map { $0.location?.longitude })
    // Normalized words, so the parser splits "01.03.02" or "Paris-Saclay" as the query does.
    try rows.text("title_key", records.map(\.titleKey))
    for language in languages {
      try rows.text("title_\(language)", places.map { translation($0.name, language) })
      if !venueImport {
        try rows.text("short_title_\(language)", records.map { translation($0.shortTitle, language) })
      }
      try rows.text("description_\(language)", places.map { translation($0.description, language) })
    }
    if let venueRatings {
      rows.integer("venue_rating_sum", venueRatings.map { Int64($0.sum) })
      rows.integer("venue_rating_count", venueRatings.map { Int64($0.count) })
    }
    rows.search(records.map(\.searchText))
    return rows
  }

  /// Writes `chunk` in one statement, then the closure rows of its new places (in one more).
  static func writePlaceRows(
    _ chunk: PlaceChunk, languages: [String], now: Int64, on connection: PostgresConnection, logger: Logger
  ) async throws {
    let rows = try placeRows(chunk.records, languages: languages)
    _ = try await connection.query(rows.upsert(now: now, kept: ["id", "parent_id"]), logger: logger).collect()
    let new = chunk.newPlaces
    guard !new.isEmpty else { return }
    // Each new place's closure: itself, its new ancestors in this chunk (written above, so read here from the
    // given parents), and the stored closure of the first stored ancestor.
    var binds = PostgresBindings(capacity: 2)
    binds.append(new.map(\.id.rawValue))
    try binds.appendNullable(new.map(\.parentID?.rawValue))
    _ = try await connection.query(
      PostgresQuery(
        unsafeSQL: """
          WITH RECURSIVE given(id, parent_id) AS (SELECT * FROM unnest($1::text[], $2::text[])),
          chain(place_id, ancestor_id, depth) AS (
            SELECT id, id, 0 FROM given
            UNION ALL
            SELECT c.place_id, g.parent_id, c.depth + 1
            FROM chain c JOIN given g ON g.id = c.ancestor_id JOIN given p ON p.id = g.parent_id
          )
          INSERT INTO place_closure(place_id, ancestor_id, depth)
          SELECT place_id, ancestor_id, depth FROM chain
          UNION ALL
          SELECT c.place_id, s.ancestor_id, c.depth + 1 + s.depth
          FROM chain c JOIN given g ON g.id = c.ancestor_id JOIN place_closure s ON s.place_id = g.parent_id
          WHERE NOT EXISTS (SELECT 1 FROM given p WHERE p.id = g.parent_id)
          """, binds: binds), logger: logger
    ).collect()
  }
}

/// The places of one statement of ``PostgresStore/writePlaces(_:now:asVenues:on:logger:)``, in the order given, a
/// place given twice once (at its first position, with its last values).
struct PlaceChunk {
  private(set) var records: [PlaceRecord] = []
  private var positions: [String: Int] = [:]
  private var new: Set<String> = []

  func contains(_ id: String) -> Bool { positions[id] != nil }

  /// Adds `record`, or replaces the copy given before; `isNew` when no copy is stored.
  mutating func add(_ record: PlaceRecord, isNew: Bool) {
    let id = record.place.id.rawValue
    if let position = positions[id] {
      records[position] = record
    } else {
      positions[id] = records.count
      records.append(record)
      if isNew { new.insert(id) }
    }
  }

  /// The places the chunk inserts, in order.
  var newPlaces: [Place] { records.map(\.place).filter { new.contains($0.id.rawValue) } }
}
