import DomainKit
import Foundation
import GeoKit
import MeridianAPI

/// Venues and their promotions: radius queries, offers and redemptions.
public protocol VenueStore: Sendable {
  /// The venues within `radius` metres of `center` (optionally only of `type`), in no particular order, each with
  /// its exact haversine distance.
  func venues(within radius: Double, of center: Coordinate, type: String?) async throws -> [VenueMatch]
  // MARK: Venues and promotions

  /// Inserts venues or updates them by id (with their ratings); their geohash columns are computed here.
  func upsertVenues(_ venues: [VenueRecord]) async throws
  /// One venue, its name and description in `language` (else English, else the base value).
  func venue(_ id: PlaceID, language: String?) async throws -> Venue?
  /// The venues within `query.radius` metres of `query.center`, each with its distance: the places query
  /// ``PlaceQuery/init(venues:)``, sorted and keyset-paged as every list of places.
  /// - Throws: ``PlaceStoreError/invalidCursor`` for a cursor this order did not give.
  func nearbyVenues(_ query: VenueQuery) async throws -> VenueList
  /// Inserts a promotion of a stored venue, or replaces the one with its id.
  func insertPromotion(_ promotion: Promotion) async throws
  /// Every stored promotion of a venue (running or not), by id.
  func promotions(venue: PlaceID) async throws -> [Promotion]
  /// One promotion.
  func promotion(_ id: PromotionID) async throws -> Promotion?
  /// Records that `promotions` were offered to `viewer` at `time`.
  func recordOffers(_ promotions: [PromotionID], to viewer: UserID, at time: Int64) async throws
  /// Whether `promotion` was ever offered to `user`.
  func wasOffered(_ promotion: PromotionID, to user: UserID) async throws -> Bool
  /// Redeems `promotion` for `user` at `time` if it was offered to them and they haven't redeemed it yet.
  func redeem(_ promotion: PromotionID, by user: UserID, at time: Int64) async throws -> RedemptionOutcome
  /// Offers and redemptions of each of a venue's promotions, by promotion id.
  func promotionActivity(venue: PlaceID) async throws -> [PromotionActivity]
}

/// A venue found by a radius query: what an engine's spatial index holds, plus the exact distance.
public struct VenueMatch: Sendable, Hashable {
  /// A match.
  public init(row: Int64, id: PlaceID, type: String?, rating: RatingAggregate, distance: Double) {
    self.row = row
    self.id = id
    self.type = type
    self.rating = rating
    self.distance = distance
  }

  /// The venue's row (to read the whole row later).
  public var row: Int64
  /// The venue.
  public var id: PlaceID
  /// Its type.
  public var type: String?
  /// Its rating.
  public var rating: RatingAggregate
  /// Haversine distance from the query point, metres.
  public var distance: Double
}
