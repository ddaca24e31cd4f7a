import Foundation
import Testing

/// When the primary is replaced by a promoted standby (issue 35 §5): a `meridian-server` process on a multi-host URL
/// (`postgres://u@primary,standby/meridian?target_session_attrs=read-write`) over a primary and its hot standby of
/// the test's own (`Tools/postgres standby-start`). The test stops the primary and promotes the standby while four
/// clients upload: `/health` says 503 while no host is writable and 200 after, the node takes fixes again on the new
/// primary with no restart, and every fix it acknowledged is there.
@Suite("When the primary is replaced by a promoted standby", .serialized)
struct DatabaseFailoverTests {
  @Test func aNodeOnAMultiHostURLKeepsTakingFixesAcrossAFailover() async throws {
    try await FaultCluster.with { cluster in
      let standby = try await cluster.startStandby()
      try await DatabaseFailureTests.withNode(on: standby.pairURL) { node, http, token in
        let load = UploadLoad(http: http, token: token, workers: 4)
        let running = Task { try await load.run() }
        try await load.waitForAcknowledgements(10)

        let lost = ContinuousClock.now
        try await cluster.halt()
        let unhealthy = try await http.waitFor(status: 503, path: "/health", within: .seconds(10))
        #expect(unhealthy.elapsedSince(lost) < .seconds(5), "503 on /health after \(unhealthy.elapsedSince(lost))")
        DatabaseFailureTests.expectUnavailable(unhealthy.response)

        let before = load.acknowledgedCount
        _ = try await FaultCluster.tool("standby-promote", cluster.directory)
        let promoted = ContinuousClock.now
        let healthy = try await http.waitFor(status: 200, path: "/health", within: .seconds(10))
        do {
          try await load.waitForAcknowledgements(before + 4, within: .seconds(10))
        } catch {
          Issue.record("\(error); the node's log:\n\(node.child.output.value.suffix(4000))")
          throw error
        }
        let recovered = ContinuousClock.now - promoted
        #expect(recovered < .seconds(5), "fixes taken again \(recovered) after the promotion")
        print(
          "measured: /health 503 \(unhealthy.elapsedSince(lost)) after the primary stopped, 200 "
            + "\(healthy.elapsedSince(promoted)) after the standby's promotion; uploads acknowledged again "
            + "\(recovered) after it")
        load.stop()
        try await running.value

        #expect(load.unexpectedAnswers.isEmpty, "\(load.unexpectedAnswers.prefix(5))")
        #expect(load.slowest < .seconds(5), "the slowest upload took \(load.slowest)")
        let acknowledged = load.acknowledgedTimestamps
        let stored = try await cluster.storedTimestamps(in: standby.url)
        #expect(acknowledged.isSubset(of: stored), "\(acknowledged.subtracting(stored).count) acknowledged fixes lost")
        print(
          "measured: \(acknowledged.count) fixes acknowledged, \(stored.count) on the promoted standby, "
            + "\(load.refusedCount) uploads refused with 503, slowest answer \(load.slowest)")
      }
    }
  }
}

extension FaultCluster {
  /// Starts a hot standby of the cluster (`Tools/postgres standby-start`); its URL for the database `meridian`, and
  /// the URL of both, the primary first, with `target_session_attrs=read-write`.
  func startStandby() async throws -> (url: String, pairURL: String) {
    let started = try await Self.tool("standby-start", directory)
    let pair = try await Self.tool("pair-url", directory)
    guard let standby = started.split(separator: "\n").last, standby.hasSuffix("/postgres"),
      let both = pair.split(separator: "\n").last, both.contains("/postgres?")
    else { throw ServerProcessError(message: "Tools/postgres printed \(started) and \(pair)") }
    return (
      standby.dropLast("/postgres".count) + "/meridian",
      both.replacingOccurrences(of: "/postgres?", with: "/meridian?")
    )
  }
}
