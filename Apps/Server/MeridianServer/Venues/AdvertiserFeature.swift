import DomainKit
import Foundation
import MeridianAPI
import MeridianStore

/// `/v1/advertiser/...`: people with the advertiser role (`meridian-admin advertisers grant`) manage their venues'
/// promotions — create, edit, pause, resume, end, each special one with its own audience rule — and count the
/// audience. Every route checks the role for the venue concerned (403 `not_advertiser`); an advertiser sees counts,
/// never people.
struct AdvertiserFeature: Sendable {
  let environment: ServerEnvironment
  var store: any MeridianStore { environment.store }

  func register(on routes: RouteRegistrar) {
    routes.on(API.advertiserVenues) { call in
      var venues: [Venue] = []
      for grant in try await store.advertiserGrants(user: call.authenticated()) {
        if let venue = try await store.venue(grant.venue, language: nil) { venues.append(venue) }
      }
      return AdvertiserVenues(venues: venues)
    }
    routes.on(API.advertiserPromotions) { call in
      let venue = call.parameters.id
      try await requireAdvertiser(call.authenticated(), of: venue)
      let settings = try await store.promotionSettings(venue: venue)
      return AdvertisedPromotions(
        venueId: venue,
        promotions: try await store.promotions(venue: venue).map {
          AdvertisedPromotion(promotion: $0, settings: settings[$0.id] ?? PromotionSettings())
        })
    }
    routes.on(API.createAdvertisedPromotion) { call in
      try await requireAdvertiser(call.authenticated(), of: call.parameters.id)
      let id = PromotionID(UUID().uuidString.lowercased())
      let promotion = try call.body.promotion(id: id, venue: call.parameters.id)
      try await requireUploadedImage(promotion.imageURL)
      let settings = PromotionSettings(state: .running, eligibility: try call.body.checkedEligibility())
      try await store.savePromotion(promotion, settings: settings)
      return AdvertisedPromotion(promotion: promotion, settings: settings)
    }
    routes.on(API.updateAdvertisedPromotion) { call in
      let current = try await advertised(call.parameters.id, by: call.authenticated())
      guard current.state != .ended else { throw Self.ended }
      let promotion = try call.body.promotion(id: current.promotion.id, venue: current.promotion.venueID)
      try await requireUploadedImage(promotion.imageURL)
      let settings = PromotionSettings(state: current.state, eligibility: try call.body.checkedEligibility())
      try await store.savePromotion(promotion, settings: settings)
      // The image it had goes when nothing else refers to it (after the blob store's grace period).
      if let old = BlobReference.hash(in: current.promotion.imageURL),
        old != BlobReference.hash(in: promotion.imageURL)
      {
        _ = try await environment.blobs.deleteUnreferenced(
          [old], in: store, now: environment.now(), gracePeriod: environment.blobGracePeriod)
      }
      return AdvertisedPromotion(promotion: promotion, settings: settings)
    }
    routes.on(API.setAdvertisedPromotionState) { call in
      var current = try await advertised(call.parameters.id, by: call.authenticated())
      guard current.state != .ended || call.body.state == .ended else { throw Self.ended }
      current.state = call.body.state
      try await store.savePromotion(current.promotion, settings: current.settings)
      return current
    }
    routes.on(API.advertisedPromotionAudience) { call in
      let current = try await advertised(call.parameters.id, by: call.authenticated())
      let place = try await venuePlace(current.promotion.venueID)
      let now = environment.now()
      let count = try await EligibleAudience(store: store, rule: current.eligibility).count(for: place, now: now)
      return PromotionAudienceSize(promotionId: current.promotion.id, eligible: AggregateCount(count), at: now)
    }
    routes.on(API.claimVenue) { call in
      let user = try call.authenticated()
      let note = try call.body.checkedNote()
      let venue = call.body.venueID
      try Identifier.check(venue.rawValue, name: "venueId")
      guard try await store.venue(venue, language: nil) != nil else {
        throw APIError.notFound("There is no venue with this id.")
      }
      guard try await !store.isAdvertiser(user, of: venue) else {
        throw APIError(
          status: 409, code: .alreadyAdvertiser, message: "You advertise for this venue already.")
      }
      return try await store.claimVenue(
        VenueClaim(
          id: UUID().uuidString.lowercased(), user: user, venue: venue, note: note, claimedAt: environment.now()))
    }
    routes.on(API.venueClaims) { call in
      VenueClaims(claims: try await store.venueClaims(user: call.authenticated(), state: nil))
    }
    routes.onRaw(API.advertisedPromotionStats) { call in
      let query = call.parameters
      let current = try await advertised(query.id, by: call.authenticated())
      let place = try await venuePlace(current.promotion.venueID)
      let (from, to) = PromotionStats.range(
        from: query.from, to: query.to, now: environment.now(), timeZone: place.resolvedTimeZone)
      let report = try await PromotionStats(store: store).report(
        current.promotion, venue: place, from: from, to: to, bucket: query.bucket, rule: current.eligibility,
        now: environment.now())
      if query.csv {
        return RouteRegistrar.RawBody(
          contentType: "text/csv; charset=utf-8", filename: "promotion-\(query.id)-\(query.bucket.rawValue).csv",
          data: Data(report.csv.utf8))
      }
      return RouteRegistrar.RawBody(
        contentType: "application/json", filename: nil, data: try JSONEncoder().encode(report))
    }
  }

  static let ended = APIError(
    status: 409, code: .promotionNotAvailable, message: "This promotion has ended and can't change; create a new one.")

  /// Throws 400 `invalid_request` unless `url` is absent or an image uploaded to the blob store, as poll options'.
  func requireUploadedImage(_ url: String?) async throws {
    guard let url else { return }
    guard try await environment.blobs.isUploadedImage(url) else {
      throw APIError.invalidRequest(
        "'imageUrl' must be an image uploaded with POST /v1/blobs, referred to as /v1/blobs/<hash>.")
    }
  }

  /// Throws 403 `not_advertiser` unless `user` advertises for `venue`.
  func requireAdvertiser(_ user: UserID, of venue: PlaceID) async throws {
    guard try await store.isAdvertiser(user, of: venue) else {
      throw APIError(
        status: 403, code: .notAdvertiser,
        message:
          "You are not an advertiser of this venue; claim it (POST /v1/advertiser/claims) and an operator approves.")
    }
  }

  /// A promotion of one of `user`'s venues, with its settings.
  func advertised(_ id: PromotionID, by user: UserID) async throws -> AdvertisedPromotion {
    guard let promotion = try await store.promotion(id) else {
      throw APIError.notFound("There is no promotion with this id.")
    }
    try await requireAdvertiser(user, of: promotion.venueID)
    let settings = try await store.promotionSettings(venue: promotion.venueID)[id] ?? PromotionSettings()
    return AdvertisedPromotion(promotion: promotion, settings: settings)
  }

  func venuePlace(_ id: PlaceID) async throws -> Place {
    guard let venue = try await store.venue(id, language: nil) else {
      throw APIError.notFound("There is no venue with this id.")
    }
    return try venue.place()
  }
}
