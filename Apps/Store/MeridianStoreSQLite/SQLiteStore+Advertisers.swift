import DomainKit
import Foundation
import GRDB
import MeridianAPI
import MeridianStore

extension SQLiteStore {
  public func grantAdvertiser(_ user: UserID, venues: [PlaceID], at time: Int64) async throws {
    try await database.write { db in try Self.grant(user, venues: venues, at: time, db) }
  }

  private static func grant(_ user: UserID, venues: [PlaceID], at time: Int64, _ db: Database) throws {
    guard try Row.fetchOne(db, sql: "SELECT 1 FROM users WHERE id = ?", arguments: [user.rawValue]) != nil else {
      throw AdvertiserStoreError.unknownUser(user)
    }
    for venue in venues {
      guard try Row.fetchOne(db, sql: "SELECT 1 FROM venues WHERE id = ?", arguments: [venue.rawValue]) != nil
      else { throw VenueRecordError.unknownVenue(venue) }
      try db.execute(
        sql: "INSERT INTO advertisers(user_id, venue_id, granted_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
        arguments: [user.rawValue, venue.rawValue, time])
    }
  }

  public func claimVenue(_ claim: VenueClaim) async throws -> VenueClaim {
    try await database.write { db in
      guard try Row.fetchOne(db, sql: "SELECT 1 FROM users WHERE id = ?", arguments: [claim.user.rawValue]) != nil
      else { throw AdvertiserStoreError.unknownUser(claim.user) }
      if let pending = try Row.fetchOne(
        db, sql: "SELECT * FROM venue_claims WHERE user_id = ? AND venue_id = ? AND state = 'pending'",
        arguments: [claim.user.rawValue, claim.venue.rawValue])
      {
        return Self.claim(pending)
      }
      try db.execute(
        sql: """
          INSERT INTO venue_claims(id, user_id, venue_id, note, state, claimed_at) VALUES (?, ?, ?, ?, 'pending', ?)
          """,
        arguments: [claim.id, claim.user.rawValue, claim.venue.rawValue, claim.note, claim.claimedAt])
      var stored = claim
      stored.state = .pending
      stored.decidedAt = nil
      stored.reason = nil
      return stored
    }
  }

  public func venueClaims(user: UserID?, state: VenueClaimState?) async throws -> [VenueClaim] {
    try await database.read { db in
      try Row.fetchAll(
        db,
        sql: """
          SELECT * FROM venue_claims WHERE (?1 IS NULL OR user_id = ?1) AND (?2 IS NULL OR state = ?2)
          ORDER BY claimed_at DESC, id
          """,
        arguments: [user?.rawValue, state?.rawValue]
      ).map(Self.claim)
    }
  }

  public func decideVenueClaim(_ id: String, approve: Bool, reason: String?, at time: Int64) async throws
    -> VenueClaim
  {
    try await database.write { db in
      guard let row = try Row.fetchOne(db, sql: "SELECT * FROM venue_claims WHERE id = ?", arguments: [id]) else {
        throw AdvertiserStoreError.unknownClaim(id)
      }
      var claim = Self.claim(row)
      guard claim.state == .pending else { throw AdvertiserStoreError.claimDecided(claim) }
      if approve { try Self.grant(claim.user, venues: [claim.venue], at: time, db) }
      claim.state = approve ? .approved : .rejected
      claim.decidedAt = time
      claim.reason = reason
      try db.execute(
        sql: "UPDATE venue_claims SET state = ?, decided_at = ?, reason = ? WHERE id = ?",
        arguments: [claim.state.rawValue, time, reason, id])
      return claim
    }
  }

