import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import MeridianStore
import MeridianStoreTesting
import Testing

/// The operators' queries: finding, listing, disabling and deleting users, tokens by hash prefix, statistics.
@Suite("Store contract: administration")
struct AdministrationContractTests {
  static let day: Int64 = 86_400_000
  /// 2025-11-20T00:00:00Z.
  static let now: Int64 = 1_763_596_800_000

  /// anna (email, phone; two devices, fixes on two days, two tokens), bob (email; one device, fixes; one token, one
  /// expired), carol (nothing but an account). bob grants anna direct access; anna is in bob's friends.
  static func populate(_ store: any MeridianStore) async throws {
    _ = try await store.createAccount(
      id: "anna", credential: .email("anna@example.com"), passwordHash: nil, now: now - 3 * day)
    _ = try await store.createAccount(
      id: "bob", credential: .email("bob@example.com"), passwordHash: nil, now: now - 2 * day)
    _ = try await store.createAccount(
      id: "carol", credential: try .validated(kind: .phone, value: "+380 50 123 4567"), passwordHash: nil,
      now: now - day)
    _ = try await store.claimDevice("anna-phone", owner: "anna", now: now - 3 * day)
    _ = try await store.claimDevice("anna-watch", owner: "anna", now: now - 3 * day + 1)
    _ = try await store.claimDevice("bob-phone", owner: "bob", now: now - 2 * day)
    _ = try await store.insertFixes(
      [
        FixInsertBatch(userID: "anna", deviceID: "anna-phone", fixes: try makeFixes(count: 6, start: now - day)),
        FixInsertBatch(userID: "anna", deviceID: "anna-watch", fixes: try makeFixes(count: 2, start: now + 1000)),
        FixInsertBatch(
          userID: "bob", deviceID: "bob-phone", fixes: try makeFixes(count: 3, start: now - day, latitude: 51)),
      ], now: now + 10_000)
    try await store.insertToken(hash: "a1b2c3d4e5f60001", userID: "anna", createdAt: now - 2, expiresAt: now + day)
    try await store.insertToken(hash: "a1b2c3d4e5f60002", userID: "anna", createdAt: now - 1, expiresAt: now + day)
    try await store.insertToken(hash: "b0b0000000000001", userID: "bob", createdAt: now - 3, expiresAt: now + day)
    try await store.insertToken(hash: "b0b0000000000002", userID: "bob", createdAt: now - 4, expiresAt: now - 1)
    var sharing = try await store.sharing(owner: "bob")
    sharing.viewerGrants["anna"] = .some(nil)
    try await store.saveSharing(sharing, owner: "bob")
  }

