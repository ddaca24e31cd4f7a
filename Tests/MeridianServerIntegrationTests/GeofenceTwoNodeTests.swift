import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import MeridianServer
import RealtimeKit
import Testing

/// Geofence events across two server nodes on one PostgreSQL database: node A evaluates the fixes it stored, and the
/// watchers connected to node B hear the events as well as those on node A — once each.
@Suite("Geofence events across two nodes", .serialized)
struct GeofenceTwoNodeTests {
  // The server stage's 253 tests share two cores for about 5 minutes; a test that starts with it may take most of
  // that (this one outlasted 3 minutes in two CI runs, while the rest of the stage ran).
  @Test(.timeLimit(.minutes(8)))
  func anArrivalEvaluatedOnNodeAReachesWatchersOnNodeBOnce() async throws {
    try await TwoNodeTests.withTwoNodes { a, b in
      let (bobSession, bob) = try await a.signUp("bob")
      let (annaSession, _) = try await a.signUp("anna")
      let (carolSession, _) = try await a.signUp("carol")
      // Bob shares his location with Anna (his Family), not with Carol; his home fence is shared with everyone who
      // may see his location.
      _ = try await bob.send(
        API.addMember,
        parameters: GroupMemberRef(groupID: GroupID("\(bobSession.userId).family"), userID: annaSession.userId))
      // Two fences alike: each fix's events for both reach node B in one announcement of several signals.
      var fences: Set<GeofenceID> = []
      for name in ["Home", "Street"] {
        fences.insert(
          try await bob.send(
            API.createGeofence,
            body: NewGeofence(name: name, shape: .circle(center: GeofenceTests.home, radius: 100), sharing: .everyone)
          ).id)
      }
      let annaOnB = await LiveWatcher(server: b, token: annaSession.token)
      let carolOnB = await LiveWatcher(server: b, token: carolSession.token)
      let bobOnA = await LiveWatcher(server: a, token: bobSession.token)
      defer {
        Task {
          await annaOnB.stop()
          await carolOnB.stop()
          await bobOnA.stop()
        }
      }
      #expect(try await annaOnB.subscribe(GeofenceTests.channel(annaSession.userId)))
      #expect(try await carolOnB.subscribe(GeofenceTests.channel(carolSession.userId)))
      #expect(try await bobOnA.subscribe(GeofenceTests.channel(bobSession.userId)))

      // Bob arrives, uploading to node A; then leaves.
      let start = GeofenceTests.now() + 1_000
      let track = try GeofenceTests.arrival(from: start)
      _ = try await bob.send(API.postFixes, body: FixBatch(deviceId: "bob-phone", fixes: track))
      let leave = start + 30_000
      _ = try await bob.send(
        API.postFixes, body: FixBatch(deviceId: "bob-phone", fixes: [try GeofenceTests.fix(leave, 900)]))
      for watcher in [annaOnB, bobOnA] {
        try await watcher.wait("the exits") { _ in try await GeofenceTests.events(watcher).count >= 4 }
        let events = try await GeofenceTests.events(watcher)
        #expect(events.map(\.kind) == [.enter, .enter, .exit, .exit], "\(events)")
        #expect(Set(events.prefix(2).map(\.geofenceId)) == fences && Set(events.suffix(2).map(\.geofenceId)) == fences)
        #expect(events.allSatisfy { $0.userId == bobSession.userId })
        #expect(events.prefix(2).allSatisfy { $0.timestamp == track[8].timestamp })
        #expect(events.suffix(2).allSatisfy { $0.timestamp == leave })
      }
      // Carol may not see Bob's location: nothing reached her.
      #expect(try await GeofenceTests.events(carolOnB).isEmpty)
    }
  }
}
