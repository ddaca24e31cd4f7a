import DomainKit
import Foundation
import GeoKit
import NetworkingKit

extension API {
  // MARK: Places directory

  /// `GET /v1/places?q=&kind=&city=&lat=&lon=&radius=&bbox=&sort=&cursor=&limit=&max.<attribute>=…`: places found
  /// by keywords (every word a prefix, any language), near a centre or in a box, filtered by kind, city and
  /// attribute ranges; sorted by relevance, insertion, distance, rating or reviews; keyset-paged (10 by default).
  public static let places = Endpoint<PlacesParameters, NoBody, PlaceList>(
    .get, "/v1/places", query: { $0.queryItems }, authentication: .none)
  /// `GET /v1/places/{id}`: the place with its ratings, favourite count and ancestors (breadcrumbs, root first).
  public static let place = Endpoint<PlaceRef, NoBody, PlaceDetail>(
    .get, "/v1/places/\(\.id, "id")", authentication: .none)
  /// `GET /v1/places/{id}/children?sort=&cursor=&limit=`: the place's children, with the same filters and orders.
  public static let placeChildren = Endpoint<PlaceChildrenParameters, NoBody, PlaceList>(
    .get, "/v1/places/\(\.id, "id")/children", query: { $0.list.queryItems }, authentication: .none)
  /// `GET /v1/places/{id}/reviews?cursor=&limit=`: the place's visible reviews, newest first.
  public static let placeReviews = Endpoint<PlacePageParameters, NoBody, ReviewList>(
    .get, "/v1/places/\(\.id, "id")/reviews", query: { $0.queryItems }, authentication: .none)
  /// `PUT /v1/places/{id}/reviews/me {grade, grades?, text?}` → the caller's review of the place, new or edited
  /// (one per person and place; grade 1…5, text ≤ 2,000 characters, else 422 `invalid_review`).
  public static let saveReview = Endpoint<PlaceRef, NewReview, Review>(.put, "/v1/places/\(\.id, "id")/reviews/me")
  /// `DELETE /v1/places/{id}/reviews/me` → 204: the caller's review goes, and every level's rating with it.
  public static let deleteReview = Endpoint<PlaceRef, NoBody, NoContent>(
    .delete, "/v1/places/\(\.id, "id")/reviews/me", body: .none, response: .empty)
  /// `GET /v1/me/favourites?cursor=&limit=`: the caller's favourites, most recently added first, with ratings.
  public static let favourites = Endpoint<PagingParameters, NoBody, PlaceList>(
    .get, "/v1/me/favourites", query: { $0.queryItems })
  /// `PUT /v1/me/favourites/{placeId}` → 204 (again: still 204).
  public static let addFavourite = Endpoint<FavouriteRef, NoBody, NoContent>(
    .put, "/v1/me/favourites/\(\.placeID, "placeId")", body: .none, response: .empty)
  /// `DELETE /v1/me/favourites/{placeId}` → 204, or 404 when it wasn't one.
  public static let removeFavourite = Endpoint<FavouriteRef, NoBody, NoContent>(
    .delete, "/v1/me/favourites/\(\.placeID, "placeId")", body: .none, response: .empty)
  /// `GET /v1/news?place=&scope=favourites&cursor=&limit=`: news newest first: all, one place's subtree, or the
  /// caller's favourites' (directory-wide items always).
  public static let news = Endpoint<NewsParameters, NoBody, NewsList>(.get, "/v1/news", query: { $0.queryItems })
}

/// A typed attribute of a place (a programme's passing score, seats, tuition, form of study). Encodes as the bare
/// JSON value.
public enum PlaceAttribute: Sendable, Hashable, Codable {
  /// A number (score, seats, tuition).
  case number(Double)
  /// Text (form of study: `full-time`, …).
  case text(String)
  /// Yes or no.
  case flag(Bool)

  /// Decodes a number, a string or a boolean.
  public init(from decoder: any Decoder) throws {
    let c = try decoder.singleValueContainer()
    if let flag = try? c.decode(Bool.self) {
      self = .flag(flag)
    } else if let number = try? c.decode(Double.self) {
      self = .number(number)
    } else {
      self = .text(try c.decode(String.self))
    }
  }

  /// Encodes the bare value.
  public func encode(to encoder: any Encoder) throws {
    var c = encoder.singleValueContainer()
    switch self {
    case .number(let value): try c.encode(value)
    case .text(let value): try c.encode(value)
    case .flag(let value): try c.encode(value)
    }
  }

