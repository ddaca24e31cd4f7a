import DomainKit
import Foundation
import MeridianAPI
import MeridianServer
import NetworkingKit
import Testing

/// A disabled or deleted account's tokens stop at once on every node, and a request that meets a missing account
/// answers 401, never 500.
@Suite("Disabled and deleted accounts on two nodes", .serialized)
struct AccountStateTests {
  @Test func anAccountDisabledOrDeletedOnNodeAIsRefusedOnNodeBAtOnce() async throws {
    try await TwoNodeTests.withTwoNodes { a, b in
      let admin = try a.client(token: ServerConfiguration.developmentAdminToken)
      for (name, deletes) in [("anna", false), ("boris", true)] {
        let (session, _) = try await a.signUp(name)
        let onB = try b.client(token: session.token)
        // Used on node B first, so anything B remembers of the token is fresh.
        _ = try await onB.send(API.achievements)
        _ = try await onB.send(API.favourites, parameters: PagingParameters())
        if deletes {
          _ = try await admin.send(
            API.adminDeleteUser, parameters: AdminUserDeletionQuery(user: session.userId.rawValue))
        } else {
          _ = try await admin.send(API.adminDisableUser, parameters: AdminUserRef(user: session.userId.rawValue))
        }
        await expectAPIError(.tokenInvalid, status: 401) { try await onB.send(API.achievements) }
        await expectAPIError(.tokenInvalid, status: 401) {
          try await onB.send(API.favourites, parameters: PagingParameters())
        }
        await expectAPIError(.tokenInvalid, status: 401) {
          try await onB.send(API.addAchievement, body: NewAchievement(kind: "study", title: "Olympiad"))
        }
        await expectAPIError(.tokenInvalid, status: 401) { try await onB.send(API.questionnaire) }
      }
    }
  }
}
