import DomainKit
import Foundation
import Logging
import MeridianAPI
import Testing

@testable import MeridianServer

/// The group-commit writer on a real SQLite file: concurrent requests share commits, each gets its own receipt, and
/// after shutdown nothing is taken that would not be stored.
@Suite struct FixWriterTests {
  @Test func concurrentRequestsShareCommitsAndShutdownRefusesOnlyNewOnes() async throws {
    let file = TemporaryDatabaseFile()
    defer { file.remove() }
    let store = try SQLiteStore.open(at: file.path)
    defer { try? store.database.close() }
    let user = try #require(
      try await store.createAccount(id: "writer-user", credential: .email("w@example.com"), passwordHash: nil, now: 0)
    ).id
    let devices = (0..<4).map { DeviceID("device-\($0)") }
    for device in devices { #expect(try await store.claimDevice(device, owner: user, now: 0)) }
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
}
