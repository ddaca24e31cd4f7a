import DomainKit
import Foundation
import MeridianAPI
import MeridianStore
import MeridianStoreTesting
import Testing

/// The group-commit insert's promises: idempotent on device and timestamp and on `Idempotency-Key` (within one commit,
/// across commits and across two nodes racing on one database), one deployment secret however many nodes ask at once,
/// and fixes over many months.
@Suite("Store contract: ingest, idempotency and nodes")
struct IngestContractTests {
  static func account(_ store: any MeridianStore, _ id: UserID, device: DeviceID) async throws {
    _ = try await store.createAccount(id: id, credential: .email("\(id)@example.com"), passwordHash: nil, now: 0)
    #expect(try await store.claimDevice(device, owner: id, now: 0))
  }

  static func history(_ store: any MeridianStore, _ owner: UserID) async throws -> [LocationFix] {
    try await store.history(owner: owner, filter: HistoryFilter(), limit: 10_000, before: nil).map(\.fix)
  }

  @Test(arguments: StoreEngine.all)
  func aKeyUsedTwiceInOneCommitReplaysTheFirstAnswerAndAnotherBodyConflicts(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await Self.account(store, "anna", device: "phone")
      let fixes = try makeFixes(count: 4)
      let first = IdempotencyClaim(key: "k1", requestHash: "body-a")
      let retry = IdempotencyClaim(key: "k1", requestHash: "body-a")
      let other = IdempotencyClaim(key: "k1", requestHash: "body-b")
      let receipts = try await store.insertFixes(
        [
          FixInsertBatch(userID: "anna", deviceID: "phone", fixes: fixes, idempotency: first),
          FixInsertBatch(userID: "anna", deviceID: "phone", fixes: fixes, idempotency: retry),
          FixInsertBatch(
            userID: "anna", deviceID: "phone", fixes: try makeFixes(count: 2, start: 1_800_000_000_000),
            idempotency: other),
        ], now: 1)
      #expect(
        receipts == [
          FixReceipt(accepted: 4, duplicates: 0), FixReceipt(accepted: 4, duplicates: 0),
          FixReceipt(accepted: 0, duplicates: 0),
        ])
      #expect([first.resolution, retry.resolution, other.resolution] == [.stored, .replayed, .conflict])
      // The conflicting batch stored nothing; a later retry of the first request replays its answer.
      #expect(try await Self.history(store, "anna").count == 4)
      let later = IdempotencyClaim(key: "k1", requestHash: "body-a")
      let replayed = try await store.insertFixes(
        [FixInsertBatch(userID: "anna", deviceID: "phone", fixes: fixes, idempotency: later)], now: 2)
      #expect(replayed == [FixReceipt(accepted: 4, duplicates: 0)] && later.resolution == .replayed)
      let stored = try #require(try await store.idempotentResponse(userID: "anna", key: "k1"))
      #expect(stored.requestHash == "body-a" && stored.status == 200)
      #expect(FixReceipt.decodeCommonForm(stored.body) == FixReceipt(accepted: 4, duplicates: 0))
    }
  }

  /// Two nodes receive the same request (same key, same body) at the same moment, many times over: each time one
  /// stores the fixes and the other answers with the stored receipt; with different bodies, one is a conflict.
  @Test(arguments: StoreEngine.all)
  func twoNodesRacingOnOneKeyStoreOneBatchAndGiveTheSameAnswer(_ engine: StoreEngine) async throws {
    try await engine.withTwoNodes { nodeA, nodeB in
      try await Self.account(nodeA, "anna", device: "phone")
      let rounds = 20
      for round in 0..<rounds {
        let fixes = try makeFixes(count: 3, start: 1_700_000_000_000 + Int64(round) * 10_000)
        let sameBody = round.isMultiple(of: 2)
        let claims = [
          IdempotencyClaim(key: "key-\(round)", requestHash: "body"),
          IdempotencyClaim(key: "key-\(round)", requestHash: sameBody ? "body" : "other body"),
        ]
        async let a = nodeA.insertFixes(
          [FixInsertBatch(userID: "anna", deviceID: "phone", fixes: fixes, idempotency: claims[0])], now: 1)
        async let b = nodeB.insertFixes(
          [FixInsertBatch(userID: "anna", deviceID: "phone", fixes: fixes, idempotency: claims[1])], now: 1)
        let receipts = try await a + b
        let resolutions = claims.map(\.resolution)
        #expect(resolutions.filter { $0 == .stored }.count == 1, "round \(round): \(resolutions)")
        if sameBody {
          #expect(resolutions.contains(.replayed), "round \(round): \(resolutions)")
          #expect(receipts == [FixReceipt(accepted: 3, duplicates: 0), FixReceipt(accepted: 3, duplicates: 0)])
        } else {
          #expect(resolutions.contains(.conflict), "round \(round): \(resolutions)")
          #expect(receipts.contains(FixReceipt(accepted: 3, duplicates: 0)))
          #expect(receipts.contains(FixReceipt(accepted: 0, duplicates: 0)))
        }
      }
      #expect(try await Self.history(nodeB, "anna").count == 3 * rounds)
    }
  }

  @Test(arguments: StoreEngine.all)
  func concurrentUploadsOfOverlappingFixesStoreEachFixOnce(_ engine: StoreEngine) async throws {
    try await engine.withTwoNodes { nodeA, nodeB in
      try await Self.account(nodeA, "anna", device: "phone")
      // 40 requests over two nodes, each 10 fixes from a sliding window: 49 distinct fixes, many sent several times.
      let receipts = try await withThrowingTaskGroup(of: [FixReceipt].self) { group in
        for request in 0..<40 {
          let node = request.isMultiple(of: 2) ? nodeA : nodeB
          let fixes = try makeFixes(count: 10, start: 1_700_000_000_000 + Int64(request) * 1000)
          group.addTask {
            try await node.insertFixes([FixInsertBatch(userID: "anna", deviceID: "phone", fixes: fixes)], now: 1)
          }
        }
        return try await group.reduce(into: []) { $0 += $1 }
      }
      #expect(receipts.count == 40)
      #expect(receipts.reduce(0) { $0 + $1.accepted } == 49)
      #expect(receipts.reduce(0) { $0 + $1.duplicates } == 400 - 49)
      #expect(try await Self.history(nodeA, "anna").count == 49)
    }
  }

  @Test(arguments: StoreEngine.all)
  func nodesAskingForASecretAtOnceAllGetTheSameOne(_ engine: StoreEngine) async throws {
    try await engine.withTwoNodes { nodeA, nodeB in
      let secrets = try await withThrowingTaskGroup(of: Data.self) { group in
        for index in 0..<16 {
          let node = index.isMultiple(of: 2) ? nodeA : nodeB
          group.addTask { try await node.deploymentSecret("device-handle") }
        }
        return try await group.reduce(into: Set<Data>()) { $0.insert($1) }
      }
      #expect(secrets.count == 1)
      #expect(secrets.first?.count == 32)
      #expect(try await nodeB.deploymentSecret("device-handle") == secrets.first)
    }
  }

  /// Fixes over several years and months (the PostgreSQL engine stores each month in its own partition, made on
  /// demand): all are stored, found, paged and deleted by range across the month boundaries.
  @Test(arguments: StoreEngine.all)
  func fixesOverManyMonthsAreStoredPagedAndDeletedAcrossMonthBoundaries(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await Self.account(store, "anna", device: "phone")
      // 2019-12-31T23:59:58Z, 2024-02-29T12:00:00Z, 2025-12-31T23:59:59Z and 2026-01-01T00:00:00Z.
      let starts: [Int64] = [1_577_836_798_000, 1_709_208_000_000, 1_767_225_599_000, 1_767_225_600_000]
      let fixes = try starts.flatMap { try makeFixes(count: 3, start: $0) }
      let receipts = try await store.insertFixes(
        [FixInsertBatch(userID: "anna", deviceID: "phone", fixes: fixes)], now: 1)
      // The last fix of 2025-12-31's run and the first two of 2026-01-01's share timestamps: duplicates.
      #expect(receipts == [FixReceipt(accepted: 10, duplicates: 2)])
      let all = try await Self.history(store, "anna")
      #expect(all.count == 10)
      #expect(all.map(\.timestamp) == Set(fixes.map(\.timestamp)).sorted(by: >))
      #expect(try await store.lastFix(owner: "anna", notAfter: 1_709_208_000_500)?.timestamp == 1_709_208_000_000)
      let newYear = HistoryFilter(range: TimeRange(start: 1_767_225_599_000, end: 1_767_225_602_000))
      #expect(try await store.deleteHistory(owner: "anna", filter: newYear) == 3)
      #expect(try await Self.history(store, "anna").count == 7)
      // A month emptied and written again.
      let again = try await store.insertFixes(
        [FixInsertBatch(userID: "anna", deviceID: "phone", fixes: try makeFixes(count: 3, start: starts[3]))], now: 2)
      #expect(again == [FixReceipt(accepted: 2, duplicates: 1)])
    }
  }

  /// A month's first fix is stored while another transaction reads `fixes`: its partition is attached, which
  /// readers don't hold up. `CREATE TABLE … PARTITION OF fixes` waited for every reader and queued every later
  /// insert and read behind it, past the store's 30 s deadline (the benchmark's history seeding stopped on it).
  @Test func aNewMonthIsStoredWhileATransactionReadsTheFixesOnPostgreSQL() async throws {
    try await StoreEngine.postgres.with { store in
      try await Self.account(store, "anna", device: "phone")
      // 2020-01-01T00:00:00Z: its month's partition exists before the reader starts.
      _ = try await store.insertFixes(
        [FixInsertBatch(userID: "anna", deviceID: "phone", fixes: try makeFixes(count: 1, start: 1_577_836_800_000))],
        now: 1)
      let reader = try await ConnectionHold.readingFixes(on: store)
      do {
        // 2031-05-01T00:00:00Z, a month without a partition, and a read beside it.
        let receipts = try await store.insertFixes(
          [FixInsertBatch(userID: "anna", deviceID: "phone", fixes: try makeFixes(count: 2, start: 1_935_446_400_000))],
          now: 2)
        #expect(receipts == [FixReceipt(accepted: 2, duplicates: 0)])
        #expect(try await Self.history(store, "anna").count == 3)
      } catch {
        try await reader.release()
        throw error
      }
      try await reader.release()
    }
  }
}