  public func promotionPage(_ filter: PromotionFilter, limit: Int, offset: Int) async throws -> [AdvertisedPromotion] {
    try await database.read { db in
      try Row.fetchAll(
        db,
        sql: """
          SELECT p.*, IFNULL(s.state, 'running') AS state, s.radius, s.minimum_days, s.lookback_days
          FROM venue_promotions p LEFT JOIN promotion_settings s ON s.promotion_id = p.id
          WHERE (?1 IS NULL OR p.venue_id = ?1)
            AND (?2 IS NULL OR p.venue_id IN (SELECT venue_id FROM advertisers WHERE user_id = ?2))
            AND (?3 IS NULL OR IFNULL(s.state, 'running') = ?3)
          ORDER BY p.venue_id, p.id LIMIT ?4 OFFSET ?5
          """,
        arguments: [
          filter.venue?.rawValue, filter.advertiser?.rawValue, filter.state?.rawValue, max(0, limit), max(0, offset),
        ]
      ).map { row in
        var settings = PromotionSettings(state: PromotionState(rawValue: row["state"] as String) ?? .ended)
        if let radius: Double = row["radius"] {
          settings.eligibility = PromotionEligibility(
            radius: radius, minimumDays: row["minimum_days"], lookbackDays: row["lookback_days"])
        }
        return AdvertisedPromotion(promotion: try Self.promotion(row), settings: settings)
      }
    }
  }

  private static func claim(_ row: Row) -> VenueClaim {
    VenueClaim(
      id: row["id"], user: UserID(row["user_id"] as String), venue: PlaceID(row["venue_id"] as String),
      note: row["note"], state: VenueClaimState(rawValue: row["state"] as String) ?? .pending,
      claimedAt: row["claimed_at"], decidedAt: row["decided_at"], reason: row["reason"])
  }

  public func revokeAdvertiser(_ user: UserID, venues: [PlaceID]?) async throws -> Int {
    try await database.write { db in
      guard let venues else {
        try db.execute(sql: "DELETE FROM advertisers WHERE user_id = ?", arguments: [user.rawValue])
        return db.changesCount
      }
      var ended = 0
      for venue in Set(venues) {
        try db.execute(
          sql: "DELETE FROM advertisers WHERE user_id = ? AND venue_id = ?", arguments: [user.rawValue, venue.rawValue])
        ended += db.changesCount
      }
      return ended
    }
  }

  public func advertiserGrants(user: UserID?) async throws -> [AdvertiserGrant] {
    try await database.read { db in
      try Row.fetchAll(
        db,
        sql: """
          SELECT user_id, venue_id, granted_at FROM advertisers WHERE ?1 IS NULL OR user_id = ?1
          ORDER BY user_id, venue_id
          """,
        arguments: [user?.rawValue]
      ).map { row in
        AdvertiserGrant(
          user: UserID(row["user_id"] as String), venue: PlaceID(row["venue_id"] as String),
          grantedAt: row["granted_at"])
      }
    }
  }

  public func promotionSettings(venue: PlaceID) async throws -> [PromotionID: PromotionSettings] {
    try await database.read { db in
      let rows = try Row.fetchAll(
        db,
        sql: """
          SELECT s.* FROM promotion_settings s JOIN venue_promotions p ON p.id = s.promotion_id
          WHERE p.venue_id = ?
          """,
        arguments: [venue.rawValue])
      var settings: [PromotionID: PromotionSettings] = [:]
      for row in rows {
        settings[PromotionID(row["promotion_id"] as String)] = PromotionSettings(
          state: PromotionState(rawValue: row["state"] as String) ?? .ended,
          eligibility: PromotionEligibility(
            radius: row["radius"], minimumDays: row["minimum_days"], lookbackDays: row["lookback_days"]))
      }
      return settings
    }
  }

  public func savePromotion(_ promotion: Promotion, settings: PromotionSettings) async throws {
    try await database.write { db in
      try Self.writePromotion(promotion, db)
      try db.execute(
        sql: """
          INSERT INTO promotion_settings(promotion_id, state, radius, minimum_days, lookback_days)
          VALUES (?, ?, ?, ?, ?)
          ON CONFLICT(promotion_id) DO UPDATE SET state = excluded.state, radius = excluded.radius,
            minimum_days = excluded.minimum_days, lookback_days = excluded.lookback_days
          """,
        arguments: [
          promotion.id.rawValue, settings.state.rawValue, settings.eligibility.radius,
          settings.eligibility.minimumDays, settings.eligibility.lookbackDays,
        ])
    }
  }
}
