import DomainKit
import Foundation
import GeoKit
import MeridianAPI

/// The places directory: a hierarchy of places (kinds are data), keyword search, reviews with ratings kept on
/// write, favourites and news.
///
/// The database keeps the promises: every place's own rating (its visible reviews) and its subtree's rating (its own
/// plus every descendant's) are changed by the writes that change them — by triggers on reviews, so a review
/// deleted with its author's account leaves the sums right too — and always equal a recomputation from the
/// reviews (DomainKit's `PlaceDirectory.aggregateRatings`). A move carries its subtree's rating from the old
/// ancestors to the new ones in one transaction; a parent that is the place itself or one of its descendants is
/// refused. One review per person and place; favourite counts are kept by triggers as well.
///
/// Lists are keyset-paged: a cursor is the last item's sort key, ending with the place's insertion sequence, so a
/// page never repeats or skips a place that existed when paging began, whatever is inserted meanwhile.
public protocol PlaceStore: Sendable {
  // MARK: Places

  /// Inserts places or updates them by id, all or nothing, in the order given (a parent before its children, or
  /// already stored). A changed parent is a move (``movePlace(_:to:now:)``).
  /// - Throws: ``PlaceStoreError`` `.unknownParent`, `.cycle`, `.invalidPlace`.
  func upsertPlaces(_ places: [PlaceRecord], now: Int64) async throws
  /// Moves a place (with its subtree) under `parent` (nil: to the top level); the subtree's rating moves with it.
  /// - Throws: ``PlaceStoreError`` `.placeNotFound`, `.unknownParent`, `.cycle`.
  func movePlace(_ id: PlaceID, to parent: PlaceID?, now: Int64) async throws
  /// Deletes a place that has no children, with its reviews (its ancestors' ratings lose them), favourites and
  /// news. Returns false when there is no such place.
  /// - Throws: ``PlaceStoreError/hasChildren(_:)``.
  func deletePlace(_ id: PlaceID) async throws -> Bool
  /// One place with its ratings, favourite count and ancestors (root first); nil when there is none.
  func place(_ id: PlaceID) async throws -> PlaceDetails?
  /// A page of places: children, roots, a city, near a centre or in a box, found by keywords, with attribute
  /// ranges; sorted and keyset-paged as ``PlaceQuery`` says.
  /// - Throws: ``PlaceStoreError/invalidCursor`` or `.invalidQuery`.
  func places(_ query: PlaceQuery) async throws -> PlacePage

  // MARK: Reviews

  /// Stores `review` as its author's review of its place, replacing their earlier one (grade and text change;
  /// the id and creation time stay the first review's). Returns the stored review and whether it was new.
  /// - Throws: ``PlaceStoreError`` `.placeNotFound`, `.invalidReview`.
  func saveReview(_ review: Review, now: Int64) async throws -> (review: Review, created: Bool)
  /// Deletes `author`'s review of `place`. Returns false when there is none.
  func deleteReview(place: PlaceID, author: UserID) async throws -> Bool
  /// Hides or shows a review (operators): a hidden review is left out of lists and ratings. False when there is
  /// no such review.
  func setReviewHidden(_ id: ReviewID, hidden: Bool) async throws -> Bool
  /// A page of a place's visible reviews, newest first.
  func reviews(of place: PlaceID, cursor: String?, limit: Int) async throws -> ReviewPage
  /// Every visible review (for recomputing ratings: operators' checks and the tests).
  func allVisibleReviews() async throws -> [Review]

  // MARK: Favourites

  /// Adds `place` to `user`'s favourites. False when it was one already.
  /// - Throws: ``PlaceStoreError/placeNotFound(_:)``.
  func addFavourite(_ place: PlaceID, user: UserID, now: Int64) async throws -> Bool
  /// Removes `place` from `user`'s favourites. False when it wasn't one.
  func removeFavourite(_ place: PlaceID, user: UserID) async throws -> Bool
  /// A page of `user`'s favourites, most recently added first, with their ratings.
  func favourites(of user: UserID, cursor: String?, limit: Int) async throws -> PlacePage

  // MARK: News

