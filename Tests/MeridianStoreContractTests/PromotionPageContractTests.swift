import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import MeridianStore
import MeridianStoreTesting
import Testing

@Suite("Store contract: every venue's promotions, a page at a time")
struct PromotionPageContractTests {
  @Test(arguments: StoreEngine.all)
  func pagesFilterByVenueAdvertiserAndState(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await VenueClaimContractTests.storeVenues(["a-cafe", "b-bar"], in: store)
      _ = try await store.createAccount(id: "anna", credential: .email("anna@example.com"), passwordHash: nil, now: 0)
      try await store.grantAdvertiser("anna", venues: ["b-bar"], at: 0)
      for (venue, id) in [("a-cafe", "p1"), ("a-cafe", "p2"), ("b-bar", "p3"), ("b-bar", "p4")] {
        try await store.insertPromotion(
          Promotion(id: PromotionID(id), venueID: PlaceID(venue), name: id, promoCode: id))
      }
      let rule = PromotionEligibility(radius: 300, minimumDays: 2, lookbackDays: 7)
      let paused = try #require(try await store.promotion("p4"))
      try await store.savePromotion(paused, settings: PromotionSettings(state: .paused, eligibility: rule))

      func ids(_ filter: PromotionFilter, limit: Int = 10, offset: Int = 0) async throws -> [String] {
        try await store.promotionPage(filter, limit: limit, offset: offset).map(\.promotion.id.rawValue)
      }
      #expect(try await ids(PromotionFilter()) == ["p1", "p2", "p3", "p4"])
      #expect(try await ids(PromotionFilter(), limit: 2, offset: 1) == ["p2", "p3"])
      #expect(try await ids(PromotionFilter(), limit: 2, offset: 4).isEmpty)
      #expect(try await ids(PromotionFilter(venue: "a-cafe")) == ["p1", "p2"])
      #expect(try await ids(PromotionFilter(advertiser: "anna")) == ["p3", "p4"])
      #expect(try await ids(PromotionFilter(state: .running)) == ["p1", "p2", "p3"])
      #expect(try await ids(PromotionFilter(advertiser: "anna", state: .paused)) == ["p4"])
      #expect(try await ids(PromotionFilter(venue: "a-cafe", advertiser: "anna")).isEmpty)
      let page = try await store.promotionPage(PromotionFilter(state: .paused), limit: 10, offset: 0)
      #expect(page.first?.settings == PromotionSettings(state: .paused, eligibility: rule))
      #expect(page.first?.promotion == paused)
    }
  }
}
