import DomainKit
import Foundation
import MeridianAPI

extension Features {
  /// Registers `GET /v1/venues`, `GET /v1/venues/{id}` and `GET /v1/venues/{id}/promotions`.
  func registerVenues(on routes: RouteRegistrar) {
    routes.on(API.venues) { call in try await store.nearbyVenues(call.parameters) }
    routes.on(API.venue) { call in try await venue(call.parameters) }
    routes.on(API.venuePromotions) { call in
      try await venuePromotions(viewer: call.authenticated(), call.parameters.id)
    }
  }

  func venue(_ ref: VenueRef) async throws -> Venue {
    guard let venue = try await store.venue(ref.id, language: ref.language) else {
      throw APIError.notFound("There is no venue with this id.")
    }
    return venue
  }

  /// The venue's running promotions (validity and daily window in the venue's time zone): the general ones, and
  /// the special ones when DomainKit's `PromotionEligibility` says the viewer keeps passing by without visiting.
  func venuePromotions(viewer: UserID, _ id: PlaceID) async throws -> VenuePromotions {
    let place = try await venue(VenueRef(id: id)).place()
    let timeZone = place.resolvedTimeZone
    let now = environment.now()
    let running = try await store.promotions(venue: id).filter { $0.isActive(at: now, timeZone: timeZone) }
    var eligible = false
    if let location = place.location, running.contains(where: { $0.audience == .special }) {
      let rule = PromotionEligibility()
      let detector = VisitDetector()
      // A visit counts when its centre is within the rule's radius; its fixes lie within the detector's radius of
      // its first fix, so every fix of such a visit is within radius + 2 × detector radius of the venue.
      let runs = try await store.fixRuns(
        owner: viewer, near: location, radius: rule.radius + 2 * detector.radius,
        from: rule.periodStart(now: now, timeZone: timeZone), to: now)
      eligible = rule.isEligible(
        fixes: runs.joined(), visits: runs.flatMap { detector.visits(in: $0) }, venue: place, now: now)
    }
    let shown =
      running.filter { $0.audience == .general } + (eligible ? running.filter { $0.audience == .special } : [])
    return VenuePromotions(venueId: id, eligible: eligible, promotions: shown)
  }
}
