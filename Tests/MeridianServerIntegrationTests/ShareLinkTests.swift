import DomainKit
import Foundation
import MeridianAPI
import MeridianServer
import MeridianStore
import MeridianStoreTesting
import MeridianTestSupport
import NetworkingKit
import RealtimeKit
import RealtimeKitTesting
import Testing

/// Share links (issue 39 §1): made, listed and revoked by their owner; read without an account while active, and
/// nothing at all once expired or revoked; hidden by a pause; rate-limited per link; and on the live socket a
/// read-only subscription to the link's own channel that ends with the link, on one node or two.
@Suite("Share links", .inProcess)
struct ShareLinkTests {
  /// Fixes of `device`, one a second from `start`.
  static func fixes(_ count: Int, from start: Int64, latitude: Double = 50.45) throws -> [LocationFix] {
    try makeFixes(count: count, start: start, latitude: latitude)
  }

  static func create(_ client: NetworkClient, _ body: NewShareLink) async throws -> CreatedShareLink {
    try await client.send(API.createShareLink, body: body)
  }

  static func view(_ server: TestServer, _ token: String) async throws -> SharedView {
    try await server.client().send(API.sharedView, parameters: ShareTokenRef(token: token))
  }

  @Test(arguments: ["sqlite", "postgres"])
  func linksAreMadeListedAndRevokedByTheirOwnerWithinTheirLimits(_ engine: String) async throws {
    let clock = TestClock()
    try await PollTests.withServer(engine, clock: clock, { $0.limits.shareLinksPerAccount = 2 }) { server in
      let (_, anna) = try await server.signUp("anna")
      let (_, bob) = try await server.signUp("bob")
      _ = try await anna.send(
        API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: try Self.fixes(1, from: clock.now)))
      let until = clock.now + 3_600_000
      let made = try await Self.create(
        anna, NewShareLink(until: until, label: "  Walk home ", deviceIds: ["anna-phone"], track: true))
      #expect(made.token.count == 43 && made.url == "/s/\(made.token)")
      #expect(made.link.label == "Walk home" && made.link.until == until && made.link.track)
      #expect(made.link.deviceIds == ["anna-phone"] && made.link.state == .active)
      let other = try await Self.create(anna, NewShareLink(until: until))
      #expect(other.token != made.token && other.link.deviceIds == nil && !other.link.track)

      let listed = try await anna.send(API.shareLinks).items
      #expect(listed.map(\.id) == [other.link.id, made.link.id] || listed.map(\.id) == [made.link.id, other.link.id])
      #expect(listed.allSatisfy { $0.state == .active })
      #expect(!String(describing: listed).contains(made.token))
      #expect(try await bob.send(API.shareLinks).items.isEmpty)

      // A third active link is over the limit; a revoked one no longer counts.
      await expectAPIError(.quotaExceeded, status: 409) { try await Self.create(anna, NewShareLink(until: until)) }
      await expectAPIError(.notFound, status: 404) {
        try await bob.send(API.revokeShareLink, parameters: ShareLinkRef(id: made.link.id))
      }
      _ = try await anna.send(API.revokeShareLink, parameters: ShareLinkRef(id: made.link.id))
      let revoked = try #require(try await anna.send(API.shareLinks).items.first { $0.id == made.link.id })
      #expect(revoked.state == .revoked && revoked.revokedAt == clock.now)
      _ = try await Self.create(anna, NewShareLink(until: until))

      clock.advance(3_600_000)
      #expect(
        try await anna.send(API.shareLinks).items.map(\.state).sorted { $0.rawValue < $1.rawValue } == [
          .expired, .expired, .revoked,
        ])

