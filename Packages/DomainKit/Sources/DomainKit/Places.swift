import Foundation
import GeoKit

/// Text in several languages (BCP 47 codes such as `en`, `ru`, `uk`). Encodes as a JSON object `{"en": "…"}`.
/// Adding a translation keeps every other one.
public struct LocalizedText: Sendable, Hashable, Codable {
  /// Text per language code.
  public private(set) var values: [String: String]

  /// Localized text from a dictionary.
  public init(_ values: [String: String] = [:]) { self.values = values }

  /// Sets (adds or replaces) the text for `language`, keeping the others.
  public mutating func set(_ text: String, for language: String) { values[language] = text }

  /// The text for the first of `languages` present, else English, else any (sorted by code, for stability).
  public func resolved(for languages: [String]) -> String? {
    for language in languages {
      if let text = values[language] { return text }
      if let base = language.split(separator: "-").first, let text = values[String(base)] { return text }
    }
    return values["en"] ?? values.keys.sorted().first.flatMap { values[$0] }
  }

  /// Decodes an object from language code to text.
  public init(from decoder: any Decoder) throws {
    values = try decoder.singleValueContainer().decode([String: String].self)
  }

  /// Encodes an object from language code to text.
  public func encode(to encoder: any Encoder) throws {
    var c = encoder.singleValueContainer()
    try c.encode(values)
  }
}

/// The level of a place in the directory or the administrative hierarchy. Open set: any string.
public struct PlaceKind: RawRepresentable, Sendable, Hashable, Codable, ExpressibleByStringLiteral {
  /// The wire name.
  public var rawValue: String
  /// A kind.
  public init(rawValue: String) { self.rawValue = rawValue }
  /// A kind from a literal.
  public init(stringLiteral value: String) { rawValue = value }
  /// Decodes the bare wire name.
  public init(from decoder: any Decoder) throws { rawValue = try decoder.singleValueContainer().decode(String.self) }
  /// Encodes the bare wire name.
  public func encode(to encoder: any Encoder) throws {
    var c = encoder.singleValueContainer()
    try c.encode(rawValue)
  }

  /// A country (administrative level 1).
  public static let country: PlaceKind = "country"
  /// A region/state.
  public static let region: PlaceKind = "region"
  /// A district.
  public static let district: PlaceKind = "district"
  /// A city, town or village.
  public static let locality: PlaceKind = "locality"
  /// A university.
  public static let university: PlaceKind = "university"
  /// A faculty of a university.
  public static let faculty: PlaceKind = "faculty"
  /// A specialty within a faculty.
  public static let specialty: PlaceKind = "specialty"
  /// A study programme within a specialty.
  public static let programme: PlaceKind = "programme"
  /// A venue (café, restaurant, shop…); see ``Place/venueType``.
  public static let venue: PlaceKind = "venue"
}

/// Why a ``Place`` was rejected.
public enum PlaceError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The time zone is not a known IANA identifier (such as `Europe/Kyiv`).
  case unknownTimeZone(String)

  /// A sentence for the person editing the place.
  public var description: String {
    switch self {
    case .unknownTimeZone(let identifier):
      "\(QuotedValue.quote(identifier)) is not a known time zone (use one like Europe/Kyiv)."
    }
  }
}

/// A place of the directory or a venue. Wire names: `id`, `parentId`, `kind`, `name` (localized),
/// `description` (localized), `address`, `location` (`{"lat","lon"}`), `city`, `site`, `phone`, `email`,
/// `venueType`, `logoUrl`, `timeZone` (IANA id), `keywords`.
public struct Place: Sendable, Hashable, Codable, Identifiable {
  /// The place id.
  public var id: PlaceID
  /// The parent in the hierarchy (university for a faculty, …).
  public var parentID: PlaceID?
  /// The level.
  public var kind: PlaceKind
  /// Localized name.
  public var name: LocalizedText
  /// Localized description.
  public var description: LocalizedText
  /// Postal address.
  public var address: String?
  /// Position.
  public var location: Coordinate?
  /// City used by "list by city".
  public var city: String?
  /// Web site.
  public var site: String?
  /// Contact phone.
  public var phone: String?
  /// Contact email.
  public var email: String?
  /// Café, restaurant, … for venues.
  public var venueType: String?
  /// Logo image URL.
  public var logoURL: String?
  /// IANA time zone of the place (for promotion windows and day counting); UTC when absent. Always a known
  /// identifier: set it with ``setTimeZone(_:)``.
  public private(set) var timeZone: String?
  /// Search keywords.
  public var keywords: [String]

