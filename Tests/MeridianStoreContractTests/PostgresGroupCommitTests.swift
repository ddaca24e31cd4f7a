import DomainKit
import Foundation
import MeridianAPI
import MeridianStore
import MeridianStorePostgres
import MeridianStoreTesting
import PostgresNIO
import Testing

/// On PostgreSQL, the uploads that queue while the group commits run are committed in groups of at most
/// `GroupCommitSize.maximumFixes` fixes: a commit that took the whole queue grew with it (a database slowed
/// down, or every device sending its backlog after a restart) until it ran past its deadline and failed every
/// upload in it alike.
@Suite("PostgreSQL group commits")
struct PostgresGroupCommitTests {
  @Test func uploadsQueuedBehindTheCommitsInFlightAreCommittedInBoundedGroups() async throws {
    try await StoreEngine.postgres.withTwoNodes { nodeA, nodeB in
      let store = try #require(nodeA as? PostgresStore)
      let (inFlight, queued, perUpload) = (store.fixCommitsInFlight, 12, 1_000)
      let uploads = inFlight + queued
      // One person per upload, so that the commits in flight wait for nothing but the live log's lock.
      for upload in 0..<uploads {
        _ = try await store.createAccount(
          id: UserID("anna\(upload)"), credential: .email("anna\(upload)@example.com"), passwordHash: nil, now: 0)
        #expect(try await store.claimDevice(DeviceID("phone\(upload)"), owner: UserID("anna\(upload)"), now: 0))
      }
      let hold = try await LiveLogLockHold(on: nodeB)
      // Handed over at once: the first `inFlight` start their commits (and wait for the lock), the rest queue.
      let (answers, answered) = AsyncStream.makeStream(of: Result<[FixReceipt], any Error>.self)
      for upload in 0..<uploads {
        let fixes = try makeFixes(count: perUpload, start: 1_700_000_000_000)
        store.insertFixes(
          [FixInsertBatch(userID: UserID("anna\(upload)"), deviceID: DeviceID("phone\(upload)"), fixes: fixes)],
          now: 1
        ) { answered.yield($0) }
      }
      #expect(try await hold.waitForWaiters(inFlight) == inFlight)
      try await hold.release()

      var receipts: [FixReceipt] = []
      for await answer in answers.prefix(uploads) { receipts += try answer.get() }
      #expect(receipts == Array(repeating: FixReceipt(accepted: perUpload, duplicates: 0), count: uploads))
      // Each transaction's fixes (their `xmin`): every upload stored, none with more than a commit may take.
      let transactions = try await store.database.withConnection { connection in
        try await connection.query(
          "SELECT count(*) FROM fixes GROUP BY xmin::text ORDER BY 1 DESC", logger: store.database.logger
        ).collect().map { try $0.decode(Int.self) }
      }
      #expect(transactions.reduce(0, +) == uploads * perUpload)
      #expect(transactions.allSatisfy { $0 <= GroupCommitSize.maximumFixes }, "\(transactions)")
      #expect(transactions.count >= inFlight + queued * perUpload / GroupCommitSize.maximumFixes)
    }
  }
}
