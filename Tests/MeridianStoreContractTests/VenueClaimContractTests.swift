import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import MeridianStore
import MeridianStoreTesting
import Testing

@Suite("Store contract: claiming a venue")
struct VenueClaimContractTests {
  /// Venues with these ids (named by them) in Kyiv.
  static func storeVenues(_ ids: [PlaceID], in store: any MeridianStore) async throws {
    try await store.upsertVenues(
      try ids.map { id in
        try VenueRecord(
          place: Place(
            id: id, kind: .venue, name: LocalizedText(["en": id.rawValue]),
            location: Coordinate(uncheckedLatitude: 50.45, longitude: 30.52)))
      })
  }

  @Test(arguments: StoreEngine.all)
  func aClaimWaitsUntilAnOperatorApprovesOrRejectsIt(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await Self.storeVenues(["cafe", "bar"], in: store)
      for user in ["anna", "bob"] {
        _ = try await store.createAccount(
          id: UserID(user), credential: .email("\(user)@example.com"), passwordHash: nil, now: 0)
      }
      let first = try await store.claimVenue(
        VenueClaim(id: "c1", user: "anna", venue: "cafe", note: "I own it", claimedAt: 10))
      #expect(first.state == .pending && first.note == "I own it")
      // Asking again while it waits answers the waiting claim.
      let again = try await store.claimVenue(VenueClaim(id: "c2", user: "anna", venue: "cafe", claimedAt: 20))
      #expect(again == first)
      _ = try await store.claimVenue(VenueClaim(id: "c3", user: "bob", venue: "bar", claimedAt: 30))
      _ = try await store.claimVenue(VenueClaim(id: "c4", user: "anna", venue: "gone", claimedAt: 40))
      await #expect(throws: AdvertiserStoreError.unknownUser("nobody")) {
        try await store.claimVenue(VenueClaim(id: "c5", user: "nobody", venue: "cafe", claimedAt: 50))
      }
      #expect(try await store.venueClaims(user: nil, state: .pending).map(\.id) == ["c4", "c3", "c1"])
      #expect(try await store.venueClaims(user: "anna", state: nil).map(\.id) == ["c4", "c1"])
      #expect(try await store.isAdvertiser("anna", of: "cafe") == false)

      let approved = try await store.decideVenueClaim("c1", approve: true, reason: nil, at: 100)
      #expect(approved.state == .approved && approved.decidedAt == 100)
      #expect(try await store.isAdvertiser("anna", of: "cafe"))
      let rejected = try await store.decideVenueClaim("c3", approve: false, reason: "Not the owner", at: 110)
      #expect(rejected.state == .rejected && rejected.reason == "Not the owner")
      #expect(try await store.isAdvertiser("bob", of: "bar") == false)

      // Answered once; an unknown claim or venue changes nothing.
      await #expect(throws: AdvertiserStoreError.claimDecided(rejected)) {
        try await store.decideVenueClaim("c3", approve: true, reason: nil, at: 120)
      }
      await #expect(throws: AdvertiserStoreError.unknownClaim("c9")) {
        try await store.decideVenueClaim("c9", approve: true, reason: nil, at: 120)
      }
      await #expect(throws: VenueRecordError.unknownVenue("gone")) {
        try await store.decideVenueClaim("c4", approve: true, reason: nil, at: 120)
      }
      #expect(try await store.venueClaims(user: "anna", state: .pending).map(\.id) == ["c4"])
      #expect(try await store.advertiserGrants(user: nil).map(\.venue) == ["cafe"])
      // A rejected person may ask again.
      let retry = try await store.claimVenue(VenueClaim(id: "c6", user: "bob", venue: "bar", claimedAt: 130))
      #expect(retry.id == "c6" && retry.state == .pending)
    }
  }
}