      // Bad bodies are refused with what was wrong.
      let now = clock.now
      let refused: [NewShareLink] = [
        NewShareLink(until: now),
        NewShareLink(until: now + ShareLinkRules.longestLifetime + 1),
        NewShareLink(until: now + 60_000, label: String(repeating: "x", count: 101)),
        NewShareLink(until: now + 60_000, label: "a\u{7}b"),
        NewShareLink(until: now + 60_000, deviceIds: ["bob-phone"]),
        NewShareLink(until: now + 60_000, deviceIds: []),
      ]
      for body in refused {
        await expectAPIError(.invalidRequest, status: 400) { try await Self.create(anna, body) }
      }
    }
  }

  @Test(arguments: ["sqlite", "postgres"])
  func theViewShowsTheCoveredDevicesWithoutAnAccountUntilTheLinkEnds(_ engine: String) async throws {
    let clock = TestClock()
    try await PollTests.withServer(engine, clock: clock) { server in
      let (_, anna) = try await server.signUp("anna")
      let start = clock.now
      _ = try await anna.send(
        API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: try Self.fixes(2, from: start - 10_000)))
      _ = try await anna.send(
        API.postFixes, body: FixBatch(deviceId: "anna-watch", fixes: try Self.fixes(1, from: start - 20_000)))
      let phoneLink = try await Self.create(
        anna, NewShareLink(until: start + 600_000, label: "Run", deviceIds: ["anna-phone"], track: true))
      let watchLink = try await Self.create(anna, NewShareLink(until: start + 600_000, deviceIds: ["anna-watch"]))

      clock.advance(5_000)
      let after = try Self.fixes(3, from: start + 1_000, latitude: 50.5)
      _ = try await anna.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: after))
      _ = try await anna.send(
        API.postFixes, body: FixBatch(deviceId: "anna-watch", fixes: try Self.fixes(1, from: start + 4_500)))

      let view = try await Self.view(server, phoneLink.token)
      #expect(view.label == "Run" && view.until == start + 600_000 && !view.paused)
      #expect(view.channel == "share:\(phoneLink.link.id)")
      let position = try #require(view.position)
      #expect(position.timestamp == after[2].timestamp && position.latitude == after[2].latitude)
      // The device appears by its handle, as to any viewer: never its id.
      let handle = try #require(position.deviceID)
      #expect(handle != "anna-phone" && handle.rawValue.hasPrefix("d"))
      #expect(view.track?.map(\.timestamp) == after.map(\.timestamp))
      #expect(view.track?.allSatisfy { $0.deviceID == handle } == true)

      let watch = try await Self.view(server, watchLink.token)
      #expect(watch.position?.timestamp == start + 4_500 && watch.track == nil)

      // A pause hides the position; resuming shows it again.
      _ = try await anna.send(API.pauseSharing)
      let paused = try await Self.view(server, phoneLink.token)
      #expect(paused.paused && paused.position == nil && paused.track == nil)
      _ = try await anna.send(API.resumeSharing)
      #expect(try await Self.view(server, phoneLink.token).position != nil)

      // Revoked or expired: 410 with its own code, and nothing else.
      _ = try await anna.send(API.revokeShareLink, parameters: ShareLinkRef(id: watchLink.link.id))
      await expectAPIError(.shareLinkRevoked, status: 410) { try await Self.view(server, watchLink.token) }
      clock.advance(600_000)
      await expectAPIError(.shareLinkExpired, status: 410) { try await Self.view(server, phoneLink.token) }
    }
  }

  /// The track starts at the later of the link's creation and the owner's last resume: where they went while
  /// paused (and before) never appears on it.
  @Test(arguments: ["sqlite", "postgres"])
  func theTrackLeavesOutWhatTheOwnerDidWhilePaused(_ engine: String) async throws {
    let clock = TestClock()
    try await PollTests.withServer(engine, clock: clock) { server in
      let (_, anna) = try await server.signUp("anna")
      let link = try await Self.create(anna, NewShareLink(until: clock.now + 3_600_000, track: true))
      // Each batch is posted once its fixes are in the past.
      let beforePause = try Self.fixes(2, from: clock.now + 1_000)
      clock.advance(10_000)
      _ = try await anna.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: beforePause))
      _ = try await anna.send(API.pauseSharing)
      let whilePaused = try Self.fixes(3, from: clock.now + 1_000, latitude: 51)
      clock.advance(10_000)
      _ = try await anna.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: whilePaused))
      let resumed = try await anna.send(API.resumeSharing)
      #expect(resumed.resumedAt == clock.now)
      let afterResume = try Self.fixes(2, from: clock.now + 1_000, latitude: 52)
      clock.advance(10_000)
      _ = try await anna.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: afterResume))

      let view = try await Self.view(server, link.token)
      #expect(view.track?.map(\.timestamp) == afterResume.map(\.timestamp))
      #expect(view.position?.timestamp == afterResume.last?.timestamp)
      // A change that ends no pause keeps the time of the last resume.
      _ = try await anna.send(API.shareUntil, body: SharingUntil(until: clock.now + 600_000))
      #expect(try await Self.view(server, link.token).track?.map(\.timestamp) == afterResume.map(\.timestamp))
    }
  }

  /// Making links is rate-limited per account (revoking them doesn't give the attempts back): 429 with Retry-After.
  @Test func makingLinksIsRateLimitedPerAccount() async throws {
    let clock = TestClock()
    try await TestServer.with(clock: clock, { $0.limits.shareLinksCreatedPerAccountPerHour = 2 }) { server in
      let (_, anna) = try await server.signUp("anna")
      let (_, bob) = try await server.signUp("bob")
      for _ in 0..<2 {
        let made = try await Self.create(anna, NewShareLink(until: clock.now + 60_000))
        _ = try await anna.send(API.revokeShareLink, parameters: ShareLinkRef(id: made.link.id))
      }
      do {
        _ = try await Self.create(anna, NewShareLink(until: clock.now + 60_000))
        Issue.record("a third link in an hour was made")
      } catch let error as NetworkingError {
        #expect(error.serverError?.code == APIErrorCode.rateLimited.rawValue)
        #expect(error.serverError?.status.code == 429)
        #expect((error.retryAfter ?? .zero) > .zero)
      }
      _ = try await Self.create(bob, NewShareLink(until: clock.now + 60_000))
      clock.advance(3_600_000)
      _ = try await Self.create(anna, NewShareLink(until: clock.now + 60_000))
    }
  }

  /// A track of more fixes than it shows is thinned over its whole window, not cut to its newest fixes: its first and
  /// last fix stay, its corners stay, and the answer says it was simplified.
  @Test func aLongTrackIsThinnedOverItsWholeWindow() async throws {
    let clock = TestClock()
    try await TestServer.with(clock: clock) { server in
      let (_, anna) = try await server.signUp("anna")
      let link = try await Self.create(anna, NewShareLink(until: clock.now + 3_600_000, track: true))
      // 3,000 fixes a second apart: north for 1,500, then east for 1,500 (one corner).
      let start = clock.now + 1_000
      let fixes = try (0..<3_000).map { index in
        let north = Double(min(index, 1_500)) * 0.0001
        let east = Double(max(index - 1_500, 0)) * 0.0001
        return try LocationFix(
          timestamp: start + Int64(index) * 1_000, latitude: 50 + north, longitude: 30 + east, horizontalAccuracy: 5,
          kind: .movement)
      }
      clock.advance(3_100_000)
      for batch in stride(from: 0, to: fixes.count, by: 1_000) {
        _ = try await anna.send(
          API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: Array(fixes[batch..<batch + 1_000])))
      }
      let view = try await Self.view(server, link.token)
      let track = try #require(view.track)
      #expect(track.count <= ShareLinkRules.longestTrack && track.count >= 3)
      #expect(track.first?.timestamp == fixes.first?.timestamp && track.last?.timestamp == fixes.last?.timestamp)
      #expect(track.contains { $0.timestamp == fixes[1_500].timestamp })
      #expect(view.simplified == true && view.truncated == nil)
      // A short track is shown whole, not marked.
      let short = try await Self.create(anna, NewShareLink(until: clock.now + 60_000, track: true))
      let few = try Self.fixes(3, from: clock.now + 1_000)
      clock.advance(5_000)
      _ = try await anna.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: few))
      let shortView = try await Self.view(server, short.token)
      #expect(shortView.track?.map(\.timestamp) == few.map(\.timestamp) && shortView.simplified == nil)
    }
  }

  /// Reads are limited per address before per link: one client reading many links is stopped.
  @Test func readsAreRateLimitedPerAddressBeforePerLink() async throws {
    // The server's clock stands still: the minute never ends under the test, however slow the machine.
    try await TestServer.with(
      clock: TestClock(),
      {
        $0.limits.sharedViewsPerAddressPerMinute = 3
        $0.limits.sharedViewsPerLinkPerMinute = 100
      }
    ) { server in
      let (_, anna) = try await server.signUp("anna")
      let until = Timestamp.milliseconds(Date()) + 600_000
      let first = try await Self.create(anna, NewShareLink(until: until))
      let second = try await Self.create(anna, NewShareLink(until: until))
      _ = try await Self.view(server, first.token)
      _ = try await Self.view(server, first.token)
      await expectAPIError(.notFound, status: 404) { try await Self.view(server, "no-such-token") }
      do {
        _ = try await Self.view(server, second.token)
        Issue.record("a fourth read from one address in a minute was answered")
      } catch let error as NetworkingError {
        #expect(error.serverError?.code == APIErrorCode.rateLimited.rawValue)
        #expect((error.retryAfter ?? .zero) > .zero)
      }
    }
  }

  /// A link's viewers have their own cap of sockets per node, not an account's.
  @Test func aLinksViewersHaveTheirOwnSocketCap() async throws {
    try await TestServer.with({
      $0.limits.socketsPerAccount = 1
      $0.limits.shareViewersPerLink = 2
    }) { server in
      let (_, anna) = try await server.signUp("anna")
      let link = try await Self.create(anna, NewShareLink(until: Timestamp.milliseconds(Date()) + 600_000))
      let channel = try #require(ChannelName(namespace: "share", id: link.link.id))
      var viewers: [LiveWatcher] = []
      for _ in 0..<2 {
        viewers.append(await LiveWatcher(server: server, token: link.token))
        #expect(try await viewers[viewers.count - 1].subscribe(channel))
      }
      let third = await LiveWatcher(server: server, token: link.token)
      let opened = viewers + [third]
      defer { Task { for viewer in opened { await viewer.stop() } } }
      try await third.wait("the third socket refused") { items in
        items.contains { item in
          if case .error(let error) = item { return error.code == .tooManyConnections }
          return false
        }
      }
    }
  }

  @Test func theOwnersListCountsThePagesOpenOnEachActiveLink() async throws {
    try await TestServer.with { server in
      let (_, anna) = try await server.signUp("anna")
      let until = Timestamp.milliseconds(Date()) + 600_000
      let watched = try await Self.create(anna, NewShareLink(until: until, label: "watched"))
      let quiet = try await Self.create(anna, NewShareLink(until: until, label: "quiet"))
      let revoked = try await Self.create(anna, NewShareLink(until: until, label: "revoked"))
      _ = try await anna.send(API.revokeShareLink, parameters: ShareLinkRef(id: revoked.link.id))
      let channel = try #require(ChannelName(namespace: "share", id: watched.link.id))
      let pages = [
        await LiveWatcher(server: server, token: watched.token),
        await LiveWatcher(server: server, token: watched.token),
      ]
      defer { Task { for page in pages { await page.stop() } } }
      for page in pages { #expect(try await page.subscribe(channel)) }
      func viewers() async throws -> [String: Int?] {
        let list = try await anna.send(API.shareLinks)
        return Dictionary(uniqueKeysWithValues: list.items.map { ($0.label ?? "", $0.viewers) })
      }
      #expect(try await viewers() == ["watched": 2, "quiet": 0, "revoked": nil])
      await pages[0].stop()
      try await GeofenceQueueTests.waitFor("one page closed") { try await viewers()["watched"] == 1 }
    }
  }

  @Test func aWrongTokenIs404AndEachLinkIsRateLimited() async throws {
    // The server's clock stands still: the minute never ends under the test, however slow the machine.
    try await TestServer.with(clock: TestClock(), { $0.limits.sharedViewsPerLinkPerMinute = 3 }) { server in
      let (_, anna) = try await server.signUp("anna")
      let link = try await Self.create(anna, NewShareLink(until: Timestamp.milliseconds(Date()) + 600_000))
      for token in ["garbage", String(repeating: "A", count: 43), String(repeating: "z", count: 4_000), "ü..%2F", " "] {
        await expectAPIError(.notFound, status: 404) { try await Self.view(server, token) }
      }
      for _ in 0..<3 { _ = try await Self.view(server, link.token) }
      do {
        _ = try await Self.view(server, link.token)
        Issue.record("the fourth read in a minute was answered")
      } catch let error as NetworkingError {
        #expect(error.serverError?.code == APIErrorCode.rateLimited.rawValue)
        #expect(error.serverError?.status.code == 429)
        #expect((error.retryAfter ?? .zero) > .zero)
      }
    }
  }

  // MARK: Live

  @Test func aShareSocketReadsOnlyItsLinksChannelAndIsRevokedWithTheLink() async throws {
    try await TestServer.with { server in
      let (annaSession, anna) = try await server.signUp("anna")
      // Both devices are Anna's (a link names only its owner's devices); the link names the phone only.
      for device: DeviceID in ["anna-phone", "anna-watch"] {
        _ = try await anna.send(
          API.postFixes, body: FixBatch(deviceId: device, fixes: try Self.fixes(1, from: 1_700_000_000_000)))
      }
      let link = try await Self.create(
        anna, NewShareLink(until: Timestamp.milliseconds(Date()) + 600_000, deviceIds: ["anna-phone"]))
      let channel = try #require(ChannelName(namespace: "share", id: link.link.id))
      let viewer = await LiveWatcher(server: server, token: link.token)
      defer { Task { await viewer.stop() } }
      #expect(try await viewer.subscribe(channel))
      #expect(try await !viewer.subscribe(try ChannelName.of(user: annaSession.userId)))
      #expect(
        try await !viewer.subscribe(try #require(ChannelName(namespace: "sharing", id: annaSession.userId.rawValue))))
      do {
        _ = try await viewer.client.publish(
          JSONValue(encoding: FixBatch(deviceId: "anna-phone", fixes: try Self.fixes(1, from: 1_700_000_500_000))),
          to: channel, id: "p1")
        Issue.record("a share socket published")
      } catch RealtimeClientError.rejected(let error) {
        #expect(error.code == .forbidden)
      }

      // The watch isn't covered: only the phone's fix arrives, by its handle.
      _ = try await anna.send(
        API.postFixes, body: FixBatch(deviceId: "anna-watch", fixes: try Self.fixes(1, from: 1_700_000_100_000)))
      let phone = try Self.fixes(1, from: Timestamp.milliseconds(Date()))
      _ = try await anna.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: phone))
      try await viewer.wait("the phone's fix") { _ in try await !viewer.sharedLocations(on: channel).isEmpty }
      let received = try await viewer.sharedLocations(on: channel)
      #expect(received.map { $0.fixes.map(\.timestamp) } == [phone.map(\.timestamp)])
      #expect(received.first?.deviceId != "anna-phone")

      _ = try await anna.send(API.revokeShareLink, parameters: ShareLinkRef(id: link.link.id))
      try await viewer.wait("revocation", until: isRevoked(channel))
      #expect(try await Self.isRefused(server, token: link.token))
    }
  }

  @Test func expiryAndAPauseRevokeTheShareSocket() async throws {
    let clock = TestClock()
    try await TestServer.with(clock: clock) { server in
      let (_, anna) = try await server.signUp("anna")
      let expiring = try await Self.create(anna, NewShareLink(until: clock.now + 60_000))
      let lasting = try await Self.create(anna, NewShareLink(until: clock.now + 600_000))
      let expiringChannel = try #require(ChannelName(namespace: "share", id: expiring.link.id))
      let lastingChannel = try #require(ChannelName(namespace: "share", id: lasting.link.id))
      let first = await LiveWatcher(server: server, token: expiring.token)
      let second = await LiveWatcher(server: server, token: lasting.token)
      defer {
        Task {
          await first.stop()
          await second.stop()
        }
      }
      #expect(try await first.subscribe(expiringChannel))
      #expect(try await second.subscribe(lastingChannel))
      _ = try await anna.send(
        API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: try Self.fixes(1, from: clock.now)))
      try await first.wait("the fix before expiry") { _ in
        try await first.sharedLocations(on: expiringChannel).count == 1
      }

      clock.advance(60_000)
      _ = try await anna.send(
        API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: try Self.fixes(1, from: clock.now)))
      try await first.wait("revocation at expiry", until: isRevoked(expiringChannel))
      try await second.wait("the fix after the first link's expiry") { _ in
        try await second.sharedLocations(on: lastingChannel).count == 2
      }
      #expect(try await first.sharedLocations(on: expiringChannel).count == 1)
      #expect(try await Self.isRefused(server, token: expiring.token))

      _ = try await anna.send(API.pauseSharing)
      try await second.wait("revocation by the pause", until: isRevoked(lastingChannel))
      #expect(try await !second.subscribe(lastingChannel))
    }
  }

  /// A fix stored while the owner is paused goes into no channel's history that a viewer may resume from: not a
  /// share link's, not a group's, and Anna's own channel forgets what it kept when her sharing changes. A viewer
  /// resuming after she resumes from a position before the pause gets the next fix and nothing from the pause.
  @Test func nothingStoredDuringAPauseIsReplayedToAViewerResumingAfterIt() async throws {
    try await TestServer.with { server in
      let (annaSession, anna) = try await server.signUp("anna")
      let (bobSession, _) = try await server.signUp("bob")
      let friends = try #require(try await anna.send(API.groups).groups.first { $0.kind == .friends })
      _ = try await anna.send(API.addMember, parameters: GroupMemberRef(groupID: friends.id, userID: bobSession.userId))
      let link = try await Self.create(anna, NewShareLink(until: Timestamp.milliseconds(Date()) + 600_000))
      let shareChannel = try #require(ChannelName(namespace: "share", id: link.link.id))
      let annaChannel = try ChannelName.of(user: annaSession.userId)
      let friendsChannel = try ChannelName.of(group: friends.id)
      let watched: [(token: String, channel: ChannelName)] = [
        (link.token, shareChannel), (bobSession.token, annaChannel), (bobSession.token, friendsChannel),
      ]
      let owner = await LiveWatcher(server: server, token: annaSession.token)
      defer { Task { await owner.stop() } }
      #expect(try await owner.subscribe(annaChannel))

      // Each viewer gets the first fix, remembers where it is, and goes away.
      var first: [LiveWatcher] = []
      for (token, channel) in watched {
        first.append(await LiveWatcher(server: server, token: token))
        #expect(try await first[first.count - 1].subscribe(channel))
      }
      let before = try Self.fixes(1, from: Timestamp.milliseconds(Date()))
      _ = try await anna.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: before))
      var positions: [ResumePosition] = []
      for (viewer, (_, channel)) in zip(first, watched) {
        try await viewer.wait("the fix before the pause on \(channel)") { _ in
          try await viewer.sharedLocations(on: channel).count == 1
        }
        positions.append(try #require(await viewer.client.position(of: channel)))
        await viewer.stop()
      }

      // Stored while paused: Anna's own socket hears it, so the fan-out is done with it.
      _ = try await anna.send(API.pauseSharing)
      let paused = try Self.fixes(1, from: Timestamp.milliseconds(Date()))
      _ = try await anna.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: paused))
      try await owner.wait("the paused fix on Anna's own channel") { _ in
        try await owner.sharedLocations(on: annaChannel).count == 2
      }
      _ = try await anna.send(API.resumeSharing)

      var resumed: [LiveWatcher] = []
      for (token, _) in watched { resumed.append(await LiveWatcher(server: server, token: token)) }
      let viewers = resumed
      defer { Task { for viewer in viewers { await viewer.stop() } } }
      for (viewer, ((_, channel), position)) in zip(viewers, zip(watched, positions)) {
        #expect(try await viewer.subscribe(channel, resumingFrom: position))
      }
      let after = try Self.fixes(1, from: Timestamp.milliseconds(Date()))
      _ = try await anna.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: after))
      for (viewer, (_, channel)) in zip(viewers, watched) {
        try await viewer.wait("the fix after the resume on \(channel)") { _ in
          try await viewer.sharedLocations(on: channel).contains { $0.fixes.map(\.timestamp) == after.map(\.timestamp) }
        }
        #expect(
          try await viewer.sharedLocations(on: channel).map { $0.fixes.map(\.timestamp) } == [after.map(\.timestamp)],
          "\(channel)")
      }
    }
  }

  /// A link's channel gets the fixes dated from the link's creation on (a backfill of older ones shows nothing), only
  /// the newest of a batch when the link shows no track, and never the owner's account id.
  @Test func theLiveChannelKeepsToTheLinksWindowAndTrackAndShowsNoAccountID() async throws {
    let clock = TestClock()
    try await TestServer.with(clock: clock) { server in
      let (_, anna) = try await server.signUp("anna")
      let until = clock.now + 600_000
      let tracked = try await Self.create(anna, NewShareLink(until: until, track: true))
      let untracked = try await Self.create(anna, NewShareLink(until: until))
      let trackedChannel = try #require(ChannelName(namespace: "share", id: tracked.link.id))
      let untrackedChannel = try #require(ChannelName(namespace: "share", id: untracked.link.id))
      let first = await LiveWatcher(server: server, token: tracked.token)
      let second = await LiveWatcher(server: server, token: untracked.token)
      defer {
        Task {
          await first.stop()
          await second.stop()
        }
      }
      #expect(try await first.subscribe(trackedChannel))
      #expect(try await second.subscribe(untrackedChannel))

      // A backfill of last week, then a batch of three fixes made since the links.
      let backfill = try Self.fixes(50, from: clock.now - 7 * 86_400_000)
      _ = try await anna.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: backfill))
      let recent = try Self.fixes(3, from: clock.now + 1_000, latitude: 50.5)
      clock.advance(10_000)
      _ = try await anna.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: recent))
      try await first.wait("the recent batch") { _ in try await !first.sharedLocations(on: trackedChannel).isEmpty }
      try await second.wait("the recent batch") { _ in
        try await !second.sharedLocations(on: untrackedChannel).isEmpty
      }
      // Each channel's first event is the recent batch's: the backfill went nowhere.
      #expect(
        try await first.sharedLocations(on: trackedChannel).map { $0.fixes.map(\.timestamp) } == [
          recent.map(\.timestamp)
        ])
      #expect(
        try await second.sharedLocations(on: untrackedChannel).map { $0.fixes.map(\.timestamp) } == [
          [recent[2].timestamp]
        ])
      for payload in await first.payloads(on: trackedChannel) + second.payloads(on: untrackedChannel) {
        guard case .object(let fields) = payload else {
          Issue.record("not an object: \(payload)")
          continue
        }
        #expect(Set(fields.keys) == ["deviceId", "fixes"])
      }
    }
  }

  /// A link's subscribers are revoked when it expires, though the owner sends nothing (the test clock moves).
  @Test func expiryRevokesTheShareSocketWithoutAFix() async throws {
    let clock = TestClock()
    try await TestServer.with(clock: clock) { server in
      let (_, anna) = try await server.signUp("anna")
      let link = try await Self.create(anna, NewShareLink(until: clock.now + 60_000))
      let channel = try #require(ChannelName(namespace: "share", id: link.link.id))
      let viewer = await LiveWatcher(server: server, token: link.token)
      defer { Task { await viewer.stop() } }
      #expect(try await viewer.subscribe(channel))
      clock.advance(60_000)
      try await viewer.wait("revocation at expiry", until: isRevoked(channel))
      #expect(try await !viewer.subscribe(channel))
    }
  }

  @Test func aDisabledOwnersLinksShowNothingAndTheirSocketsClose() async throws {
    try await TestServer.with { server in
      let (annaSession, anna) = try await server.signUp("anna")
      let link = try await Self.create(anna, NewShareLink(until: Timestamp.milliseconds(Date()) + 600_000))
      let channel = try #require(ChannelName(namespace: "share", id: link.link.id))
      let viewer = await LiveWatcher(server: server, token: link.token)
      defer { Task { await viewer.stop() } }
      #expect(try await viewer.subscribe(channel))
      let closed = Task {
        for await state in viewer.client.states {
          if case .stopped(let code) = state, code != nil { return code }
        }
        return nil
      }
      let admin = try server.client(token: ServerConfiguration.developmentAdminToken)
      _ = try await admin.send(API.adminDisableUser, parameters: AdminUserRef(user: annaSession.userId.rawValue))
      #expect(try await withTimeout(.seconds(30)) { await closed.value } == .unauthorized)
      await expectAPIError(.notFound, status: 404) { try await Self.view(server, link.token) }
      #expect(try await Self.isRefused(server, token: link.token))
    }
  }

  @Test func aLinkMadeOnNodeAShowsFixesPostedThereOnNodeBUntilRevoked() async throws {
    try await TwoNodeTests.withTwoNodes { a, b in
      let (_, anna) = try await a.signUp("anna")
      let link = try await Self.create(anna, NewShareLink(until: Timestamp.milliseconds(Date()) + 600_000))
      let channel = try #require(ChannelName(namespace: "share", id: link.link.id))
      let viewerOnB = await LiveWatcher(server: b, token: link.token)
      defer { Task { await viewerOnB.stop() } }
      #expect(try await viewerOnB.subscribe(channel))
      let fixes = try Self.fixes(1, from: Timestamp.milliseconds(Date()))
      _ = try await anna.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: fixes))
      try await viewerOnB.wait("the fix posted to node A") { _ in
        try await viewerOnB.sharedLocations(on: channel).map { $0.fixes.map(\.timestamp) } == [fixes.map(\.timestamp)]
      }
      #expect(try await Self.view(b, link.token).position?.timestamp == fixes[0].timestamp)
      // The owner, on node A, counts the page open on node B (said through the live log); and its closing.
      func viewersOnA() async throws -> Int? { try await anna.send(API.shareLinks).items.first?.viewers }
      try await GeofenceQueueTests.waitFor("node B's page counted on node A") { try await viewersOnA() == 1 }
      let secondOnB = await LiveWatcher(server: b, token: link.token)
      #expect(try await secondOnB.subscribe(channel))
      try await GeofenceQueueTests.waitFor("node B's second page counted on node A") { try await viewersOnA() == 2 }
      await secondOnB.stop()
      try await GeofenceQueueTests.waitFor("its closing counted on node A") { try await viewersOnA() == 1 }
      _ = try await anna.send(API.revokeShareLink, parameters: ShareLinkRef(id: link.link.id))
      try await viewerOnB.wait("revocation on node B", until: isRevoked(channel))
      await expectAPIError(.shareLinkRevoked, status: 410) { try await Self.view(b, link.token) }
      #expect(try await Self.isRefused(b, token: link.token))
    }
  }

  /// Whether a new socket signed in with `token` is closed with 4001.
  static func isRefused(_ server: TestServer, token: String) async throws -> Bool {
    try await closeCode(server, token: token) == .unauthorized
  }

  /// The code a new socket signed in with `token` is closed with (waiting up to 30 s for it to close).
  static func closeCode(_ server: TestServer, token: String) async throws -> RealtimeCloseCode? {
    let watcher = await LiveWatcher(server: server, token: token)
    defer { Task { await watcher.stop() } }
    let states = Task {
      for await state in watcher.client.states {
        if case .stopped(let code) = state, code != nil { return code }
      }
      return nil
    }
    return try await withTimeout(.seconds(30)) { await states.value }
  }
}
