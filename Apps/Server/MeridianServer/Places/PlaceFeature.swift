import DomainKit
import Foundation
import MeridianAPI
import MeridianStore
import NetworkingKit

/// The places directory: browsing, search, nearby, a place with its breadcrumbs, reviews, favourites and news.
/// Reading is open to everyone; reviews, favourites and the news feed need a signed-in caller.
struct PlaceFeature: Sendable {
  let environment: ServerEnvironment
  var store: any MeridianStore { environment.store }

  /// Registers the routes of `API.placeEndpoints`, and the applicant's (``ApplicantFeature``).
  func register(on routes: RouteRegistrar) {
    ApplicantFeature(environment: environment).register(on: routes)
    routes.on(API.places) { call in
      try await list(call.parameters, scope: call.parameters.rootsOnly ? .roots : .all)
    }
    routes.on(API.place) { call in
      guard let details = try await store.place(call.parameters.id) else { throw Self.placeNotFound }
      return PlaceDetail(item: details.listing.item, ancestors: details.ancestors)
    }
    routes.on(API.placeChildren) { call in
      try await requirePlace(call.parameters.id)
      return try await list(call.parameters.list, scope: .children(of: call.parameters.id))
    }
    routes.on(API.placeReviews) { call in
      let parameters = call.parameters
      try await requirePlace(parameters.id)
      let page = try await Self.translating {
        try await store.reviews(of: parameters.id, cursor: parameters.paging.cursor, limit: parameters.paging.limit)
      }
      return ReviewList(items: page.items, nextCursor: page.nextCursor)
    }
    routes.on(API.saveReview) { call in
      let author = try call.authenticated()
      let body = call.body
      let now = environment.now()
      let review: Review
      do {
        review = try Review(
          id: ReviewID(UUID().uuidString.lowercased()), placeID: call.parameters.id, authorID: author,
          grade: body.grade, grades: body.grades ?? [:], text: body.text ?? "", createdAt: now)
      } catch {
        throw APIError(status: 422, code: .invalidReview, message: "\(error)")
      }
      return try await Self.translating { try await store.saveReview(review, now: now).review }
    }
    routes.on(API.deleteReview, status: .noContent) { call in
      guard try await store.deleteReview(place: call.parameters.id, author: call.authenticated()) else {
        throw APIError.notFound("You have no review of this place.")
      }
      return NoContent()
    }
    routes.on(API.favourites) { call in
      let user = try call.authenticated()
      let page = try await Self.translating {
        try await store.favourites(of: user, cursor: call.parameters.cursor, limit: call.parameters.limit)
      }
      return PlaceList(items: page.items.map(\.item), nextCursor: page.nextCursor)
    }
    routes.on(API.addFavourite, status: .noContent) { call in
      let user = try call.authenticated()
      _ = try await Self.translating {
        try await store.addFavourite(call.parameters.placeID, user: user, now: environment.now())
      }
      return NoContent()
    }
    routes.on(API.removeFavourite, status: .noContent) { call in
      guard try await store.removeFavourite(call.parameters.placeID, user: call.authenticated()) else {
        throw APIError.notFound("This place is not among your favourites.")
      }
      return NoContent()
    }
    routes.on(API.news) { call in
      let parameters = call.parameters
      let user = try call.authenticated()
      let scope: NewsQuery.Scope
      if parameters.favourites {
        scope = .favourites(of: user)
      } else if let place = parameters.place {
        try await requirePlace(place)
        scope = .subtree(of: place)
      } else {
        scope = .all
      }
      let page = try await Self.translating {
        try await store.news(NewsQuery(scope: scope, cursor: parameters.paging.cursor, limit: parameters.paging.limit))
      }
      return NewsList(items: page.items, nextCursor: page.nextCursor)
    }
  }

  static let placeNotFound = APIError.notFound("There is no place with this id.")

  func requirePlace(_ id: PlaceID) async throws {
    guard try await store.place(id) != nil else { throw Self.placeNotFound }
  }

  func list(_ parameters: PlacesParameters, scope: PlaceQuery.Scope) async throws -> PlaceList {
    var area: PlaceQuery.Area?
    if let center = parameters.center, let radius = parameters.radius {
      area = .circle(center: center, radius: radius)
    } else if let box = parameters.box {
      area = .box(south: box[0], west: box[1], north: box[2], east: box[3])
    }
    let query = PlaceQuery(
      scope: scope, kinds: parameters.kinds.map { PlaceKind(rawValue: $0) }, city: parameters.city,
      text: parameters.q, area: area, center: parameters.center,
      attributes: parameters.attributes,
      sort: parameters.sort.flatMap(PlaceQuery.Sort.init(rawValue:)), cursor: parameters.paging.cursor,
      limit: parameters.paging.limit)
    let page = try await Self.translating { try await store.places(query) }
    return PlaceList(items: page.items.map(\.item), nextCursor: page.nextCursor)
  }

  /// The store's refusals as the API's errors.
  static func translating<T>(_ body: () async throws -> T) async throws -> T {
    do {
      return try await body()
    } catch let error as PlaceStoreError {
      switch error {
      case .placeNotFound: throw placeNotFound
      case .invalidReview: throw APIError(status: 422, code: .invalidReview, message: "\(error)")
      case .invalidCursor, .invalidQuery, .unknownParent, .cycle, .hasChildren, .invalidPlace:
        throw APIError.invalidRequest(error.description)
      }
    }
  }
}