  @Test(arguments: StoreEngine.all)
  func usersAreFoundListedAndDetailed(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await Self.populate(store)
      #expect(try await store.findUser("anna") == "anna")
      #expect(try await store.findUser("  BOB@example.com ") == "bob")
      #expect(try await store.findUser("+380501234567") == "carol")
      #expect(try await store.findUser("050 123 45 67") == nil)  // no country code: not a phone number
      #expect(try await store.findUser("+380 (50) 123-45-67") == "carol")
      #expect(try await store.findUser("dave") == nil)

      let summaries = try await store.userSummaries(limit: 10, offset: 0)
      #expect(summaries.map(\.id) == ["anna", "bob", "carol"])
      #expect(summaries[0].credentials == ["email:anna@example.com"])
      #expect(summaries[0].devices == 2 && summaries[0].fixes == 8 && summaries[0].lastFix == Self.now + 2000)
      #expect(summaries[1].fixes == 3 && summaries[2].fixes == 0 && summaries[2].lastFix == nil)
      #expect(summaries[2].credentials == ["phone:+380501234567"])
      #expect(try await store.userSummaries(limit: 1, offset: 1).map(\.id) == ["bob"])

      let anna = try #require(try await store.userDetail("anna", now: Self.now))
      #expect(anna.user == summaries[0])
      #expect(
        anna.devices == [
          DeviceSummary(
            id: "anna-phone", createdAt: Self.now - 3 * Self.day, fixes: 6, lastFix: Self.now - Self.day + 5000),
          DeviceSummary(id: "anna-watch", createdAt: Self.now - 3 * Self.day + 1, fixes: 2, lastFix: Self.now + 2000),
        ])
      #expect(anna.activeTokens == 2)
      #expect(Set(anna.groups.map(\.kind)) == Set(Group.standardGroups(for: "anna").map(\.kind.rawValue)))
      #expect(try await store.userDetail("dave", now: Self.now) == nil)
    }
  }

  @Test(arguments: StoreEngine.all)
  func disablingAndTokens(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await Self.populate(store)
      #expect(try await store.user(forTokenHash: "a1b2c3d4e5f60001", now: Self.now) == "anna")
      #expect(try await store.setDisabled("anna", true))
      #expect(try await !store.setDisabled("anna", true))
      #expect(try await store.user(forTokenHash: "a1b2c3d4e5f60001", now: Self.now) == nil)
      #expect(try await store.userSummaries(limit: 10, offset: 0).map(\.disabled) == [true, false, false])
      #expect(try await store.setDisabled("anna", false))
      #expect(try await store.user(forTokenHash: "a1b2c3d4e5f60001", now: Self.now) == "anna")

      let usable = try await store.tokens(user: nil, includeInactive: false, now: Self.now)
      #expect(usable.map(\.id) == ["a1b2c3d4e5f6", "a1b2c3d4e5f6", "b0b000000000"])
      #expect(usable.map(\.createdAt) == [Self.now - 1, Self.now - 2, Self.now - 3])
      let bobs = try await store.tokens(user: "bob", includeInactive: true, now: Self.now)
      #expect(bobs.map(\.state) == ["active", "expired"])
      #expect(
        try await store.tokenHashes(prefix: "A1B2C3D4", now: Self.now) == ["a1b2c3d4e5f60001", "a1b2c3d4e5f60002"])
      #expect(try await store.tokenHashes(prefix: "b0b0", now: Self.now) == ["b0b0000000000001"])
      #expect(try await store.tokenHashes(prefix: "b0b%", now: Self.now) == [])

      #expect(try await store.revokeTokens(user: "anna", now: Self.now) == 2)
      #expect(try await store.revokeTokens(user: "anna", now: Self.now) == 0)
      #expect(try await store.user(forTokenHash: "a1b2c3d4e5f60002", now: Self.now) == nil)
      let annas = try await store.tokens(user: "anna", includeInactive: true, now: Self.now)
      #expect(annas.map(\.state) == ["revoked", "revoked"] && annas.allSatisfy { $0.revokedAt == Self.now })
    }
  }

  /// A store stamps what it times itself — a token revoked at sign-out — with the clock it was given, not the
  /// system's: tests move time instead of waiting, and two nodes on one clock agree.
  @Test(arguments: StoreEngine.all)
  func aStoreStampsWhatItTimesItselfWithItsOwnClock(_ engine: StoreEngine) async throws {
    let signedOutAt = Self.now + 5_000
    try await engine.withTwoNodes(now: { signedOutAt }) { store, otherNode in
      try await Self.populate(store)
      try await otherNode.revokeToken(hash: "a1b2c3d4e5f60001")
      #expect(try await store.user(forTokenHash: "a1b2c3d4e5f60001", now: Self.now) == nil)
      let annas = try await store.tokens(user: "anna", includeInactive: true, now: Self.now)
      #expect(annas.compactMap(\.revokedAt) == [signedOutAt])
    }
  }

  @Test(arguments: StoreEngine.all)
  func aDryRunCountsWhatDeletingAUserThenDeletes(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await Self.populate(store)
      var friends = try #require(try await store.groups(owner: "bob").first { $0.kind == .friends })
      friends.members.insert("anna")
      try await store.saveGroup(friends)
      let venue = try Place(
        id: "cafe", kind: .venue, name: LocalizedText(["en": "Cafe"]),
        location: try Coordinate(latitude: 50.45, longitude: 30.52))
      try await store.upsertVenues([try VenueRecord(place: venue)])
      try await store.insertPromotion(Promotion(id: "p", venueID: "cafe", name: "P", promoCode: "P"))
      try await store.recordOffers(["p"], to: "anna", at: Self.now)
      #expect(try await store.redeem("p", by: "anna", at: Self.now) == .redeemed)

      let planned = try await store.deleteUser("anna", dryRun: true, batchSize: 3)
      let rows = Dictionary(uniqueKeysWithValues: planned.map { ($0.table, $0.rows) })
      #expect(rows["users"] == 1 && rows["fixes"] == 8 && rows["devices"] == 2 && rows["tokens"] == 2)
      #expect(rows["credentials"] == 1 && rows["promotion_offers"] == 1 && rows["promotion_redemptions"] == 1)
      #expect(rows["sharing (grants to the user)"] == 1)
      #expect(rows["group_members"] == 1)
      #expect(planned.last?.table == "users")
      #expect(try await store.findUser("anna") == "anna")  // a dry run changes nothing
      #expect(try await store.statistics(now: Self.now, days: 2).fixes == 11)

      let deleted = try await store.deleteUser("anna", dryRun: false, batchSize: 3)
      #expect(deleted == planned)
      #expect(try await store.findUser("anna") == nil)
      #expect(try await store.sharing(owner: "bob").viewerGrants["anna"] == nil)
      #expect(try await store.groups(owner: "bob").allSatisfy { !$0.members.contains("anna") })
      #expect(
        try await store.promotionActivity(venue: "cafe") == [
          PromotionActivity(promotionID: "p", offeredUsers: 0, offers: 0, redeemed: 0)
        ])
      #expect(try await store.userSummaries(limit: 10, offset: 0).map(\.id) == ["bob", "carol"])
      #expect(try await store.deleteUser("anna", dryRun: true, batchSize: 3) == [])
    }
  }

  @Test(arguments: StoreEngine.all)
  func statisticsAndUsersSeenNearAPlace(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await Self.populate(store)
      try await store.setDisabled("carol", true)
      let statistics = try await store.statistics(now: Self.now, days: 3)
      #expect(statistics.users == 3 && statistics.disabledUsers == 1 && statistics.devices == 3)
      #expect(statistics.fixes == 11 && statistics.activeTokens == 3)
      #expect(statistics.venues == 0 && statistics.promotions == 0)
      #expect(
        statistics.fixesPerDay == [
          DayCount(day: "2025-11-18", fixes: 0), DayCount(day: "2025-11-19", fixes: 9),
          DayCount(day: "2025-11-20", fixes: 2),
        ])
      #expect(statistics.databaseBytes > 0)

      let kyiv = try Coordinate(latitude: 50.45, longitude: 30.52)
      #expect(try await store.usersSeen(near: kyiv, radius: 500, from: 0, to: .max) == ["anna"])
      #expect(try await store.usersSeen(near: kyiv, radius: 500, from: Self.now, to: .max) == ["anna"])
      #expect(try await store.usersSeen(near: kyiv, radius: 500, from: Self.now + 3000, to: .max) == [])
      let north = try Coordinate(latitude: 51, longitude: 30.52)
      #expect(try await store.usersSeen(near: north, radius: 200, from: 0, to: .max) == ["bob"])
      #expect(try await store.usersSeen(near: kyiv, radius: 80_000, from: 0, to: .max) == ["anna", "bob"])
    }
  }
}
