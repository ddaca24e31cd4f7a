import DomainKit
import Foundation
import MeridianAPI
import MeridianStore
import RealtimeKit

/// The admin API (`/v1/admin/…`): ``Administration`` over the server's store, plus what only the running server
/// knows (live connections, ingest rate) and does (closing the live sockets of a user who was disabled, deleted or
/// had every token revoked). Its routes accept only the admin token (``AdminTokenAuthenticator``).
struct AdminFeatures: Sendable {
  let environment: ServerEnvironment
  let live: LiveUpdates
  let ingest: FixIngest
  /// The geofence monitor: a deleted user's fences leave every node's index at once (announced through the live log).
  let geofences: GeofenceMonitor
  /// Where images are kept: a deleted user's images that nothing else refers to are deleted from it.
  var blobs: (any BlobStore)? = nil

  func register(on routes: RouteRegistrar) {
    let routes = routes.authenticating(with: AdminTokenAuthenticator(adminToken: environment.adminToken))
    let administration = Administration(
      store: environment.store, blobs: blobs, blobGracePeriod: environment.blobGracePeriod, now: environment.now)
    let live = self.live
    let geofences = self.geofences
    let ingestRate = ingest.writer.ingestRate
    routes.on(API.adminStats) { call in
      var statistics = try await administration.statistics(days: call.parameters.days)
      statistics.live = LiveStatistics(
        connections: await live.hub.connectionCount,
        fixesAccepted: ingestRate.accepted(at: Timestamp.milliseconds(Date())),
        windowSeconds: ingestRate.windowSeconds)
      return statistics
    }
    routes.on(API.adminUsers) { call in
      AdminUserList(users: try await administration.users(limit: call.parameters.limit, offset: call.parameters.offset))
    }
    routes.on(API.adminUser) { call in try await administration.user(call.parameters.user) }
    routes.on(API.adminDisableUser) { call in
      let state = try await administration.setDisabled(call.parameters.user, true)
      await Self.disconnect(state.user, from: live, reason: "account disabled")
      return state
    }
    routes.on(API.adminEnableUser) { call in try await administration.setDisabled(call.parameters.user, false) }
    routes.on(API.adminDeleteUser) { call in
      let deletion = try await administration.deleteUser(call.parameters.user, dryRun: call.parameters.dryRun)
      if !deletion.dryRun {
        await Self.disconnect(deletion.user, from: live, reason: "account deleted")
        await geofences.fencesChanged(owner: UserID(deletion.user))
      }
      return deletion
    }
    routes.on(API.adminRevokeUserTokens) { call in
      let user = try await administration.user(named: call.parameters.user)
      let revocation = try await administration.revokeTokens(user: user.rawValue)
      await Self.disconnect(user.rawValue, from: live, reason: "tokens revoked")
      return revocation
    }
    routes.on(API.adminTokens) { call in
      AdminTokenList(
        tokens: try await administration.tokens(user: call.parameters.user, includeInactive: call.parameters.all))
    }
    routes.on(API.adminRevokeToken) { call in
      let (revocation, hash) = try await administration.revokeTokenReturningHash(prefix: call.parameters.id)
      await live.disconnect(tokenHash: hash, reason: "token revoked")
      return revocation
    }
    routes.on(API.adminUserGroups) { call in
      AdminGroupList(groups: try await administration.groups(user: call.parameters.user))
    }
    routes.on(API.adminVenuePromotions) { call in
      try await administration.promotions(venue: call.parameters.id.rawValue)
    }
    routes.on(API.adminPromotions) { call in try await administration.promotionPage(call.parameters) }
    routes.on(API.adminPromotionStatistics) { call in
      try await administration.promotionStatistics(venue: call.parameters.id.rawValue)
    }
  }

  /// Closes every live connection of `user` with 4001 (unauthorized): its token no longer works, so the client
  /// must not reconnect with it.
  static func disconnect(_ user: String, from live: LiveUpdates, reason: String) async {
    await live.disconnect(user: UserID(user), reason: reason)
  }
}
