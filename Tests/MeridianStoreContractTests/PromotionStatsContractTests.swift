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
  @Test(arguments: StoreEngine.all)
  func countsPerIntervalEqualARecountOfTheOffersAndRedemptions(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await store.upsertVenues([
        try VenueRecord(
          place: Place(
            id: "v", kind: .venue, name: LocalizedText(["en": "V"]),
            location: Coordinate(uncheckedLatitude: 50.45, longitude: 30.52)))
      ])
      for id in ["p", "q"] {
        try await store.insertPromotion(Promotion(id: PromotionID(id), venueID: "v", name: id, promoCode: id))
      }
      let users = (0..<12).map { UserID("u\($0)") }
      for user in users {
        _ = try await store.createAccount(
          id: user, credential: .email("\(user)@example.com"), passwordHash: nil, now: 0)
      }
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
}
