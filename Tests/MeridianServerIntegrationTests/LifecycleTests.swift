import DomainKit
import Foundation
import MeridianAPI
import MeridianServer
import MeridianStore
import MeridianStoreSQLite
import MeridianStoreTesting
import NetworkingKit
import Testing

@Suite("Routes and shutdown")
struct LifecycleTests {
  /// Every endpoint of `API` has a route: a request to it never gets `route_not_found`.
  @Test func everyEndpointIsRouted() async throws {
    try await TestServer.with { server in
      let client = try server.client()
      for descriptor in API.all {
        var path = descriptor.pathTemplate
        for name in descriptor.parameterNames { path = path.replacingOccurrences(of: "{\(name)}", with: "x") }
        let probe = Endpoint<Void, NoBody, Data>(
          descriptor.method, PathTemplate(stringLiteral: path), body: .none, response: .raw, idempotency: .never)
        do {
          _ = try await client.send(probe)
        } catch let error as NetworkingError {
          #expect(error.serverError?.code != APIErrorCode.routeNotFound.rawValue, "\(descriptor)")
        }
      }
    }
  }

  @Test func metricsCountRequestsFixesAndReplays() async throws {
    try await TestServer.with { server in
      let (_, anna) = try await server.signUp("anna")
      let batch = FixBatch(deviceId: "anna-phone", fixes: try makeFixes(count: 10))
      _ = try await anna.send(API.postFixes, body: batch, idempotencyKey: "k1")
      _ = try await anna.send(API.postFixes, body: batch, idempotencyKey: "k1")
      _ = try await anna.send(API.postFixes, body: batch)
      let text = String(
        decoding: try await server.client(token: ServerConfiguration.developmentAdminToken).send(API.metrics),
        as: UTF8.self)
      let lines = Set(text.split(separator: "\n").map(String.init))
      #expect(lines.contains("meridian_fixes_accepted_total 10"))
      #expect(lines.contains("meridian_fixes_duplicate_total 10"))
      #expect(lines.contains("meridian_idempotent_replays_total 1"))
      #expect(
        lines.contains(#"meridian_http_requests_total{method="POST",route="/v1/fixes",status="200"} 3"#), "\(text)")
    }
  }

  /// A server that can't listen (its port is taken) fails to start with the reason, instead of waiting for ever for
  /// a port that never comes (a test restarting a server on its old port once hung the whole run that way).
  @Test func aServerWhosePortIsTakenFailsToStartWithTheReason() async throws {
    let first = try await TestServer.start()
    await #expect {
      let second = try await TestServer.start(port: first.port)
      try await second.stop()
    } throws: { error in
      "\(error)".localizedCaseInsensitiveContains("address already in use")
    }
    try await first.stop()
  }

  /// A graceful shutdown in the middle of concurrent uploads: every fix the server acknowledged is stored.
  @Test func shutdownDuringIngestLosesNoAcknowledgedFix() async throws {
    let server = try await TestServer.start()
    let (session, anna) = try await server.signUp("anna")
    let acknowledged = try await withThrowingTaskGroup(of: [Int64].self) { group in
      for worker in 0..<8 {
        group.addTask {
          var stored: [Int64] = []
          for round in 0..<1000 {
            let start = 1_700_000_000_000 + Int64(worker) * 100_000_000 + Int64(round) * 20_000
            let fixes = try makeFixes(count: 20, start: start)
            do {
              let receipt = try await anna.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: fixes))
              guard receipt.accepted == 20 else { break }
              stored += fixes.map(\.timestamp)
            } catch {
              break  // the server went away: this batch was not acknowledged
            }
          }
          return stored
        }
      }
      try await Task.sleep(for: .milliseconds(300))
      await server.app.shutdown()
      return try await group.reduce(into: []) { $0 += $1 }
    }
    try await server.running.stop()
    try await server.transport.shutdown()
    #expect(!acknowledged.isEmpty)

    let store = try SQLiteStore.open(at: server.directory.appendingPathComponent("meridian.sqlite").path)
    let rows = try await store.history(
      owner: session.userId, filter: HistoryFilter(), limit: 1_000_000, before: nil)
    let storedTimestamps = Set(rows.map(\.fix.timestamp))
    #expect(Set(acknowledged).isSubset(of: storedTimestamps))
    #expect(try store.database.integrityCheck().isOK)
    try? FileManager.default.removeItem(at: server.directory)
  }
}
