import DomainKit
import MeridianAPI
import NetworkingKit
import Testing

/// What the venue endpoints write into a query, the server reads back unchanged.
@Suite struct VenueQueryTests {
  static func parsed(_ items: [QueryItem]) -> [String: [String]] {
    items.reduce(into: [:]) { result, item in result[item.name, default: []].append(item.value ?? "") }
  }

  @Test func venueQueryRoundTrips() throws {
    let queries = [
      VenueQuery(center: .init(uncheckedLatitude: 50.45, longitude: 30.52)),
      VenueQuery(
        center: .init(uncheckedLatitude: -33.868_82, longitude: 151.209_29), radius: 2_500.5, type: "cafe",
        sort: .reviews, cursor: "reviews:-3:-5000000:17", pageSize: 100, language: "uk"),
      VenueQuery(center: .init(uncheckedLatitude: -90, longitude: -180), radius: 50_000, sort: .rating),
    ]
    for query in queries {
      #expect(try VenueQuery(path: [:], query: Self.parsed(API.venues.query(query))) == query)
    }
    let ref = VenueRef(id: "kyiv/arsenal", language: "pt-BR")
    let path = try #require(API.venue.path.match(API.venue.path.render(ref)))
    #expect(try VenueRef(path: path, query: Self.parsed(API.venue.query(ref))) == ref)
  }

  @Test func defaultsAndNormalization() throws {
    let query = try VenueQuery(path: [:], query: ["lat": ["50.45"], "lon": ["180"]])
    #expect(query.radius == VenueQuery.defaultRadius)
    #expect(query.sort == .distance)
    #expect(query.cursor == nil && query.pageSize == PageRequest.defaultPageSize)
    #expect(query.center.longitude == -180)
    #expect(query.type == nil && query.language == nil)
  }
}