  /// A place.
  /// - Throws: ``PlaceError/unknownTimeZone(_:)`` when `timeZone` is not a known IANA identifier.
  public init(
    id: PlaceID, parentID: PlaceID? = nil, kind: PlaceKind, name: LocalizedText,
    description: LocalizedText = LocalizedText(), address: String? = nil, location: Coordinate? = nil,
    city: String? = nil, site: String? = nil, phone: String? = nil, email: String? = nil, venueType: String? = nil,
    logoURL: String? = nil, timeZone: String? = nil, keywords: [String] = []
  ) throws(PlaceError) {
    try Self.checkTimeZone(timeZone)
    self.id = id
    self.parentID = parentID
    self.kind = kind
    self.name = name
    self.description = description
    self.address = address
    self.location = location
    self.city = city
    self.site = site
    self.phone = phone
    self.email = email
    self.venueType = venueType
    self.logoURL = logoURL
    self.timeZone = timeZone
    self.keywords = keywords
  }

  /// The place's time zone (UTC when absent; an identifier is checked when it is set, so it always resolves).
  public var resolvedTimeZone: TimeZone { timeZone.flatMap(TimeZone.init(identifier:)) ?? .gmt }

  /// Sets the IANA time zone (nil for UTC).
  /// - Throws: ``PlaceError/unknownTimeZone(_:)`` for an unknown identifier (the place is unchanged).
  public mutating func setTimeZone(_ identifier: String?) throws(PlaceError) {
    try Self.checkTimeZone(identifier)
    timeZone = identifier
  }

  static func checkTimeZone(_ identifier: String?) throws(PlaceError) {
    guard let identifier else { return }
    guard TimeZone(identifier: identifier) != nil else { throw .unknownTimeZone(identifier) }
  }

  /// Whether `query` (case- and diacritic-insensitive) occurs in any name or keyword.
  public func matches(query: String) -> Bool {
    let needle = query.trimmingCharacters(in: .whitespaces)
    guard !needle.isEmpty else { return true }
    let haystack = Array(name.values.values) + keywords
    return haystack.contains { $0.range(of: needle, options: [.caseInsensitive, .diacriticInsensitive]) != nil }
  }

  private enum CodingKeys: String, CodingKey {
    case id
    case parentID = "parentId"
    case kind, name, description, address, location, city, site, phone, email, venueType
    case logoURL = "logoUrl"
    case timeZone, keywords
  }

  /// Decodes the documented wire names; an unknown `timeZone` is a `dataCorrupted` error naming it.
  public init(from decoder: any Decoder) throws {
    let c = try decoder.container(keyedBy: CodingKeys.self)
    id = try c.decode(PlaceID.self, forKey: .id)
    parentID = try c.decodeIfPresent(PlaceID.self, forKey: .parentID)
    kind = try c.decode(PlaceKind.self, forKey: .kind)
    name = try c.decode(LocalizedText.self, forKey: .name)
    description = try c.decodeIfPresent(LocalizedText.self, forKey: .description) ?? LocalizedText()
    address = try c.decodeIfPresent(String.self, forKey: .address)
    location = try c.decodeIfPresent(Coordinate.self, forKey: .location)
    city = try c.decodeIfPresent(String.self, forKey: .city)
    site = try c.decodeIfPresent(String.self, forKey: .site)
    phone = try c.decodeIfPresent(String.self, forKey: .phone)
    email = try c.decodeIfPresent(String.self, forKey: .email)
    venueType = try c.decodeIfPresent(String.self, forKey: .venueType)
    logoURL = try c.decodeIfPresent(String.self, forKey: .logoURL)
    timeZone = try c.decodeIfPresent(String.self, forKey: .timeZone)
    do {
      try Self.checkTimeZone(timeZone)
    } catch {
      throw DecodingError.dataCorruptedError(forKey: .timeZone, in: c, debugDescription: "timeZone: \(error)")
    }
    keywords = try c.decodeIfPresent([String].self, forKey: .keywords) ?? []
  }
}

