import DomainKit
import Foundation
import GeoKit
import NetworkingKit

extension API {
  // MARK: Venues and promotions

  /// `GET /v1/venues?lat=&lon=&radius=&type=&sort=&cursor=&pageSize=&lang=`: venues within `radius` metres of a
  /// point, each with its distance, listed by the places query (the same orders as `/v1/places`, the venue's rating
  /// its imported one plus its reviews) and keyset-paged: `cursor` is the previous page's `nextCursor`.
  public static let venues = Endpoint<VenueQuery, NoBody, VenueList>(
    .get, "/v1/venues", query: { $0.queryItems })
  /// `GET /v1/venues/{id}?lang=`: one venue.
  public static let venue = Endpoint<VenueRef, NoBody, Venue>(
    .get, "/v1/venues/\(\.id, "id")", query: { $0.queryItems })
  /// `GET /v1/venues/{id}/promotions`: the venue's running promotions: general ones, plus special ones when the
  /// caller is eligible (DomainKit's `PromotionEligibility`).
  public static let venuePromotions = Endpoint<VenueRef, NoBody, VenuePromotions>(
    .get, "/v1/venues/\(\.id, "id")/promotions")
  /// `POST /v1/promotions/{id}/redeem {code}`: redeems a running promotion the caller was offered, with its promo
  /// code (what the venue reads from the QR code); once per user.
  public static let redeemPromotion = Endpoint<PromotionRef, PromotionCode, PromotionRedemption>(
    .post, "/v1/promotions/\(\.id, "id")/redeem")
}

/// A promotion in the path: `/v1/promotions/{id}/…`.
public struct PromotionRef: RouteParameters, Hashable {
  /// The promotion.
  public var id: PromotionID
  /// A reference to `id`.
  public init(id: PromotionID) { self.id = id }
  /// Reads `{id}`.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    id = PromotionID(try path.required("id"))
  }
}

/// `POST /v1/promotions/{id}/redeem`: the promo code, compared without regard to case and surrounding spaces.
public struct PromotionCode: Sendable, Hashable, Codable {
  /// The code.
  public var code: String
  /// A code.
  public init(code: String) { self.code = code }
}

/// The answer to `POST /v1/promotions/{id}/redeem`.
public struct PromotionRedemption: Sendable, Hashable, Codable {
  /// The promotion.
  public var promotionId: PromotionID
  /// Its venue.
  public var venueId: PlaceID
  /// When it was redeemed (UTC milliseconds).
  public var redeemedAt: Int64
  /// A redemption.
  public init(promotionId: PromotionID, venueId: PlaceID, redeemedAt: Int64) {
    self.promotionId = promotionId
    self.venueId = venueId
    self.redeemedAt = redeemedAt
  }
}

/// A venue as the API shows it. Wire names: `id`, `name` (in the requested language), `names` (every stored
/// translation), `description`, `type`, `location` (`{"lat","lon"}`), `address`, `city`, `site`, `phone`, `email`,
/// `logoUrl`, `timeZone`, `rating` (`{sum, count, average}`), `distance` (metres from the query point, in lists).
public struct Venue: Sendable, Hashable, Codable, Identifiable {
  /// The venue's id.
  public var id: PlaceID
  /// The name in the requested language, else English, else the base name.
  public var name: String
  /// The name in every stored language (`en`, `ru`, `uk`).
  public var names: LocalizedText
  /// The description in the requested language, if any.
  public var description: String?
  /// Café, restaurant, shop, …
  public var type: String?
  /// Position.
  public var location: Coordinate
  /// Postal address.
  public var address: String?
  /// City.
  public var city: String?
  /// Web site.
  public var site: String?
  /// Contact phone.
  public var phone: String?
  /// Contact email.
  public var email: String?
  /// Logo image URL.
  public var logoURL: String?
  /// IANA time zone (promotion windows are in it); UTC when absent.
  public var timeZone: String?
  /// Sum and count of review grades; `count` is the number of reviews.
  public var rating: RatingAggregate
  /// Distance from the query point in metres (lists only).
  public var distance: Double?

  /// A venue.
  public init(
    id: PlaceID, name: String, names: LocalizedText, description: String? = nil, type: String? = nil,
    location: Coordinate, address: String? = nil, city: String? = nil, site: String? = nil, phone: String? = nil,
    email: String? = nil, logoURL: String? = nil, timeZone: String? = nil, rating: RatingAggregate = RatingAggregate(),
    distance: Double? = nil
  ) {
    self.id = id
    self.name = name
    self.names = names
    self.description = description
    self.type = type
    self.location = location
    self.address = address
    self.city = city
    self.site = site
    self.phone = phone
    self.email = email
    self.logoURL = logoURL
    self.timeZone = timeZone
    self.rating = rating
    self.distance = distance
  }

  /// The venue as a DomainKit place (for promotion rules: id, names, location, time zone, type).
  /// - Throws: ``PlaceError`` when the stored time zone is unknown.
  public func place() throws(PlaceError) -> Place {
    try Place(
      id: id, kind: .venue, name: names, address: address, location: location, city: city, site: site,
      phone: phone, email: email, venueType: type, logoURL: logoURL, timeZone: timeZone)
  }

  private enum CodingKeys: String, CodingKey {
    case id, name, names, description, type, location, address, city, site, phone, email
    case logoURL = "logoUrl"
    case timeZone, rating, distance
  }
}

/// `GET /v1/venues/{id}/promotions`.
public struct VenuePromotions: Sendable, Hashable, Codable {
  /// The venue.
  public var venueId: PlaceID
  /// Whether the caller is eligible for the venue's special promotions (false when none is running).
  public var eligible: Bool
  /// Running promotions: general ones, then special ones when `eligible`.
  public var promotions: [Promotion]

