import DomainKit
import Foundation
import GeoKit
import HTTPTypes
import MeridianAPI
import MeridianServer
import MeridianStore
import MeridianTestSupport
import MeridianTracker
import NetworkingKit
import RealtimeKit
import Synchronization
import Testing

/// A family's home geofence over every ingest route: one `enter` per arrival on the watchers' sockets, whatever the
/// jitter, duplicates or a server restart in between.
@Suite("Geofences over HTTP, the socket and OwnTracks")
struct GeofenceTests {
  static let home = Coordinate(uncheckedLatitude: 50.4501, longitude: 30.5234)

  /// A fix `metres` east of home at `time`.
  static func fix(_ time: Int64, _ metres: Double, accuracy: Double = 10) throws -> LocationFix {
    let point = try home.destination(bearing: 90, distance: metres)
    return try LocationFix(
      timestamp: time, latitude: point.latitude, longitude: point.longitude, horizontalAccuracy: accuracy)
  }

  /// An approach from 2 km: far, then GPS jitter across the 100 m fence's edge (straddling fixes and a lone fix
  /// just outside), then settled inside. One fix a second from `start`.
  static func arrival(from start: Int64) throws -> [LocationFix] {
    let distances: [(Double, Double)] = [
      (2_000, 10), (1_000, 10), (400, 10), (180, 10), (105, 20), (95, 20), (112, 10), (98, 25), (60, 10), (85, 20),
      (110, 5), (40, 10), (20, 8), (15, 8),
    ]
    return try distances.enumerated().map { index, item in
      try fix(start + Int64(index) * 1_000, item.0, accuracy: item.1)
    }
  }

  /// The geofence events received so far.
  static func events(_ watcher: LiveWatcher) async throws -> [GeofenceEventItem] {
    try await watcher.items.compactMap { item -> GeofenceEventItem? in
      guard case .event(let event) = item, event.channel.namespace == "geofence" else { return nil }
      return try event.payload.decode(as: GeofenceEventEnvelope.self).event
    }
  }

  struct GeofenceEventEnvelope: Decodable {
    var type: String
    var event: GeofenceEventItem
  }

  static func channel(_ user: UserID) throws -> ChannelName {
    try #require(ChannelName(namespace: "geofence", id: user.rawValue))
  }

  static func now() -> Int64 { Int64(Date().timeIntervalSince1970 * 1_000) }