  /// Stores a news item (of a stored place, or directory-wide when its place is nil), or replaces the one with its
  /// id.
  /// - Throws: ``PlaceStoreError/placeNotFound(_:)``.
  func saveNews(_ item: NewsItem) async throws
  /// Deletes a news item. False when there is none.
  func deleteNews(_ id: NewsID) async throws -> Bool
  /// A page of news, newest first: all of it, one place's subtree, or a user's favourites (with their subtrees) —
  /// directory-wide items always included.
  func news(_ query: NewsQuery) async throws -> NewsPage
}

/// A place as the directory stores it: DomainKit's `Place` (its `name` is the title, `logoURL` the image) with a
/// localized short title and typed attributes.
public struct PlaceRecord: Sendable, Hashable, Codable {
  /// The place.
  public var place: Place
  /// Localized short title ("МГУ", "MSU").
  public var shortTitle: LocalizedText
  /// Attributes by name (`passingScore`, `seats`, `tuition`, `form`).
  public var attributes: [String: PlaceAttribute]

  /// The longest title, short title or address accepted, in characters.
  public static let maximumTitleLength = 500
  /// The longest description accepted, in characters.
  public static let maximumDescriptionLength = 20_000

  /// A record.
  public init(place: Place, shortTitle: LocalizedText = LocalizedText(), attributes: [String: PlaceAttribute] = [:]) {
    self.place = place
    self.shortTitle = shortTitle
    self.attributes = attributes
  }

  /// Checks what the store refuses: an empty id or kind, no title, oversized text, a place its own parent.
  /// - Throws: ``PlaceStoreError/invalidPlace(_:_:)``.
  public func validate() throws(PlaceStoreError) {
    let id = place.id
    if id.rawValue.isEmpty || id.rawValue.count > 200 { throw .invalidPlace(id, "the id must be 1…200 characters") }
    let kind = place.kind.rawValue
    if kind.isEmpty || kind.count > 64 || kind.contains(where: \.isWhitespace) {
      throw .invalidPlace(id, "the kind must be 1…64 characters without spaces")
    }
    if place.name.values.values.allSatisfy({ $0.trimmingCharacters(in: .whitespaces).isEmpty }) {
      throw .invalidPlace(id, "a title is required in at least one language")
    }
    for (field, text) in [("title", place.name), ("shortTitle", shortTitle)] {
      for (language, value) in text.values where value.count > Self.maximumTitleLength {
        throw .invalidPlace(id, "\(field).\(language) is longer than \(Self.maximumTitleLength) characters")
      }
    }
    for (language, value) in place.description.values where value.count > Self.maximumDescriptionLength {
      throw .invalidPlace(id, "description.\(language) is longer than \(Self.maximumDescriptionLength) characters")
    }
    if place.parentID == id { throw .cycle(id) }
    for (name, value) in attributes {
      if name.isEmpty || name.count > 64 { throw .invalidPlace(id, "attribute names must be 1…64 characters") }
      if case .number(let number) = value, !number.isFinite {
        throw .invalidPlace(id, "attribute \(QuotedValue.quote("\(name)")) must be a finite number")
      }
    }
  }

  /// Titles and short titles as ``PlaceSearch/normalized(_:)`` words, one per line: what search ranks exact and
  /// prefix title matches by (the same on every engine), computed once on write.
  public var titleKey: String {
    let titles =
      place.name.values.keys.sorted().compactMap { place.name.values[$0] }
      + shortTitle.values.keys.sorted().compactMap { shortTitle.values[$0] }
    return titles.map(PlaceSearch.normalized).filter { !$0.isEmpty }.joined(separator: "\n")
  }

  /// The text attributes folded (``PlaceSearch/fold(_:)``), by name: what `eq.` filters compare with (the same on
  /// every engine), computed once on write.
  public var attributeTexts: [String: String] {
    attributes.compactMapValues { value in
      if case .text(let text) = value { return PlaceSearch.fold(text) }
      return nil
    }
  }

