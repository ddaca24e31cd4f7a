import DomainKit
import Foundation
import MeridianAPI
import MeridianSecrets
import MeridianStore
import NetworkingKit
import NetworkingKitAsyncHTTPClient
import Testing

/// `meridian-admin` working on the database file, while the server runs on it: an account it disables or deletes
/// is refused by the server at the very next request (401, never 500), though the server remembers tokens for a
/// couple of seconds.
@Suite("meridian-admin stops a running server's sessions at once")
struct AdminAccountStateTests {
  @Test func anAccountDisabledOrDeletedByTheCommandLineIsRefusedAtOnce() async throws {
    let sandbox = try AdminSandbox()
    let server = try await InProcessServer.start(database: sandbox.database, adminToken: "admin-state-tests")
    let transport = AsyncHTTPClientTransport()
    do {
      try await run(sandbox, server, transport)
    } catch {
      try? await transport.shutdown()
      try await server.stop()
      throw error
    }
    try await transport.shutdown()
    try await server.stop()
  }

  private func run(_ sandbox: AdminSandbox, _ server: InProcessServer, _ transport: AsyncHTTPClientTransport)
    async throws
  {
    let store = try sandbox.store()
    let now = Timestamp.milliseconds(Date())
    for (email, command) in [("anna@example.com", ["users", "disable"]), ("boris@example.com", ["users", "delete"])] {
      let user = try await seedUser(store, email: email)
      let token = "token-of-\(email)"
      try await store.insertToken(
        hash: SecretHash.sha256(token), userID: user, createdAt: now, expiresAt: now + 86_400_000)
      var configuration = NetworkClient.Configuration()
      configuration.retryBudgets = nil
      let client = try NetworkClient(
        baseURL: try #require(URL(string: server.url)), transport: transport,
        credentials: BearerTokenCredentials(token: token) { _ in nil }, configuration: configuration)
      // The server now remembers the token.
      _ = try await client.send(API.achievements)
      let run = try await sandbox.admin(command + [user.rawValue] + (command[1] == "delete" ? ["--yes"] : []))
      #expect(run.status == 0, "\(run)")
      for (name, request) in [
        ("GET achievements", { _ = try await client.send(API.achievements) }),
        ("GET favourites", { _ = try await client.send(API.favourites, parameters: PagingParameters()) }),
        (
          "POST achievements",
          { _ = try await client.send(API.addAchievement, body: NewAchievement(kind: "study", title: "Olympiad")) }
        ),
        ("GET questionnaire", { _ = try await client.send(API.questionnaire) }),
      ] as [(String, () async throws -> Void)] {
        do {
          try await request()
          Issue.record("\(name) after \(command.joined(separator: " ")) succeeded")
        } catch let error as NetworkingError {
          #expect(error.serverError?.status.code == 401, "\(name): \(error)")
          #expect(error.serverError?.code == APIErrorCode.tokenInvalid.rawValue, "\(name): \(error)")
        }
      }
    }
  }
}