/// Why a review can't be made.
public enum ReviewError: Error, Sendable, Hashable, CustomStringConvertible {
  /// `grade` or `grades.<criterion>` is outside 1…5.
  case gradeOutOfRange(field: String, value: Int)
  /// The text or a criterion's name breaks its ``UserText`` rule (`field` is `text` or `grades`).
  case invalidText(field: String, UserText.Problem)
  /// More criteria than ``Review/maximumCriteria``.
  case tooManyCriteria

  /// What is wrong, naming the field.
  public var description: String {
    switch self {
    case .gradeOutOfRange(let field, let value): "\(field) is \(value), outside 1…5."
    case .invalidText(let field, let problem): problem.message(field: field)
    case .tooManyCriteria: "'grades' can have at most \(Review.maximumCriteria) criteria."
    }
  }
}

/// A review of a place. Wire names: `id`, `placeId`, `authorId`, `grade` (1…5), `grades` (per criterion, 1…5),
/// `text`, `createdAt`.
public struct Review: Sendable, Hashable, Codable, Identifiable {
  /// The review id.
  public var id: ReviewID
  /// The reviewed place.
  public var placeID: PlaceID
  /// The author.
  public var authorID: UserID
  /// Overall grade, 1…5.
  public var grade: Int
  /// Grades per criterion (e.g. `teaching`, `facilities`), 1…5.
  public var grades: [String: Int]
  /// Text.
  public var text: String
  /// UTC ms.
  public var createdAt: Int64

  /// The longest review text accepted, in characters.
  public static let maximumTextLength = 2_000
  /// The rule of a review's text (empty allowed).
  public static let textRule = UserText.multiLine(maximumLength: maximumTextLength)
  /// The most criteria one review grades.
  public static let maximumCriteria = 20
  /// The rule of a criterion's name.
  public static let criterionRule = UserText.singleLine(maximumLength: 64)

  /// A review, its text trimmed.
  /// - Throws: ``ReviewError`` naming `grade`, `grades.<criterion>`, `grades` or `text`.
  public init(
    id: ReviewID, placeID: PlaceID, authorID: UserID, grade: Int, grades: [String: Int] = [:], text: String = "",
    createdAt: Int64
  ) throws(ReviewError) {
    guard (1...5).contains(grade) else { throw .gradeOutOfRange(field: "grade", value: grade) }
    guard grades.count <= Self.maximumCriteria else { throw .tooManyCriteria }
    for (criterion, value) in grades.sorted(by: { $0.key < $1.key }) {
      do {
        _ = try Self.criterionRule.validated(criterion)
      } catch {
        throw .invalidText(field: "grades", error)
      }
      // A criterion passed the rule above: it is at most 64 characters and has no control characters.
      guard (1...5).contains(value) else { throw .gradeOutOfRange(field: "grades.\(criterion)", value: value) }
    }
    do {
      self.text = try Self.textRule.validated(text)
    } catch {
      throw .invalidText(field: "text", error)
    }
    self.id = id
    self.placeID = placeID
    self.authorID = authorID
    self.grade = grade
    self.grades = grades
    self.createdAt = createdAt
  }

  /// A review as a store read it back, not checked again: the rules hold for what is written.
  public init(
    stored id: ReviewID, placeID: PlaceID, authorID: UserID, grade: Int, grades: [String: Int], text: String,
    createdAt: Int64
  ) {
    self.id = id
    self.placeID = placeID
    self.authorID = authorID
    self.grade = grade
    self.grades = grades
    self.text = text
    self.createdAt = createdAt
  }

  private enum CodingKeys: String, CodingKey {
    case id
    case placeID = "placeId"
    case authorID = "authorId"
    case grade, grades, text, createdAt
  }

  /// Decodes a review with the same validation as
  /// ``init(id:placeID:authorID:grade:grades:text:createdAt:)`` (every grade 1…5, every text by its rule).
  /// - Throws: `DecodingError.dataCorrupted` naming `grade`, `grades` or `text`.
  public init(from decoder: any Decoder) throws {
    let c = try decoder.container(keyedBy: CodingKeys.self)
    do {
      try self.init(
        id: c.decode(ReviewID.self, forKey: .id), placeID: c.decode(PlaceID.self, forKey: .placeID),
        authorID: c.decode(UserID.self, forKey: .authorID), grade: c.decode(Int.self, forKey: .grade),
        grades: c.decodeIfPresent([String: Int].self, forKey: .grades) ?? [:],
        text: c.decodeIfPresent(String.self, forKey: .text) ?? "", createdAt: c.decode(Int64.self, forKey: .createdAt))
    } catch let error as ReviewError {
      let key: CodingKeys =
        switch error {
        case .gradeOutOfRange(field: "grade", _): .grade
        case .invalidText(field: "text", _): .text
        default: .grades
        }
      throw DecodingError.dataCorruptedError(forKey: key, in: c, debugDescription: error.description)
    }
  }
}