  /// Keywords and descriptions in every language as ``PlaceSearch/normalized(_:)`` words: what search finds
  /// besides titles, folded on write like the query (so "ё" finds "е", "ї" finds "і", "É" finds "e").
  public var searchText: String {
    (place.keywords + place.description.values.keys.sorted().compactMap { place.description.values[$0] })
      .map(PlaceSearch.normalized).filter { !$0.isEmpty }.joined(separator: "\n")
  }
}

/// A place's ratings: its own reviews, and its subtree's (its own plus every descendant's).
public struct PlaceRating: Sendable, Hashable, Codable {
  /// The place's own visible reviews.
  public var own: RatingAggregate
  /// The place's and all its descendants' visible reviews: what every level shows.
  public var subtree: RatingAggregate

  /// Ratings.
  public init(own: RatingAggregate = RatingAggregate(), subtree: RatingAggregate = RatingAggregate()) {
    self.own = own
    self.subtree = subtree
  }
}

/// A place in a list: the record, its ratings, favourite count and, for a query with a centre, its distance.
public struct PlaceListing: Sendable, Hashable {
  /// The place.
  public var record: PlaceRecord
  /// Its ratings.
  public var rating: PlaceRating
  /// How many people keep it among their favourites.
  public var favourites: Int
  /// Children it has.
  public var children: Int
  /// Haversine distance from the query's centre, metres.
  public var distance: Double?

  /// A listing.
  public init(record: PlaceRecord, rating: PlaceRating, favourites: Int, children: Int, distance: Double? = nil) {
    self.record = record
    self.rating = rating
    self.favourites = favourites
    self.children = children
    self.distance = distance
  }
}

/// One place with its ancestors.
public struct PlaceDetails: Sendable, Hashable {
  /// The place.
  public var listing: PlaceListing
  /// Its ancestors, the root first (empty for a top-level place).
  public var ancestors: [PlaceCrumb]

  /// Details.
  public init(listing: PlaceListing, ancestors: [PlaceCrumb]) {
    self.listing = listing
    self.ancestors = ancestors
  }
}

/// A page of places.
public struct PlacePage: Sendable, Hashable {
  /// The places.
  public var items: [PlaceListing]
  /// The cursor of the next page; nil on the last.
  public var nextCursor: String?

  /// A page.
  public init(items: [PlaceListing], nextCursor: String?) {
    self.items = items
    self.nextCursor = nextCursor
  }
}

/// What a list of places shows and in which order.
public struct PlaceQuery: Sendable, Hashable {
  /// Which places.
  public enum Scope: Sendable, Hashable {
    /// Every place.
    case all
    /// The top-level places.
    case roots
    /// The children of a place.
    case children(of: PlaceID)
  }

  /// Where.
  public enum Area: Sendable, Hashable {
    /// Within `radius` metres (haversine) of `center`.
    case circle(center: Coordinate, radius: Double)
    /// In a bounding box (south ≤ latitude ≤ north; west ≤ longitude ≤ east, or across the antimeridian when
    /// west > east).
    case box(south: Double, west: Double, north: Double, east: Double)
  }

  /// An attribute condition (API's `PlaceAttributeFilter`).
  public typealias AttributeFilter = PlaceAttributeFilter

  /// The order.
  public enum Sort: String, Sendable, Hashable, Codable, CaseIterable {
    /// Search relevance (exact title matches first, then title prefixes, then the rest), then insertion; the
    /// default with keywords.
    case relevance
    /// Insertion order; the default without keywords.
    case inserted
    /// Nearest first (needs a centre; places without a location last).
    case distance
    /// Highest subtree average first (unrated last), then more reviews.
    case rating
    /// Most subtree reviews first, then higher average.
    case reviews
  }

  /// Whose rating the rating and review orders read.
  public enum Rating: Sendable, Hashable {
    /// The subtree's visible reviews: what every place shows.
    case subtree
    /// A venue's: the rating imported with it plus its own visible reviews (what venue lists show).
    case venue
  }

