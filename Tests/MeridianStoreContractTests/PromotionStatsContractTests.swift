import DomainKit
import DomainKitTesting
import Foundation
import GeoKit
import MeridianAPI
import MeridianStore
import MeridianStoreTesting
import Testing

@Suite("Store contract: promotion counts over time")
struct PromotionStatsContractTests {
  /// Venue `v` with `promotions`, and accounts for `users`.
  static func seed(_ store: any MeridianStore, promotions: [PromotionID], users: [UserID]) async throws -> [UserID] {
    try await store.upsertVenues([
      try VenueRecord(
        place: Place(
          id: "v", kind: .venue, name: LocalizedText(["en": "V"]),
          location: Coordinate(uncheckedLatitude: 50.45, longitude: 30.52)))
    ])
    for id in promotions {
      try await store.insertPromotion(Promotion(id: id, venueID: "v", name: id.rawValue, promoCode: id.rawValue))
    }
    for user in users {
      _ = try await store.createAccount(id: user, credential: .email("\(user)@example.com"), passwordHash: nil, now: 0)
    }
    return users
  }

  @Test(arguments: StoreEngine.all)
  func countsPerIntervalEqualARecountOfTheOffersAndRedemptions(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      let users = try await Self.seed(store, promotions: ["p", "q"], users: (0..<12).map { UserID("u\($0)") })
      var random = SplitMix64(seed: 11)
      var offers: [(user: UserID, at: Int64)] = []
      var redemptions: [Int64] = []
      for _ in 0..<300 {
        let user = users[Int.random(in: 0..<users.count, using: &random)]
        let at = Int64.random(in: 0..<10_000, using: &random)
        // "q" twice in one listing: counted twice; "p" once.
        try await store.recordOffers(["p", "q", "q"], to: user, at: at)
        offers.append((user, at))
      }
      for user in users.prefix(8) {
        let at = Int64.random(in: 5_000..<12_000, using: &random)
        if case .redeemed = try await store.redeem("p", by: user, at: at) { redemptions.append(at) }
      }
      #expect(redemptions.count == 8)

      let boundaries: [Int64] = [-5, 0, 1_000, 2_500, 2_501, 7_000, 10_000, 20_000]
      let counts = try await store.promotionCounts("p", boundaries: boundaries)
      let doubled = try await store.promotionCounts("q", boundaries: boundaries)
      #expect(counts.count == boundaries.count - 1)
      for (index, (start, end)) in zip(boundaries, boundaries.dropFirst()).enumerated() {
        let inside = offers.filter { $0.at >= start && $0.at < end }
        let expected = PromotionCounts(
          offers: inside.count, people: Set(inside.map(\.user)).count,
          redeemed: redemptions.filter { $0 >= start && $0 < end }.count)
        #expect(counts[index] == expected, "[\(start), \(end))")
        #expect(doubled[index] == PromotionCounts(offers: 2 * expected.offers, people: expected.people, redeemed: 0))
      }
      #expect(try await store.promotionCounts("p", boundaries: [5]).isEmpty)
      #expect(
        try await store.promotionCounts("none", boundaries: [0, 1]) == [
          PromotionCounts(offers: 0, people: 0, redeemed: 0)
        ])
    }
  }

  /// The quarter-hour summary behind the counts: offers over many days and quarter hours, read by day-aligned
  /// boundaries (the summary alone), cut ones (summary and events) and after a user's deletion (both cascade).
  @Test(arguments: StoreEngine.all)
  func summaryCountsEqualARecountAtAnyBoundary(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      let users = try await Self.seed(store, promotions: ["p"], users: (0..<9).map { UserID("s\($0)") })
      let slot = PromotionSlotSplit.slot
      let day: Int64 = 86_400_000
      let base: Int64 = 1_767_225_600_000  // 2026-01-01T00:00Z
      var random = SplitMix64(seed: 5)
      var offers: [(user: UserID, at: Int64)] = []
      for _ in 0..<400 {
        let user = users[Int.random(in: 0..<users.count, using: &random)]
        let at = base + Int64.random(in: 0..<(6 * day), using: &random)
        try await store.recordOffers(["p"], to: user, at: at)
        offers.append((user, at))
      }
      func recount(_ boundaries: [Int64], without: Set<UserID> = []) -> [PromotionCounts] {
        zip(boundaries, boundaries.dropFirst()).map { start, end in
          let inside = offers.filter { $0.at >= start && $0.at < end && !without.contains($0.user) }
          return PromotionCounts(offers: inside.count, people: Set(inside.map(\.user)).count, redeemed: 0)
        }
      }
      let days = (0...6).map { base + Int64($0) * day }
      let kyiv = days.map { $0 - 2 * 3_600_000 }  // UTC+2 midnights
      let kathmandu = days.map { $0 - 5 * 3_600_000 - 45 * 60_000 }  // UTC+5:45
      let cut = [base + 1, base + slot - 1, base + 3 * slot + 17, base + day + 5, base + 6 * day]
      let year = (0...366).map { base - 180 * day + Int64($0) * day }  // a year of days, as the advertiser reads it
      for boundaries in [days, kyiv, kathmandu, cut, [base, base + 6 * day], year] {
        #expect(try await store.promotionCounts("p", boundaries: boundaries) == recount(boundaries))
      }
      #expect(recount(days).allSatisfy { $0.people > 1 }, "each day has several people")
      _ = try await store.deleteUser("s0", dryRun: false, batchSize: 100)
      #expect(try await store.promotionCounts("p", boundaries: cut) == recount(cut, without: ["s0"]))
    }
  }
}