  /// The number, for range filters.
  public var number: Double? {
    if case .number(let value) = self { return value }
    return nil
  }
}

extension PlaceAttribute: CustomStringConvertible {
  /// The bare value: `240`, `2.5`, `full-time`, `true`.
  public var description: String {
    switch self {
    case .number(let value):
      value.rounded() == value && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    case .text(let value): value
    case .flag(let value): String(value)
    }
  }
}

/// An ancestor in a breadcrumb trail. Wire names: `id`, `kind`, `title`, `shortTitle`.
public struct PlaceCrumb: Sendable, Hashable, Codable {
  /// The ancestor.
  public var id: PlaceID
  /// Its kind.
  public var kind: PlaceKind
  /// Its title.
  public var title: LocalizedText
  /// Its short title.
  public var shortTitle: LocalizedText

  /// A crumb.
  public init(id: PlaceID, kind: PlaceKind, title: LocalizedText, shortTitle: LocalizedText = LocalizedText()) {
    self.id = id
    self.kind = kind
    self.title = title
    self.shortTitle = shortTitle
  }
}

/// A place in a list. Wire names: `place` (DomainKit's `Place`: its `name` is the title), `shortTitle`,
/// `attributes`, `rating` (the subtree's: what every level shows), `ownRating`, `favourites`, `children`,
/// `distance` (metres, with a centre).
public struct PlaceItem: Sendable, Hashable, Codable {
  /// The place.
  public var place: Place
  /// Localized short title.
  public var shortTitle: LocalizedText
  /// Typed attributes.
  public var attributes: [String: PlaceAttribute]
  /// The place's and its descendants' reviews.
  public var rating: RatingAggregate
  /// The place's own reviews.
  public var ownRating: RatingAggregate
  /// How many people keep it among their favourites.
  public var favourites: Int
  /// How many children it has.
  public var children: Int
  /// Metres from the query's centre.
  public var distance: Double?

  /// An item.
  public init(
    place: Place, shortTitle: LocalizedText, attributes: [String: PlaceAttribute], rating: RatingAggregate,
    ownRating: RatingAggregate, favourites: Int, children: Int, distance: Double?
  ) {
    self.place = place
    self.shortTitle = shortTitle
    self.attributes = attributes
    self.rating = rating
    self.ownRating = ownRating
    self.favourites = favourites
    self.children = children
    self.distance = distance
  }
}

/// A page of places. Wire names: `items`, `nextCursor` (absent on the last page).
public struct PlaceList: Sendable, Hashable, Codable {
  /// The places.
  public var items: [PlaceItem]
  /// The next page's cursor.
  public var nextCursor: String?
  /// A page.
  public init(items: [PlaceItem], nextCursor: String?) {
    self.items = items
    self.nextCursor = nextCursor
  }
}

/// One place with its ancestors. Wire names: `item`, `ancestors` (root first).
public struct PlaceDetail: Sendable, Hashable, Codable {
  /// The place.
  public var item: PlaceItem
  /// Its ancestors, root first.
  public var ancestors: [PlaceCrumb]
  /// Details.
  public init(item: PlaceItem, ancestors: [PlaceCrumb]) {
    self.item = item
    self.ancestors = ancestors
  }
}

/// A page of reviews. Wire names: `items`, `nextCursor`.
public struct ReviewList: Sendable, Hashable, Codable {
  /// The reviews, newest first.
  public var items: [Review]
  /// The next page's cursor.
  public var nextCursor: String?
  /// A page.
  public init(items: [Review], nextCursor: String?) {
    self.items = items
    self.nextCursor = nextCursor
  }
}

/// A page of news. Wire names: `items`, `nextCursor`.
public struct NewsList: Sendable, Hashable, Codable {
  /// The items, newest first.
  public var items: [NewsItem]
  /// The next page's cursor.
  public var nextCursor: String?
  /// A page.
  public init(items: [NewsItem], nextCursor: String?) {
    self.items = items
    self.nextCursor = nextCursor
  }
}

/// `PUT /v1/places/{id}/reviews/me` body.
public struct NewReview: Sendable, Hashable, Codable {
  /// 1…5.
  public var grade: Int
  /// Per criterion, 1…5.
  public var grades: [String: Int]?
  /// At most 2,000 characters.
  public var text: String?
  /// A review.
  public init(grade: Int, grades: [String: Int]? = nil, text: String? = nil) {
    self.grade = grade
    self.grades = grades
    self.text = text
  }
}