  /// Which places.
  public var scope: Scope
  /// Only these kinds (any when empty).
  public var kinds: [PlaceKind]
  /// Only this city (case- and diacritic-insensitive).
  public var city: String?
  /// Keywords: every word must start a word of a title, short title, keyword or description, in any language,
  /// case- and diacritic-insensitively (``PlaceSearch/fold(_:)``); a word of one or two characters with a letter
  /// (typing ahead) must start a word of a title or short title.
  public var text: String?
  /// Only here.
  public var area: Area?
  /// The centre distances are measured from (the circle's when nil).
  public var center: Coordinate?
  /// Attribute conditions, all of which must hold.
  public var attributes: [AttributeFilter]
  /// The order (nil: relevance with keywords, else insertion).
  public var sort: Sort?
  /// The previous page's `nextCursor`.
  public var cursor: String?
  /// Page size, 1…100 (10 by default).
  public var limit: Int
  /// Only venues of this type (`Place.venueType`).
  public var venueType: String?
  /// Whose rating the orders read (the subtree's by default).
  public var rating: Rating

  /// A query; `limit` is clamped to 1…100.
  public init(
    scope: Scope = .all, kinds: [PlaceKind] = [], city: String? = nil, text: String? = nil, area: Area? = nil,
    center: Coordinate? = nil, attributes: [AttributeFilter] = [], sort: Sort? = nil, cursor: String? = nil,
    limit: Int = 10, venueType: String? = nil, rating: Rating = .subtree
  ) {
    self.scope = scope
    self.kinds = kinds
    self.city = city
    self.text = text
    self.area = area
    self.center = center
    self.attributes = attributes
    self.sort = sort
    self.cursor = cursor
    self.limit = min(100, max(1, limit))
    self.venueType = venueType
    self.rating = rating
  }

  /// The query that lists venues (``VenueStore/nearbyVenues(_:)``): places of kind `venue` within the circle,
  /// optionally of one type, ordered by the venue's rating (imported plus reviews) or distance, keyset-paged.
  public init(venues query: VenueQuery) {
    let sort: Sort =
      switch query.sort {
      case .distance: .distance
      case .rating: .rating
      case .reviews: .reviews
      }
    self.init(
      kinds: [.venue], area: .circle(center: query.center, radius: query.radius), sort: sort, cursor: query.cursor,
      limit: query.pageSize, venueType: query.type, rating: .venue)
  }

  /// The order used.
  public var effectiveSort: Sort { sort ?? (PlaceSearch.words(text ?? "").isEmpty ? .inserted : .relevance) }

  /// The centre distances are measured from.
  public var effectiveCenter: Coordinate? {
    if let center { return center }
    if case .circle(let center, _) = area { return center }
    return nil
  }

  /// The latitude and longitude bounds to scan (longitudes nil when the area spans the antimeridian or a pole).
  public var bounds: (south: Double, north: Double, west: Double?, east: Double?)? {
    switch area {
    case nil: return nil
    case .box(let south, let west, let north, let east):
      return (south, north, west <= east ? west : nil, west <= east ? east : nil)
    case .circle(let center, let radius):
      let degrees = radius / 111_195 * 1.001
      let south = max(-90, center.latitude - degrees)
      let north = min(90, center.latitude + degrees)
      let widest = max(abs(south), abs(north))
      guard widest < 89 else { return (south, north, nil, nil) }
      let spread = degrees / cos(widest * .pi / 180)
      let west = center.longitude - spread
      let east = center.longitude + spread
      guard west >= -180, east <= 180 else { return (south, north, nil, nil) }
      return (south, north, west, east)
    }
  }
}

/// Why a directory write or query was refused.
public enum PlaceStoreError: Error, Sendable, Hashable, CustomStringConvertible {
  /// No such place.
  case placeNotFound(PlaceID)
  /// The parent named is not stored (nor earlier in the same import).
  case unknownParent(PlaceID, parent: PlaceID)
  /// The new parent is the place itself or one of its descendants.
  case cycle(PlaceID)
  /// A place with children can't be deleted; move or delete them first.
  case hasChildren(PlaceID)
  /// The place is malformed.
  case invalidPlace(PlaceID, String)
  /// The review is malformed (text too long, …).
  case invalidReview(String)
  /// A cursor that no page of this order gave.
  case invalidCursor
  /// A query that can't be answered (distance order without a centre, …).
  case invalidQuery(String)

