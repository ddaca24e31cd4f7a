import DomainKit
import Foundation
import MeridianAPI
import MeridianStore
import NetworkingKit
import Testing

/// A promotion's image is an upload to the blob store (`POST /v1/blobs`), as a poll option's; the one it replaces
/// goes once nothing refers to it. On SQLite and on PostgreSQL (the database's blob table).
@Suite("Promotion images through the blob store", .inProcess)
struct PromotionImageTests {
  @Test(arguments: ["sqlite", "postgres"])
  func anAdvertiserAttachesUploadedImagesOnly(_ engine: String) async throws {
    try await PollTests.withServer(engine, { $0.polls.blobGracePeriod = 0 }) { server in
      let (cafe, _, anna) = try await AdvertiserTests.cafeWithOwner("image-cafe", on: server)
      let venue = VenueRef(id: cafe.id)
      let first = try await anna.send(API.uploadBlob, body: PollTests.png(800))
      let second = try await anna.send(API.uploadBlob, body: PollTests.png(900, seed: 3))
      var draft = PromotionDraft(name: "Morning coffee", promoCode: "AM", imageURL: "https://example.com/cup.png")
      // Only an uploaded image: not a URL elsewhere, not a blob that isn't there; nothing is stored.
      for url in ["https://example.com/cup.png", "/v1/blobs/" + String(repeating: "ab", count: 32)] {
        draft.imageURL = url
        await expectAPIError(.invalidRequest, status: 400) {
          try await anna.send(API.createAdvertisedPromotion, parameters: venue, body: draft)
        }
      }
      let store = server.app.environment.store
      #expect(try await store.promotions(venue: cafe.id).isEmpty)

      draft.imageURL = first.url
      let created = try await anna.send(API.createAdvertisedPromotion, parameters: venue, body: draft)
      #expect(created.promotion.imageURL == first.url)
      let blobs = server.app.environment.blobs
      // Referred to by the promotion: a release or the sweep keeps it.
      #expect(
        try await blobs.deleteUnreferenced([first.hash], in: store, now: Timestamp.milliseconds(Date()), gracePeriod: 0)
          .isEmpty)

      draft.imageURL = second.url
      let updated = try await anna.send(
        API.updateAdvertisedPromotion, parameters: PromotionRef(id: created.promotion.id), body: draft)
      #expect(updated.promotion.imageURL == second.url)
      #expect(try await blobs.hasBlob(first.hash) == false, "the replaced image went")
      #expect(try await blobs.hasBlob(second.hash))
      let image = try await anna.send(API.blob, parameters: BlobRef(hash: second.hash))
      #expect(image == PollTests.png(900, seed: 3))
    }
  }
}
