import DomainKit
import Foundation
import GeoKit
import HTTPTypes
import MeridianAPI
import MeridianServer
import MeridianTestSupport
import NetworkingKit
import RealtimeKit
import Testing

/// Precision per audience and privacy zones (issue 39 §2, §3) on every path that shows a person's fixes to someone
/// else — `GET /v1/users/{id}/location`, the live socket, OwnTracks' `/pub` answer, geofence events of others and a
/// share link's track — on both engines; and a zone that stores nothing leaves no row.
@Suite("Precision per audience and privacy zones", .inProcess)
struct PrecisionAndZoneTests {
  /// Kyiv, away from the geofence tests' home.
  static let centre = Coordinate(uncheckedLatitude: 50.4312, longitude: 30.4873)

  /// A fix `metres` east of `centre` at `time` (from anna's phone, with altitude and speed that only exact shows).
  static func fix(_ time: Int64, east metres: Double, north: Double = 0) throws -> LocationFix {
    let point = try centre.destination(bearing: 90, distance: metres).destination(bearing: 0, distance: north)
    return try LocationFix(
      timestamp: time, latitude: point.latitude, longitude: point.longitude, horizontalAccuracy: 5, altitude: 180,
      speed: 1.2)
  }

  /// Anna, and Bob in a custom group of Anna's that shows him her location at `precision`.
  static func annaAndBob(_ server: TestServer, precision: LocationPrecision) async throws -> (
    anna: (session: AuthSession, client: NetworkClient), bob: (session: AuthSession, client: NetworkClient),
    group: Group
  ) {
    let anna = try await server.signUp("anna")
    let bob = try await server.signUp("bob")
    let group = try await anna.client.send(
      API.createGroup,
      body: NewGroup(
        name: "Colleagues", visibility: GroupVisibility(location: true, fields: [.fullName], precision: precision)))
    _ = try await anna.client.send(
      API.addMember, parameters: GroupMemberRef(groupID: group.id, userID: bob.session.userId))
    return (anna, bob, group)
  }

  /// The people Bob's OwnTracks app is shown in `/pub`'s answer (it posts a fix of its own first).
  static func ownTracksAnswer(_ server: TestServer, at time: Int64) async throws -> [OwnTracks.Location] {
    let reply = try await server.ownTracks(
      ownTracksLocation(lat: 48.85, lon: 2.35, tst: time / 1000), username: "bob@example.com",
      password: PhoneAppIngestTests.password, device: "bob-owntracks")
    return try reply.ownTracksMessages().compactMap { message in
      if case .location(let location) = message { return location }
      return nil
    }
  }