  /// What was wrong and what to do.
  public var description: String {
    switch self {
    case .placeNotFound(let id): "There is no place \(QuotedValue.quote("\(id)"))."
    case .unknownParent(let id, let parent):
      "Place \(QuotedValue.quote("\(id)")) names parent \(QuotedValue.quote("\(parent)")), which is not stored; import the parent first."
    case .cycle(let id): "Place \(QuotedValue.quote("\(id)")) can't be put under itself or one of its descendants."
    case .hasChildren(let id): "Place \(QuotedValue.quote("\(id)")) has children; move or delete them first."
    case .invalidPlace(let id, let reason): "Place \(QuotedValue.quote("\(id)")): \(reason)."
    case .invalidReview(let reason): "The review can't be stored: \(reason)."
    case .invalidCursor: "The cursor was not given by this list; start again without it."
    case .invalidQuery(let reason): "The query can't be answered: \(reason)."
    }
  }
}

/// A page of reviews.
public struct ReviewPage: Sendable, Hashable {
  /// The reviews, newest first.
  public var items: [Review]
  /// The cursor of the next page; nil on the last.
  public var nextCursor: String?

  /// A page.
  public init(items: [Review], nextCursor: String?) {
    self.items = items
    self.nextCursor = nextCursor
  }
}

/// Which news a feed lists.
public struct NewsQuery: Sendable, Hashable {
  /// Which news.
  public enum Scope: Sendable, Hashable {
    /// Every item.
    case all
    /// Items of a place and its descendants, plus directory-wide ones.
    case subtree(of: PlaceID)
    /// Items of a user's favourite places and their descendants, plus directory-wide ones.
    case favourites(of: UserID)
  }

  /// Which news.
  public var scope: Scope
  /// The previous page's `nextCursor`.
  public var cursor: String?
  /// Page size, 1…100.
  public var limit: Int

  /// A query; `limit` is clamped to 1…100.
  public init(scope: Scope = .all, cursor: String? = nil, limit: Int = 10) {
    self.scope = scope
    self.cursor = cursor
    self.limit = min(100, max(1, limit))
  }
}

/// A page of news.
public struct NewsPage: Sendable, Hashable {
  /// The items, newest first.
  public var items: [NewsItem]
  /// The cursor of the next page; nil on the last.
  public var nextCursor: String?

  /// A page.
  public init(items: [NewsItem], nextCursor: String?) {
    self.items = items
    self.nextCursor = nextCursor
  }
}

/// A position in a newest-first list: the last item's time and sequence.
public struct TimeCursor: Sendable, Hashable {
  /// The last item's time.
  public var time: Int64
  /// Its insertion sequence (tie-break).
  public var seq: Int64

  /// A cursor.
  public init(time: Int64, seq: Int64) {
    self.time = time
    self.seq = seq
  }

  /// `time.seq`.
  public var text: String { "\(time).\(seq)" }

  /// Parses the wire form.
  /// - Throws: ``PlaceStoreError/invalidCursor``.
  public init(text: String) throws(PlaceStoreError) {
    let parts = text.split(separator: ".", omittingEmptySubsequences: false)
    guard parts.count == 2, let time = Int64(parts[0]), let seq = Int64(parts[1]) else { throw .invalidCursor }
    self.init(time: time, seq: seq)
  }
}

