import DomainKit
import Foundation
import MeridianBlobFiles
import MeridianStore
import MeridianStoreTesting
import Testing

/// Releasing blobs: only what no stored image URL refers to goes, and only when it was last uploaded at least the
/// grace period ago. Each engine with its own blob store (PostgreSQL's table; files for SQLite).
@Suite("Store contract: releasing shared blobs")
struct BlobContractTests {
  /// 2026-11-01T00:00:00Z.
  static let start: Int64 = 1_761_955_200_000
  static let day: Int64 = 24 * 60 * 60 * 1000

  /// `body` with the engine's store and its blob store.
  func withBlobs(_ engine: StoreEngine, _ body: (any MeridianStore, any BlobStore) async throws -> Void)
    async throws
  {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("blobs-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: directory) }
    try await engine.with { store in try await body(store, store.databaseBlobs ?? FileBlobStore(directory: directory)) }
  }

  /// A PNG whose bytes depend on `seed`.
  func png(_ seed: UInt8) -> Data {
    Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + Array(repeating: seed, count: 64))
  }

  func makeUser(_ store: any MeridianStore, _ name: String) async throws {
    _ = try #require(
      try await store.createAccount(
        id: UserID(name), credential: .email("\(name)@example.com"), passwordHash: nil, now: Self.start))
  }

  func makePoll(_ store: any MeridianStore, _ id: String, author: String, images: (String, String)) async throws {
    let poll = try Poll(
      id: PollID(id), authorID: UserID(author), title: "Which one? \(id)", description: "Pick one",
      first: PollOption(text: "Left", imageURL: "/v1/blobs/\(images.0)"),
      second: PollOption(text: "Right", imageURL: "/v1/blobs/\(images.1)"), createdAt: Self.start)
    _ = try await store.createPoll(poll, closesAt: nil, reward: 0, now: Self.start)
  }

  @Test(arguments: StoreEngine.all)
  func aPromotionImageSharedWithAPollSurvivesThePollsDeletion(_ engine: StoreEngine) async throws {
    try await withBlobs(engine) { store, blobs in
      let shared = try await blobs.putBlob(png(1), kind: .png, now: Self.start)
      let own = try await blobs.putBlob(png(2), kind: .png, now: Self.start)
      try await store.upsertVenues([AdvertiserContractTests.venue("cafe")])
      try await store.insertPromotion(
        Promotion(id: "coffee", venueID: "cafe", name: "Coffee", promoCode: "AM", imageURL: "/v1/blobs/\(shared)"))
      try await makeUser(store, "anna")
      try await makePoll(store, "p", author: "anna", images: (shared, own))

      // The promotion still shows the shared image: only the poll's own one is released, and goes.
      #expect(try await store.deletePoll("p") == [own])
      #expect(try await store.unreferencedBlobs([shared, own]) == [own])
      let later = Self.start + 2 * Self.day
      #expect(try await blobs.deleteUnreferenced([shared, own], in: store, now: later) == [own])
      #expect(try await blobs.hasBlob(shared))
      #expect(try await !blobs.hasBlob(own))
    }
  }

  @Test(arguments: StoreEngine.all)
  func aFreshUploadOfAReleasedAvatarsBytesSurvivesTheGracePeriod(_ engine: StoreEngine) async throws {
    try await withBlobs(engine) { store, blobs in
      try await makeUser(store, "anna")
      let photo = try await blobs.putBlob(png(3), kind: .png, now: Self.start)
      var anna = try #require(try await store.profile("anna"))
      anna.avatar = "/v1/blobs/\(photo)"
      try await store.saveProfile(anna)

      // Two days on, someone uploads the same bytes for a poll not created yet; then anna drops her photo.
      let upload = Self.start + 2 * Self.day
      #expect(try await blobs.putBlob(png(3), kind: .png, now: upload) == photo)
      anna.avatar = nil
      try await store.saveProfile(anna)
      #expect(try await store.unreferencedBlobs([photo]) == [photo])
      #expect(try await blobs.deleteUnreferenced([photo], in: store, now: upload + 60_000).isEmpty)
      #expect(try await blobs.hasBlob(photo))
      // An older upload time never moves the last upload back.
      _ = try await blobs.putBlob(png(3), kind: .png, now: Self.start)
      let shorter = try await blobs.deleteUnreferenced([photo], in: store, now: upload + 60_000, gracePeriod: 120_000)
      #expect(shorter.isEmpty)
      #expect(try await blobs.hasBlob(photo))

      // Never attached: once the grace period is over, the next release of the hash takes it.
      let over = upload + BlobGracePeriod.default
      #expect(try await blobs.deleteUnreferenced([photo], in: store, now: over) == [photo])
      #expect(try await !blobs.hasBlob(photo))
    }
  }

  @Test(arguments: StoreEngine.all)
  func anOldUnreferencedBlobIsRemovedAndReferencedOnesStay(_ engine: StoreEngine) async throws {
    try await withBlobs(engine) { store, blobs in
      try await makeUser(store, "anna")
      try await makeUser(store, "boris")
      let (left, right) = (
        try await blobs.putBlob(png(4), kind: .png, now: Self.start),
        try await blobs.putBlob(png(5), kind: .png, now: Self.start)
      )
      try await makePoll(store, "old", author: "anna", images: (left, right))
      try await makePoll(store, "other", author: "boris", images: (right, right))
      let released = try #require(try await store.deletePoll("old"))
      #expect(released == [left])
      let later = Self.start + 3 * Self.day
      // Old and unreferenced: removed; still referenced (however old): kept. Not a hash, or not stored: nothing.
      let missing = String(repeating: "e", count: 64)
      let deleted = try await blobs.deleteUnreferenced(released + [right, missing, "../x"], in: store, now: later)
      #expect(deleted == [left])
      #expect(try await !blobs.hasBlob(left))
      #expect(try await blobs.hasBlob(right))
      #expect(try await !blobs.deleteBlob(missing, uploadedAtOrBefore: later))
    }
  }

  @Test(arguments: StoreEngine.all)
  func aSweepDeletesOnlyOldUnreferencedBlobsPageByPage(_ engine: StoreEngine) async throws {
    try await withBlobs(engine) { store, blobs in
      try await makeUser(store, "anna")
      // Seven old uploads: two become a poll's images, five are never attached; one fresh upload.
      var old: [String] = []
      for seed in UInt8(10)..<17 { old.append(try await blobs.putBlob(png(seed), kind: .png, now: Self.start)) }
      try await makePoll(store, "kept", author: "anna", images: (old[0], old[1]))
      let fresh = try await blobs.putBlob(png(20), kind: .png, now: Self.start + 3 * Self.day)
      let now = Self.start + 3 * Self.day + 60_000
      let orphans = Array(old[2...]).sorted()

      // Paging by hash: every old blob is listed once, in order, and the fresh one not at all.
      var listed: [String] = []
      var after: String?
      while true {
        let page = try await blobs.blobHashes(uploadedAtOrBefore: now - BlobGracePeriod.default, after: after, limit: 3)
        listed += page
        guard let last = page.last, page.count == 3 else { break }
        after = last
      }
      #expect(listed == old.sorted())

      let dry = try await blobs.sweepUnreferenced(in: store, now: now, dryRun: true, pageSize: 2)
      #expect(dry.examined == 7)
      #expect(dry.unreferenced == orphans)
      #expect(try await blobs.hasBlob(orphans[0]))

      let swept = try await blobs.sweepUnreferenced(in: store, now: now, pageSize: 2)
      #expect(swept.examined == 7)
      #expect(swept.unreferenced == orphans)
      for hash in orphans { #expect(try await !blobs.hasBlob(hash)) }
      #expect(try await blobs.hasBlob(old[0]))
      #expect(try await blobs.hasBlob(old[1]))
      #expect(try await blobs.hasBlob(fresh))
      // Nothing left to do: a second sweep examines the two kept images and deletes nothing.
      let again = try await blobs.sweepUnreferenced(in: store, now: now)
      #expect(again.examined == 2)
      #expect(again.unreferenced.isEmpty)
    }
  }
}
