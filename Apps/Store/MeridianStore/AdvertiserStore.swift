import DomainKit
import Foundation
import MeridianAPI

/// Advertisers (people with the `advertiser` role for venues) and what they set on their venues' promotions.
public protocol AdvertiserStore: Sendable {
  /// Makes `user` an advertiser of each of `venues` (a grant that exists keeps its time), in one transaction.
  /// - Throws: ``AdvertiserStoreError/unknownUser(_:)``, ``VenueRecordError/unknownVenue(_:)``; nothing is granted.
  func grantAdvertiser(_ user: UserID, venues: [PlaceID], at time: Int64) async throws
  /// Takes `venues` (every one when nil) from `user`; answers how many grants ended.
  func revokeAdvertiser(_ user: UserID, venues: [PlaceID]?) async throws -> Int
  /// The grants, by user then venue; only `user`'s when given.
  func advertiserGrants(user: UserID?) async throws -> [AdvertiserGrant]
  /// The settings stored for a venue's promotions, by promotion (those without any have the defaults).
  func promotionSettings(venue: PlaceID) async throws -> [PromotionID: PromotionSettings]
  /// Stores a promotion (a new one, or replacing the one with its id) with its settings, in one transaction.
  /// - Throws: ``VenueRecordError/unknownVenue(_:)``.
  func savePromotion(_ promotion: Promotion, settings: PromotionSettings) async throws
  /// Stores `claim` (pending); while the same person's claim of the same venue waits, answers that one instead.
  /// - Throws: ``AdvertiserStoreError/unknownUser(_:)``.
  func claimVenue(_ claim: VenueClaim) async throws -> VenueClaim
  /// Claims, newest first; only `user`'s, or only those in `state`, when given.
  func venueClaims(user: UserID?, state: VenueClaimState?) async throws -> [VenueClaim]
  /// Approves (granting the venue, as ``grantAdvertiser(_:venues:at:)``, in the same transaction) or rejects a
  /// pending claim.
  /// - Throws: ``AdvertiserStoreError/unknownClaim(_:)``, ``AdvertiserStoreError/claimDecided(_:)``,
  ///   ``VenueRecordError/unknownVenue(_:)`` on approval; nothing changes.
  func decideVenueClaim(_ id: String, approve: Bool, reason: String?, at time: Int64) async throws -> VenueClaim
  /// A page of every venue's promotions with their settings, by venue then id; only those matching `filter`.
  func promotionPage(_ filter: PromotionFilter, limit: Int, offset: Int) async throws -> [AdvertisedPromotion]
}

/// Which promotions ``AdvertiserStore/promotionPage(_:limit:offset:)`` lists; nil matches any.
public struct PromotionFilter: Sendable, Hashable {
  /// Only this venue's.
  public var venue: PlaceID?
  /// Only those of venues this person advertises for.
  public var advertiser: UserID?
  /// Only those in this state (a promotion without settings is running).
  public var state: PromotionState?

  /// A filter.
  public init(venue: PlaceID? = nil, advertiser: UserID? = nil, state: PromotionState? = nil) {
    self.venue = venue
    self.advertiser = advertiser
    self.state = state
  }
}

extension AdvertiserStore {
  /// Whether `user` advertises for `venue`.
  public func isAdvertiser(_ user: UserID, of venue: PlaceID) async throws -> Bool {
    try await advertiserGrants(user: user).contains { $0.venue == venue }
  }
}

/// One venue granted to one advertiser.
public struct AdvertiserGrant: Sendable, Hashable, Codable {
  /// The advertiser.
  public var user: UserID
  /// The venue.
  public var venue: PlaceID
  /// When it was granted, UTC ms.
  public var grantedAt: Int64

  /// A grant.
  public init(user: UserID, venue: PlaceID, grantedAt: Int64) {
    self.user = user
    self.venue = venue
    self.grantedAt = grantedAt
  }
}

/// Why an advertiser grant can't be stored.
public enum AdvertiserStoreError: Error, Sendable, Hashable, CustomStringConvertible {
  /// No such user.
  case unknownUser(UserID)
  /// No claim with this id.
  case unknownClaim(String)
  /// The claim was approved or rejected already.
  case claimDecided(VenueClaim)

  /// What was wrong and what to do.
  public var description: String {
    switch self {
    case .unknownUser(let user):
      "There is no user \(QuotedValue.quote("\(user)")); list users with 'meridian-admin users list'."
    case .unknownClaim(let id):
      "There is no claim \(QuotedValue.quote("\(id)")); list them with 'meridian-admin advertisers claims --state all'."
    case .claimDecided(let claim): "Claim \(QuotedValue.quote("\(claim.id)")) was \(claim.state.rawValue) already."
    }
  }
}
