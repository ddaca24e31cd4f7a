import DomainKit
import Foundation
import MeridianAPI
import MeridianStore
import MeridianStorePostgres
import MeridianStoreTesting
import PostgresNIO
import Synchronization
import Testing

/// The live log that server nodes sharing a store read (`docs/realtime-protocol.md` §2.1): entries in commit order,
/// whichever node committed, naming exactly the fixes each request stored; signals that reach every node; a listener
/// that survives the loss of its connection. An engine serving one process (SQLite) has no log.
@Suite("Store contract: the live log")
struct LiveLogContractTests {
  static func account(_ store: any MeridianStore, _ id: UserID, device: DeviceID) async throws {
    _ = try await store.createAccount(id: id, credential: .email("\(id)@example.com"), passwordHash: nil, now: 0)
    #expect(try await store.claimDevice(device, owner: id, now: 0))
  }

  static func entries(_ log: any LiveLog, after sequence: UInt64, fixes: Int = 10_000) async throws -> [LiveLogEntry] {
    guard case .entries(let entries) = try await log.liveEntries(after: sequence, limit: 100, fixes: fixes) else {
      Issue.record("the log was pruned")
      return []
    }
    return entries
  }

  @Test(arguments: StoreEngine.all)
  func entriesFollowTheCommitOrderOfEveryNodeAndNameWhatEachRequestStored(_ engine: StoreEngine) async throws {
    try await engine.withTwoNodes { nodeA, nodeB in
      guard let logA = nodeA.liveLog, let logB = nodeB.liveLog else {
        #expect(engine.name == "sqlite", "only an engine serving one process has no live log")
        return
      }
      #expect(logA.liveEpoch == logB.liveEpoch && !logA.liveEpoch.isEmpty)
      #expect(try await logB.newestLiveSequence() == 0)
      try await Self.account(nodeA, "anna", device: "phone")
      let fixes = try makeFixes(count: 3)
      // A stores two fixes; B one new and one of A's (a duplicate); then a request of duplicates only.
      _ = try await nodeA.insertFixes(
        [FixInsertBatch(userID: "anna", deviceID: "phone", fixes: Array(fixes[0...1]))], now: 1)
      _ = try await nodeB.insertFixes(
        [FixInsertBatch(userID: "anna", deviceID: "phone", fixes: Array(fixes[1...2]))], now: 2)
      _ = try await nodeA.insertFixes([FixInsertBatch(userID: "anna", deviceID: "phone", fixes: fixes)], now: 3)
      let entries = try await Self.entries(logB, after: 0)
      #expect(entries.count == 2)
      #expect(
        entries.map(\.fixes.count) == [2, 1] && entries.allSatisfy { $0.userID == "anna" && $0.deviceID == "phone" })
      #expect(entries.first?.fixes.map(\.timestamp) == fixes[0...1].map(\.timestamp))
      #expect(entries.last?.fixes.first?.timestamp == fixes[2].timestamp)
      #expect(entries.last?.fixes.first?.deviceID == "phone")
      let sequences = entries.map(\.sequence)
      #expect(sequences == sequences.sorted() && Set(sequences).count == 2)
      #expect(try await logA.newestLiveSequence() == sequences.last)
      #expect(try await Self.entries(logA, after: sequences[0]).map(\.sequence) == [sequences[1]])
      #expect(try await Self.entries(logA, after: sequences[1]).isEmpty)
      // Deleted fixes leave their entry empty: a reader moves past it and publishes nothing.
      _ = try await nodeA.deleteHistory(owner: "anna", filter: HistoryFilter())
      #expect(try await Self.entries(logB, after: 0).map(\.fixes.count) == [0, 0])
    }
  }

  @Test(arguments: StoreEngine.all)
  func signalsReachEveryNodeAndAListenerListensAgainAfterLosingItsConnection(_ engine: StoreEngine) async throws {
    try await engine.withTwoNodes { nodeA, nodeB in
      guard let logA = nodeA.liveLog, let logB = nodeB.liveLog else {
        #expect(engine.name == "sqlite", "only an engine serving one process has no live log")
        return
      }
      try await Self.account(nodeA, "anna", device: "phone")
      let heard = Heard()
      let listener = Task { await logB.listen { signal in heard.withLock { $0.append(signal) } } }
      defer { listener.cancel() }
      func wait(for expected: (LiveSignal) -> Bool, _ what: Comment) async throws {
        for _ in 0..<500 where !heard.withLock({ $0.contains(where: expected) }) {
          try await Task.sleep(for: .milliseconds(10))
        }
        #expect(heard.withLock { $0.contains(where: expected) }, what)
      }
      try await wait(for: { $0 == .listening }, "the listener says it listens")
      _ = try await nodeA.insertFixes(
        [FixInsertBatch(userID: "anna", deviceID: "phone", fixes: try makeFixes(count: 1))], now: 1)
      let newest = try await logA.newestLiveSequence()
      try await wait(for: { $0 == .committed(through: newest) }, "node B hears node A's commit")
      try await logA.announce(.sharingChanged(owner: "anna"))
      try await wait(for: { $0 == .sharingChanged(owner: "anna") }, "node B hears node A's announcement")
      // PostgreSQL ends the listener's connection: it listens again and says so, so its reader reads the log again.
      let postgres = try #require(nodeA as? PostgresStore)
      heard.withLock { $0.removeAll() }
      let ended = try await postgres.client.query(
        """
        SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE datname = current_database() AND query LIKE 'LISTEN%' AND pid <> pg_backend_pid()
        """
      ).collect().count
      #expect(ended == 1)
      try await wait(for: { $0 == .listening }, "the listener listens again")
      try await logA.announce(.groupDeleted("friends"))
      try await wait(for: { $0 == .groupDeleted("friends") }, "and hears signals again")
    }
  }

  /// The signals a listener heard.
  final class Heard: Sendable {
    private let signals = Mutex<[LiveSignal]>([])
    func withLock<T>(_ body: (inout [LiveSignal]) -> T) -> T { signals.withLock { body(&$0) } }
  }

  @Test(arguments: StoreEngine.all)
  func aReadHoldsABoundedNumberOfFixesAndAnImportedFileIsNotLive(_ engine: StoreEngine) async throws {
    try await engine.withTwoNodes { nodeA, nodeB in
      try await Self.account(nodeA, "anna", device: "phone")
      let fixes = try makeFixes(count: 9)
      for start in stride(from: 0, to: 9, by: 3) {
        _ = try await nodeA.insertFixes(
          [FixInsertBatch(userID: "anna", deviceID: "phone", fixes: Array(fixes[start..<start + 3]))], now: 1)
      }
      // An imported history file's fixes are history: stored, and no entry, whatever their kind.
      let receipts = try await nodeA.insertFixes(
        [
          FixInsertBatch(
            userID: "anna", deviceID: "phone", fixes: try makeFixes(count: 4, start: 1_600_000_000_000), isLive: false)
        ], now: 2)
      #expect(receipts.map(\.accepted) == [4])
      // Its fixes still wait for the geofences, as every stored fix that is not of kind `imported` does.
      #expect(try await nodeB.geofenceQueue(limit: 10, fixes: 1_000).map(\.fixes.count) == [3, 3, 3, 4])
      guard let log = nodeB.liveLog else { return }
      let all = try await Self.entries(log, after: 0)
      #expect(all.map(\.fixes.count) == [3, 3, 3], "\(all)")
      // A read ends with the entry that reaches the bound: 4 fixes asked, two entries (6 fixes) read; 1 asked, one.
      #expect(try await Self.entries(log, after: 0, fixes: 4).map(\.sequence) == Array(all.prefix(2).map(\.sequence)))
      #expect(try await Self.entries(log, after: 0, fixes: 3).map(\.sequence) == [all[0].sequence])
      #expect(try await Self.entries(log, after: 0, fixes: 1).map(\.sequence) == [all[0].sequence])
      #expect(
        try await Self.entries(log, after: all[0].sequence, fixes: 6).map(\.sequence) == all.suffix(2).map(\.sequence))
    }
  }

  @Test func signalsAreSmallAndReadBack() {
    let signals: [LiveSignal] = [
      .committed(through: 42), .sharingChanged(owner: "anna"), .groupDeleted("g-1"), .tokenRevoked(hash: "ab12"),
      .accountDisabled("bob"), .listening, .geofencesChanged(owner: "anna"),
    ]
    for signal in signals {
      #expect(LiveSignal(text: signal.text) == signal)
      #expect(signal.text.utf8.count < 100)
    }
    let published = LiveSignal.published(
      channels: ["geofence:anna", "geofence:bob"], payload: #"{"type":"geofence.event","event":{"name":"a,b\nc"}}"#)
    #expect(LiveSignal(text: published.text) == published)
    #expect(LiveSignal(text: "p:geofence:anna") == nil && LiveSignal(text: "p:\n{}") == nil)
    #expect(LiveSignal(text: "c:x") == nil && LiveSignal(text: "s:") == nil && LiveSignal(text: "nonsense") == nil)
    #expect(LiveSignal(text: "f:") == nil)
    for viewers in [
      LiveSignal.shareViewers(node: "n1", counts: ["link-a": 3, "link-b": 0]), .shareViewers(node: "n2", counts: [:]),
    ] {
      #expect(LiveSignal(text: viewers.text) == viewers)
    }
    #expect(LiveSignal(text: "v:\na=1") == nil && LiveSignal(text: "v:n1\na=-1") == nil)
    #expect(LiveSignal(text: "v:n1\na") == nil && LiveSignal(text: "v:n1") == nil)
  }

  /// PostgreSQL runs several group commits at once: while another connection holds the live log's lock, as many
  /// commits as ``PostgresStore/fixCommitsInFlight`` have written their fixes and wait for it together, none holding
  /// a sequence number yet. Once it is free they commit one after another: readers running meanwhile only ever see
  /// the numbers from 1 up without a gap (never `n` before `n - 1`), and every request's entry is there.
  @Test func concurrentCommitsOverlapUpToTheLiveLogLockAndTheirEntriesCommitInSequenceOrder() async throws {
    try await StoreEngine.postgres.withTwoNodes { nodeA, nodeB in
      let (store, other) = try (#require(nodeA as? PostgresStore), #require(nodeB as? PostgresStore))
      let log = try #require(nodeB.liveLog)
      let inFlight = store.fixCommitsInFlight
      #expect(inFlight >= 2)
      // One person per request: the commits of one person in the same hour would wait for each other at the history
      // cells they count (a row each), before the live log's lock.
      let requests = inFlight * 4
      for request in 0..<requests {
        try await Self.account(nodeA, UserID("anna\(request)"), device: DeviceID("phone\(request)"))
      }

      // Node B takes the live log's lock on a connection of its own and holds it until told.
      let hold = try await LiveLogLockHold(on: other)
      let uploads = Task {
        try await withThrowingTaskGroup(of: [FixReceipt].self) { group in
          for request in 0..<requests {
            let fixes = try makeFixes(count: 2, start: 1_700_000_000_000 + Int64(request) * 10_000)
            group.addTask {
              let batch = FixInsertBatch(
                userID: UserID("anna\(request)"), deviceID: DeviceID("phone\(request)"), fixes: fixes)
              return try await store.insertFixes([batch], now: 1)
            }
          }
          return try await group.reduce(into: []) { $0 += $1 }
        }
      }
      // The commits that wait for the lock (read on node B), each with its fixes written: as many as may run.
      let waitingCommits = try await hold.waitForWaiters(inFlight)
      #expect(waitingCommits == inFlight, "every commit slot runs a transaction up to the live log's lock")
      #expect(try await log.newestLiveSequence() == 0, "no commit numbers its entries before it holds the lock")

      // Readers while the commits go through: each read is 1, 2, … without a gap.
      let reader = Task {
        var reads: [[UInt64]] = []
        for _ in 0..<100_000 {
          reads.append(try await Self.entries(log, after: 0).map(\.sequence))
          if reads.last?.count == requests { break }
        }
        return reads
      }
      try await hold.release()
      let receipts = try await uploads.value
      #expect(receipts.count == requests && receipts.allSatisfy { $0 == FixReceipt(accepted: 2, duplicates: 0) })
      let reads = try await reader.value
      #expect(reads.allSatisfy { $0 == Array(0..<UInt64($0.count)).map { $0 + 1 } }, "a reader saw n before n - 1")
      let entries = try await Self.entries(log, after: 0)
      #expect(entries.map(\.sequence) == Array(1...UInt64(requests)))
      #expect(Set(entries.flatMap { $0.fixes.map(\.timestamp) }).count == requests * 2)
    }
  }
}
