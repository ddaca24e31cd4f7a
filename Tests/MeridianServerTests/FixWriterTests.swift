import DomainKit
import Foundation
import Logging
import MeridianAPI
import MeridianStore
import MeridianStoreSQLite
import Synchronization
import Testing

@testable import MeridianServer

/// The group-commit writer on a real SQLite file: concurrent requests share commits, each gets its own receipt, and
/// after shutdown nothing is taken that would not be stored.
@Suite struct FixWriterTests {
  @Test func concurrentRequestsShareCommitsAndShutdownRefusesOnlyNewOnes() async throws {
    let devices = (0..<4).map { DeviceID("device-\($0)") }
    let fixture = try await StoreWithOneUser(owning: devices)
    defer { fixture.close() }
    let (store, user) = (fixture.store, fixture.user)
    let writer = FixWriter(store: store, metrics: ServerMetrics(), logger: Logger(label: "test"), maxJobsPerCommit: 16)
    let committed = Task {
      var batchesPerCommit: [Int] = []
      for await commit in writer.commits { batchesPerCommit.append(commit.batches.count) }
      return batchesPerCommit
    }
    func batch(_ index: Int) throws -> FixInsertBatch {
      let device = devices[index % devices.count]
      let fix = try LocationFix(
        deviceID: device, timestamp: 1_700_000_000_000 + Int64(index / devices.count) * 1000, latitude: 50.45,
        longitude: 30.52)
      return FixInsertBatch(userID: user, deviceID: device, fixes: [fix])
    }

    // 200 requests at once, and the writer's service not even started: commits need only a submit.
    let receipts = try await withThrowingTaskGroup(of: FixReceipt.self) { group in
      for index in 0..<200 { group.addTask { try await writer.submit(try batch(index)) } }
      return try await group.reduce(into: []) { $0.append($1) }
    }
    #expect(receipts.count == 200 && receipts.allSatisfy { $0 == FixReceipt(accepted: 1, duplicates: 0) })
    #expect(try await writer.submit(try batch(7)) == FixReceipt(accepted: 0, duplicates: 1))

    let service = Task { try await writer.run() }
    service.cancel()
    try await service.value
    await #expect(throws: APIError.self) { try await writer.submit(try batch(500)) }
    let commits = await committed.value  // the stream ends after the last commit
    #expect(commits.reduce(0, +) == 201 && commits.allSatisfy { (1...16).contains($0) })
    let stored = try await store.history(owner: user, filter: HistoryFilter(), limit: 1000, before: nil)
    #expect(stored.count == 200)
  }

  /// Requests queued while a commit runs are committed in groups of at most the writer's fixes (one larger request
  /// alone): a commit that took every queued request grew with the queue past its deadline.
  @Test func aCommitTakesNoMoreFixesThanItsBound() async throws {
    let device = DeviceID("bounded-device")
    let fixture = try await StoreWithOneUser(owning: [device])
    defer { fixture.close() }
    let (store, user) = (fixture.store, fixture.user)
    let writer = FixWriter(
      store: store, metrics: ServerMetrics(), logger: Logger(label: "test"), maxFixesPerCommit: 250)
    let committed = Task {
      var fixesPerCommit: [Int] = []
      for await commit in writer.commits { fixesPerCommit.append(commit.batches.reduce(0) { $0 + $1.fixes.count }) }
      return fixesPerCommit
    }
    // 40 requests of 100 fixes at once, and one of 300 (more than a commit takes: it goes alone).
    let sizes = Array(repeating: 100, count: 40) + [300]
    let receipts = try await withThrowingTaskGroup(of: FixReceipt.self) { group in
      var start: Int64 = 1_700_000_000_000
      for size in sizes {
        let fixes = try (0..<size).map { index in
          try LocationFix(
            deviceID: device, timestamp: start + Int64(index) * 1000, latitude: 50.45, longitude: 30.52)
        }
        start += Int64(size) * 1000
        group.addTask { try await writer.submit(FixInsertBatch(userID: user, deviceID: device, fixes: fixes)) }
      }
      return try await group.reduce(into: []) { $0.append($1) }
    }
    #expect(receipts.map(\.accepted).sorted() == sizes.sorted())
    let service = Task { try await writer.run() }
    service.cancel()
    try await service.value
    let commits = await committed.value
    #expect(commits.reduce(0, +) == 4_300)
    #expect(commits.allSatisfy { $0 <= 250 || $0 == 300 }, "\(commits)")
    #expect(commits.count >= 4_000 / 200 + 1)
  }

