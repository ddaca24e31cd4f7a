import DomainKit
import Foundation
import MeridianAPI
import MeridianSecrets
import MeridianServer
import MeridianStore
import MeridianStoreSQLite
import MeridianStoreTesting
import NetworkingKit
import RealtimeKit
import RealtimeKitTesting
import Testing

@Suite("Admin API", .inProcess)
struct AdminAPITests {
  static let adminToken = "admin-api-tests-secret"

  static func withServer(_ body: (TestServer) async throws -> Void) async throws {
    try await TestServer.with({ $0.adminToken = adminToken }, body)
  }

  @Test func onlyTheAdminTokenIsAccepted() async throws {
    try await Self.withServer { server in
      let (session, _) = try await server.signUp("anna")
      for token in [nil, "wrong", Self.adminToken + "x", session.token] {
        await expectAPIError(.tokenInvalid, status: 401) {
          try await server.client(token: token).send(API.adminStats, parameters: AdminStatsQuery())
        }
        await expectAPIError(.tokenInvalid, status: 401) {
          try await server.client(token: token).send(
            API.adminDisableUser, parameters: AdminUserRef(user: "anna@example.com"))
        }
      }
      let admin = try server.client(token: Self.adminToken)
      let users = try await admin.send(API.adminUsers, parameters: AdminUsersQuery()).users
      #expect(users.map(\.id) == [session.userId.rawValue])
      #expect(users.first?.disabled == false)
      // The admin token is no user's token.
      await expectAPIError(.tokenInvalid, status: 401) { try await server.client(token: Self.adminToken).send(API.me) }
    }
  }

  @Test func statsShowLiveConnectionsAndTheIngestRate() async throws {
    try await Self.withServer { server in
      let admin = try server.client(token: Self.adminToken)
      let idle = try await admin.send(API.adminStats, parameters: AdminStatsQuery(days: 3))
      #expect(idle.live == LiveStatistics(connections: 0, fixesAccepted: 0, windowSeconds: 60))
      #expect(idle.fixesPerDay.count == 3)

      let (session, anna) = try await server.signUp("anna")
      let watcher = await LiveWatcher(server: server, token: session.token)
      defer { Task { await watcher.stop() } }
      #expect(try await watcher.subscribe(ChannelName.of(user: session.userId)))
      let now = Timestamp.milliseconds(Date())
      _ = try await anna.send(
        API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: try makeFixes(count: 30, start: now - 60_000)))
      // Duplicates are not ingest.
      _ = try await anna.send(
        API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: try makeFixes(count: 30, start: now - 60_000)))