/// Search text handling shared by the engines: folding, words, and the ranking of candidates.
public enum PlaceSearch {
  /// Lowercased, without diacritics, spaces collapsed.
  public static func fold(_ text: String) -> String {
    text.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil)
      .split(whereSeparator: \.isWhitespace).joined(separator: " ")
  }

  /// Words with a letter and shorter than this match titles and short titles only (on PostgreSQL through a
  /// trigram index); numbers of any length (the parts of a programme code, "01.03.02") match everywhere.
  public static let shortWordLength = 3

  /// Whether `word` (one of ``words(_:folded:)``) is a short word that matches titles only.
  public static func matchesTitlesOnly(_ word: String) -> Bool {
    word.count < shortWordLength && word.contains(where: \.isLetter)
  }

  /// The query's words (letters and digits), folded unless `folded` is false; every one must match (the API bounds
  /// a query to 200 characters, so to 100 words).
  public static func words(_ text: String, folded: Bool = true) -> [String] {
    (folded ? fold(text) : text).split { !($0.isLetter || $0.isNumber) }.map(String.init)
  }

  /// Folded words (letters and digits) separated by one space: the form titles are compared in.
  public static func normalized(_ text: String) -> String {
    fold(text).split { !($0.isLetter || $0.isNumber) }.joined(separator: " ")
  }

  /// The relevance tier of a match: 0 when a title or short title equals `query` (``normalized(_:)``), 1 when one
  /// starts with it (or one of its words does), 2 otherwise.
  public static func tier(titleKey: String, query: String) -> Int {
    var best = 2
    for line in titleKey.split(separator: "\n") {
      if line == query { return 0 }
      if best == 2 && (line.hasPrefix(query) || line.contains(" " + query)) { best = 1 }
    }
    return best
  }
}

/// The order of a list of places and its keyset cursor, the same on every engine: an engine computes ``keys`` in
/// SQL as ``values(sequence:rating:distance:titleKey:)`` defines them, sorts ascending by them, starts after
/// ``after`` and makes the page and its cursor with ``page(_:limit:)``.
public struct PlacePaging: Sendable, Hashable {
  /// One key of an order.
  public enum Key: Sendable, Hashable {
    /// ``PlaceSearch/tier(titleKey:query:)`` of the query's words: 0, 1 or 2.
    case relevanceTier
    /// The haversine distance from the centre in millimetres, rounded half up; ``missingDistance`` without a
    /// location.
    case distanceMillimetres
    /// Minus the average grade times ``averageScale`` (integer division); minus ``unratedAverage`` when unrated.
    case negatedAverage
    /// Minus the number of reviews.
    case negatedCount
    /// The insertion sequence: the last key of every order.
    case sequence
  }

  /// The scale of an average in ``Key/negatedAverage`` (six decimals).
  public static let averageScale: Int64 = 1_000_000
  /// The average of a place without reviews, below every real one.
  public static let unratedAverage: Int64 = -1
  /// The distance key of a place without a location: after every other.
  public static let missingDistance = Int64.max

  /// The order.
  public let sort: PlaceQuery.Sort
  /// Its keys, compared in this order, ascending.
  public let keys: [Key]
  /// The keys of the previous page's last item (nil: the first page).
  public let after: [Int64]?
  /// The query's words, folded, joined by a space: what the relevance tier compares titles with.
  public let words: String
  /// Where distances are measured from.
  public let center: Coordinate?

  /// The paging of `query`.
  /// - Throws: ``PlaceStoreError`` `.invalidCursor`, `.invalidQuery`.
  public init(_ query: PlaceQuery) throws(PlaceStoreError) {
    let sort = query.effectiveSort
    let words = PlaceSearch.words(query.text ?? "")
    if sort == .distance && query.effectiveCenter == nil {
      throw .invalidQuery("sorting by distance needs a centre (lat, lon)")
    }
    if sort == .relevance && words.isEmpty { throw .invalidQuery("relevance order needs keywords (q)") }
    self.sort = sort
    keys =
      switch sort {
      case .relevance: [.relevanceTier, .sequence]
      case .inserted: [.sequence]
      case .distance: [.distanceMillimetres, .sequence]
      case .rating: [.negatedAverage, .negatedCount, .sequence]
      case .reviews: [.negatedCount, .negatedAverage, .sequence]
      }
    center = query.effectiveCenter
    self.words = words.joined(separator: " ")
    let parts = query.cursor.map { $0.split(separator: ":", omittingEmptySubsequences: false) }
    if let parts {
      let values = parts.dropFirst().compactMap { Int64($0) }
      guard parts.first.map(String.init) == sort.rawValue, values.count == parts.count - 1, values.count == keys.count
      else { throw .invalidCursor }
      after = values
    } else {
      after = nil
    }
  }

