import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import MeridianStore
import MeridianStoreTesting
import Testing

/// Devices, OsmAnd identifiers, the group-commit insert and history queries.
@Suite("Store contract: devices, fixes and history")
struct FixContractTests {
  static func accounts(_ store: any MeridianStore, _ ids: [UserID]) async throws {
    for id in ids {
      _ = try await store.createAccount(id: id, credential: .email("\(id)@example.com"), passwordHash: nil, now: 0)
    }
  }

  @Test(arguments: StoreEngine.all)
  func devicesBelongToOneAccountWithinItsQuota(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await Self.accounts(store, ["anna", "bob"])
      #expect(try await store.claimDevice("phone", owner: "anna", now: 1, maxDevices: 2) == .claimed)
      #expect(try await store.claimDevice("phone", owner: "anna", now: 2, maxDevices: 2) == .claimed)
      #expect(try await store.claimDevice("phone", owner: "bob", now: 3, maxDevices: nil) == .otherOwner)
      #expect(try await store.claimDevice("watch", owner: "anna", now: 4, maxDevices: 2) == .claimed)
      #expect(try await store.claimDevice("tablet", owner: "anna", now: 5, maxDevices: 2) == .quotaExceeded(limit: 2))
      #expect(try await store.deviceOwner("phone") == "anna")
      #expect(try await store.deviceOwner("tablet") == nil)
      #expect(try await store.devices(owner: "anna").map(\.id) == ["phone", "watch"])
    }
  }

  @Test(arguments: StoreEngine.all)
  func osmAndIdentifiersAreReplacedRevokedAndRefusedForDisabledAccounts(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await Self.accounts(store, ["anna", "bob"])
      #expect(
        try await store.enableOsmAnd(device: "phone", owner: "anna", identifierHash: "h1", now: 1, maxDevices: nil)
          == .claimed)
      #expect(try await store.osmAndDevice(identifierHash: "h1")?.device == "phone")
      #expect(try await store.devices(owner: "anna").map(\.osmAnd) == [true])
      _ = try await store.enableOsmAnd(device: "phone", owner: "anna", identifierHash: "h2", now: 2, maxDevices: nil)
      #expect(try await store.osmAndDevice(identifierHash: "h1") == nil)
      #expect(try await store.osmAndDevice(identifierHash: "h2")?.owner == "anna")
      #expect(
        try await store.enableOsmAnd(device: "phone", owner: "bob", identifierHash: "h3", now: 3, maxDevices: nil)
          == .otherOwner)
      #expect(try await !store.disableOsmAnd(device: "phone", owner: "bob"))
      try await store.setDisabled("anna", true)
      #expect(try await store.osmAndDevice(identifierHash: "h2") == nil)
      try await store.setDisabled("anna", false)
      #expect(try await store.disableOsmAnd(device: "phone", owner: "anna"))
      #expect(try await store.osmAndDevice(identifierHash: "h2") == nil)
    }
  }

  @Test(arguments: StoreEngine.all)
  func insertsCountDuplicatesAndTheLastFixIsNeverInTheFuture(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await Self.accounts(store, ["anna"])
      _ = try await store.claimDevice("phone", owner: "anna", now: 0)
      let fixes = try makeFixes(count: 5)
      let first = try await store.insertFixes([FixInsertBatch(userID: "anna", deviceID: "phone", fixes: fixes)], now: 1)
      #expect(first == [FixReceipt(accepted: 5, duplicates: 0)])
      let again = try await store.insertFixes(
        [
          FixInsertBatch(userID: "anna", deviceID: "phone", fixes: Array(fixes.prefix(2))),
          FixInsertBatch(userID: "anna", deviceID: "phone", fixes: try makeFixes(count: 1, start: 1_800_000_000_000)),
        ], now: 2)
      #expect(again == [FixReceipt(accepted: 0, duplicates: 2), FixReceipt(accepted: 1, duplicates: 0)])
      #expect(try await store.lastFix(owner: "anna", notAfter: .max)?.timestamp == 1_800_000_000_000)
      let last = try #require(try await store.lastFix(owner: "anna", notAfter: 1_750_000_000_000))
      #expect(last.timestamp == fixes[4].timestamp && last.deviceID == "phone")
      #expect(try await store.lastFix(owner: "anna", notAfter: 0) == nil)
    }
  }

  @Test(arguments: StoreEngine.all)
  func historyPagesNeverSkipOrRepeatAndDeletionAndClustersFollowTheFilter(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await Self.accounts(store, ["anna", "bob"])
      _ = try await store.claimDevice("phone", owner: "anna", now: 0)
      _ = try await store.claimDevice("watch", owner: "anna", now: 0)
      _ = try await store.claimDevice("bobs", owner: "bob", now: 0)
      // Two devices with the same timestamps: ties are broken by row, so pages still neither skip nor repeat.
      let fixes = try makeFixes(count: 25)
      _ = try await store.insertFixes(
        [
          FixInsertBatch(userID: "anna", deviceID: "phone", fixes: fixes),
          FixInsertBatch(userID: "anna", deviceID: "watch", fixes: fixes),
          FixInsertBatch(userID: "bob", deviceID: "bobs", fixes: fixes),
        ], now: 1)
      var seen: [LocationFix] = []
      var cursor: HistoryCursor?
      while true {
        let page = try await store.history(owner: "anna", filter: HistoryFilter(), limit: 7, before: cursor)
        seen += page.map(\.fix)
        guard page.count == 7, let last = page.last else { break }
        cursor = last.cursor
      }
      #expect(seen.count == 50)
      #expect(Set(seen.map { "\($0.deviceID?.rawValue ?? "")/\($0.timestamp)" }).count == 50)
      #expect(zip(seen, seen.dropFirst()).allSatisfy { $0.timestamp >= $1.timestamp })

      let range = HistoryFilter(range: TimeRange(start: fixes[0].timestamp, end: fixes[10].timestamp))
      #expect(try await store.history(owner: "anna", filter: range, limit: 100, before: nil).count == 20)
      let clusters = try await store.clusters(owner: "anna", filter: HistoryFilter(), precision: 5, box: nil)
      #expect(clusters.reduce(0) { $0 + $1.count } == 50)
      #expect(try await store.deleteHistory(owner: "anna", filter: range) == 20)
      #expect(try await store.history(owner: "anna", filter: HistoryFilter(), limit: 100, before: nil).count == 30)
      #expect(try await store.history(owner: "bob", filter: HistoryFilter(), limit: 100, before: nil).count == 25)
    }
  }

  @Test(arguments: StoreEngine.all)
  func fixRunsNearAPlaceFollowTheWholeHistory(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await Self.accounts(store, ["anna"])
      _ = try await store.claimDevice("phone", owner: "anna", now: 0)
      let place = try Coordinate(latitude: 50.45, longitude: 30.52)
      // Near, far away, near again: two runs.
      let near = try makeFixes(count: 3, start: 1_700_000_000_000)
      let far = try makeFixes(count: 2, start: 1_700_000_003_000, latitude: 51)
      let back = try makeFixes(count: 3, start: 1_700_000_005_000)
      _ = try await store.insertFixes(
        [FixInsertBatch(userID: "anna", deviceID: "phone", fixes: near + far + back)], now: 1)
      let runs = try await store.fixRuns(
        owner: "anna", near: place, radius: 500, from: 1_699_999_999_000, to: 1_700_000_010_000)
      #expect(runs.map { $0.map(\.timestamp) } == [near.map(\.timestamp), back.map(\.timestamp)])
      #expect(
        try await store.usersSeen(near: place, radius: 500, from: 1_699_999_999_000, to: 1_700_000_010_000) == [
          "anna"
        ])
    }
  }
}
