import DomainKit
import Foundation
import MeridianAPI
import NetworkingKit
import Testing

/// A geofence event is visible to those who could see the person's location when it happened: sharing that starts
/// later reveals no earlier event.
@Suite("Geofence events and who could see them")
struct GeofenceAudienceTests {
  @Test func anEventBeforeSharingStartedStaysHiddenFromTheFencesOwner() async throws {
    try await TestServer.with { server in
      let (annaSession, anna) = try await server.signUp("anna")
      let (bobSession, bob) = try await server.signUp("bob")
      // Anna shares her home fence with her Family, Bob among them; Bob does not share his location with Anna.
      let family = GroupID("\(annaSession.userId).family")
      _ = try await anna.send(API.addMember, parameters: GroupMemberRef(groupID: family, userID: bobSession.userId))
      let fence = try await anna.send(
        API.createGeofence,
        body: NewGeofence(
          name: "Home", shape: .circle(center: GeofenceTests.home, radius: 100), sharing: .group, groupId: family))
      #expect(try await bob.send(API.geofences).items.map(\.id) == [fence.id])

      // Bob arrives: his own listing shows the enter (the acknowledgement that it was evaluated and stored).
      _ = try await bob.send(
        API.postFixes,
        body: FixBatch(deviceId: "bob-phone", fixes: try GeofenceTests.arrival(from: GeofenceTests.now() - 60_000)))
      let deadline = ContinuousClock.now + .seconds(30)
      var own: [GeofenceEventItem] = []
      while ContinuousClock.now < deadline, own.isEmpty {
        own = try await bob.send(API.geofenceEvents, parameters: GeofenceEventParameters()).items
        if own.isEmpty { try await Task.sleep(for: .milliseconds(20)) }
      }
      #expect(own.map(\.kind) == [.enter] && own.first?.geofenceId == fence.id)

      // Bob starts sharing with Anna: she sees his location now, but not the enter from before.
      _ = try await bob.send(
        API.addMember,
        parameters: GroupMemberRef(groupID: GroupID("\(bobSession.userId).family"), userID: annaSession.userId))
      _ = try await anna.send(API.userLocation, parameters: UserRef(id: bobSession.userId))
      #expect(try await anna.send(API.geofenceEvents, parameters: GeofenceEventParameters()).items.isEmpty)
      #expect(
        try await anna.send(API.geofenceEvents, parameters: GeofenceEventParameters(user: bobSession.userId)).items
          .isEmpty)
    }
  }
}