  @Test(arguments: ["sqlite", "postgres"])
  func everyPathShowsTheGroupsPrecisionAndTheMostPreciseGroupWins(_ engine: String) async throws {
    try await PollTests.withServer(engine) { server in
      let (anna, bob, group) = try await Self.annaAndBob(server, precision: .approximate)
      let annaID = anna.session.userId
      // Bob is told the channel of his precision; the raw channel and a finer one are closed to him.
      let visible = try #require(try await bob.client.send(API.visibleUsers).users.first)
      #expect(visible.precision == .approximate && visible.channel == "seen_approximate:\(annaID.rawValue)")
      let watcher = await LiveWatcher(server: server, token: bob.session.token)
      defer { Task { await watcher.stop() } }
      let channel = try #require(visible.channel.flatMap { ChannelName($0) })
      #expect(try await watcher.subscribe(channel))
      #expect(try await !watcher.subscribe(try ChannelName.of(user: annaID)))
      #expect(try await !watcher.subscribe(try #require(ChannelName("seen_exact:\(annaID.rawValue)"))))

      // Fixes scattered over one ~1 km cell all show as its centre, with nothing finer left.
      let now = GeofenceTests.now() - 120_000
      let first = try Self.fix(now, east: 0)
      let cell = try GeohashCell(first.coordinate, bits: 30)
      let inCell = try (0..<4).map { index in
        let latitude = cell.box.south + (cell.box.north - cell.box.south) * (0.2 + 0.2 * Double(index))
        let longitude = cell.box.west + (cell.box.east - cell.box.west) * (0.8 - 0.2 * Double(index))
        return try LocationFix(
          timestamp: now + Int64(index) * 1_000, latitude: latitude, longitude: longitude, horizontalAccuracy: 5,
          altitude: 180, speed: 1.2)
      }
      _ = try await anna.client.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: inCell))
      let seen = try await bob.client.send(API.userLocation, parameters: UserRef(id: annaID))
      let shown = try #require(seen.fix)
      #expect(seen.precision == .approximate && seen.privateZoneAt == nil)
      #expect(shown.latitude == cell.center.latitude && shown.longitude == cell.center.longitude)
      #expect(shown.timestamp == inCell[3].timestamp && shown.altitude == nil && shown.speed == nil)
      try await watcher.wait("the coarsened live event") { _ in
        try await !watcher.locations(on: channel).isEmpty
      }
      let live = try await watcher.locations(on: channel)
      #expect(live.count == 1 && live[0].precision == .approximate && live[0].fixes.count == 4)
      #expect(
        live[0].fixes.allSatisfy {
          $0.latitude == cell.center.latitude && $0.longitude == cell.center.longitude && $0.altitude == nil
        })
      // OwnTracks shows the same point.
      let pub = try await Self.ownTracksAnswer(server, at: now + 10_000)
      #expect(pub.count == 1 && pub.first?.lat == cell.center.latitude && pub.first?.lon == cell.center.longitude)

      // Town: without a gazetteer, the centre of the ~20 km cell.
      var visibility = group.visibility
      visibility.precision = .town
      _ = try await anna.client.send(
        API.updateGroup, parameters: GroupRef(id: group.id), body: GroupUpdate(visibility: visibility))
      let coarse = try GeohashCell(inCell[3].coordinate, bits: 20).center
      let town = try await bob.client.send(API.userLocation, parameters: UserRef(id: annaID))
      #expect(
        town.precision == .town && town.fix?.latitude == coarse.latitude && town.fix?.longitude == coarse.longitude)
      // Hidden: no location at all, not even in the list of visible people.
      visibility.precision = .hidden
      _ = try await anna.client.send(
        API.updateGroup, parameters: GroupRef(id: group.id), body: GroupUpdate(visibility: visibility))
      await expectAPIError(.locationUnavailable, status: 404) {
        try await bob.client.send(API.userLocation, parameters: UserRef(id: annaID))
      }
      #expect(try await bob.client.send(API.visibleUsers).users.isEmpty)
      #expect(try await Self.ownTracksAnswer(server, at: now + 20_000).isEmpty)

      // In Friends too (exact), Bob sees the fix as recorded: the most precise of his groups wins.
      let friends = GroupID("\(annaID.rawValue).friends")
      _ = try await anna.client.send(
        API.addMember, parameters: GroupMemberRef(groupID: friends, userID: bob.session.userId))
      let exact = try await bob.client.send(API.userLocation, parameters: UserRef(id: annaID))
      #expect(exact.precision == nil && exact.fix?.latitude == inCell[3].latitude && exact.fix?.altitude == 180)
      #expect(try await bob.client.send(API.visibleUsers).users.first?.channel == "seen_exact:\(annaID.rawValue)")
    }
  }

  @Test(arguments: ["sqlite", "postgres"])
  func zonesHideFixesFromOthersOnRESTLiveAndPubAndAZoneThatStoresNothingKeepsNoRow(_ engine: String) async throws {
    try await PollTests.withServer(engine) { server in
      let (anna, bob, _) = try await Self.annaAndBob(server, precision: .exact)
      let annaID = anna.session.userId
      let watcher = await LiveWatcher(server: server, token: bob.session.token)
      defer { Task { await watcher.stop() } }
      #expect(try await watcher.subscribe(try ChannelName.of(user: annaID)))

      // Bad zones are refused with what was wrong; good ones are listed.
      for bad in [
        PrivacyZoneBody(name: "Home", latitude: 91, longitude: 0, radius: 200),
        PrivacyZoneBody(name: "Home", latitude: 50, longitude: 30, radius: 10),
        PrivacyZoneBody(name: "", latitude: 50, longitude: 30, radius: 200),
      ] {
        await expectAPIError(.invalidPrivacyZone, status: 422) {
          try await anna.client.send(API.createPrivacyZone, body: bad)
        }
      }
      let home = try await anna.client.send(
        API.createPrivacyZone,
        body: PrivacyZoneBody(
          name: "Home", latitude: Self.centre.latitude, longitude: Self.centre.longitude, radius: 200))
      let friendPoint = try Self.centre.destination(bearing: 90, distance: 3_000)
      let friend = try await anna.client.send(
        API.createPrivacyZone,
        body: PrivacyZoneBody(
          name: "Kim's", latitude: friendPoint.latitude, longitude: friendPoint.longitude, radius: 100,
          display: .hidden, store: false))
      #expect(try await anna.client.send(API.privacyZones).items == [home, friend])
      #expect(try await bob.client.send(API.privacyZones).items.isEmpty)
      await expectAPIError(.notFound, status: 404) {
        try await bob.client.send(API.deletePrivacyZone, parameters: PrivacyZoneRef(id: home.id))
      }
      // A first zone closes the raw channel to everyone but Anna; Bob's channel is the zone-aware one.
      try await watcher.wait("the raw channel revoked", until: isRevoked(try ChannelName.of(user: annaID)))
      #expect(try await !watcher.subscribe(try ChannelName.of(user: annaID)))
      let visible = try #require(try await bob.client.send(API.visibleUsers).users.first)
      let channel = try #require(visible.channel.flatMap { ChannelName($0) })
      #expect(channel.rawValue == "seen_exact:\(annaID.rawValue)")
      #expect(try await watcher.subscribe(channel))

      // At home: "in a private zone", no coordinates, on REST and live; OwnTracks shows nothing of her.
      let start = GeofenceTests.now() - 300_000
      let atHome = try Self.fix(start, east: 50)
      _ = try await anna.client.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: [atHome]))
      let seenAtHome = try await bob.client.send(API.userLocation, parameters: UserRef(id: annaID))
      #expect(seenAtHome.fix == nil && seenAtHome.privateZoneAt == atHome.timestamp)
      #expect(
        try await anna.client.send(API.userLocation, parameters: UserRef(id: annaID)).fix
          == atHome.with(
            device: "anna-phone"))
      #expect(try await Self.ownTracksAnswer(server, at: start + 1_000).isEmpty)
      try await watcher.wait("the private-zone event") { _ in try await !watcher.locations(on: channel).isEmpty }

      // At Kim's (not stored): acknowledged as withheld, no row, no event; then out in the street, seen exactly.
      let atKims = try LocationFix(
        timestamp: start + 10_000, latitude: friendPoint.latitude, longitude: friendPoint.longitude,
        horizontalAccuracy: 5)
      let receipt = try await anna.client.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: [atKims]))
      #expect(receipt.accepted == 0 && receipt.duplicates == 0 && receipt.withheld == 1)
      let outside = try Self.fix(start + 20_000, east: 1_000)
      let mixed = try await anna.client.send(
        API.postFixes,
        body: FixBatch(
          deviceId: "anna-phone", fixes: [atKims.at(start + 15_000), outside]))
      #expect(mixed.accepted == 1 && mixed.withheld == 1)
      let history = try await anna.client.send(API.history, parameters: HistoryQuery(limit: 100)).fixes
      #expect(history.map(\.timestamp) == [outside.timestamp, atHome.timestamp])
      let seenOutside = try await bob.client.send(API.userLocation, parameters: UserRef(id: annaID))
      #expect(seenOutside.fix?.latitude == outside.latitude && seenOutside.fix?.altitude == 180)
      #expect(try await Self.ownTracksAnswer(server, at: start + 30_000).first?.lat == outside.latitude)
      try await watcher.wait("the fix outside") { _ in try await watcher.locations(on: channel).count == 2 }
      let live = try await watcher.locations(on: channel)
      #expect(live[0].fixes.isEmpty && live[0].privateZoneAt == atHome.timestamp)
      #expect(live[1].fixes.map(\.latitude) == [outside.latitude] && live[1].privateZoneAt == nil)

      // An imported file keeps the same rule, and its summary counts what the zone left out.
      let file = Data(
        """
        timestamp,latitude,longitude,horizontalAccuracy
        \(start + 40_000),\(friendPoint.latitude),\(friendPoint.longitude),5
        \(start + 50_000),\(outside.latitude),\(outside.longitude),5

        """.utf8)
      let imported = try await anna.client.send(API.importHistory, body: file)
      #expect(imported.read == 2 && imported.stored == 1 && imported.withheld == 1, "\(imported)")

      // A deleted zone shows what is stored again (the owner's choice); the not-stored fix never comes back.
      _ = try await anna.client.send(API.deletePrivacyZone, parameters: PrivacyZoneRef(id: friend.id))
      #expect(try await anna.client.send(API.privacyZones).items == [home])
    }
  }

  @Test(arguments: ["sqlite", "postgres"])
  func geofenceEventsOfOthersAndAShareLinksTrackHonourZonesAndPrecision(_ engine: String) async throws {
    // The link's track starts when it is made: the clock moves on past the walks before the link is read.
    let clock = TestClock()
    try await PollTests.withServer(engine, clock: clock) { server in
      let (anna, bob, _) = try await Self.annaAndBob(server, precision: .exact)
      let annaID = anna.session.userId
      // Bob's fences, shared with his Family, where Anna is: one at her home (in her zone), one in town.
      _ = try await bob.client.send(
        API.addMember,
        parameters: GroupMemberRef(groupID: GroupID("\(bob.session.userId).family"), userID: annaID))
      let family = GroupID("\(bob.session.userId).family")
      let town = try Self.centre.destination(bearing: 0, distance: 5_000)
      let homeFence = try await bob.client.send(
        API.createGeofence,
        body: NewGeofence(
          name: "Anna's", shape: .circle(center: Self.centre, radius: 100), sharing: .group, groupId: family))
      let townFence = try await bob.client.send(
        API.createGeofence,
        body: NewGeofence(name: "Town", shape: .circle(center: town, radius: 100), sharing: .group, groupId: family))
      _ = try await anna.client.send(
        API.createPrivacyZone,
        body: PrivacyZoneBody(
          name: "Home", latitude: Self.centre.latitude, longitude: Self.centre.longitude, radius: 300))
      let link = try await anna.client.send(
        API.createShareLink,
        body: NewShareLink(until: clock.now + 3_600_000, track: true, precision: .approximate))
      #expect(link.link.precision == .approximate)

      // Anna walks home, then into town.
      let start = clock.now + 1_000
      clock.advance(600_000)
      let walkHome = try [2_000.0, 1_000, 400, 60, 40, 20, 15, 10].enumerated().map { index, metres in
        try Self.fix(start + Int64(index) * 1_000, east: metres)
      }
      let walkTown = try [2_000.0, 1_000, 400, 60, 40, 20, 15, 10].enumerated().map { index, metres in
        try Self.fix(start + 60_000 + Int64(index) * 1_000, east: 0, north: 5_000 - metres)
      }
      _ = try await anna.client.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: walkHome))
      _ = try await anna.client.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: walkTown))
      // Her own list is the acknowledgement that both walks were evaluated (home: enter, exit; town: enter). Bob
      // does not see her enter his fence at her home, decided by a fix in her zone; he sees the others (the exit is
      // decided by a fix in town, outside the zone: docs/security.md says what that tells).
      var own: [GeofenceEventItem] = []
      try await GeofenceQueueTests.waitFor("Anna's three events", timeout: .seconds(30)) {
        own = try await anna.client.send(API.geofenceEvents, parameters: GeofenceEventParameters()).items
        return own.count >= 3
      }
      func kinds(_ events: [GeofenceEventItem]) -> Set<String> {
        Set(events.map { "\($0.geofenceId == homeFence.id ? "home" : "town") \($0.kind.rawValue)" })
      }
      #expect(kinds(own) == ["home enter", "home exit", "town enter"])
      let bobs = try await bob.client.send(API.geofenceEvents, parameters: GeofenceEventParameters(user: annaID)).items
      #expect(kinds(bobs) == ["home exit", "town enter"])

      // Bob moved to a coarser group: no event places her any more.
      let groups = try await anna.client.send(API.groups).groups
      let colleagues = try #require(groups.first { $0.name == "Colleagues" })
      var visibility = colleagues.visibility
      visibility.precision = .town
      _ = try await anna.client.send(
        API.updateGroup, parameters: GroupRef(id: colleagues.id), body: GroupUpdate(visibility: visibility))
      #expect(
        try await bob.client.send(API.geofenceEvents, parameters: GeofenceEventParameters(user: annaID)).items.isEmpty)

      // The link's track leaves out every fix in her zone and shows the others at their cells' centres.
      let view = try await server.client().send(API.sharedView, parameters: ShareTokenRef(token: link.token))
      let track = try #require(view.track)
      let outside = (walkHome + walkTown).filter { !(Self.centre.haversineDistance(to: $0.coordinate) <= 300) }
      #expect(track.map(\.timestamp) == outside.map(\.timestamp))
      for (shown, recorded) in zip(track, outside) {
        let cell = try GeohashCell(recorded.coordinate, bits: 30).center
        #expect(shown.latitude == cell.latitude && shown.longitude == cell.longitude && shown.altitude == nil)
      }
      #expect(view.precision == .approximate && view.position?.timestamp == walkTown.last?.timestamp)
    }
  }
}