/// The rating of a place: the sum and count of grades, so that levels aggregate exactly (never an average of
/// averages). Wire names: `sum`, `count`, `average` (absent when there are no reviews).
public struct RatingAggregate: Sendable, Hashable, Codable {
  /// Sum of grades.
  public var sum: Int
  /// Number of reviews.
  public var count: Int

  /// An aggregate.
  public init(sum: Int = 0, count: Int = 0) {
    self.sum = sum
    self.count = count
  }

  /// The mean grade, or nil when there are no reviews.
  public var average: Double? { count == 0 ? nil : Double(sum) / Double(count) }

  /// The two aggregates combined.
  public static func + (lhs: Self, rhs: Self) -> Self { Self(sum: lhs.sum + rhs.sum, count: lhs.count + rhs.count) }

  private enum CodingKeys: String, CodingKey { case sum, count, average }

  /// Decodes `sum` and `count` (`average` is derived, so it is ignored).
  public init(from decoder: any Decoder) throws {
    let c = try decoder.container(keyedBy: CodingKeys.self)
    sum = try c.decode(Int.self, forKey: .sum)
    count = try c.decode(Int.self, forKey: .count)
  }

  /// Encodes `sum`, `count` and, when there are reviews, `average`.
  public func encode(to encoder: any Encoder) throws {
    var c = encoder.container(keyedBy: CodingKeys.self)
    try c.encode(sum, forKey: .sum)
    try c.encode(count, forKey: .count)
    try c.encodeIfPresent(average, forKey: .average)
  }
}

/// Rating aggregation, sorting and paging of places.
public enum PlaceDirectory {
  /// The rating of every place: its own reviews plus all its descendants' reviews (sum and count).
  /// Places in a parent cycle are aggregated once (cycles are broken, never looped).
  public static func aggregateRatings(places: [Place], reviews: [Review]) -> [PlaceID: RatingAggregate] {
    var own: [PlaceID: RatingAggregate] = [:]
    for review in reviews {
      own[review.placeID, default: RatingAggregate()] =
        own[review.placeID, default: .init()] + RatingAggregate(sum: review.grade, count: 1)
    }
    let parent = Dictionary(places.map { ($0.id, $0.parentID) }, uniquingKeysWith: { first, _ in first })
    var result: [PlaceID: RatingAggregate] = [:]
    for place in places { result[place.id] = RatingAggregate() }
    for (placeID, aggregate) in own {
      var current: PlaceID? = placeID
      var visited: Set<PlaceID> = []
      while let id = current, !visited.contains(id) {
        visited.insert(id)
        result[id, default: RatingAggregate()] = result[id, default: .init()] + aggregate
        current = parent[id] ?? nil
      }
    }
    return result
  }

  /// How a list of venues is ordered (`/v1/venues`; the store ranks it with the places query's orders of the same
  /// names).
  public enum SortOrder: String, Sendable, Hashable, Codable, CaseIterable {
    /// Nearest first (places without a location last).
    case distance
    /// Highest average first (unrated last), then more reviews first.
    case rating
    /// Most reviews first, then higher average.
    case reviews
  }
}

/// A page request: 1-based page number and page size (default 10, at most 100). Wire names: `page`, `pageSize`.
public struct PageRequest: Sendable, Hashable, Codable {
  /// The default page size.
  public static let defaultPageSize = 10
  /// The largest page size accepted.
  public static let maximumPageSize = 100

  /// 1-based page number.
  public var page: Int
  /// Items per page.
  public var pageSize: Int

  /// The largest page number accepted (so that ``offset`` always fits in an `Int`).
  public static let maximumPage = Int.max / maximumPageSize

