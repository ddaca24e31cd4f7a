import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import MeridianStore
import MeridianStoreTesting
import NetworkingKit
import Testing

@Suite("Claiming a venue over HTTP", .inProcess)
struct VenueClaimTests {
  /// A café owner claims the café, waits, is approved by an operator and then manages its promotions; bad claims
  /// are refused with stable codes and store nothing.
  @Test func aPersonClaimsAVenueAndAnOperatorApproves() async throws {
    try await TestServer.with { server in
      let store = server.app.environment.store
      let cafe = try Place(
        id: "claimed-cafe", kind: .venue, name: LocalizedText(["en": "Café"]),
        location: Coordinate(uncheckedLatitude: 50.45, longitude: 30.52), timeZone: "Europe/Kyiv")
      try await store.upsertVenues([try VenueRecord(place: cafe)])
      let (session, anna) = try await server.signUp("anna")

      let claim = try await anna.send(
        API.claimVenue, body: VenueClaimRequest(venueID: cafe.id, note: "  I own the café  "))
      #expect(claim.state == .pending && claim.venue == cafe.id && claim.user == session.userId)
      #expect(claim.note == "I own the café")
      // Asking again while it waits answers the same claim.
      #expect(try await anna.send(API.claimVenue, body: VenueClaimRequest(venueID: cafe.id)).id == claim.id)
      #expect(try await anna.send(API.venueClaims).claims.map(\.id) == [claim.id])
      await expectAPIError(.notAdvertiser, status: 403) {
        try await anna.send(API.advertiserPromotions, parameters: VenueRef(id: cafe.id))
      }

      await expectAPIError(.notFound, status: 404) {
        try await anna.send(API.claimVenue, body: VenueClaimRequest(venueID: "nowhere"))
      }
      await expectAPIError(.invalidRequest, status: 400) {
        try await anna.send(
          API.claimVenue, body: VenueClaimRequest(venueID: cafe.id, note: String(repeating: "x", count: 501)))
      }
      await expectAPIError(.tokenInvalid, status: 401) {
        try await server.client().send(API.claimVenue, body: VenueClaimRequest(venueID: cafe.id))
      }
      #expect(try await store.venueClaims(user: nil, state: nil).count == 1)

      // The operator approves (meridian-admin advertisers approve); the café is Anna's to advertise.
      _ = try await store.decideVenueClaim(claim.id, approve: true, reason: nil, at: 1)
      #expect(try await anna.send(API.venueClaims).claims.first?.state == .approved)
      #expect(try await anna.send(API.advertiserVenues).venues.map(\.id) == [cafe.id])
      let created = try await anna.send(
        API.createAdvertisedPromotion, parameters: VenueRef(id: cafe.id),
        body: PromotionDraft(name: "Morning coffee", promoCode: "AM"))
      #expect(created.promotion.venueID == cafe.id)
      await expectAPIError(.alreadyAdvertiser, status: 409) {
        try await anna.send(API.claimVenue, body: VenueClaimRequest(venueID: cafe.id))
      }
    }
  }
}
