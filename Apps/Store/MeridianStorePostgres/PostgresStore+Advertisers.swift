import DomainKit
import Foundation
import MeridianAPI
import MeridianStore
import PostgresNIO

extension PostgresStore: AdvertiserStore {
  public func grantAdvertiser(_ user: UserID, venues: [PlaceID], at time: Int64) async throws {
    try await transaction { connection in try await self.grant(user, venues: venues, at: time, on: connection) }
  }

  private func grant(_ user: UserID, venues: [PlaceID], at time: Int64, on connection: PostgresConnection)
    async throws
  {
    // `FOR KEY SHARE` keeps the user and the venues from being deleted until the grants are stored.
    let users = try await connection.query(
      "SELECT 1 FROM users WHERE id = \(user.rawValue) FOR KEY SHARE", logger: logger
    ).collect()
    guard !users.isEmpty else { throw AdvertiserStoreError.unknownUser(user) }
    let ids = venues.map(\.rawValue)
    var known: Set<String> = []
    for try await id in try await connection.query(
      "SELECT id FROM venues WHERE id = ANY(\(ids)::text[]) FOR KEY SHARE", logger: logger
    ).decode(String.self) {
      known.insert(id)
    }
    if let missing = venues.first(where: { !known.contains($0.rawValue) }) {
      throw VenueRecordError.unknownVenue(missing)
    }
    try await connection.query(
      """
      INSERT INTO advertisers(user_id, venue_id, granted_at)
      SELECT \(user.rawValue), v, \(time) FROM unnest(\(ids)::text[]) AS v ORDER BY v
      ON CONFLICT DO NOTHING
      """, logger: logger)
  }

  public func claimVenue(_ claim: VenueClaim) async throws -> VenueClaim {
    try await transaction { connection in
      let users = try await connection.query(
        "SELECT 1 FROM users WHERE id = \(claim.user.rawValue) FOR KEY SHARE", logger: self.logger
      ).collect()
      guard !users.isEmpty else { throw AdvertiserStoreError.unknownUser(claim.user) }
      // A concurrent claim of the same venue by the same person waits on the pending index and then takes none.
      let inserted = try await connection.query(
        """
        INSERT INTO venue_claims(id, user_id, venue_id, note, state, claimed_at)
        VALUES (\(claim.id), \(claim.user.rawValue), \(claim.venue.rawValue), \(claim.note), 'pending',
          \(claim.claimedAt))
        ON CONFLICT (user_id, venue_id) WHERE state = 'pending' DO NOTHING
        RETURNING \(unescaped: Self.claimColumns)
        """, logger: self.logger
      ).collect()
      if let row = inserted.first { return try Self.claim(row) }
      let pending = try await connection.query(
        """
        SELECT \(unescaped: Self.claimColumns) FROM venue_claims
        WHERE user_id = \(claim.user.rawValue) AND venue_id = \(claim.venue.rawValue) AND state = 'pending'
        """, logger: self.logger
      ).collect()
      guard let row = pending.first else { throw AdvertiserStoreError.unknownClaim(claim.id) }
      return try Self.claim(row)
    }
  }

  public func venueClaims(user: UserID?, state: VenueClaimState?) async throws -> [VenueClaim] {
    try await client.query(
      """
      SELECT \(unescaped: Self.claimColumns) FROM venue_claims
      WHERE (\(user?.rawValue)::text IS NULL OR user_id = \(user?.rawValue))
        AND (\(state?.rawValue)::text IS NULL OR state = \(state?.rawValue))
      ORDER BY claimed_at DESC, id COLLATE "C"
      """, logger: logger
    ).collect().map(Self.claim)
  }

  public func decideVenueClaim(_ id: String, approve: Bool, reason: String?, at time: Int64) async throws
    -> VenueClaim
  {
    try await transaction { connection in
      let rows = try await connection.query(
        "SELECT \(unescaped: Self.claimColumns) FROM venue_claims WHERE id = \(id) FOR UPDATE", logger: self.logger
      ).collect()
      guard let row = rows.first else { throw AdvertiserStoreError.unknownClaim(id) }
      var claim = try Self.claim(row)
      guard claim.state == .pending else { throw AdvertiserStoreError.claimDecided(claim) }
      if approve { try await self.grant(claim.user, venues: [claim.venue], at: time, on: connection) }
      claim.state = approve ? .approved : .rejected
      claim.decidedAt = time
      claim.reason = reason
      try await connection.query(
        """
        UPDATE venue_claims SET state = \(claim.state.rawValue), decided_at = \(time), reason = \(reason)
        WHERE id = \(id)
        """, logger: self.logger)
      return claim
    }
  }