@Suite("Store contract: a special promotion's audience over time")
struct EligibleAudienceOverTimeContractTests {
  /// The audience at many instants from one read equals the audience counted at each instant on its own: people
  /// who pass on enough days, one who stops for a visit, one who passes too rarely.
  @Test(arguments: StoreEngine.all)
  func countsAtManyInstantsEqualACountAtEach(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      let venue = try Place(
        id: "v", kind: .venue, name: LocalizedText(["en": "V"]),
        location: Coordinate(uncheckedLatitude: 50.45, longitude: 30.52), timeZone: "Europe/Kyiv")
      try await store.upsertVenues([try VenueRecord(place: venue)])
      let day: Int64 = 86_400_000
      let base: Int64 = 1_767_225_600_000  // 2026-01-01T00:00Z
      // (user, days on which they pass, whether they stay 20 minutes on the last of them)
      let people: [(UserID, [Int], Bool)] = [
        ("often", [1, 2, 3, 5, 8], false), ("daily", Array(0..<12), false), ("stays", [2, 3, 4, 6], true),
        ("rarely", [1, 9], false),
      ]
      for (user, days, stays) in people {
        _ = try await store.createAccount(
          id: user, credential: .email("\(user)@example.com"), passwordHash: nil, now: 0)
        let device = DeviceID("\(user)-phone")
        _ = try await store.claimDevice(device, owner: user, now: 0)
        var fixes: [LocationFix] = []
        for (index, dayIndex) in days.enumerated() {
          let start = base + Int64(dayIndex) * day + 9 * 3_600_000
          let stay = stays && index == days.count - 1
          for minute in 0..<(stay ? 21 : 2) {
            fixes.append(
              try LocationFix(
                deviceID: device, timestamp: start + Int64(minute) * 60_000, latitude: 50.45, longitude: 30.52,
                horizontalAccuracy: 5))
          }
          // Then on elsewhere, so each pass is a run of its own.
          fixes.append(
            try LocationFix(
              deviceID: device, timestamp: start + 3_600_000, latitude: 50.47, longitude: 30.52, horizontalAccuracy: 5))
        }
        _ = try await store.insertFixes([FixInsertBatch(userID: user, deviceID: device, fixes: fixes)], now: base)
      }
      let audience = EligibleAudience(
        store: store, rule: PromotionEligibility(radius: 150, minimumDays: 3, lookbackDays: 5))
      let times = (0..<14).map { base + Int64($0) * day + day - 1 }
      var each: [Int] = []
      for time in times { each.append(try await audience.count(for: venue, now: time)) }
      #expect(try await audience.counts(for: venue, at: times) == each)
      #expect(Set(each).count > 2, "the audience changes over the days: \(each)")
    }
  }
}

@Suite("Promotion statistics: the quarter-hour split")
struct PromotionSlotSplitTests {
  @Test func aSplitKeepsWholeQuarterHoursForTheSummary() {
    let slot = PromotionSlotSplit.slot
    let aligned = PromotionSlotSplit(start: 2 * slot, end: 10 * slot)
    #expect(aligned.summaryStart == 2 * slot && aligned.summaryEnd == 10 * slot)
    let cut = PromotionSlotSplit(start: 2 * slot + 1, end: 10 * slot - 1)
    #expect(cut.summaryStart == 3 * slot && cut.summaryEnd == 9 * slot)
    let inside = PromotionSlotSplit(start: slot + 5, end: slot + 10)
    #expect(inside.summaryStart == 2 * slot && inside.summaryEnd == 2 * slot)
    #expect(PromotionSlotSplit.floor(-1) == -slot && PromotionSlotSplit.floor(slot) == slot)
  }
}
