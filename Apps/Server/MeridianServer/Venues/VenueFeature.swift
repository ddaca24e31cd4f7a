import DomainKit
import Foundation
import MeridianAPI
import MeridianStore

/// Venues near a point, one venue, its running promotions for the caller (special ones only for the eligible) and
/// redeeming a promotion.
struct VenueFeature: Sendable {
  let environment: ServerEnvironment
  var store: any MeridianStore { environment.store }

  /// Registers `GET /v1/venues`, `GET /v1/venues/{id}`, `GET /v1/venues/{id}/promotions` and
  /// `POST /v1/promotions/{id}/redeem`.
  func register(on routes: RouteRegistrar) {
    routes.on(API.venues) { call in
      try await PlaceFeature.translating { try await store.nearbyVenues(call.parameters) }
    }
    routes.on(API.venue) { call in try await venue(call.parameters) }
    routes.on(API.venuePromotions) { call in
      try await venuePromotions(viewer: call.authenticated(), call.parameters.id)
    }
    routes.on(API.redeemPromotion) { call in
      try await redeem(call.parameters.id, code: call.body.code, by: call.authenticated())
    }
    PromotionQRFeature(environment: environment).register(on: routes)
    AdvertiserFeature(environment: environment).register(on: routes)
  }

  func venue(_ ref: VenueRef) async throws -> Venue {
    guard let venue = try await store.venue(ref.id, language: ref.language) else {
      throw APIError.notFound("There is no venue with this id.")
    }
    return venue
  }

  /// The venue's running promotions offered to the viewer (``PromotionAvailability``): the general ones, and the
  /// special ones whose own audience rule says the viewer keeps passing by without visiting. The promotions
  /// answered are recorded as offered to the viewer (what they may redeem, and the "shown" of the venue's
  /// statistics).
  func venuePromotions(viewer: UserID, _ id: PlaceID) async throws -> VenuePromotions {
    let place = try await venue(VenueRef(id: id)).place()
    let now = environment.now()
    let (eligible, shown) = try await PromotionAvailability(venue: place, store: store, now: now).offers(to: viewer)
    // Best effort: a listing must not fail because its statistics could not be written.
    try? await store.recordOffers(shown.map(\.id), to: viewer, at: now)
    return VenuePromotions(venueId: id, eligible: eligible, promotions: shown)
  }

  /// Redeems a running promotion offered to `user`, if `code` is its promo code (case and surrounding spaces aside).
  func redeem(_ id: PromotionID, code: String, by user: UserID) async throws -> PromotionRedemption {
    guard let promotion = try await store.promotion(id) else {
      throw APIError.notFound("There is no promotion with this id.")
    }
    let notAvailable = APIError(
      status: 403, code: .promotionNotAvailable,
      message: "This promotion is not running now or was not offered to you; list the venue's promotions first.")
    let now = environment.now()
    let place = try await venue(VenueRef(id: promotion.venueID)).place()
    let state = try await store.promotionSettings(venue: promotion.venueID)[id]?.state ?? .running
    guard PromotionAvailability.isRunning(promotion, state: state, at: now, timeZone: place.resolvedTimeZone) else {
      throw notAvailable
    }
    // Whether it was offered comes before the code, so that codes can't be probed for promotions never offered.
    guard try await store.wasOffered(id, to: user) else { throw notAvailable }
    let normalize = { (text: String) in text.trimmingCharacters(in: .whitespacesAndNewlines).uppercased() }
    guard normalize(code) == normalize(promotion.promoCode) else {
      throw APIError(status: 422, code: .promotionCodeInvalid, message: "This is not the promotion's code.")
    }
    switch try await store.redeem(id, by: user, at: now) {
    case .redeemed:
      return PromotionRedemption(promotionId: id, venueId: promotion.venueID, redeemedAt: now)
    case .notOffered:
      throw notAvailable
    case .alreadyRedeemed(let time):
      throw APIError(
        status: 409, code: .alreadyRedeemed,
        message: "You redeemed this promotion at \(Timestamp.date(time).formatted(.iso8601)); it is once per person.")
    }
  }
}