  /// One commit holding a new key, a retry, another request under a used key and a request without a key answers each
  /// on its own: the retry gets the first answer, the conflict stores nothing, the others store their fixes once.
  @Test func oneCommitAnswersNewKeysRetriesAndConflictsEachOnItsOwn() async throws {
    let device = DeviceID("keys-device")
    let fixture = try await StoreWithOneUser(owning: [device])
    defer { fixture.close() }
    let (store, user) = (fixture.store, fixture.user)
    func batch(_ seconds: Int64, key: String?, fingerprint: String = "same") throws -> FixInsertBatch {
      let fix = try LocationFix(
        deviceID: device, timestamp: 1_700_000_000_000 + seconds * 1000, latitude: 50.45, longitude: 30.52)
      return FixInsertBatch(
        userID: user, deviceID: device, fixes: [fix],
        idempotency: key.map { IdempotencyClaim(key: $0, requestHash: fingerprint) })
    }

    let first = try batch(1, key: "used")
    #expect(try await store.insertFixes([first], now: 0) == [FixReceipt(accepted: 1, duplicates: 0)])
    #expect(first.idempotency?.resolution == .stored)

    let new = try batch(2, key: "new")
    let replay = try batch(1, key: "used")
    let conflict = try batch(3, key: "used", fingerprint: "another request")
    let keyless = try batch(4, key: nil)
    let afterReplay = try batch(5, key: "after")
    let receipts = try await store.insertFixes([new, replay, conflict, keyless, afterReplay], now: 0)
    #expect(
      receipts == [
        FixReceipt(accepted: 1, duplicates: 0), FixReceipt(accepted: 1, duplicates: 0),
        FixReceipt(accepted: 0, duplicates: 0), FixReceipt(accepted: 1, duplicates: 0),
        FixReceipt(accepted: 1, duplicates: 0),
      ])
    #expect(
      [new, replay, conflict, afterReplay].map { $0.idempotency?.resolution } == [
        .stored, .replayed, .conflict, .stored,
      ])
    let stored = try await store.history(owner: user, filter: HistoryFilter(), limit: 100, before: nil)
    #expect(stored.map(\.fix.timestamp).sorted() == [1, 2, 4, 5].map { 1_700_000_000_000 + $0 * 1000 })
    #expect(try await store.idempotentResponse(userID: user, key: "new")?.requestHash == "same")
    #expect(try await store.idempotentResponse(userID: user, key: "after") != nil)
  }

  /// A reader of the commits that falls behind holds the writer back — the uploads wait — and reads every commit
  /// once it catches up: none is dropped.
  /// A commit is stamped with the writer's clock (the fixes' receipt time, their geofence queue entry), not the
  /// system's: a test that moves its clock sees the time it set.
  @Test func aCommitIsStampedWithTheWritersClock() async throws {
    let device = DeviceID("clock-device")
    let fixture = try await StoreWithOneUser(owning: [device])
    defer { fixture.close() }
    let committedAt: Int64 = 1_650_000_000_000
    let writer = FixWriter(
      store: fixture.store, metrics: ServerMetrics(), logger: Logger(label: "test"), now: { committedAt })
    let fix = try LocationFix(deviceID: device, timestamp: 1_700_000_000_000, latitude: 50.45, longitude: 30.52)
    _ = try await writer.submit(FixInsertBatch(userID: fixture.user, deviceID: device, fixes: [fix]))
    #expect(try await fixture.store.geofenceQueue(limit: 10, fixes: 1_000).map(\.queuedAt) == [committedAt])
  }

  @Test(.timeLimit(.minutes(1))) func aSlowReaderHoldsTheWriterBackAndLosesNoCommit() async throws {
    let device = DeviceID("slow-reader-device")
    let fixture = try await StoreWithOneUser(owning: [device])
    defer { fixture.close() }
    let (store, user) = (fixture.store, fixture.user)
    let writer = FixWriter(
      store: store, metrics: ServerMetrics(), logger: Logger(label: "test"), maxJobsPerCommit: 1, commitBacklog: 2)
    // Each upload's answer, as it comes: what the test waits for instead of polling a count.
    let (answers, answer) = AsyncStream.makeStream(of: Void.self)
    var answered = answers.makeAsyncIterator()
    let uploads = Task {
      try await withThrowingTaskGroup(of: Void.self) { group in
        for index in 0..<8 {
          group.addTask {
            let fix = try LocationFix(
              deviceID: device, timestamp: 1_700_000_000_000 + Int64(index) * 1000, latitude: 50.45, longitude: 30.52)
            _ = try await writer.submit(FixInsertBatch(userID: user, deviceID: device, fixes: [fix]))
            answer.yield()
          }
        }
        try await group.waitForAll()
      }
    }
    // Nobody reads: two commits wait unread, the third is answered and holds the writer.
    for _ in 0..<3 { await answered.next() }
    #expect(writer.oldestWait() != nil)
    let stored = try await store.history(owner: user, filter: HistoryFilter(), limit: 100, before: nil)
    #expect(stored.count == 3)

    // The reader catches up: every commit arrives, every upload is answered.
    var read = 0
    for await commit in writer.commits {
      read += commit.batches.count
      if read == 8 { break }
    }
    try await uploads.value
    answer.finish()
    var later = 0
    while await answered.next() != nil { later += 1 }
    #expect(later == 5)
    #expect(try await store.history(owner: user, filter: HistoryFilter(), limit: 100, before: nil).count == 8)
  }
}

/// A store on a temporary file with one user who owns some devices; ``close()`` closes and deletes it.
private struct StoreWithOneUser {
  let file = TemporaryDatabaseFile()
  let store: SQLiteStore
  let user: UserID

  init(owning devices: [DeviceID]) async throws {
    let (file, store) = (file, try SQLiteStore.open(at: file.path))
    do {
      user = try #require(
        try await store.createAccount(id: "writer-user", credential: .email("w@example.com"), passwordHash: nil, now: 0)
      ).id
      for device in devices { #expect(try await store.claimDevice(device, owner: user, now: 0)) }
    } catch {
      try? store.database.close()
      file.remove()
      throw error
    }
    self.store = store
  }

  func close() {
    try? store.database.close()
    file.remove()
  }
}