  @Test func aFamilyMemberArrivingHomeProducesExactlyOneEnterOnTheWatchersSockets() async throws {
    let server = try await TestServer.start()
    var restarted: TestServer?
    do {
      let (annaSession, anna) = try await server.signUp("anna")
      let (bobSession, bob) = try await server.signUp("bob")
      let (carolSession, _) = try await server.signUp("carol")
      // Bob shares his location with Anna (his Family) and Carol (his Friends); Anna's home is shared with her
      // Family, which Bob is in and Carol is not.
      _ = try await bob.send(
        API.addMember,
        parameters: GroupMemberRef(groupID: GroupID("\(bobSession.userId).family"), userID: annaSession.userId))
      _ = try await bob.send(
        API.addMember,
        parameters: GroupMemberRef(groupID: GroupID("\(bobSession.userId).friends"), userID: carolSession.userId))
      _ = try await anna.send(
        API.addMember,
        parameters: GroupMemberRef(groupID: GroupID("\(annaSession.userId).family"), userID: bobSession.userId))
      let fence = try await anna.send(
        API.createGeofence,
        body: NewGeofence(
          name: "Home", shape: .circle(center: Self.home, radius: 100), sharing: .group,
          groupId: GroupID("\(annaSession.userId).family")))
      #expect(fence.ownerId == annaSession.userId && fence.sharing == .group)
      #expect(try await bob.send(API.geofences).items.map(\.id) == [fence.id])

      let annaLive = await LiveWatcher(server: server, token: annaSession.token)
      let carolLive = await LiveWatcher(server: server, token: carolSession.token)
      #expect(try await annaLive.subscribe(Self.channel(annaSession.userId)))
      #expect(try await carolLive.subscribe(Self.channel(carolSession.userId)))
      #expect(try await !carolLive.subscribe(Self.channel(annaSession.userId)))

      // Bob drives home, over REST: exactly one enter, on Anna's socket, none on Carol's.
      let start = Self.now() + 1_000
      let track = try Self.arrival(from: start)
      _ = try await bob.send(API.postFixes, body: FixBatch(deviceId: "bob-phone", fixes: Array(track.prefix(5))))
      _ = try await bob.send(API.postFixes, body: FixBatch(deviceId: "bob-phone", fixes: Array(track.dropFirst(5))))
      // The same fixes again: duplicates decide nothing.
      _ = try await bob.send(API.postFixes, body: FixBatch(deviceId: "bob-phone", fixes: track))
      try await annaLive.wait("the enter") { _ in try await !Self.events(annaLive).isEmpty }
      let sentinelTime = start + 20_000
      _ = try await bob.send(
        API.postFixes, body: FixBatch(deviceId: "bob-phone", fixes: [try Self.fix(sentinelTime, 10)]))
      // The monitor takes commits in order: once the sentinel is evaluated, so is the duplicate batch before it.
      let store = server.app.environment.store
      try await annaLive.wait("the sentinel's evaluation") { _ in
        try await store.geofenceTracking(of: bobSession.userId).lastFixAt == sentinelTime
      }
      var received = try await Self.events(annaLive)
      #expect(received.map(\.kind) == [.enter])
      let enter = try #require(received.first)
      #expect(enter.userId == bobSession.userId && enter.geofenceId == fence.id && enter.reportedBy == .server)
      #expect(enter.timestamp == track[8].timestamp)  // the first fix whose accuracy circle is wholly inside
      #expect(try await Self.events(carolLive).isEmpty)
      // Over HTTP, Anna and Bob see it; Carol does not.
      #expect(try await anna.send(API.geofenceEvents, parameters: GeofenceEventParameters()).items == [enter])
      #expect(try await bob.send(API.geofenceEvents, parameters: GeofenceEventParameters()).items == [enter])

      // A restart keeps the state: Bob still home sends more jittery fixes, then leaves; one exit, no second enter.
      await annaLive.stop()
      await carolLive.stop()
      try await server.stop(keepingFiles: true)
      // The same database on a new port (the watchers connect afresh): a concurrent test may hold the old port.
      let again = try await TestServer.start(directory: server.directory)
      restarted = again
      let annaAgain = await LiveWatcher(server: again, token: annaSession.token)
      #expect(try await annaAgain.subscribe(Self.channel(annaSession.userId)))
      let bobAgain = try again.client(token: bobSession.token)
      let later = sentinelTime + 1_000
      let stay = try [(30.0, 20.0), (90, 30), (50, 10), (118, 10), (45, 10)].enumerated().map { index, item in
        try Self.fix(later + Int64(index) * 1_000, item.0, accuracy: item.1)
      }
      _ = try await bobAgain.send(API.postFixes, body: FixBatch(deviceId: "bob-phone", fixes: stay))
      _ = try await bobAgain.send(
        API.postFixes, body: FixBatch(deviceId: "bob-phone", fixes: [try Self.fix(later + 10_000, 600)]))
      try await annaAgain.wait("the exit") { _ in try await !Self.events(annaAgain).isEmpty }
      received = try await Self.events(annaAgain)
      #expect(received.map(\.kind) == [.exit])
      #expect(received.first?.timestamp == later + 10_000)
      let annaAfter = try again.client(token: annaSession.token)
      #expect(
        try await annaAfter.send(API.geofenceEvents, parameters: GeofenceEventParameters()).items.map(\.kind) == [
          .exit, .enter,
        ])
      await annaAgain.stop()
      try await again.stop()
    } catch {
      if let restarted { try? await restarted.stop() } else { try? await server.stop() }
      throw error
    }
  }

  /// The monitor keeps each person's state in memory after its commits; a state committed elsewhere meanwhile
  /// (another node; here the store written directly) is not overwritten by the one it kept: that commit is refused
  /// by the version it was made over, and the state read again.
  @Test func aStateCommittedElsewhereIsNotOverwrittenByTheOneTheMonitorKept() async throws {
    try await TestServer.with { server in
      let (session, bob) = try await server.signUp("bob")
      let fence = try await bob.send(
        API.createGeofence, body: NewGeofence(name: "Home", shape: .circle(center: Self.home, radius: 100)))
      let store = server.app.environment.store
      func evaluated(_ time: Int64) async throws {
        try await waitUntil("the fix of \(time) evaluated", timeout: .seconds(20)) {
          try await store.geofenceTracking(of: session.userId).lastFixAt == time
        }
      }
      // Bob far from home: evaluated here, his state kept in memory.
      let start = Self.now() + 1_000
      _ = try await bob.send(API.postFixes, body: FixBatch(deviceId: "bob-phone", fixes: [try Self.fix(start, 2_000)]))
      try await evaluated(start)
      // Another node evaluates his next fix: at home, inside since then.
      let arrived = start + 1_000
      let inside = GeofenceState(presence: .inside, since: arrived, lastFixAt: arrived)
      let read = try await store.geofenceTracking(of: session.userId)
      #expect(
        try await store.commitGeofenceTracking(
          GeofenceTrackingUpdate(
            userID: session.userId, version: read.version, lastFixAt: arrived,
            lastPosition: GeofencePosition(latitude: Self.home.latitude, longitude: Self.home.longitude, accuracy: 5),
            states: [fence.id: inside])))
      // His next fix at home: still inside since he arrived, and no arrival of this node's (the state it kept says
      // he was far away).
      let next = arrived + 1_000
      _ = try await bob.send(API.postFixes, body: FixBatch(deviceId: "bob-phone", fixes: [try Self.fix(next, 5)]))
      try await evaluated(next)
      let tracking = try await store.geofenceTracking(of: session.userId)
      #expect(tracking.states[fence.id]?.presence == .inside && tracking.states[fence.id]?.since == arrived)
      #expect(try await store.geofenceEvents(GeofenceEventQuery(involving: session.userId)).events.isEmpty)
    }
  }

  /// A device's reported arrival is recorded when the state the monitor kept already has the person inside but the
  /// stored one, committed elsewhere meanwhile, has them gone: "nothing to store" is decided on the stored state.
  @Test func aReportedArrivalIsRecordedWhenTheStateTheMonitorKeptIsOutOfDate() async throws {
    try await TestServer.with { server in
      let (session, bob) = try await server.signUp("bob")
      let (email, password) = ("bob@example.com", "correct horse")
      let wtst = Self.now() / 1_000 - 60
      let waypoint =
        #"{"_type":"waypoint","tst":\#(wtst),"lat":\#(Self.home.latitude),"lon":\#(Self.home.longitude),"rad":80,"desc":"Home"}"#
      #expect(try await server.ownTracks(waypoint, username: email, password: password).head.status == .ok)
      let fence = try #require(try await bob.send(API.geofences).items.first)
      let store = server.app.environment.store
      func events() async throws -> [GeofenceEventItem] {
        try await store.geofenceEvents(GeofenceEventQuery(involving: session.userId)).events
      }
      // Bob comes home: evaluated here, the monitor keeps him inside.
      let start = Self.now() + 1_000
      let home = try [Self.fix(start, 2_000), Self.fix(start + 1_000, 5), Self.fix(start + 2_000, 5)]
      _ = try await bob.send(API.postFixes, body: FixBatch(deviceId: "bob-phone", fixes: home))
      try await waitUntil("his arrival") { try await events().map(\.kind) == [.enter] }
      // Another node sees him leave: his state there goes.
      let read = try await store.geofenceTracking(of: session.userId)
      #expect(read.states[fence.id]?.presence == .inside)
      #expect(
        try await store.commitGeofenceTracking(
          GeofenceTrackingUpdate(
            userID: session.userId, version: read.version, lastFixAt: start + 3_000, removed: [fence.id])))
      // His phone reports arriving home again: recorded, by the device.
      let transition =
        #"[{"_type":"transition","wtst":\#(wtst),"lat":\#(Self.home.latitude),"lon":\#(Self.home.longitude),"tst":\#((start + 4_000) / 1_000 + 1),"acc":10,"event":"enter","desc":"Home"}]"#
      #expect(try await server.ownTracks(transition, username: email, password: password).head.status == .ok)
      try await waitUntil("the reported arrival", timeout: .seconds(20)) {
        try await events().contains { $0.kind == .enter && $0.reportedBy == .device }
      }
    }
  }

  @Test func aPlaceOfTheDirectoryServesAsAGeofence() async throws {
    try await TestServer.with { server in
      let (session, anna) = try await server.signUp("anna")
      try await PlaceTests.seed(server.app.environment.store)
      let university = Coordinate(uncheckedLatitude: 56.4693, longitude: 84.9477)

      // A circle of 150 m around the place, named after it.
      let fence = try await anna.send(API.createGeofence, body: NewGeofence(placeId: "tsu"))
      #expect(fence.name == "Tomsk State University")
      #expect(fence.shape == .circle(center: university, radius: NewGeofence.defaultPlaceRadius))
      // A radius and a name of one's own; the place's name in the caller's language.
      let own = try await anna.send(API.createGeofence, body: NewGeofence(placeId: "tsu", radius: 400, name: "Uni"))
      #expect(own.name == "Uni" && own.shape == .circle(center: university, radius: 400))
      let russian = try await server.phoneAppRequest(
        .post, "/v1/geofences",
        headers: [
          .authorization: "Bearer \(session.token)", .acceptLanguage: "ru-RU, en;q=0.5",
          .contentType: "application/json",
        ],
        body: Data(#"{"placeId": "tsu"}"#.utf8))
      #expect(russian.head.status == .created)
      #expect(
        try JSONDecoder().decode(GeofenceItem.self, from: russian.body).name == "Томский государственный университет")

      // Refused, nothing stored: an unknown place, a place without a location (a faculty), a place and a shape, a
      // radius out of range, neither a place nor a shape.
      await expectAPIError(.notFound, status: 404) {
        try await anna.send(API.createGeofence, body: NewGeofence(placeId: "no-such-place"))
      }
      await expectAPIError(.invalidGeofence, status: 422) {
        try await anna.send(API.createGeofence, body: NewGeofence(placeId: "tsu-ff"))
      }
      var both = NewGeofence(placeId: "tsu")
      both.shape = .circle(center: university, radius: 100)
      await expectAPIError(.invalidGeofence, status: 422) { try await anna.send(API.createGeofence, body: both) }
      await expectAPIError(.invalidGeofence, status: 422) {
        try await anna.send(API.createGeofence, body: NewGeofence(placeId: "tsu", radius: 5))
      }
      var neither = NewGeofence(placeId: "tsu")
      neither.placeId = nil
      await expectAPIError(.invalidGeofence, status: 422) { try await anna.send(API.createGeofence, body: neither) }
      #expect(try await anna.send(API.geofences).items.count == 3)
    }
  }

  @Test func bobPublishingOnTheSocketAndOwnTracksTransitionsAreNotDoubled() async throws {
    try await TestServer.with { server in
      let (annaSession, _) = try await server.signUp("anna")
      let (bobSession, bob) = try await server.signUp("bob")
      _ = try await bob.send(
        API.addMember,
        parameters: GroupMemberRef(groupID: GroupID("\(bobSession.userId).family"), userID: annaSession.userId))
      let annaLive = await LiveWatcher(server: server, token: annaSession.token)
      let bobLive = await LiveWatcher(server: server, token: bobSession.token)
      defer {
        Task {
          await annaLive.stop()
          await bobLive.stop()
        }
      }
      #expect(try await bobLive.subscribe(Self.channel(bobSession.userId)))

      // Bob's phone defines his home as an OwnTracks waypoint: a circle geofence of his, shared with nobody.
      let email = "bob@example.com"
      let wtst = Self.now() / 1_000 - 60
      let waypoint =
        #"{"_type":"waypoint","tst":\#(wtst),"lat":\#(Self.home.latitude),"lon":\#(Self.home.longitude),"rad":80,"desc":"Home"}"#
      #expect(try await server.ownTracks(waypoint, username: email, password: "correct horse").head.status == .ok)
      let fences = try await bob.send(API.geofences).items
      #expect(fences.count == 1)
      let fence = try #require(fences.first)
      #expect(fence.source == .device && fence.externalId == "tst:\(wtst)" && fence.name == "Home")
      #expect(fence.shape == .circle(center: Self.home, radius: 80))
      // The same waypoint moved updates it.
      let moved = waypoint.replacingOccurrences(of: #""rad":80"#, with: #""rad":120"#)
      _ = try await server.ownTracks(moved, username: email, password: "correct horse")
      #expect(try await bob.send(API.geofences).items.map(\.shape) == [.circle(center: Self.home, radius: 120)])
      // Anna may see Bob but not his unshared fence: no event reaches her.
      #expect(try await annaLive.subscribe(Self.channel(annaSession.userId)))

      // Bob's fixes published on the socket: far, then the device reports its own enter, then fixes inside.
      let start = Self.now() + 1_000
      let bobChannel = try ChannelName.of(user: bobSession.userId)
      _ = try await bobLive.client.publish(
        JSONValue(encoding: FixBatch(deviceId: "bob-phone", fixes: [try Self.fix(start, 1_500)])), to: bobChannel,
        id: "far")
      let transitionTime = (start + 2_000) / 1_000 + 1
      let transition =
        #"[{"_type":"transition","wtst":\#(wtst),"lat":\#(Self.home.latitude),"lon":\#(Self.home.longitude),"tst":\#(transitionTime),"acc":10,"event":"enter","desc":"Home"}]"#
      try await bobLive.wait("the far fix's evaluation") { _ in
        try await bob.send(API.history, parameters: HistoryQuery()).fixes.count == 1
      }
      #expect(try await server.ownTracks(transition, username: email, password: "correct horse").head.status == .ok)
      // The device's transition again: recorded once.
      _ = try await server.ownTracks(transition, username: email, password: "correct horse")
      _ = try await bobLive.client.publish(
        JSONValue(
          encoding: FixBatch(
            deviceId: "bob-phone",
            fixes: try [Self.fix(transitionTime * 1_000 + 1_000, 10), Self.fix(transitionTime * 1_000 + 2_000, 5)])),
        to: bobChannel, id: "home")
      // An OwnTracks location far away: the server's own exit.
      let leave = ownTracksLocation(
        lat: try Self.home.destination(bearing: 0, distance: 1_000).latitude, lon: Self.home.longitude,
        tst: transitionTime + 10)
      _ = try await server.ownTracks(leave, username: email, password: "correct horse")
      try await bobLive.wait("the exit") { _ in try await Self.events(bobLive).count >= 2 }
      let received = try await Self.events(bobLive)
      #expect(received.map(\.kind) == [.enter, .exit])
      #expect(received.map(\.reportedBy) == [.device, .server])
      #expect(received.first?.timestamp == transitionTime * 1_000)
      #expect(try await Self.events(annaLive).isEmpty)
      #expect(try await bob.send(API.geofenceEvents, parameters: GeofenceEventParameters()).items.count == 2)

      // The device's whole list of regions: the valid entry becomes a fence keyed by its `rid`, the bad one is
      // left out, the home region stays.
      let work = try Self.home.destination(bearing: 180, distance: 3_000)
      let list =
        #"{"_type":"waypoints","waypoints":[{"_type":"waypoint","tst":\#(wtst + 1),"lat":\#(work.latitude),"lon":\#(work.longitude),"rad":150,"desc":"Work","rid":"w-1"},{"_type":"waypoint","desc":"no place"}]}"#
      #expect(try await server.ownTracks(list, username: email, password: "correct horse").head.status == .ok)
      let regions = try await bob.send(API.geofences).items
      #expect(regions.map(\.name) == ["Home", "Work"])
      #expect(regions.last?.externalId == "w-1" && regions.last?.shape == .circle(center: work, radius: 150))
    }
  }

  /// `meridian-tracker watch`'s watcher reports the signed-in person's geofence events as they come.
  @Test(.timeLimit(.minutes(2)))
  func theTrackersWatcherReportsTheSignedInPersonsGeofenceEvents() async throws {
    try await TestServer.with { server in
      let (session, bob) = try await server.signUp("bob")
      let fence = try await bob.send(
        API.createGeofence, body: NewGeofence(name: "Home", shape: .circle(center: Self.home, radius: 100)))
      let updates = WatcherReports()
      let watcher = FriendWatcher(
        session: TrackerSession(
          server: "http://127.0.0.1:\(server.port)", token: session.token, userId: session.userId,
          deviceId: DeviceID("watch")),
        client: bob)
      let watching = Task { try await watcher.watch(group: nil) { update in updates.append(update) } }
      defer { watching.cancel() }
      func wait(_ what: String, until condition: ([FriendWatcher.Update]) -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline, !condition(updates.list) {
          try await Task.sleep(for: .milliseconds(10))  // polling the watcher's reports
        }
        try #require(condition(updates.list), "timed out waiting for \(what)")
      }
      try await wait("the geofence subscription") { $0.contains(.watchingGeofences) }
      _ = try await bob.send(
        API.postFixes, body: FixBatch(deviceId: "phone", fixes: try Self.arrival(from: Self.now() + 1_000)))
      try await wait("the enter") { $0.contains { if case .geofence = $0 { true } else { false } } }
      let events = updates.list.compactMap { update -> GeofenceEventItem? in
        if case .geofence(let event, _) = update { return event }
        return nil
      }
      #expect(events.map(\.kind) == [.enter] && events.first?.geofenceId == fence.id)
    }
  }

  /// A fence shared with a group is seen by its members only while the group grants them the owner's location — the
  /// rule of the group's live channel.
  @Test func aGroupFenceNeedsTheGroupToGrantLocation() async throws {
    try await TestServer.with { server in
      let (annaSession, anna) = try await server.signUp("anna")
      let (bobSession, bob) = try await server.signUp("bob")
      let family = GroupID("\(annaSession.userId).family")
      _ = try await anna.send(API.addMember, parameters: GroupMemberRef(groupID: family, userID: bobSession.userId))
      let fence = try await anna.send(
        API.createGeofence,
        body: NewGeofence(
          name: "Home", shape: .circle(center: Self.home, radius: 100), sharing: .group, groupId: family))
      #expect(try await bob.send(API.geofences).items.map(\.id) == [fence.id])
      _ = try await anna.send(
        API.updateGroup, parameters: GroupRef(id: family),
        body: GroupUpdate(visibility: GroupVisibility(location: false, fields: [])))
      #expect(try await bob.send(API.geofences).items.isEmpty)
      #expect(try await anna.send(API.geofences).items.map(\.id) == [fence.id])
    }
  }

  /// The operator's cap on fences per person: one more is refused with 409 and a stable code, nothing else changes,
  /// and a device's region beyond it is not kept either; deleting one makes room.
  @Test func theFenceCapRefusesOneMoreWithAStableCode() async throws {
    try await TestServer.with({ $0.geofences.maximumPerPerson = 2 }) { server in
      let (_, bob) = try await server.signUp("bob")
      var made: [GeofenceItem] = []
      for index in 0..<2 {
        made.append(
          try await bob.send(
            API.createGeofence,
            body: NewGeofence(
              name: "fence \(index)",
              shape: .circle(
                center: try Self.home.destination(bearing: 90, distance: Double(index) * 1_000), radius: 100))))
      }
      await expectAPIError(.geofenceLimitReached, status: 409) {
        try await bob.send(
          API.createGeofence, body: NewGeofence(name: "one more", shape: .circle(center: Self.home, radius: 300)))
      }
      let waypoint =
        #"{"_type":"waypoint","tst":1700000000,"lat":\#(Self.home.latitude),"lon":\#(Self.home.longitude),"rad":80,"desc":"Phone's"}"#
      #expect(
        try await server.ownTracks(waypoint, username: "bob@example.com", password: "correct horse").head.status == .ok)
      #expect(try await bob.send(API.geofences).items == made)
      _ = try await bob.send(API.deleteGeofence, parameters: GeofenceRef(id: made[0].id))
      let again = try await bob.send(
        API.createGeofence, body: NewGeofence(name: "one more", shape: .circle(center: Self.home, radius: 300)))
      #expect(try await bob.send(API.geofences).items.map(\.id) == [made[1].id, again.id])
    }
  }

  /// The monitor remembers that no fence concerns a person; a fence made afterwards is seen at once — the walk in
  /// from a kilometre away enters it, though that fix lay outside its box — and a deleted one decides nothing more.
  @Test
  func aFenceMadeAfterTheFirstFixesCountsAndADeletedOneIsForgotten() async throws {
    try await TestServer.with { server in
      let (session, bob) = try await server.signUp("bob")
      let store = server.app.environment.store
      let live = await LiveWatcher(server: server, token: session.token)
      defer { Task { await live.stop() } }
      #expect(try await live.subscribe(Self.channel(session.userId)))
      func evaluated(_ time: Int64) async throws {
        try await live.wait("the evaluation of the fix at \(time)") { _ in
          try await store.geofenceTracking(of: session.userId).lastFixAt == time
        }
      }
      // The walk was recorded before the fences were made, by the phone's clock (it uploads what it kept offline, or
      // its clock is behind the server's): that its fixes come after the fence must not matter.
      let start = Self.now() - 10_000
      // No fence yet: nothing is evaluated, so nothing is tracked (the monitor has taken the fix off its queue).
      _ = try await bob.send(API.postFixes, body: FixBatch(deviceId: "phone", fixes: [try Self.fix(start, 2_000)]))
      try await live.wait("the monitor's turn at the first fix") { _ in
        try await store.geofenceQueueBacklog().entries == 0
      }
      let fence = try await bob.send(
        API.createGeofence, body: NewGeofence(name: "Home", shape: .circle(center: Self.home, radius: 100)))
      // A fence far away keeps Bob concerned once Home is gone, so that his next fix is evaluated.
      _ = try await bob.send(
        API.createGeofence,
        body: NewGeofence(
          name: "Cottage", shape: .circle(center: try Self.home.destination(bearing: 0, distance: 40_000), radius: 200))
      )
      _ = try await bob.send(
        API.postFixes,
        body: FixBatch(deviceId: "phone", fixes: [try Self.fix(start + 1_000, 1_000), try Self.fix(start + 2_000, 10)]))
      try await live.wait("the enter") { _ in try await !Self.events(live).isEmpty }
      #expect(try await Self.events(live).map(\.kind) == [.enter])
      #expect(try await store.geofenceTracking(of: session.userId).states.keys.map(\.self) == [fence.id])
      _ = try await bob.send(API.deleteGeofence, parameters: GeofenceRef(id: fence.id))
      _ = try await bob.send(
        API.postFixes, body: FixBatch(deviceId: "phone", fixes: [try Self.fix(start + 3_000, 900)]))
      try await evaluated(start + 3_000)
      #expect(try await store.geofenceTracking(of: session.userId).states.isEmpty)
      #expect(try await Self.events(live).map(\.kind) == [.enter])
      #expect(try await bob.send(API.geofenceEvents, parameters: GeofenceEventParameters()).items.isEmpty)
    }
  }

  /// A phone that uploads one fix at a time (the tracker, OwnTracks) walking into a fence made after its fixes' time
  /// by its clock: the stored last fix, a kilometre away, is the observation outside that makes the next one an enter.
  @Test func aWalkUploadedOneFixAtATimeEntersAFenceMadeAfterItsFixes() async throws {
    try await TestServer.with { server in
      let (session, bob) = try await server.signUp("bob")
      let store = server.app.environment.store
      let live = await LiveWatcher(server: server, token: session.token)
      defer { Task { await live.stop() } }
      #expect(try await live.subscribe(Self.channel(session.userId)))
      _ = try await bob.send(
        API.createGeofence, body: NewGeofence(name: "Home", shape: .circle(center: Self.home, radius: 100)))
      let start = Self.now() - 10_000
      _ = try await bob.send(API.postFixes, body: FixBatch(deviceId: "phone", fixes: [try Self.fix(start, 1_000)]))
      try await live.wait("the evaluation of the fix a kilometre away") { _ in
        try await store.geofenceTracking(of: session.userId).lastFixAt == start
      }
      _ = try await bob.send(
        API.postFixes, body: FixBatch(deviceId: "phone", fixes: [try Self.fix(start + 1_000, 10)]))
      try await live.wait("the enter") { _ in try await !Self.events(live).isEmpty }
      #expect(try await Self.events(live).map(\.kind) == [.enter])
    }
  }

  /// A person's first fix within its accuracy of a fence's edge, outside the fence's box, leaves the presence unknown
  /// as the rules say, so settling inside next is no arrival; leaving and coming back is. The monitor once took any
  /// fix outside a fence's box as an observation outside it and reported an `enter` (the benchmark's
  /// `geofences.lost` model found it).
  @Test func aFirstFixAtTheEdgeIsNoArrival() async throws {
    try await TestServer.with { server in
      let (session, bob) = try await server.signUp("bob")
      let store = server.app.environment.store
      _ = try await bob.send(
        API.createGeofence, body: NewGeofence(name: "Home", shape: .circle(center: Self.home, radius: 100)))
      let start = Self.now() - 10_000
      // 105 m east: past the box's east edge (100 m), within the fix's 10 m of the circle.
      let fixes = [
        try Self.fix(start, 105), try Self.fix(start + 1_000, 60), try Self.fix(start + 2_000, 1_000),
        try Self.fix(start + 3_000, 20),
      ]
      _ = try await bob.send(API.postFixes, body: FixBatch(deviceId: "phone", fixes: fixes))
      let live = await LiveWatcher(server: server, token: session.token)
      defer { Task { await live.stop() } }
      try await live.wait("the evaluation of the last fix") { _ in
        try await store.geofenceTracking(of: session.userId).lastFixAt == start + 3_000
      }
      let events = try await bob.send(API.geofenceEvents, parameters: GeofenceEventParameters()).items
      #expect(events.sorted { $0.timestamp < $1.timestamp }.map(\.kind) == [.exit, .enter], "\(events)")
    }
  }

  @Test func badGeofencesAreRefusedWithAClearErrorAndOthersCantTouchThem() async throws {
    try await TestServer.with { server in
      let (_, anna) = try await server.signUp("anna")
      let (_, bob) = try await server.signUp("bob")
      let fence = try await anna.send(
        API.createGeofence, body: NewGeofence(name: " Work ", shape: .circle(center: Self.home, radius: 250)))
      #expect(fence.name == "Work" && fence.sharing == .nobody)
      for body in [
        NewGeofence(name: "tiny", shape: .circle(center: Self.home, radius: 10)),
        NewGeofence(name: "", shape: .circle(center: Self.home, radius: 100)),
        NewGeofence(
          name: "bow tie",
          shape: .polygon([
            Coordinate(uncheckedLatitude: 0, longitude: 0), Coordinate(uncheckedLatitude: 1, longitude: 1),
            Coordinate(uncheckedLatitude: 1, longitude: 0), Coordinate(uncheckedLatitude: 0, longitude: 1),
          ])),
        NewGeofence(name: "group", shape: .circle(center: Self.home, radius: 100), sharing: .group),
        NewGeofence(
          name: "someone else's group", shape: .circle(center: Self.home, radius: 100), sharing: .group,
          groupId: GroupID("nobody.family")),
      ] {
        await expectAPIError(.invalidGeofence, status: 422) { try await anna.send(API.createGeofence, body: body) }
      }
      await expectAPIError(.invalidGeofence, status: 422) {
        try await anna.send(
          API.updateGeofence, parameters: GeofenceRef(id: fence.id),
          body: GeofenceUpdate(shape: .circle(center: Self.home, radius: 60_000)))
      }
      await expectAPIError(.notFound, status: 404) {
        try await bob.send(API.updateGeofence, parameters: GeofenceRef(id: fence.id), body: GeofenceUpdate(name: "x"))
      }
      await expectAPIError(.notFound, status: 404) {
        try await bob.send(API.deleteGeofence, parameters: GeofenceRef(id: fence.id))
      }
      await expectAPIError(.invalidRequest, status: 400) {
        try await anna.send(API.geofenceEvents, parameters: GeofenceEventParameters(cursor: "nonsense"))
      }
      // Nothing was lost or changed.
      #expect(try await anna.send(API.geofences).items == [fence])
      let renamed = try await anna.send(
        API.updateGeofence, parameters: GeofenceRef(id: fence.id), body: GeofenceUpdate(name: "Office"))
      #expect(renamed.name == "Office" && renamed.shape == fence.shape)
      _ = try await anna.send(API.deleteGeofence, parameters: GeofenceRef(id: fence.id))
      #expect(try await anna.send(API.geofences).items.isEmpty)
    }
  }

  /// A centre or vertex off the globe is refused with 400 naming the field, never 500 (a latitude of 91 was) and
  /// never wrapped (a longitude of 181 was stored as -179); nothing is stored. A region from OwnTracks (`/pub`) follows
  /// the same rule (GeoKit's `Coordinate.validate`).
  @Test func coordinatesOffTheGlobeAreRefusedNotWrapped() async throws {
    try await TestServer.with { server in
      let (_, anna) = try await server.signUp("anna")
      func refused(_ field: String, _ body: () async throws -> some Any) async {
        do {
          _ = try await body()
          Issue.record("\(field): accepted")
        } catch let error as NetworkingError {
          let answer = error.serverError
          #expect(answer?.status.code == 400, "\(field): \(error)")
          #expect(answer?.message?.contains(field) == true, "\(field): \(error)")
        } catch {
          Issue.record("\(field): \(error)")
        }
      }
      let offTheGlobe: [(GeofenceShape, String)] = [
        (.circle(center: Coordinate(uncheckedLatitude: 91, longitude: 30), radius: 100), "center.lat"),
        (.circle(center: Coordinate(uncheckedLatitude: -90.5, longitude: 30), radius: 100), "center.lat"),
        (.circle(center: Coordinate(uncheckedLatitude: 50, longitude: 181), radius: 100), "center.lon"),
        (
          .polygon([
            Coordinate(uncheckedLatitude: 0, longitude: 179), Coordinate(uncheckedLatitude: 1, longitude: 179),
            Coordinate(uncheckedLatitude: 1, longitude: 181),
          ]), "vertices[2].lon"
        ),
      ]
      for (shape, field) in offTheGlobe {
        await refused(field) { try await anna.send(API.createGeofence, body: NewGeofence(name: "Off", shape: shape)) }
      }
      let fence = try await anna.send(
        API.createGeofence, body: NewGeofence(name: "Home", shape: .circle(center: Self.home, radius: 100)))
      await refused("center.lon") {
        try await anna.send(
          API.updateGeofence, parameters: GeofenceRef(id: fence.id),
          body: GeofenceUpdate(shape: .circle(center: Coordinate(uncheckedLatitude: 50, longitude: -181), radius: 100)))
      }
      let waypoint = #"{"_type":"waypoint","tst":1700000000,"lat":50.45,"lon":181,"rad":80,"desc":"East"}"#
      let answer = try await server.ownTracks(waypoint, username: "anna@example.com", password: "correct horse")
      #expect(answer.head.status.code == 400 && answer.errorCode == "invalid_json")
      #expect(try await anna.send(API.geofences).items == [fence])
    }
  }

  /// The fence's owner hears of an arrival by webhook too: one `geofence.enter` delivery, signed, whatever the
  /// duplicates — unless the person has paused sharing, when the owner's webhook hears nothing (as the owner's
  /// socket), though the person's own event is stored.
  @Test(.timeLimit(.minutes(3)), arguments: [false, true])
  func anArrivalReachesTheFenceOwnersWebhookOnce(paused: Bool) async throws {
    let receiver = try await WebhookReceiver.start(behaviours: ["ok"])
    try await TestServer.with(WebhookTests.fastDelivery) { server in
      let (annaSession, anna) = try await server.signUp("anna")
      let (bobSession, bob) = try await server.signUp("bob")
      _ = try await bob.send(
        API.addMember,
        parameters: GroupMemberRef(groupID: GroupID("\(bobSession.userId).family"), userID: annaSession.userId))
      _ = try await anna.send(
        API.addMember,
        parameters: GroupMemberRef(groupID: GroupID("\(annaSession.userId).family"), userID: bobSession.userId))
      _ = try await anna.send(
        API.createGeofence,
        body: NewGeofence(
          name: "Home", shape: .circle(center: Self.home, radius: 100), sharing: .group,
          groupId: GroupID("\(annaSession.userId).family")))
      let webhook = try await anna.send(API.createWebhook, body: NewWebhook(url: receiver.url))
      receiver.secret.withLock { $0 = webhook.secret }
      if paused { _ = try await bob.send(API.pauseSharing) }
      let track = try Self.arrival(from: Self.now() + 1_000)
      _ = try await bob.send(API.postFixes, body: FixBatch(deviceId: "bob-phone", fixes: track))
      _ = try await bob.send(API.postFixes, body: FixBatch(deviceId: "bob-phone", fixes: track))
      // The event is stored (Bob sees his own) before the outbox is looked at.
      try await GeofenceQueueTests.waitFor("Bob's own event", timeout: .seconds(20)) {
        try await !bob.send(API.geofenceEvents, parameters: GeofenceEventParameters()).items.isEmpty
      }
      // The outbox is written in the transaction of the events: once the event is stored, what it queued is there
      // to see (nothing, when paused), with no waiting for a delivery that should not come.
      if !paused { await receiver.waitForProcessed(1, timeout: .seconds(20)) }
      // Whatever else was due has had its chance: the outbox holds nothing pending for this webhook.
      let store = server.app.environment.store
      let deadline = ContinuousClock.now + .seconds(10)
      while ContinuousClock.now < deadline,
        try await !store.webhookDeliveries(webhook: webhook.webhook.id, state: .pending, limit: 10).isEmpty
      {
        try await Task.sleep(for: .milliseconds(100))  // polling the outbox until it is drained
      }
      let record = receiver.record.withLock { $0 }
      #expect(record.processed.count == (paused ? 0 : 1) && record.bad.isEmpty, "\(record.processed) \(record.bad)")
      let queued = try await store.webhookDeliveries(webhook: webhook.webhook.id, state: nil, limit: 10)
      #expect(queued.count == (paused ? 0 : 1), "\(queued)")
      #expect(record.processed.keys.allSatisfy { $0.hasPrefix("geofence:") })
    }
    await receiver.stop()
  }
}

/// What a tracker's watcher reported, in order.
final class WatcherReports: Sendable {
  private let updates = Mutex<[FriendWatcher.Update]>([])
  func append(_ update: FriendWatcher.Update) { updates.withLock { $0.append(update) } }
  var list: [FriendWatcher.Update] { updates.withLock { $0 } }
}