extension PrecisionAndZoneTests {
  /// A history file imported while a zone that stores nothing exists stores none of its rows inside the zone.
  @Test(arguments: ["sqlite", "postgres"])
  func anImportStoresNothingInsideAZoneThatStoresNothing(_ engine: String) async throws {
    try await PollTests.withServer(engine) { server in
      let anna = try await server.signUp("anna")
      _ = try await anna.client.send(
        API.createPrivacyZone,
        body: PrivacyZoneBody(name: "Home", latitude: 50.45, longitude: 30.52, radius: 100, store: false))
      let rows = [
        ("2024-02-01T10:00:00Z", 50.45, 30.52), ("2024-02-01T10:01:00Z", 50.4503, 30.5201),
        ("2024-02-01T10:02:00Z", 50.46, 30.53),
      ]
      let file = Data(("time,lat,lon\n" + rows.map { "\($0.0),\($0.1),\($0.2)\n" }.joined()).utf8)
      let answer = try await HistoryImportTests.post(server, anna.session.token, file)
      #expect(answer.status == 200, "\(answer.json)")
      let stored = try await anna.client.send(API.history, parameters: HistoryQuery(limit: 100)).fixes
      #expect(stored.map(\.latitude) == [50.46])
    }
  }
}

extension LocationFix {
  /// The fix at `time`.
  fileprivate func at(_ time: Int64) -> LocationFix {
    var fix = self
    fix.timestamp = time
    return fix
  }

  /// The fix from `device`.
  fileprivate func with(device: DeviceID) -> LocationFix {
    var fix = self
    fix.deviceID = device
    return fix
  }
}