/// A place in the path.
public struct PlaceRef: RouteParameters, Hashable {
  /// The place.
  public var id: PlaceID
  /// A reference.
  public init(id: PlaceID) { self.id = id }
  /// Reads `id`.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    id = PlaceID(try path.required("id"))
  }
}

/// A favourite in the path.
public struct FavouriteRef: RouteParameters, Hashable {
  /// The place.
  public var placeID: PlaceID
  /// A reference.
  public init(placeID: PlaceID) { self.placeID = placeID }
  /// Reads `placeId`.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    placeID = PlaceID(try path.required("placeId"))
  }
}

/// `cursor` and `limit` (1…100, 10 by default).
public struct PagingParameters: RouteParameters, Hashable {
  /// The previous page's `nextCursor`.
  public var cursor: String?
  /// Page size.
  public var limit: Int
  /// Parameters.
  public init(cursor: String? = nil, limit: Int = 10) {
    self.cursor = cursor
    self.limit = limit
  }
  /// Reads `cursor` and `limit`.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    cursor = query.string("cursor")
    let limit = try query.int64("limit") ?? 10
    guard (1...100).contains(limit) else { throw .invalidRequest("'limit' must be between 1 and 100.") }
    self.limit = Int(limit)
  }
  var queryItems: [QueryItem] { [QueryItem("limit", limit)] + (cursor.map { [QueryItem("cursor", $0)] } ?? []) }
}

/// A place in the path, with paging.
public struct PlacePageParameters: RouteParameters, Hashable {
  /// The place.
  public var id: PlaceID
  /// Paging.
  public var paging: PagingParameters
  /// Parameters.
  public init(id: PlaceID, paging: PagingParameters = PagingParameters()) {
    self.id = id
    self.paging = paging
  }
  /// Reads `id`, `cursor` and `limit`.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    id = PlaceID(try path.required("id"))
    paging = try PagingParameters(path: path, query: query)
  }
  var queryItems: [QueryItem] { paging.queryItems }
}

/// `GET /v1/news` parameters.
public struct NewsParameters: RouteParameters, Hashable {
  /// Only this place's subtree (and directory-wide items).
  public var place: PlaceID?
  /// `favourites`: only the caller's favourites' subtrees (and directory-wide items); needs a signed-in caller.
  public var favourites: Bool
  /// Paging.
  public var paging: PagingParameters
  /// Parameters.
  public init(place: PlaceID? = nil, favourites: Bool = false, paging: PagingParameters = PagingParameters()) {
    self.place = place
    self.favourites = favourites
    self.paging = paging
  }
  /// Reads `place`, `scope` (`all` or `favourites`), `cursor` and `limit`.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    place = query.string("place").map { PlaceID($0) }
    let scope = query.string("scope") ?? "all"
    guard ["all", "favourites"].contains(scope) else {
      throw .invalidRequest("'scope' must be 'all' or 'favourites', not '\(echo(scope))'.")
    }
    favourites = scope == "favourites"
    if favourites && place != nil { throw .invalidRequest("Give 'place' or 'scope=favourites', not both.") }
    paging = try PagingParameters(path: path, query: query)
  }
  var queryItems: [QueryItem] {
    var items = paging.queryItems
    if let place { items.append(QueryItem("place", place.rawValue)) }
    if favourites { items.append(QueryItem("scope", "favourites")) }
    return items
  }
}

/// A place in the path, and the list's parameters.
public struct PlaceChildrenParameters: RouteParameters, Hashable {
  /// The parent.
  public var id: PlaceID
  /// Filters, order and paging.
  public var list: PlacesParameters
  /// Parameters.
  public init(id: PlaceID, list: PlacesParameters = PlacesParameters()) {
    self.id = id
    self.list = list
  }
  /// Reads `id` and the list's parameters.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    id = PlaceID(try path.required("id"))
    list = try PlacesParameters(path: path, query: query)
  }
}

/// A condition on a place's attribute: a number in a range (`min.<name>`, `max.<name>`), or equal text
/// (`eq.<name>`, case- and diacritic-insensitive).
public struct PlaceAttributeFilter: Sendable, Hashable {
  /// The attribute's name.
  public var name: String
  /// The smallest number accepted.
  public var minimum: Double?
  /// The largest number accepted.
  public var maximum: Double?
  /// The text (or `true`/`false`) it must equal.
  public var equals: String?

  /// A filter.
  public init(name: String, minimum: Double? = nil, maximum: Double? = nil, equals: String? = nil) {
    self.name = name
    self.minimum = minimum
    self.maximum = maximum
    self.equals = equals
  }
}