  /// An answer.
  public init(venueId: PlaceID, eligible: Bool, promotions: [Promotion]) {
    self.venueId = venueId
    self.eligible = eligible
    self.promotions = promotions
  }
}

/// A page of venues. Wire names: `items`, `nextCursor` (absent on the last page), `hasMore` (whether `nextCursor`
/// is there; kept from the offset pages this list had before cursors).
public struct VenueList: Sendable, Hashable, Codable {
  /// The venues.
  public var items: [Venue]
  /// The next page's cursor.
  public var nextCursor: String?
  /// Whether there is a next page.
  public var hasMore: Bool

  /// A page.
  public init(items: [Venue], nextCursor: String?) {
    self.items = items
    self.nextCursor = nextCursor
    hasMore = nextCursor != nil
  }
}

/// `GET /v1/venues`: a point, a radius and how to filter, sort and page.
///
/// Query form: `lat=&lon=` (degrees, required), `radius=` (metres, 1…50,000, default 1,000), `type=` (venue type),
/// `sort=distance|rating|reviews` (default distance), `cursor=` (the previous page's `nextCursor`), `pageSize=`
/// (1…100, default 10), `lang=` (`en`, `ru`, `uk`, …; names fall back to English). `page=` (the offset pages before
/// cursors) is accepted as 1 only; a later page is a 400 that says to follow `nextCursor`.
public struct VenueQuery: RouteParameters, Hashable {
  /// The largest radius accepted, metres.
  public static let maximumRadius = 50_000.0
  /// The radius when none is given, metres.
  public static let defaultRadius = 1_000.0

  /// The query point.
  public var center: Coordinate
  /// Metres around `center`.
  public var radius: Double
  /// Only venues of this type.
  public var type: String?
  /// The order.
  public var sort: PlaceDirectory.SortOrder
  /// The previous page's `nextCursor` (nil: the first page).
  public var cursor: String?
  /// Venues per page, 1…100.
  public var pageSize: Int
  /// The language of names.
  public var language: String?

  /// A query; `pageSize` is clamped to 1…100.
  public init(
    center: Coordinate, radius: Double = VenueQuery.defaultRadius, type: String? = nil,
    sort: PlaceDirectory.SortOrder = .distance, cursor: String? = nil, pageSize: Int = PageRequest.defaultPageSize,
    language: String? = nil
  ) {
    self.center = center
    self.radius = radius
    self.type = type
    self.sort = sort
    self.cursor = cursor
    self.pageSize = min(max(1, pageSize), PageRequest.maximumPageSize)
    self.language = language
  }

  /// Reads the query, rejecting anything out of range with a message that names the parameter.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    guard let center = try query.coordinate() else {
      throw .invalidRequest("'lat' and 'lon' are required: the point to search around, in degrees.")
    }
    self.center = center
    radius = try query.double("radius") ?? Self.defaultRadius
    guard radius > 0, radius <= Self.maximumRadius else {
      throw .invalidRequest("'radius' must be more than 0 and at most \(Int(Self.maximumRadius)) metres.")
    }
    type = query.string("type")
    if let name = query.string("sort") {
      guard let order = PlaceDirectory.SortOrder(rawValue: name) else {
        throw .invalidRequest("'sort' must be distance, rating or reviews.")
      }
      sort = order
    } else {
      sort = .distance
    }
    if let number = try query.int64("page"), number != 1 {
      throw .invalidRequest("'page' is replaced by 'cursor': pass the previous answer's 'nextCursor' as 'cursor'.")
    }
    cursor = query.string("cursor")
    let size = try query.int64("pageSize") ?? Int64(PageRequest.defaultPageSize)
    guard (1...Int64(PageRequest.maximumPageSize)).contains(size) else {
      throw .invalidRequest("'pageSize' must be between 1 and \(PageRequest.maximumPageSize).")
    }
    pageSize = Int(size)
    language = try VenueRef.language(query)
  }

  var queryItems: [QueryItem] {
    var items = [QueryItem("lat", center.latitude), QueryItem("lon", center.longitude), QueryItem("radius", radius)]
    if let type { items.append(QueryItem("type", type)) }
    items.append(QueryItem("sort", sort.rawValue))
    if let cursor { items.append(QueryItem("cursor", cursor)) }
    items.append(QueryItem("pageSize", pageSize))
    if let language { items.append(QueryItem("lang", language)) }
    return items
  }
}

/// A venue in the path: `/v1/venues/{id}`, with the language of its names (`lang=`).
public struct VenueRef: RouteParameters, Hashable {
  /// The venue.
  public var id: PlaceID
  /// The language of names (`en`, `ru`, `uk`, …); English when absent.
  public var language: String?

  /// A reference to `id`.
  public init(id: PlaceID, language: String? = nil) {
    self.id = id
    self.language = language
  }

  /// Reads `{id}` and `lang`.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    id = PlaceID(try path.required("id"))
    language = try Self.language(query)
  }

  /// `lang`, if present: a language code such as `uk` or `pt-BR`.
  static func language(_ query: [String: [String]]) throws(APIError) -> String? {
    guard let code = query.string("lang") else { return nil }
    let parts = code.split(separator: "-", omittingEmptySubsequences: false)
    guard let first = parts.first, (2...3).contains(first.count),
      parts.allSatisfy({ !$0.isEmpty && $0.count <= 8 && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) } })
    else { throw .invalidRequest("'lang' must be a language code such as en, ru or uk.") }
    return code
  }

  var queryItems: [QueryItem] { language.map { [QueryItem("lang", $0)] } ?? [] }
}
