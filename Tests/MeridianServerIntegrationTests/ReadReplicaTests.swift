import Foundation
import MeridianAPI
import MeridianTestSupport
import Testing

/// Reads from a streaming replica (issue 35 §4): a `meridian-server` process with `MERIDIAN_DATABASE_REPLICA_URL`
/// naming a hot standby of its database (`Tools/postgres standby-start`). With the standby's replay paused, what a
/// person just wrote is still read back at once (from the primary), while another person's reads are served by the
/// standby (`meridian_replica_reads_total`); once the standby has replayed the write, the writer reads from it too;
/// with the standby stopped, every read is answered from the primary.
@Suite("Reads from a streaming replica", .serialized)
struct ReadReplicaTests {
  @Test func aPersonReadsTheirOwnWritesWhileOthersReadFromTheReplica() async throws {
    try await FaultCluster.with { cluster in
      let standby = try await cluster.startStandby()
      try await DatabaseFailureTests.withNode(
        on: cluster.url, environment: ["MERIDIAN_DATABASE_REPLICA_URL": standby.url, "MERIDIAN_METRICS": "public"]
      ) { node, http, anna in
        let bob = try await http.register("bob")
        #expect(try await http.postFixes(token: anna, start: 1_700_000_000_000).status == 200)
        // Anna reads what she uploaded at once, whatever the standby has replayed.
        #expect(try await Self.historyCount(http, anna) == 5)

        // Once the standby holds everything, its replay stops: from now on it is behind.
        try await GeofenceQueueTests.waitFor("the standby replays Anna's fixes", timeout: .seconds(30)) {
          try await cluster.storedTimestamps(in: standby.url).count == 5
        }
        try await Self.psql(standby.url, "SELECT pg_wal_replay_pause()")
        #expect(try await http.postFixes(token: anna, start: 1_700_000_100_000).status == 200)
        #expect(try await cluster.storedTimestamps(in: standby.url).count == 5, "the standby's replay is paused")

        let before = try await Self.replicaReads(http)
        #expect(try await Self.historyCount(http, anna) == 10, "Anna's own upload is read from the primary")
        #expect(try await Self.historyCount(http, bob) == 0)
        let paused = try await Self.replicaReads(http)
        #expect(paused.primary == before.primary + 1, "Anna's read went to the primary: \(before) → \(paused)")
        #expect(paused.replica == before.replica + 1, "Bob's read went to the standby: \(before) → \(paused)")

        // Replayed: Anna's reads go to the standby again, and find all ten.
        try await Self.psql(standby.url, "SELECT pg_wal_replay_resume()")
        try await GeofenceQueueTests.waitFor("the standby replays Anna's second upload", timeout: .seconds(30)) {
          try await cluster.storedTimestamps(in: standby.url).count == 10
        }
        #expect(try await Self.historyCount(http, anna) == 10)
        let replayed = try await Self.replicaReads(http)
        #expect(replayed.replica == paused.replica + 1, "\(paused) → \(replayed)")

        // The standby stops: reads are answered from the primary, at once.
        _ = try await FaultCluster.tool("standby-halt", cluster.directory)
        let started = ContinuousClock.now
        #expect(try await Self.historyCount(http, bob) == 0)
        #expect(try await Self.historyCount(http, anna) == 10)
        #expect(ContinuousClock.now - started < .seconds(5), "reads took \(ContinuousClock.now - started)")
        let halted = try await Self.replicaReads(http)
        #expect(halted.primary >= replayed.primary + 2, "\(replayed) → \(halted)")
        #expect(!node.child.output.value.contains("Request failed"), "\(node.child.output.value.suffix(2000))")
      }
    }
  }

  /// How many fixes `token`'s history holds (one page of up to 1,000).
  static func historyCount(_ http: NodeHTTP, _ token: String) async throws -> Int {
    let answer = try await http.send(.get, "/v1/history?limit=1000", token: token)
    guard answer.status == 200 else {
      throw ServerProcessError(message: "history: \(answer.status.map(String.init) ?? answer.error ?? "-")")
    }
    return try JSONDecoder().decode(HistoryPage.self, from: answer.body).fixes.count
  }

  /// The node's `meridian_replica_reads_total` and `meridian_replica_reads_on_primary_total`.
  static func replicaReads(_ http: NodeHTTP) async throws -> (replica: Int, primary: Int) {
    let text = String(decoding: try await http.send(.get, "/metrics").body, as: UTF8.self)
    func value(_ name: String) -> Int {
      let line = text.split(separator: "\n").first { $0.hasPrefix(name + " ") }
      return line.flatMap { Double($0.split(separator: " ").last ?? "") }.map { Int($0) } ?? -1
    }
    return (value("meridian_replica_reads_total"), value("meridian_replica_reads_on_primary_total"))
  }

  /// Runs `sql` with `psql` on `url`.
  static func psql(_ url: String, _ sql: String) async throws {
    let result = try await ChildProcess.run(FaultCluster.psqlPath, [url, "-X", "-q", "-c", sql])
    guard result.status == 0 else { throw ServerProcessError(message: "psql \(sql): \(result.output)") }
  }
}
