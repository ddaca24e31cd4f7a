import DomainKit
import Foundation
import Logging
import MeridianAPI
import MeridianServer
import MeridianStore
import MeridianStoreTesting
import Testing

/// The group-commit writer on PostgreSQL runs as many commits at once as the store allows: with the live log's lock
/// held elsewhere, that many transactions wait for it together while the other uploads queue; once it is free every
/// upload is answered and shutdown drains what queued.
@Suite struct FixWriterCommitsInFlightTests {
  @Test func theWriterRunsTheStoresCommitsInFlightAtOnceOnPostgres() async throws {
    try await StoreEngine.postgres.withTwoNodes { nodeA, nodeB in
      let inFlight = nodeA.fixCommitsInFlight
      #expect(inFlight >= 2)
      // One person per upload: one person's commits in the same hour wait for each other at the history cells they
      // count, before the live log's lock.
      let requests = inFlight * 5
      for request in 0..<requests {
        let user = UserID("anna\(request)")
        _ = try await nodeA.createAccount(
          id: user, credential: .email("anna\(request)@example.com"), passwordHash: nil, now: 0)
        #expect(try await nodeA.claimDevice(DeviceID("phone\(request)"), owner: user, now: 0))
      }
      let writer = FixWriter(store: nodeA, metrics: ServerMetrics(), logger: Logger(label: "test"))
      let hold = try await LiveLogLockHold(on: nodeB)

      let uploads = Task {
        try await withThrowingTaskGroup(of: FixReceipt.self) { group in
          for request in 0..<requests {
            let fixes = try makeFixes(count: 1, start: 1_700_000_000_000 + Int64(request) * 1000)
            group.addTask {
              try await writer.submit(
                FixInsertBatch(userID: UserID("anna\(request)"), deviceID: DeviceID("phone\(request)"), fixes: fixes))
            }
          }
          return try await group.reduce(into: []) { $0.append($1) }
        }
      }
      #expect(try await hold.waitForWaiters(inFlight) == inFlight)
      #expect(writer.commitsInFlight == inFlight)
      #expect(writer.oldestWait() != nil, "the health check sees the uploads waiting")

      try await hold.release()
      let receipts = try await uploads.value
      #expect(receipts.count == requests && receipts.allSatisfy { $0 == FixReceipt(accepted: 1, duplicates: 0) })
      let service = Task { try await writer.run() }
      service.cancel()
      try await service.value
      #expect(writer.commitsInFlight == 0 && writer.oldestWait() == nil)
      for request in 0..<requests {
        let stored = try await nodeA.history(
          owner: UserID("anna\(request)"), filter: HistoryFilter(), limit: 10, before: nil)
        #expect(stored.count == 1)
      }
    }
  }
}
