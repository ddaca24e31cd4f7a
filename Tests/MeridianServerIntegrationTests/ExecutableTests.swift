import DomainKit
import Foundation
import MeridianAPI
import MeridianStoreTesting
import MeridianTestSupport
import NetworkingKit
import NetworkingKitAsyncHTTPClient
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The built `meridian-server` next to the test bundle, if `swift build` made it.
private let serverExecutable = builtExecutable("meridian-server")

@Suite("The meridian-server executable")
struct ExecutableTests {
  /// SIGTERM while clients upload: the process exits 0 and every acknowledged fix is in the database.
  @Test
  func sigtermDuringIngestLosesNoAcknowledgedFix() async throws {
    let executable = try #require(serverExecutable)
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("meridian-exe-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let database = directory.appendingPathComponent("meridian.sqlite").path

    let server = try ChildProcess(
      executable, ["--port", "0", "--database", database, "--bcrypt-cost", "4", "--log-level", "notice"])
    let output = server.output

    var port: Int?
    for _ in 0..<200 where port == nil {
      try await Task.sleep(for: .milliseconds(50))
      if let range = output.value.range(of: #"port=(\d+)"#, options: .regularExpression) {
        port = Int(output.value[range].dropFirst("port=".count))
      }
    }
    let boundPort = try #require(port, "no port in the server's log: \(output.value)")

    let transport = AsyncHTTPClientTransport()
    var configuration = NetworkClient.Configuration()
    configuration.retryBudgets = nil
    let url = try #require(URL(string: "http://127.0.0.1:\(boundPort)"))
    let session = try await NetworkClient(baseURL: url, transport: transport, configuration: configuration)
      .send(API.register, body: EmailCredentials(email: "anna@example.com", password: "correct horse"))
    let client = try NetworkClient(
      baseURL: url, transport: transport, credentials: BearerTokenCredentials(token: session.token) { _ in nil },
      configuration: configuration)

    let acknowledged = try await withThrowingTaskGroup(of: [Int64].self) { group in
      for worker in 0..<8 {
        group.addTask {
          var stored: [Int64] = []
          for round in 0..<2000 {
            let start = 1_700_000_000_000 + Int64(worker) * 100_000_000 + Int64(round) * 20_000
            let fixes = try makeFixes(count: 20, start: start)
            do {
              let receipt = try await client.send(API.postFixes, body: FixBatch(deviceId: "rig", fixes: fixes))
              guard receipt.accepted == 20 else { break }
              stored += fixes.map(\.timestamp)
            } catch {
              break
            }
          }
          return stored
        }
      }
      try await Task.sleep(for: .milliseconds(500))
      server.terminate(with: SIGTERM)
      return try await group.reduce(into: []) { $0 += $1 }
    }
    try await transport.shutdown()
    let status = await server.wait()
    #expect(status == 0, "\(output.value)")
    #expect(!acknowledged.isEmpty)

    let store = try MeridianServerStoreProbe.open(database)
    let stored = try await store.timestamps(of: session.userId)
    #expect(
      Set(acknowledged).isSubset(of: stored), "\(Set(acknowledged).subtracting(stored).count) acknowledged fixes lost")
  }
}