  public func promotionPage(_ filter: PromotionFilter, limit: Int, offset: Int) async throws -> [AdvertisedPromotion] {
    let venue = filter.venue?.rawValue
    let advertiser = filter.advertiser?.rawValue
    let state = filter.state?.rawValue
    return try await client.query(
      """
      SELECT p.*, COALESCE(s.state, 'running') AS state, s.radius, s.minimum_days, s.lookback_days
      FROM venue_promotions p LEFT JOIN promotion_settings s ON s.promotion_id = p.id
      WHERE (\(venue)::text IS NULL OR p.venue_id = \(venue))
        AND (\(advertiser)::text IS NULL
          OR p.venue_id IN (SELECT venue_id FROM advertisers WHERE user_id = \(advertiser)))
        AND (\(state)::text IS NULL OR COALESCE(s.state, 'running') = \(state))
      ORDER BY p.venue_id COLLATE "C", p.id COLLATE "C" LIMIT \(max(0, limit)) OFFSET \(max(0, offset))
      """, logger: logger
    ).collect().map { row in
      let columns = row.makeRandomAccess()
      var settings = PromotionSettings(
        state: PromotionState(rawValue: try columns["state"].decode(String.self)) ?? .ended)
      if let radius = try columns["radius"].decode(Double?.self) {
        settings.eligibility = PromotionEligibility(
          radius: radius, minimumDays: try columns["minimum_days"].decode(Int.self),
          lookbackDays: try columns["lookback_days"].decode(Int.self))
      }
      return AdvertisedPromotion(promotion: try Self.promotion(columns), settings: settings)
    }
  }

  static let claimColumns = "id, user_id, venue_id, note, state, claimed_at, decided_at, reason"

  static func claim(_ row: PostgresRow) throws -> VenueClaim {
    let (id, user, venue, note, state, claimedAt, decidedAt, reason) = try row.decode(
      (String, String, String, String?, String, Int64, Int64?, String?).self)
    return VenueClaim(
      id: id, user: UserID(user), venue: PlaceID(venue), note: note,
      state: VenueClaimState(rawValue: state) ?? .pending, claimedAt: claimedAt, decidedAt: decidedAt, reason: reason)
  }

  public func revokeAdvertiser(_ user: UserID, venues: [PlaceID]?) async throws -> Int {
    let rows: PostgresRows
    if let venues {
      rows = try await client.query(
        """
        DELETE FROM advertisers WHERE user_id = \(user.rawValue) AND venue_id = ANY(\(venues.map(\.rawValue))::text[])
        RETURNING 1
        """, logger: logger)
    } else {
      rows = try await client.query(
        "DELETE FROM advertisers WHERE user_id = \(user.rawValue) RETURNING 1", logger: logger)
    }
    return rows.collect().count
  }

  public func advertiserGrants(user: UserID?) async throws -> [AdvertiserGrant] {
    var grants: [AdvertiserGrant] = []
    for try await (userID, venue, grantedAt) in try await client.query(
      """
      SELECT user_id, venue_id, granted_at FROM advertisers
      WHERE \(user?.rawValue)::text IS NULL OR user_id = \(user?.rawValue)
      ORDER BY user_id COLLATE "C", venue_id COLLATE "C"
      """, logger: logger
    ).decode((String, String, Int64).self) {
      grants.append(AdvertiserGrant(user: UserID(userID), venue: PlaceID(venue), grantedAt: grantedAt))
    }
    return grants
  }

  public func promotionSettings(venue: PlaceID) async throws -> [PromotionID: PromotionSettings] {
    var settings: [PromotionID: PromotionSettings] = [:]
    for try await (id, state, radius, minimumDays, lookbackDays) in try await client.query(
      """
      SELECT s.promotion_id, s.state, s.radius, s.minimum_days, s.lookback_days
      FROM promotion_settings s JOIN venue_promotions p ON p.id = s.promotion_id
      WHERE p.venue_id = \(venue.rawValue)
      """, logger: logger
    ).decode((String, String, Double, Int, Int).self) {
      settings[PromotionID(id)] = PromotionSettings(
        state: PromotionState(rawValue: state) ?? .ended,
        eligibility: PromotionEligibility(radius: radius, minimumDays: minimumDays, lookbackDays: lookbackDays))
    }
    return settings
  }

  public func savePromotion(_ promotion: Promotion, settings: PromotionSettings) async throws {
    try await transaction { connection in
      try await self.writePromotion(promotion, connection)
      try await connection.query(
        """
        INSERT INTO promotion_settings(promotion_id, state, radius, minimum_days, lookback_days)
        VALUES (\(promotion.id.rawValue), \(settings.state.rawValue), \(settings.eligibility.radius),
          \(settings.eligibility.minimumDays), \(settings.eligibility.lookbackDays))
        ON CONFLICT (promotion_id) DO UPDATE SET state = excluded.state, radius = excluded.radius,
          minimum_days = excluded.minimum_days, lookback_days = excluded.lookback_days
        """, logger: self.logger)
    }
  }
}
