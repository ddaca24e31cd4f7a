import DomainKit
import Foundation
import Logging
import MeridianSecrets
import MeridianServer
import MeridianStore
import MeridianStoreSQLite
import Testing

/// A meridian-server running in this process on an OS-chosen loopback port, on the sandbox's database.
struct InProcessServer {
  let running: RunningServer
  var url: String { "http://127.0.0.1:\(running.port)" }

  static func start(database: String, adminToken: String) async throws -> InProcessServer {
    var configuration = ServerConfiguration()
    configuration.host = "127.0.0.1"
    configuration.port = 0
    configuration.databasePath = database
    configuration.bcryptCost = 4
    configuration.adminToken = adminToken
    var logger = Logger(label: "meridian-admin-tests")
    logger.logLevel = .warning
    return InProcessServer(running: try await RunningServer.start(configuration: configuration, logger: logger))
  }

  func stop() async throws { try await running.stop() }
}

@Suite("meridian-admin --server (the admin API)")
struct AdminServerModeTests {
  static let token = "admin-cli-tests-secret"

  @Test func statsUsersGroupsAndPromotionsGoThroughTheServer() async throws {
    let sandbox = try AdminSandbox()
    let server = try await InProcessServer.start(database: sandbox.database, adminToken: Self.token)
    do {
      try await run(sandbox, server)
    } catch {
      try await server.stop()
      throw error
    }
    try await server.stop()
  }

  private func run(_ sandbox: AdminSandbox, _ server: InProcessServer) async throws {
    let store = try sandbox.store()
    let now = Timestamp.milliseconds(Date())
    let anna = try await seedUser(store, email: "anna@example.com")
    let bob = try await seedUser(store, email: "bob@example.com", now: now + 1)
    try await seedFixes(
      store, user: anna, device: "anna-phone",
      fixes: try makeFixes(count: 20, start: now - 3_600_000, device: "anna-phone"))
    let secret = "anna-token"
    try await store.insertToken(
      hash: SecretHash.sha256(secret), userID: anna, createdAt: now, expiresAt: now + 86_400_000)
    let remote = ["--server", server.url, "--token", Self.token]

    let stats = try await sandbox.admin(["stats", "--json", "--days", "2"] + remote, database: nil)
    #expect(stats.status == 0, "\(stats)")
    let figures = try stats.object()
    #expect(figures["users"] as? Int == 2)
    #expect(figures["fixes"] as? Int == 20)
    #expect((figures["fixesPerDay"] as? [Any])?.count == 2)
    let live = try #require(figures["live"] as? [String: Any], "\(stats)")
    #expect(live["connections"] as? Int == 0)
    #expect(live["windowSeconds"] as? Int == 60)
    #expect(live["fixesPerSecond"] as? Double == 0)
    // The same document as the local database's, plus the live figures.
    let local = try await sandbox.admin(["stats", "--json", "--days", "2"])
    var localFigures = try local.object()
    localFigures["live"] = live
    #expect(Set(localFigures.keys) == Set(figures.keys))
    let table = try await sandbox.admin(["stats"] + remote, database: nil)
    #expect(table.stdout.contains("live connections"), "\(table)")

    let list = try await sandbox.admin(["users", "list", "--json"] + remote, database: nil)
    #expect(list.status == 0, "\(list)")
    let users = try #require(try list.json() as? [[String: Any]])
    #expect(users.compactMap { $0["id"] as? String } == [anna.rawValue, bob.rawValue])
    #expect(users.first?["fixes"] as? Int == 20)
    let localList = try await sandbox.admin(["users", "list", "--json"])
    #expect(localList.stdout == list.stdout)

    #expect(try await store.user(forTokenHash: SecretHash.sha256(secret), now: now) == anna)
    let disabled = try await sandbox.admin(["users", "disable", "anna@example.com", "--json"] + remote, database: nil)
    #expect(disabled.status == 0, "\(disabled)")
    #expect(try disabled.object()["user"] as? String == anna.rawValue)
    #expect(try disabled.object()["disabled"] as? Bool == true)
    #expect(try disabled.object()["changed"] as? Bool == true)
    #expect(try await store.user(forTokenHash: SecretHash.sha256(secret), now: now) == nil)
    let shown = try await sandbox.admin(["users", "show", anna.rawValue, "--json"] + remote, database: nil)
    #expect(try (shown.object()["user"] as? [String: Any])?["disabled"] as? Bool == true, "\(shown)")

    let missing = try await sandbox.admin(["users", "show", "nobody@example.com"] + remote, database: nil)
    #expect(missing.status == 3, "\(missing)")
    #expect(missing.stderr.contains("No user 'nobody@example.com'"), "\(missing)")

    // Groups and promotions: the same JSON and tables through the server as from the local database.
    let venues = sandbox.path("venues.csv")
    try """
    id,name_en,type,latitude,longitude,time_zone
    cafe-1,Blue Cup,cafe,50.4500,30.5200,Europe/Kyiv
    """.write(toFile: venues, atomically: true, encoding: .utf8)
    #expect(try await sandbox.admin(["venues", "import", venues]).status == 0)
    let created = try await sandbox.admin([
      "promotions", "create", "--venue", "cafe-1", "--name", "Cake", "--code", "CAKE", "--id", "p-cake", "--json",
    ])
    #expect(created.status == 0, "\(created)")
    try await store.recordOffers(["p-cake"], to: bob, at: now)
    #expect(try await store.redeem("p-cake", by: bob, at: now + 1) == .redeemed)
    for command in [
      ["groups", "list", "--user", "anna@example.com"], ["promotions", "list", "--venue", "cafe-1"],
      ["promotions", "stats", "--venue", "cafe-1"],
    ] {
      let through = try await sandbox.admin(command + ["--json"] + remote, database: nil)
      #expect(through.status == 0, "\(command): \(through)")
      let direct = try await sandbox.admin(command + ["--json"])
      #expect(through.stdout == direct.stdout, "\(command)")
      let table = try await sandbox.admin(command + remote, database: nil)
      #expect(table.stdout == (try await sandbox.admin(command)).stdout, "\(command)")
    }
    let statistics = try await sandbox.admin(
      ["promotions", "stats", "--venue", "cafe-1", "--json"] + remote, database: nil)
    #expect(try statistics.object()["shown"] as? Int == 1 && statistics.object()["redeemed"] as? Int == 1)
    let noVenue = try await sandbox.admin(["promotions", "stats", "--venue", "nowhere"] + remote, database: nil)
    #expect(noVenue.status == 3, "\(noVenue)")
  }