/// `GET /v1/places` parameters.
public struct PlacesParameters: RouteParameters, Hashable {
  /// Keywords.
  public var q: String?
  /// Kinds (any of them).
  public var kinds: [String]
  /// City.
  public var city: String?
  /// `roots` for top-level places only.
  public var rootsOnly: Bool
  /// Centre (with `radius`: a circle; alone: distances and the distance order).
  public var center: Coordinate?
  /// Metres around `center`.
  public var radius: Double?
  /// `south,west,north,east`.
  public var box: [Double]?
  /// `relevance`, `inserted`, `distance`, `rating` or `reviews`.
  public var sort: String?
  /// Attribute conditions.
  public var attributes: [PlaceAttributeFilter]
  /// Paging.
  public var paging: PagingParameters

  /// The orders accepted.
  public static let sorts = ["relevance", "inserted", "distance", "rating", "reviews"]

  /// Parameters.
  public init(
    q: String? = nil, kinds: [String] = [], city: String? = nil, rootsOnly: Bool = false, center: Coordinate? = nil,
    radius: Double? = nil, box: [Double]? = nil, sort: String? = nil, attributes: [PlaceAttributeFilter] = [],
    paging: PagingParameters = PagingParameters()
  ) {
    self.q = q
    self.kinds = kinds
    self.city = city
    self.rootsOnly = rootsOnly
    self.center = center
    self.radius = radius
    self.box = box
    self.sort = sort
    self.attributes = attributes
    self.paging = paging
  }

  /// Reads the parameters; every malformed one is a 400 naming it.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    q = query.string("q")
    if let q, q.count > 200 { throw .invalidRequest("'q' must be at most 200 characters.") }
    kinds = (query.string("kind") ?? "").split(separator: ",").map(String.init)
    city = query.string("city")
    rootsOnly = query.string("parent") == "none"
    center = try query.coordinate()
    radius = try query.double("radius")
    if let radius {
      guard center != nil else { throw .invalidRequest("'radius' needs 'lat' and 'lon'.") }
      guard radius > 0, radius <= 500_000 else { throw .invalidRequest("'radius' must be in (0, 500000] metres.") }
    }
    box = try query.boundingBox("bbox").map { [$0.south, $0.west, $0.north, $0.east] }
    sort = query.string("sort")
    if let sort, !Self.sorts.contains(sort) {
      throw .invalidRequest("'sort' must be one of \(Self.sorts.joined(separator: ", ")), not '\(echo(sort))'.")
    }
    var conditions: [String: PlaceAttributeFilter] = [:]
    for (key, values) in query.sorted(by: { $0.key < $1.key }) {
      guard let value = values.last, let dot = key.firstIndex(of: "."), ["min", "max", "eq"].contains(key[..<dot])
      else { continue }
      let name = String(key[key.index(after: dot)...])
      var condition = conditions[name] ?? PlaceAttributeFilter(name: name)
      if key.hasPrefix("eq.") {
        condition.equals = value
      } else {
        guard let number = Double(value), number.isFinite else {
          throw .invalidRequest("'\(echo(key))' must be a number, not '\(echo(value))'.")
        }
        if key.hasPrefix("min.") { condition.minimum = number } else { condition.maximum = number }
      }
      conditions[name] = condition
    }
    attributes = conditions.keys.sorted().compactMap { conditions[$0] }
    paging = try PagingParameters(path: path, query: query)
  }

  var queryItems: [QueryItem] {
    var items = paging.queryItems
    if let q { items.append(QueryItem("q", q)) }
    if !kinds.isEmpty { items.append(QueryItem("kind", kinds.joined(separator: ","))) }
    if let city { items.append(QueryItem("city", city)) }
    if rootsOnly { items.append(QueryItem("parent", "none")) }
    if let center {
      items += [QueryItem("lat", center.latitude), QueryItem("lon", center.longitude)]
    }
    if let radius { items.append(QueryItem("radius", radius)) }
    if let box { items.append(QueryItem("bbox", box.map { "\($0)" }.joined(separator: ","))) }
    if let sort { items.append(QueryItem("sort", sort)) }
    for condition in attributes {
      if let minimum = condition.minimum { items.append(QueryItem("min.\(condition.name)", minimum)) }
      if let maximum = condition.maximum { items.append(QueryItem("max.\(condition.name)", maximum)) }
      if let equals = condition.equals { items.append(QueryItem("eq.\(condition.name)", equals)) }
    }
    return items
  }
}