  /// The keys' values for a place: the definition of the order, which engines restate in SQL.
  public func values(sequence: Int64, rating: RatingAggregate, distance: Double?, titleKey: String) -> [Int64] {
    let average =
      rating.count == 0 ? Self.unratedAverage : Int64(rating.sum) * Self.averageScale / Int64(rating.count)
    return keys.map { key in
      switch key {
      case .relevanceTier: Int64(PlaceSearch.tier(titleKey: titleKey, query: words))
      case .distanceMillimetres: distance.map { Int64(($0 * 1000).rounded()) } ?? Self.missingDistance
      case .negatedAverage: -average
      case .negatedCount: -Int64(rating.count)
      case .sequence: sequence
      }
    }
  }

  /// One row an engine ranked: the place's sequence, location and the values of ``keys``.
  public struct Row: Sendable, Hashable {
    /// The insertion sequence.
    public var sequence: Int64
    /// Where the place is.
    public var location: Coordinate?
    /// The values of ``PlacePaging/keys``.
    public var keys: [Int64]

    /// A row.
    public init(sequence: Int64, location: Coordinate?, keys: [Int64]) {
      self.sequence = sequence
      self.location = location
      self.keys = keys
    }
  }

  /// The page of the rows an engine read in order (`limit + 1` at most): sequences with their distances from
  /// ``center`` (GeoKit's haversine, what lists report), and the next page's cursor (`<sort>:<key>:…`, the keys of
  /// the page's last row) when there were more rows than `limit`.
  public func page(_ rows: [Row], limit: Int) -> (items: [(seq: Int64, distance: Double?)], nextCursor: String?) {
    let page = rows.prefix(limit)
    let items = page.map { row in
      (row.sequence, center.flatMap { center in row.location.map { center.haversineDistance(to: $0) } })
    }
    guard rows.count > limit, let last = page.last else { return (items, nil) }
    return (items, "\(sort.rawValue):" + last.keys.map(String.init).joined(separator: ":"))
  }
}

extension PlaceAttributeFilter {
  /// The range condition for engines: nil when the filter has none (it then needs no number); otherwise its finite
  /// bounds (nil: open on that side; NaN and infinities that admit every number are no bound) and whether no finite
  /// number can pass.
  public var numberRange: (minimum: Double?, maximum: Double?, matchesNothing: Bool)? {
    guard minimum != nil || maximum != nil else { return nil }
    let lower = minimum.flatMap { $0.isFinite ? $0 : nil }
    let upper = maximum.flatMap { $0.isFinite ? $0 : nil }
    return (lower, upper, minimum == .infinity || maximum == -.infinity)
  }

  /// What ``equals`` matches, by the type of the attribute: a text equal to `text` once both are folded
  /// (``PlaceSearch/fold(_:)``; stored as ``PlaceRecord/attributeTexts``), a flag equal to `flag` (`true` or
  /// `false` in any case), a number equal to `number` (when `equals` reads as a finite one). Nil without `equals`.
  public var equality: (text: String, flag: Bool?, number: Double?)? {
    guard let equals else { return nil }
    let lowered = equals.lowercased()
    return (
      PlaceSearch.fold(equals), lowered == "true" ? true : lowered == "false" ? false : nil,
      Double(equals).flatMap { $0.isFinite ? $0 : nil }
    )
  }
}

extension Place {
  /// Refuses what would change a venue into another kind (its promotions and grants point at it as a venue), or,
  /// for a venue import (`asVenue`), a place of another kind stored under the venue's id.
  /// - Throws: ``PlaceStoreError/invalidPlace(_:_:)``.
  public func checkKind(stored: PlaceKind, asVenue: Bool) throws(PlaceStoreError) {
    if stored == .venue && kind != .venue {
      throw .invalidPlace(id, "it is a venue (promotions may point at it), so its kind stays 'venue'")
    }
    if asVenue && stored != .venue {
      throw .invalidPlace(id, "the id is taken by a place of kind '\(stored.rawValue)', not a venue")
    }
  }
}

extension PlaceListing {
  /// The listing as the API shows it.
  public var item: PlaceItem {
    PlaceItem(
      place: record.place, shortTitle: record.shortTitle, attributes: record.attributes, rating: rating.subtree,
      ownRating: rating.own, favourites: favourites, children: children, distance: distance)
  }
}
