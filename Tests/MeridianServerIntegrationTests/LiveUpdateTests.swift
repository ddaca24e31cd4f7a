import DomainKit
import Foundation
import MeridianAPI
import MeridianServer
import MeridianStore
import MeridianStoreSQLite
import MeridianStoreTesting
import MeridianTestSupport
import NetworkingKit
import RealtimeKit
import RealtimeKitTesting
import RealtimeKitWebSocketClient
import Testing

/// A signed-in user's live connection to `GET /ws`, recording everything the client reports.
final class LiveWatcher: Sendable {
  let client: RealtimeClient
  private let log = Log()
  private let pump: Task<Void, Never>

  actor Log {
    var items: [RealtimeClientEvent] = []
    func append(_ item: RealtimeClientEvent) { items.append(item) }
  }

  init(server: TestServer, token: String) async {
    client = RealtimeClient(
      transport: WebSocketRealtimeTransport(url: "ws://127.0.0.1:\(server.port)/ws"),
      configuration: RealtimeClientConfiguration(clientName: "live-tests", clientVersion: "1") { token })
    let client = self.client
    let log = self.log
    pump = Task {
      for await item in client.events { await log.append(item) }
    }
    await client.start()
  }

  /// Everything reported so far.
  var items: [RealtimeClientEvent] { get async { await log.items } }

  /// The live locations received on `channel`, in order.
  func locations(on channel: ChannelName) async throws -> [LiveLocation] {
    try await items.compactMap { item -> LiveLocation? in
      guard case .event(let event) = item, event.channel == channel else { return nil }
      return try event.payload.decode(as: LiveLocation.self)
    }
  }

  /// The live events received on `channel` read as a share link's (device and fixes; any channel's events read so).
  func sharedLocations(on channel: ChannelName) async throws -> [SharedLiveLocation] {
    try await payloads(on: channel).map { try $0.decode(as: SharedLiveLocation.self) }
  }

  /// The payloads of the events received on `channel`, in order.
  func payloads(on channel: ChannelName) async -> [JSONValue] {
    await items.compactMap { item in
      guard case .event(let event) = item, event.channel == channel else { return nil }
      return event.payload
    }
  }

  /// Polls until `condition` holds over what was reported, for up to 60 s (the server stage's 250 tests share two
  /// cores).
  func wait(
    _ what: String, sourceLocation: SourceLocation = #_sourceLocation,
    until condition: ([RealtimeClientEvent]) async throws -> Bool
  ) async throws {
    let deadline = ContinuousClock.now + .seconds(60)
    while ContinuousClock.now < deadline {
      if try await condition(await items) { return }
      try await Task.sleep(for: .milliseconds(10))
    }
    Issue.record("timed out waiting for \(what): \(await items)", sourceLocation: sourceLocation)
    throw CancellationError()
  }

  /// Subscribes (resuming from `position` if given) and waits for the server's answer: true when subscribed, false
  /// when refused.
  func subscribe(_ channel: ChannelName, resumingFrom position: ResumePosition? = nil) async throws -> Bool {
    let before = await items.count
    await client.subscribe(channel, resumingFrom: position)
    var answer: Bool?
    try await wait("an answer to subscribing \(channel)") { items in
      for item in items.dropFirst(before) {
        switch item {
        case .subscribed(let position) where position.channel == channel: answer = true
        case .error(let error) where error.code == .forbidden: answer = false
        case .unsubscribed(let name, _) where name == channel: answer = false
        default: continue
        }
      }
      return answer != nil
    }
    return answer ?? false
  }

  func stop() async {
    await client.stop()
    pump.cancel()
  }
}