  @Test func aWrongTokenAndLocalOnlyCommandsAreRefused() async throws {
    let sandbox = try AdminSandbox()
    let server = try await InProcessServer.start(database: sandbox.database, adminToken: Self.token)
    do {
      let wrong = try await sandbox.admin(
        ["users", "list", "--server", server.url, "--token", "not-the-token"], database: nil)
      #expect(wrong.status == 1, "\(wrong)")
      #expect(wrong.stderr.contains("refused the admin token"), "\(wrong)")
      #expect(wrong.stdout.isEmpty)

      let noToken = try await sandbox.admin(["stats", "--server", server.url], database: nil)
      #expect(noToken.status == 2, "\(noToken)")
      #expect(noToken.stderr.contains("--token"), "\(noToken)")

      for command in [
        ["db", "check"], ["users", "create", "--phone", "+380501234567"],
        ["retention", "apply", "--older-than", "1d", "--dry-run"],
      ] {
        let refused = try await sandbox.admin(command + ["--server", server.url, "--token", Self.token], database: nil)
        #expect(refused.status == 2, "\(refused)")
        #expect(refused.stderr.contains("local database only"), "\(refused)")
      }

      let both = try await sandbox.admin(["stats", "--server", server.url, "--token", Self.token])
      #expect(both.status == 2, "\(both)")

      let unreachable = try await sandbox.admin(
        ["stats", "--server", "http://127.0.0.1:1", "--token", Self.token], database: nil)
      #expect(unreachable.status == 1, "\(unreachable)")
      #expect(unreachable.stderr.contains("did not answer"), "\(unreachable)")
    } catch {
      try await server.stop()
      throw error
    }
    try await server.stop()
  }
}
