import DomainKit
import Foundation
import MeridianAPI
import MeridianStore
import NetworkingKit
import NetworkingKitAsyncHTTPClient

/// Where `stats`, `users list|show|disable|enable|delete`, `tokens list|revoke`, `groups list` and
/// `promotions list|stats` run: the server's
/// ``Administration`` on the local database, or a running server's admin API (`--server URL --token T`), which
/// answers with the same values, so the commands print the same tables and JSON either way.
protocol AdminBackend: Sendable {
  /// Counts, fixes per day, database size; live connections and ingest rate from a server.
  func statistics(days: Int) async throws -> DatabaseStatistics
  /// Accounts, oldest first.
  func users(limit: Int, offset: Int) async throws -> [UserSummary]
  /// One account by id, email address or phone number.
  func user(_ text: String) async throws -> UserDetail
  /// Disables or enables sign-in.
  func setDisabled(_ text: String, _ disabled: Bool) async throws -> AdminUserState
  /// Deletes (or with `dryRun` counts) every row of a user.
  func deleteUser(_ text: String, dryRun: Bool) async throws -> AdminUserDeletion
  /// Tokens, newest first.
  func tokens(user: String?, includeInactive: Bool) async throws -> [TokenSummary]
  /// Revokes the one token whose hash starts with `prefix`.
  func revokeToken(prefix: String) async throws -> AdminTokenRevocation
  /// Revokes every usable token of a user.
  func revokeTokens(user: String) async throws -> AdminTokenRevocation
  /// A user's groups.
  func groups(user: String) async throws -> [GroupSummary]
  /// A page of every venue's promotions, each with its state and whether it runs now.
  func promotionPage(_ query: AdminPromotionQuery) async throws -> AdminPromotionPage
  /// How a venue's promotions do.
  func promotionStatistics(venue: String) async throws -> VenuePromotionStatistics
  /// Releases connections.
  func close() async
}

extension Administration: AdminBackend {
  func close() async {}
}

/// A running server's admin API, through NetworkingKit's `NetworkClient` over AsyncHTTPClient.
struct AdminServer: AdminBackend {
  let url: URL
  let transport: AsyncHTTPClientTransport
  let client: NetworkClient

  /// A client of the server at `server` (`http://host:port`) sending `token` as the bearer token.
  init(server: String, token: String) throws {
    guard let url = URL(string: server), let scheme = url.scheme, ["http", "https"].contains(scheme),
      url.host != nil
    else { throw AdminError.usage("--server must be an http(s) URL such as http://127.0.0.1:8080, not '\(server)'.") }
    var configuration = NetworkClient.Configuration()
    // An operator's command: one attempt, and the answer (or the failure) at once.
    configuration.retryPolicy = .none
    configuration.retryBudgets = nil
    let transport = AsyncHTTPClientTransport()
    self.url = url
    self.transport = transport
    client = try NetworkClient(
      baseURL: url, transport: transport, credentials: BearerTokenCredentials(token: token) { _ in nil },
      configuration: configuration)
  }

  func statistics(days: Int) async throws -> DatabaseStatistics {
    try await send { try await client.send(API.adminStats, parameters: AdminStatsQuery(days: days)) }
  }

  func users(limit: Int, offset: Int) async throws -> [UserSummary] {
    try await send {
      try await client.send(API.adminUsers, parameters: AdminUsersQuery(limit: limit, offset: offset)).users
    }
  }

  func user(_ text: String) async throws -> UserDetail {
    try await send { try await client.send(API.adminUser, parameters: AdminUserRef(user: text)) }
  }

  func setDisabled(_ text: String, _ disabled: Bool) async throws -> AdminUserState {
    let endpoint = disabled ? API.adminDisableUser : API.adminEnableUser
    return try await send { try await client.send(endpoint, parameters: AdminUserRef(user: text)) }
  }

  func deleteUser(_ text: String, dryRun: Bool) async throws -> AdminUserDeletion {
    try await send {
      try await client.send(API.adminDeleteUser, parameters: AdminUserDeletionQuery(user: text, dryRun: dryRun))
    }
  }

  func tokens(user: String?, includeInactive: Bool) async throws -> [TokenSummary] {
    try await send {
      try await client.send(API.adminTokens, parameters: AdminTokensQuery(user: user, all: includeInactive)).tokens
    }
  }

  func revokeToken(prefix: String) async throws -> AdminTokenRevocation {
    try await send { try await client.send(API.adminRevokeToken, parameters: AdminTokenRef(id: prefix)) }
  }

  func revokeTokens(user: String) async throws -> AdminTokenRevocation {
    try await send { try await client.send(API.adminRevokeUserTokens, parameters: AdminUserRef(user: user)) }
  }

  func groups(user: String) async throws -> [GroupSummary] {
    try await send { try await client.send(API.adminUserGroups, parameters: AdminUserRef(user: user)).groups }
  }

  func promotionPage(_ query: AdminPromotionQuery) async throws -> AdminPromotionPage {
    try await send { try await client.send(API.adminPromotions, parameters: query) }
  }

  func promotionStatistics(venue: String) async throws -> VenuePromotionStatistics {
    try await send { try await client.send(API.adminPromotionStatistics, parameters: VenueRef(id: PlaceID(venue))) }
  }

  func close() async { try? await transport.shutdown() }

  /// Runs one request; the server's answer becomes the ``AdminError`` its status means.
  private func send<Value>(_ request: () async throws -> Value) async throws -> Value {
    do {
      return try await request()
    } catch let error as NetworkingError {
      guard let failure = error.serverError else {
        throw AdminError.failure("The server at \(url) did not answer: \(error). Check --server (or MERIDIAN_SERVER).")
      }
      if failure.status.code == 401 {
        throw AdminError.failure(
          "The server at \(url) refused the admin token (401 token_invalid); pass its MERIDIAN_ADMIN_TOKEN with "
            + "--token (or MERIDIAN_ADMIN_TOKEN).")
      }
      throw AdminError(status: failure.status.code, message: failure.message ?? "\(failure)")
    }
  }
}

extension AdminError {
  /// The CLI's kind of an API failure: 404 is not found (exit 3), other 4xx a usage error (exit 2), the rest a
  /// failure (exit 1).
  init(status: Int, message: String) {
    switch status {
    case 404: self = .notFound(message)
    case 400..<500: self = .usage(message)
    default: self = .failure(message)
    }
  }
}