extension ChannelName {
  static func of(user: UserID) throws -> ChannelName { try #require(ChannelName.user(user.rawValue)) }
  static func of(group: GroupID) throws -> ChannelName { try #require(ChannelName.group(group.rawValue)) }
}

func isRevoked(_ channel: ChannelName) -> ([RealtimeClientEvent]) -> Bool {
  { items in items.contains(.unsubscribed(channel, reason: .revoked)) }
}

@Suite("Live updates over the WebSocket")
struct LiveUpdateTests {
  @Test func fixesReachExactlyTheViewersAllowedToSeeThem() async throws {
    try await TestServer.with { server in
      let (annaSession, anna) = try await server.signUp("anna")
      let (bobSession, _) = try await server.signUp("bob")
      let (carolSession, _) = try await server.signUp("carol")
      let groups = try await anna.send(API.groups).groups
      let friends = try #require(groups.first { $0.kind == .friends })
      let blacklist = try #require(groups.first { $0.kind == .blacklist })
      _ = try await anna.send(API.addMember, parameters: GroupMemberRef(groupID: friends.id, userID: bobSession.userId))
      let annaChannel = try ChannelName.of(user: annaSession.userId)
      let friendsChannel = try ChannelName.of(group: friends.id)

      let bob = await LiveWatcher(server: server, token: bobSession.token)
      let carol = await LiveWatcher(server: server, token: carolSession.token)
      defer {
        Task {
          await bob.stop()
          await carol.stop()
        }
      }
      #expect(try await bob.subscribe(annaChannel))
      #expect(try await bob.subscribe(friendsChannel))
      #expect(try await !carol.subscribe(annaChannel))
      #expect(try await !carol.subscribe(friendsChannel))

      // A fix stored over REST reaches Bob on both channels, with the fixes as stored.
      let fixes = try makeFixes(count: 3)
      _ = try await anna.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: fixes))
      try await bob.wait("anna's fixes") { _ in
        let direct = try await bob.locations(on: annaChannel).count
        let viaGroup = try await bob.locations(on: friendsChannel).count
        return direct == 1 && viaGroup == 1
      }
      let received = try #require(try await bob.locations(on: annaChannel).first)
      #expect(received.userId == annaSession.userId)
      #expect(received.deviceId != "anna-phone")  // a handle
      #expect(received.fixes.map(\.timestamp) == fixes.map(\.timestamp))
      // The same fixes again are duplicates: nothing new to tell.
      _ = try await anna.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: fixes))