      let stats = try await admin.send(API.adminStats, parameters: AdminStatsQuery(days: 2))
      let live = try #require(stats.live)
      #expect(live.connections == 1)
      #expect(live.fixesAccepted == 30)
      #expect(live.fixesPerSecond == 0.5)
      #expect(stats.users == 1)
      #expect(stats.devices == 1)
      #expect(stats.fixes == 30)
      #expect(stats.fixesPerDay.reduce(0) { $0 + $1.fixes } == 30)
      #expect(stats.databaseBytes > 0)
    }
  }

  @Test func disablingAUserClosesTheirSocketAndStopsTheirToken() async throws {
    try await Self.withServer { server in
      let (session, anna) = try await server.signUp("anna")
      let (bobSession, bob) = try await server.signUp("bob")
      let watcher = await LiveWatcher(server: server, token: session.token)
      defer { Task { await watcher.stop() } }
      #expect(try await watcher.subscribe(ChannelName.of(user: session.userId)))
      let stopped = Task {
        for await state in watcher.client.states {
          if case .stopped(let code) = state { return code }
        }
        return nil
      }

      let admin = try server.client(token: Self.adminToken)
      let state = try await admin.send(API.adminDisableUser, parameters: AdminUserRef(user: "anna@example.com"))
      #expect(state == AdminUserState(user: session.userId.rawValue, disabled: true, changed: true))
      let code = try await withTimeout(.seconds(30)) { await stopped.value }
      #expect(code == .unauthorized)
      await expectAPIError(.tokenInvalid, status: 401) { try await anna.send(API.me) }
      // Bob is untouched.
      #expect(try await bob.send(API.me).account.id == bobSession.userId)
      let stats = try await admin.send(API.adminStats, parameters: AdminStatsQuery())
      #expect(stats.disabledUsers == 1)
      #expect(stats.live?.connections == 0)

      let again = try await admin.send(API.adminDisableUser, parameters: AdminUserRef(user: session.userId.rawValue))
      #expect(again.changed == false)
      let enabled = try await admin.send(API.adminEnableUser, parameters: AdminUserRef(user: session.userId.rawValue))
      #expect(enabled == AdminUserState(user: session.userId.rawValue, disabled: false, changed: true))
      // (A client that saw the 401 dropped its token, as after any sign-out.)
      #expect(try await server.client(token: session.token).send(API.me).account.id == session.userId)
    }
  }

  @Test func signingOutOrRevokingATokenClosesOnlyTheSocketsItOpened() async throws {
    try await Self.withServer { server in
      let (phone, anna) = try await server.signUp("anna")
      let laptop = try await server.client().send(
        API.login, body: EmailCredentials(email: "anna@example.com", password: "correct horse"))
      let channel = try ChannelName.of(user: phone.userId)
      let onPhone = await LiveWatcher(server: server, token: phone.token)
      let onLaptop = await LiveWatcher(server: server, token: laptop.token)
      defer { Task { await onPhone.stop() } }
      defer { Task { await onLaptop.stop() } }
      #expect(try await onPhone.subscribe(channel))
      #expect(try await onLaptop.subscribe(channel))
      func stopCode(_ watcher: LiveWatcher) -> Task<RealtimeCloseCode?, Never> {
        Task {
          for await state in watcher.client.states {
            if case .stopped(let code) = state { return code }
          }
          return nil
        }
      }
      let phoneStopped = stopCode(onPhone)
      let laptopStopped = stopCode(onLaptop)

      // Signing out on the phone ends the phone's socket; the laptop's session goes on and gets the next fix.
      _ = try await anna.send(API.logout)
      #expect(try await withTimeout(.seconds(30)) { await phoneStopped.value } == .unauthorized)
      let laptopClient = try server.client(token: laptop.token)
      _ = try await laptopClient.send(
        API.postFixes, body: FixBatch(deviceId: "anna-laptop", fixes: try makeFixes(count: 1)))
      try await onLaptop.wait("the laptop's live fix") { _ in try await onLaptop.locations(on: channel).count == 1 }

      // An operator revoking the laptop's token by its id ends that socket too.
      let admin = try server.client(token: Self.adminToken)
      let id = String(SecretHash.sha256(laptop.token).prefix(TokenSummary.idLength))
      #expect(try await admin.send(API.adminRevokeToken, parameters: AdminTokenRef(id: id)).revoked == 1)
      #expect(try await withTimeout(.seconds(30)) { await laptopStopped.value } == .unauthorized)
    }
  }

  @Test func tokensAreListedAndRevokedByHashPrefix() async throws {
    try await Self.withServer { server in
      let (session, anna) = try await server.signUp("anna")
      let admin = try server.client(token: Self.adminToken)
      let tokens = try await admin.send(API.adminTokens, parameters: AdminTokensQuery(user: "anna@example.com")).tokens
      #expect(tokens.count == 1)
      let token = try #require(tokens.first)
      #expect(token.id == String(SecretHash.sha256(session.token).prefix(TokenSummary.idLength)))
      #expect(token.state == "active")

      await expectAPIError(.invalidRequest, status: 400) {
        try await admin.send(API.adminRevokeToken, parameters: AdminTokenRef(id: "abc"))
      }
      await expectAPIError(.notFound, status: 404) {
        try await admin.send(
          API.adminRevokeToken, parameters: AdminTokenRef(id: token.id == "00000000" ? "11111111" : "00000000"))
      }
      #expect(try await admin.send(API.adminRevokeToken, parameters: AdminTokenRef(id: token.id)).revoked == 1)
      await expectAPIError(.tokenInvalid, status: 401) { try await anna.send(API.me) }
      let all = try await admin.send(API.adminTokens, parameters: AdminTokensQuery(all: true)).tokens
      #expect(all.map(\.state) == ["revoked"])
      await expectAPIError(.notFound, status: 404) {
        try await admin.send(API.adminTokens, parameters: AdminTokensQuery(user: "nobody@example.com"))
      }
    }
  }

  @Test func deletingAUserRemovesEveryRowAndReportsCounts() async throws {
    try await Self.withServer { server in
      let (session, anna) = try await server.signUp("anna")
      let (bobSession, _) = try await server.signUp("bob")
      _ = try await anna.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: try makeFixes(count: 5)))
      let admin = try server.client(token: Self.adminToken)

      let counted = try await admin.send(
        API.adminDeleteUser, parameters: AdminUserDeletionQuery(user: "anna@example.com", dryRun: true))
      #expect(counted.dryRun)
      #expect(
        try await admin.send(API.adminUser, parameters: AdminUserRef(user: session.userId.rawValue)).user.fixes == 5)

      let deleted = try await admin.send(
        API.adminDeleteUser, parameters: AdminUserDeletionQuery(user: "anna@example.com"))
      // The same rows as the dry run counted, but the geofence queue's: a work queue the server drains by itself, so
      // its entry may be gone between the two (it was, in a clean-clone run).
      let durable = { (tables: [TableCount]) in tables.filter { $0.table != "geofence_queue" } }
      #expect(durable(deleted.tables) == durable(counted.tables))
      let rows = Dictionary(uniqueKeysWithValues: deleted.tables.map { ($0.table, $0.rows) })
      #expect(rows["users"] == 1)
      #expect(rows["fixes"] == 5)
      #expect(rows["devices"] == 1)
      #expect(rows["tokens"] == 1)
      #expect(deleted.total == deleted.tables.reduce(0) { $0 + $1.rows })

      await expectAPIError(.notFound, status: 404) {
        try await admin.send(API.adminUser, parameters: AdminUserRef(user: session.userId.rawValue))
      }
      await expectAPIError(.tokenInvalid, status: 401) { try await anna.send(API.me) }
      let users = try await admin.send(API.adminUsers, parameters: AdminUsersQuery()).users
      #expect(users.map(\.id) == [bobSession.userId.rawValue])
      let stats = try await admin.send(API.adminStats, parameters: AdminStatsQuery())
      #expect(stats.users == 1)
      #expect(stats.fixes == 0)
    }
  }

  @Test func badParametersAreInvalidRequests() async throws {
    try await Self.withServer { server in
      let admin = try server.client(token: Self.adminToken)
      await expectAPIError(.invalidRequest, status: 400) {
        try await admin.send(API.adminStats, parameters: AdminStatsQuery(days: 0))
      }
      await expectAPIError(.invalidRequest, status: 400) {
        try await admin.send(API.adminUsers, parameters: AdminUsersQuery(limit: 0))
      }
      await expectAPIError(.notFound, status: 404) {
        try await admin.send(API.adminDisableUser, parameters: AdminUserRef(user: "+380501234567"))
      }
    }
  }
}
