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

  /// What was wrong and what to do.
  public var description: String {
    switch self {
    case .unknownUser(let user): "There is no user '\(user)'; list users with 'meridian-admin users list'."
    }
  }
}
