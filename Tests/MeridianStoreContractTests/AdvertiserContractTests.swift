import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import MeridianStore
import MeridianStoreTesting
import Testing

@Suite("Store contract: advertisers and promotion settings")
struct AdvertiserContractTests {
  static func venue(_ id: String) throws -> VenueRecord {
    try VenueRecord(
      place: Place(
        id: PlaceID(id), kind: .venue, name: LocalizedText(["en": id]),
        location: Coordinate(uncheckedLatitude: 50.45, longitude: 30.52)))
  }

  @Test(arguments: StoreEngine.all)
  func grantsAreListedAndRevokedAndBadGrantsStoreNothing(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await store.upsertVenues([Self.venue("a"), Self.venue("b"), Self.venue("c")])
      for (id, email) in [("anna", "anna@example.com"), ("bob", "bob@example.com")] {
        _ = try await store.createAccount(id: UserID(id), credential: .email(email), passwordHash: nil, now: 0)
      }
      try await store.grantAdvertiser("anna", venues: ["b", "a"], at: 10)
      try await store.grantAdvertiser("anna", venues: ["a"], at: 20)  // kept with its first time
      try await store.grantAdvertiser("bob", venues: ["c"], at: 30)
      #expect(
        try await store.advertiserGrants(user: nil) == [
          AdvertiserGrant(user: "anna", venue: "a", grantedAt: 10),
          AdvertiserGrant(user: "anna", venue: "b", grantedAt: 10),
          AdvertiserGrant(user: "bob", venue: "c", grantedAt: 30),
        ])
      #expect(try await store.isAdvertiser("anna", of: "a"))
      #expect(try await !store.isAdvertiser("anna", of: "c"))
      #expect(try await !store.isAdvertiser("bob", of: "a"))

      // An unknown venue among known ones, or an unknown user: nothing is granted.
      await #expect(throws: VenueRecordError.unknownVenue("nowhere")) {
        try await store.grantAdvertiser("bob", venues: ["a", "nowhere"], at: 40)
      }
      await #expect(throws: AdvertiserStoreError.unknownUser("carl")) {
        try await store.grantAdvertiser("carl", venues: ["a"], at: 40)
      }
      #expect(try await store.advertiserGrants(user: "bob").map(\.venue) == ["c"])

      #expect(try await store.revokeAdvertiser("anna", venues: ["b", "c"]) == 1)
      #expect(try await store.advertiserGrants(user: "anna").map(\.venue) == ["a"])
      #expect(try await store.revokeAdvertiser("bob", venues: nil) == 1)
      #expect(try await store.revokeAdvertiser("bob", venues: nil) == 0)
      #expect(try await store.advertiserGrants(user: nil).map(\.user) == ["anna"])
    }
  }

  @Test(arguments: StoreEngine.all)
  func promotionsAreSavedWithTheirSettingsInOneTransaction(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await store.upsertVenues([Self.venue("a"), Self.venue("b")])
      let morning = try TimeOfDayWindow(from: (7, 0), to: (11, 0))
      let coffee = Promotion(
        id: "coffee", venueID: "a", name: "Coffee", promoCode: "AM", oldPrice: Money(amount: 600, currency: "UAH"),
        newPrice: Money(amount: 450, currency: "UAH"), audience: .special, window: morning)
      let rule = PromotionEligibility(radius: 80, minimumDays: 2, lookbackDays: 7)
      try await store.savePromotion(coffee, settings: PromotionSettings(state: .running, eligibility: rule))
      try await store.insertPromotion(Promotion(id: "plain", venueID: "a", name: "Plain", promoCode: "P"))
      #expect(try await store.promotion("coffee") == coffee)
      #expect(
        try await store.promotionSettings(venue: "a") == [
          "coffee": PromotionSettings(state: .running, eligibility: rule)
        ])
      #expect(try await store.promotionSettings(venue: "b").isEmpty)

      var edited = coffee
      edited.name = "Coffee and croissant"
      try await store.savePromotion(edited, settings: PromotionSettings(state: .paused, eligibility: rule))
      #expect(try await store.promotion("coffee")?.name == "Coffee and croissant")
      #expect(try await store.promotionSettings(venue: "a")["coffee"]?.state == .paused)

      // A promotion of an unknown venue: neither it nor its settings are stored.
      let lost = Promotion(id: "lost", venueID: "nowhere", name: "Lost", promoCode: "L")
      await #expect(throws: VenueRecordError.unknownVenue("nowhere")) {
        try await store.savePromotion(lost, settings: PromotionSettings(state: .ended))
      }
      #expect(try await store.promotion("lost") == nil)
      #expect(try await store.promotionSettings(venue: "a").keys.sorted() == ["coffee"])
    }
  }
}
