import DomainKit
import Foundation
import MeridianAPI
import MeridianStore
import MeridianStoreTesting
import Testing

/// Share links: stored by the hash of their token, found by it, listed newest first with their state, revoked only
/// by their owner (once), gone with their owner's account; the fixes a link shows are its devices' in its window.
@Suite("Store contract: share links")
struct ShareLinkContractTests {
  func link(_ id: String, owner: UserID = "anna", devices: [DeviceID]? = nil, at time: Int64 = 1_000) -> ShareLinkRecord
  {
    ShareLinkRecord(
      id: id, owner: owner, tokenHash: "hash-\(id)", label: "Walk \(id)", devices: devices, track: id.hasSuffix("t"),
      createdAt: time, until: time + 60_000)
  }

  @Test(arguments: StoreEngine.all)
  func linksAreFoundByTokenHashListedAndRevokedByTheirOwnerOnly(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await FixContractTests.accounts(store, ["anna", "boris"])
      try await store.createShareLink(link("l1", devices: ["phone", "watch"], at: 1_000))
      try await store.createShareLink(link("l2t", at: 2_000))
      try await store.createShareLink(link("b1", owner: "boris", at: 3_000))

      let found = try #require(try await store.shareLink(tokenHash: "hash-l1"))
      #expect(found == link("l1", devices: ["phone", "watch"], at: 1_000))
      #expect(try await store.shareLink(id: "l2t")?.track == true)
      #expect(try await store.shareLink(id: "l2t")?.devices == nil)
      #expect(try await store.shareLink(tokenHash: "hash-none") == nil)
      // A disabled owner's links are no links to their holders.
      try await store.setDisabled("anna", true)
      #expect(try await store.shareLink(tokenHash: "hash-l1") == nil)
      try await store.setDisabled("anna", false)
      #expect(try await store.shareLink(tokenHash: "hash-l1")?.id == "l1")
      #expect(try await store.shareLinks(owner: "anna").map(\.id) == ["l2t", "l1"])

      #expect(try await store.revokeShareLink(id: "b1", owner: "anna", now: 5_000) == nil)
      #expect(try await store.shareLink(id: "b1")?.revokedAt == nil)
      let revoked = try #require(try await store.revokeShareLink(id: "l1", owner: "anna", now: 5_000))
      #expect(revoked.revokedAt == 5_000 && revoked.state(at: 5_001) == .revoked)
      #expect(try await store.revokeShareLink(id: "l1", owner: "anna", now: 9_000)?.revokedAt == 5_000)
      #expect(try await store.revokeShareLink(id: "missing", owner: "anna", now: 9_000) == nil)
      #expect(try await store.shareLink(tokenHash: "hash-l1")?.state(at: 1_500) == .revoked)
      #expect(try await store.shareLink(id: "l2t")?.state(at: 61_999) == .active)
      #expect(try await store.shareLink(id: "l2t")?.state(at: 62_000) == .expired)

      _ = try await store.deleteUser("anna", dryRun: false, batchSize: 100)
      #expect(try await store.shareLinks(owner: "anna").isEmpty)
      #expect(try await store.shareLink(tokenHash: "hash-l2t") == nil)
      #expect(try await store.shareLink(id: "b1") != nil)
    }
  }

  /// The quota counts the links active at the new one's creation, in the step that inserts it (never two over the
  /// limit, even at once); the fan-out reads only the links that end after a time; the list is bounded.
  @Test(arguments: StoreEngine.all)
  func theQuotaCountsActiveLinksAsItInsertsAndOnlyRecentLinksAreRead(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await FixContractTests.accounts(store, ["anna"])
      #expect(try await store.createShareLink(link("old", at: 1_000), activeLimit: 2))  // ends at 61 s
      #expect(try await store.createShareLink(link("mid", at: 50_000), activeLimit: 2))  // ends at 110 s
      _ = try await store.revokeShareLink(id: "mid", owner: "anna", now: 55_000)
      // At 70 s "old" has expired and "mid" is revoked: neither counts.
      let concurrent = try await withThrowingTaskGroup(of: Bool.self) { group in
        for index in 0..<6 {
          group.addTask { try await store.createShareLink(self.link("new\(index)", at: 70_000), activeLimit: 2) }
        }
        return try await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
      }
      #expect(concurrent == 2)
      #expect(try await store.shareLinks(owner: "anna").count == 4)

      // Ended after 60 s: "old" (expired at 61 s), "mid" (revoked at 55 s) is not, the new ones are active.
      let recent = try await store.shareLinks(owner: "anna", endedAfter: 60_000, limit: 100).map(\.id)
      #expect(!recent.contains("mid") && recent.contains("old") && recent.count == 3)
      #expect(try await store.shareLinks(owner: "anna", endedAfter: 62_000, limit: 100).count == 2)
      #expect(try await store.shareLinks(owner: "anna", endedAfter: nil, limit: 1).count == 1)
    }
  }

  @Test(arguments: StoreEngine.all)
  func aLinkShowsItsDevicesFixesInItsWindowNewestFirst(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await FixContractTests.accounts(store, ["anna", "boris"])
      for device: DeviceID in ["phone", "watch"] { _ = try await store.claimDevice(device, owner: "anna", now: 0) }
      _ = try await store.claimDevice("other", owner: "boris", now: 0)
      let phone = try makeFixes(count: 4, start: 10_000)  // 10, 11, 12, 13 s
      let watch = try makeFixes(count: 2, start: 11_500)  // 11.5, 12.5 s
      _ = try await store.insertFixes(
        [
          FixInsertBatch(userID: "anna", deviceID: "phone", fixes: phone),
          FixInsertBatch(userID: "anna", deviceID: "watch", fixes: watch),
          FixInsertBatch(userID: "boris", deviceID: "other", fixes: try makeFixes(count: 3, start: 10_000)),
        ], now: 1)

      let all = try await store.sharedFixes(owner: "anna", devices: nil, from: 11_000, through: 12_500, limit: 10)
      #expect(all.map(\.timestamp) == [12_500, 12_000, 11_500, 11_000])
      #expect(all.map(\.deviceID) == ["watch", "phone", "watch", "phone"])
      let phoneOnly = try await store.sharedFixes(
        owner: "anna", devices: ["phone"], from: 0, through: 20_000, limit: 10)
      #expect(phoneOnly.map(\.timestamp) == [13_000, 12_000, 11_000, 10_000])
      let newest = try await store.sharedFixes(
        owner: "anna", devices: ["watch", "phone"], from: 0, through: 12_999, limit: 1)
      #expect(newest.map(\.timestamp) == [12_500])
      #expect(try await store.sharedFixes(owner: "anna", devices: [], from: 0, through: 20_000, limit: 10).isEmpty)
      #expect(
        try await store.sharedFixes(owner: "anna", devices: ["other"], from: 0, through: 20_000, limit: 10).isEmpty)
    }
  }
}
