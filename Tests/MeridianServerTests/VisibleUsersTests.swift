import DomainKit
import Foundation
import HTTPTypes
import HummingbirdTesting
import MeridianAPI
import NIOCore
import Testing

/// `GET /v1/sharing/visible` and `GET /v1/me` say whose position is known, so a page asks for no location that is
/// unknown (a 404).
@Suite struct VisibleUsersTests {
  static func register(_ client: any TestClientProtocol, _ email: String) async throws -> AuthSession {
    let created = try await client.execute(
      uri: "/v1/auth/register", method: .post, headers: RouteTests.jsonType,
      body: RouteTests.json(#"{"email":"\#(email)","password":"correct horse"}"#))
    return try RouteTests.decode(AuthSession.self, created)
  }

  /// The visible list and `/v1/me` give the time of the last fix, and none before the first.
  @Test func theVisibleListGivesTheTimeOfEachPersonsLastFixAndNoneWithoutOne() async throws {
    try await RouteTests.withRoutes { client in
      let viewer = try await Self.register(client, "viewer@example.com")
      let placed = try await Self.register(client, "placed@example.com")
      let unplaced = try await Self.register(client, "unplaced@example.com")
      for owner in [placed, unplaced] {
        let auth: HTTPFields = [.authorization: "Bearer \(owner.token)"]
        let groups = try RouteTests.decode(
          GroupList.self, try await client.execute(uri: "/v1/groups", method: .get, headers: auth))
        let friends = try #require(groups.groups.first { $0.kind == .friends })
        let added = try await client.execute(
          uri: "/v1/groups/\(friends.id.rawValue)/members/\(viewer.userId.rawValue)", method: .put, headers: auth)
        #expect(added.status.code < 300, "\(added.status)")
      }
      let timestamp = Int64(Date().timeIntervalSince1970 * 1000) - 60_000
      var headers = RouteTests.jsonType
      headers[.authorization] = "Bearer \(placed.token)"
      let stored = try await client.execute(
        uri: "/v1/fixes", method: .post, headers: headers,
        body: RouteTests.json(
          #"{"deviceId":"phone","fixes":[{"timestamp":\#(timestamp),"latitude":50.45,"longitude":30.52,"horizontalAccuracy":5}]}"#
        ))
      #expect(stored.status.code < 300, "\(stored.status)")
      let visible = try RouteTests.decode(
        VisibleUsers.self,
        try await client.execute(
          uri: "/v1/sharing/visible", method: .get, headers: [.authorization: "Bearer \(viewer.token)"]))
      let byID = Dictionary(uniqueKeysWithValues: visible.users.map { ($0.userId, $0) })
      #expect(byID.count == 2)
      #expect(byID[placed.userId]?.lastFixAt == timestamp)
      #expect(byID[unplaced.userId] != nil && byID[unplaced.userId]?.lastFixAt == nil)
      // What the page skips: the unplaced person's location is 404.
      let location = try await client.execute(
        uri: "/v1/users/\(unplaced.userId.rawValue)/location", method: .get,
        headers: [.authorization: "Bearer \(viewer.token)"])
      #expect(location.status == .notFound)
      // And the caller's own: /v1/me gives the time of their last fix, none before the first.
      func me(_ session: AuthSession) async throws -> Me {
        try RouteTests.decode(
          Me.self,
          try await client.execute(uri: "/v1/me", method: .get, headers: [.authorization: "Bearer \(session.token)"]))
      }
      #expect(try await me(placed).lastFixAt == timestamp)
      #expect(try await me(viewer).lastFixAt == nil)
    }
  }
}