      // Pausing revokes Bob's live view at once; a re-subscribe is refused and later fixes don't reach him.
      _ = try await anna.send(API.pauseSharing)
      try await bob.wait("revocation after pause", until: isRevoked(annaChannel))
      try await bob.wait("group revocation after pause", until: isRevoked(friendsChannel))
      #expect(try await !bob.subscribe(annaChannel))
      _ = try await anna.send(
        API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: try makeFixes(count: 2, start: 1_700_000_100_000)))

      // Resumed, Bob may subscribe again and gets the next fix; blacklisting him revokes it again.
      _ = try await anna.send(API.resumeSharing)
      #expect(try await bob.subscribe(annaChannel))
      _ = try await anna.send(
        API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: try makeFixes(count: 1, start: 1_700_000_200_000)))
      try await bob.wait("the fix after resume") { _ in try await bob.locations(on: annaChannel).count == 2 }
      _ = try await anna.send(
        API.addMember, parameters: GroupMemberRef(groupID: blacklist.id, userID: bobSession.userId))
      try await bob.wait("revocation after blacklisting") { items in
        items.filter { $0 == .unsubscribed(annaChannel, reason: .revoked) }.count == 2
      }
      #expect(try await !bob.subscribe(annaChannel))

      // Exactly the two allowed events on Anna's channel; the paused batch and the duplicates never arrived.
      let timestamps = try await bob.locations(on: annaChannel).map { $0.fixes.map(\.timestamp) }
      #expect(timestamps == [fixes.map(\.timestamp), [1_700_000_200_000]])
      #expect(try await carol.locations(on: annaChannel).isEmpty)

      // The metrics count the open live connections and the events fanned out.
      let metrics = String(
        decoding: try await server.client(token: ServerConfiguration.developmentAdminToken).send(API.metrics),
        as: UTF8.self)
      #expect(metrics.contains("meridian_live_connections 2"), "\(metrics)")
      let events = metrics.split(separator: "\n").first { $0.hasPrefix("meridian_live_events_total ") }
      #expect(events.flatMap { Double($0.split(separator: " ").last ?? "") }.map { $0 >= 3 } == true, "\(metrics)")
    }
  }

  /// A viewer hears on `sharing:<viewer>` as soon as a person they may see again resumes sharing (the page shows
  /// them at once, not at its next poll of `/v1/sharing/visible`); nobody else may subscribe to that channel.
  @Test func aResumeTellsTheViewersWhoMaySeeTheOwnerAgainAtOnce() async throws {
    try await TestServer.with { server in
      let (annaSession, anna) = try await server.signUp("anna")
      let (bobSession, _) = try await server.signUp("bob")
      let (carolSession, _) = try await server.signUp("carol")
      let friends = try #require(try await anna.send(API.groups).groups.first { $0.kind == .friends })
      _ = try await anna.send(API.addMember, parameters: GroupMemberRef(groupID: friends.id, userID: bobSession.userId))
      let bob = await LiveWatcher(server: server, token: bobSession.token)
      let carol = await LiveWatcher(server: server, token: carolSession.token)
      defer {
        Task {
          await bob.stop()
          await carol.stop()
        }
      }
      let bobsSharing = try #require(ChannelName(namespace: "sharing", id: bobSession.userId.rawValue))
      #expect(try await bob.subscribe(bobsSharing))
      #expect(try await !carol.subscribe(bobsSharing))
      #expect(try await bob.subscribe(try ChannelName.of(user: annaSession.userId)))

      _ = try await anna.send(API.pauseSharing)
      try await bob.wait("revocation after pause", until: isRevoked(try ChannelName.of(user: annaSession.userId)))
      _ = try await anna.send(API.resumeSharing)
      func visible(_ items: [RealtimeClientEvent]) -> [String] {
        items.compactMap { item in
          guard case .event(let event) = item, event.channel == bobsSharing,
            case .object(let fields) = event.payload, fields["type"] == .string("sharing.visible"),
            case .string(let user) = fields["userId"]
          else { return nil }
          return user
        }
      }
      try await bob.wait("Anna visible again") { items in !visible(items).isEmpty }
      // The first event on the channel is the resume's: the pause told Bob nothing.
      #expect(visible(await bob.items) == [annaSession.userId.rawValue])
      #expect(try await bob.subscribe(try ChannelName.of(user: annaSession.userId)))
    }
  }

  @Test func aDevicePublishesItsFixesOverTheSocketDurablyAndOnce() async throws {
    try await TestServer.with { server in
      let (annaSession, anna) = try await server.signUp("anna")
      let (bobSession, bobClient) = try await server.signUp("bob")
      let friends = try #require(try await anna.send(API.groups).groups.first { $0.kind == .friends })
      _ = try await anna.send(API.addMember, parameters: GroupMemberRef(groupID: friends.id, userID: bobSession.userId))
      _ = try await bobClient.send(API.postFixes, body: FixBatch(deviceId: "bob-phone", fixes: try makeFixes(count: 1)))
      let annaChannel = try ChannelName.of(user: annaSession.userId)
      let bob = await LiveWatcher(server: server, token: bobSession.token)
      let annaLive = await LiveWatcher(server: server, token: annaSession.token)
      defer {
        Task {
          await bob.stop()
          await annaLive.stop()
        }
      }
      #expect(try await bob.subscribe(annaChannel))
      func storedTimestamps() async throws -> [Int64] {
        try await anna.send(API.history, parameters: HistoryQuery(limit: 1000)).fixes.map(\.timestamp).sorted()
      }
      func publish(_ batch: FixBatch, id: String, on channel: ChannelName? = nil) async throws -> PublishAck {
        try await annaLive.client.publish(JSONValue(encoding: batch), to: channel ?? annaChannel, id: id)
      }

      // The ack comes once the fixes are durable: they are in the history at once, and Bob sees them live.
      let fixes = try makeFixes(count: 3)
      _ = try await publish(FixBatch(deviceId: "anna-phone", fixes: fixes), id: "batch-1")
      #expect(try await storedTimestamps() == fixes.map(\.timestamp))
      try await bob.wait("the published fixes") { _ in try await bob.locations(on: annaChannel).count == 1 }
      let received = try #require(try await bob.locations(on: annaChannel).first)
      // The device appears by a handle, in the event and in each of its fixes.
      #expect(received.deviceId != "anna-phone" && received.fixes.allSatisfy { $0.deviceID == received.deviceId })
      #expect(received.fixes.map(Self.withoutDevice) == fixes)

      // Re-sent under the same id, under a new id, or uploaded over HTTP: stored once, no second event.
      _ = try await publish(FixBatch(deviceId: "anna-phone", fixes: fixes), id: "batch-1")
      _ = try await publish(FixBatch(deviceId: "anna-phone", fixes: fixes), id: "batch-1-again")
      let receipt = try await anna.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: fixes))
      #expect(receipt.accepted == 0 && receipt.duplicates == 3)
      #expect(try await storedTimestamps() == fixes.map(\.timestamp))

      // Refusals name the problem and store nothing: a fix out of range, a payload that isn't a batch, an empty
      // batch, another account's device, and someone else's channel.
      var outOfRange = try JSONValue(
        encoding: FixBatch(deviceId: "anna-phone", fixes: try makeFixes(count: 1)))
      if case .object(var batch) = outOfRange, case .array(var list) = batch["fixes"], case .object(var fix) = list[0] {
        fix["latitude"] = 91
        fix["timestamp"] = 1_800_000_000_000
        list[0] = .object(fix)
        batch["fixes"] = .array(list)
        outOfRange = .object(batch)
      }
      let refusals: [(String, JSONValue, ChannelName, RealtimeErrorCode)] = [
        ("latitude", outOfRange, annaChannel, .invalidPayload),
        ("not-a-batch", ["deviceId": "anna-phone", "fixes": "none"], annaChannel, .invalidPayload),
        ("empty", ["deviceId": "anna-phone", "fixes": []], annaChannel, .invalidPayload),
        (
          "bobs-device",
          try JSONValue(
            encoding: FixBatch(deviceId: "bob-phone", fixes: try makeFixes(count: 1, start: 1_700_000_100_000))),
          annaChannel, .forbidden
        ),
        (
          "bobs-channel",
          try JSONValue(
            encoding: FixBatch(deviceId: "anna-phone", fixes: try makeFixes(count: 1, start: 1_700_000_200_000))),
          try ChannelName.of(user: bobSession.userId), .forbidden
        ),
      ]
      for (id, payload, channel, code) in refusals {
        do {
          _ = try await annaLive.client.publish(payload, to: channel, id: id)
          Issue.record("\(id) was accepted")
        } catch RealtimeClientError.rejected(let error) {
          #expect(error.code == code, "\(id): \(error)")
          #expect(error.id == id && !error.message.isEmpty)
        }
      }
      #expect(try await storedTimestamps() == fixes.map(\.timestamp))
      // Events are in commit order: once a later batch has arrived, nothing else can have come before it.
      let sentinel = try makeFixes(count: 1, start: 1_750_000_000_000)
      _ = try await publish(FixBatch(deviceId: "anna-phone", fixes: sentinel), id: "sentinel")
      try await bob.wait("the sentinel") { _ in try await bob.locations(on: annaChannel).count >= 2 }
      #expect(try await bob.locations(on: annaChannel).map { $0.fixes.map(Self.withoutDevice) } == [fixes, sentinel])
    }
  }

  /// A fix as sent, before the server put its device's handle on it.
  static func withoutDevice(_ fix: LocationFix) -> LocationFix {
    var fix = fix
    fix.deviceID = nil
    return fix
  }

  @Test func sharingExpiryEndsTheLiveViewBeforeTheNextFix() async throws {
    // The server's clock is the test's: the expiry passes when the test moves it, however slow the machine (a full
    // run once took longer than the 4 s of sharing to deliver the first fix).
    let clock = TestClock()
    try await TestServer.with(clock: clock) { server in
      let (annaSession, anna) = try await server.signUp("anna")
      let (bobSession, _) = try await server.signUp("bob")
      let friends = try #require(try await anna.send(API.groups).groups.first { $0.kind == .friends })
      _ = try await anna.send(API.addMember, parameters: GroupMemberRef(groupID: friends.id, userID: bobSession.userId))
      let annaChannel = try ChannelName.of(user: annaSession.userId)
      let bob = await LiveWatcher(server: server, token: bobSession.token)
      defer { Task { await bob.stop() } }
      #expect(try await bob.subscribe(annaChannel))
      let until = clock.now + 4000
      _ = try await anna.send(API.shareUntil, body: SharingUntil(until: until))
      _ = try await anna.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: try makeFixes(count: 1)))
      try await bob.wait("the fix before expiry") { _ in try await bob.locations(on: annaChannel).count == 1 }

      clock.advance(until - clock.now + 100)
      _ = try await anna.send(
        API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: try makeFixes(count: 1, start: 1_700_000_100_000)))
      try await bob.wait("revocation at expiry", until: isRevoked(annaChannel))
      #expect(try await bob.locations(on: annaChannel).count == 1)
    }
  }

  @Test func aWrongTokenIsClosedWith4001() async throws {
    try await TestServer.with { server in
      let watcher = await LiveWatcher(server: server, token: "not-a-token")
      defer { Task { await watcher.stop() } }
      let states = Task {
        for await state in watcher.client.states {
          if case .stopped(let code) = state, code != nil { return code }
        }
        return nil
      }
      let code = try await withTimeout(.seconds(30)) { await states.value }
      #expect(code == .unauthorized)
    }
  }
}