  /// A request; out-of-range values are clamped (page 1…``maximumPage``, size 1…100).
  public init(page: Int = 1, pageSize: Int = PageRequest.defaultPageSize) {
    self.page = min(max(1, page), Self.maximumPage)
    self.pageSize = min(max(1, pageSize), Self.maximumPageSize)
  }

  /// The index of the first item (0 for a page below 1; saturates instead of overflowing).
  public var offset: Int {
    let (value, overflow) = (max(1, page) - 1).multipliedReportingOverflow(by: max(1, pageSize))
    return overflow ? Int.max : value
  }

  private enum CodingKeys: String, CodingKey { case page, pageSize }

  /// Decodes `page` and `pageSize` (both optional) and clamps them like ``init(page:pageSize:)``, so a request
  /// from a client can never ask for page 0, a negative size or an offset that overflows.
  public init(from decoder: any Decoder) throws {
    let c = try decoder.container(keyedBy: CodingKeys.self)
    self.init(
      page: try c.decodeIfPresent(Int.self, forKey: .page) ?? 1,
      pageSize: try c.decodeIfPresent(Int.self, forKey: .pageSize) ?? Self.defaultPageSize)
  }
}

/// One page of results. Wire names: `items`, `page`, `pageSize`, `total`, `hasMore`.
public struct Page<Item: Sendable & Hashable & Codable>: Sendable, Hashable, Codable {
  /// The items of this page.
  public var items: [Item]
  /// 1-based page number.
  public var page: Int
  /// Requested page size.
  public var pageSize: Int
  /// Items in all pages.
  public var total: Int
  /// Whether a next page exists.
  public var hasMore: Bool

  /// The page of `all` that `request` asks for (empty past the end). The request is clamped again (page ≥ 1,
  /// size 1…100), since its properties may have been set to anything after construction.
  public init(_ all: [Item], request: PageRequest) {
    let request = PageRequest(page: request.page, pageSize: request.pageSize)
    let start = min(request.offset, all.count)
    let end = start + min(request.pageSize, all.count - start)
    items = Array(all[start..<end])
    page = request.page
    pageSize = request.pageSize
    total = all.count
    hasMore = end < all.count
  }
}

/// A user's favourite place. Wire names: `userId`, `placeId`, `createdAt`.
public struct Favourite: Sendable, Hashable, Codable {
  /// The user.
  public var userID: UserID
  /// The place.
  public var placeID: PlaceID
  /// UTC ms.
  public var createdAt: Int64

  /// A favourite.
  public init(userID: UserID, placeID: PlaceID, createdAt: Int64) {
    self.userID = userID
    self.placeID = placeID
    self.createdAt = createdAt
  }

  private enum CodingKeys: String, CodingKey {
    case userID = "userId"
    case placeID = "placeId"
    case createdAt
  }
}

/// A news item of a place (or of all places when `placeId` is absent). Wire names: `id`, `placeId`, `title`,
/// `body` (localized), `imageUrl` (absent when none), `publishedAt`.
public struct NewsItem: Sendable, Hashable, Codable, Identifiable {
  /// The id.
  public var id: NewsID
  /// The place it belongs to; nil for directory-wide news.
  public var placeID: PlaceID?
  /// Localized title.
  public var title: LocalizedText
  /// Localized body.
  public var body: LocalizedText
  /// The image's URL (an uploaded blob's), if any.
  public var imageURL: String?
  /// UTC ms.
  public var publishedAt: Int64

  /// A news item.
  public init(
    id: NewsID, placeID: PlaceID?, title: LocalizedText, body: LocalizedText, imageURL: String? = nil,
    publishedAt: Int64
  ) {
    self.id = id
    self.placeID = placeID
    self.title = title
    self.body = body
    self.imageURL = imageURL
    self.publishedAt = publishedAt
  }

  private enum CodingKeys: String, CodingKey {
    case id
    case placeID = "placeId"
    case title, body
    case imageURL = "imageUrl"
    case publishedAt
  }

  /// News for a feed: all places' news when `selected` is nil, otherwise directory-wide news plus news of the
  /// selected places; newest first.
  public static func feed(_ items: [NewsItem], selected: Set<PlaceID>?) -> [NewsItem] {
    items.filter { item in
      guard let selected, let place = item.placeID else { return true }
      return selected.contains(place)
    }
    .sorted { $0.publishedAt != $1.publishedAt ? $0.publishedAt > $1.publishedAt : $0.id > $1.id }
  }
}
