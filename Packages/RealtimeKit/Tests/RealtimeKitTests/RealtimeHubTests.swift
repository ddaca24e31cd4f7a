import Foundation
import RealtimeKit
import RealtimeKitTesting
import Testing

@Suite struct RealtimeHubTests {
  let channel = ChannelName.test("group:7")

  @Test func helloWelcomesWithLimitsAndBadTokenCloses4001() async throws {
    let transport = InMemoryRealtimeTransport(hub: makeHub())
    let peer = try Peer(transport)
    guard case .welcome(let welcome)? = await peer.hello() else {
      Issue.record("no welcome")
      return
    }
    #expect(welcome.limits == RealtimeLimits())
    #expect(welcome.heartbeatMilliseconds == 15000)

    let intruder = try Peer(transport)
    guard case .error(let error)? = await intruder.hello("bad-token") else {
      Issue.record("no error")
      return
    }
    #expect(error.code == .unauthorized && error.fatal)
    #expect(await intruder.closed() == .unauthorized)
  }

  @Test func aPrincipalPastItsConnectionLimitIsClosedWith4006() async throws {
    let transport = InMemoryRealtimeTransport(
      hub: makeHub(RealtimeHubConfiguration(epoch: "e1", maxConnectionsPerPrincipal: 2)))
    let (first, second, third, other) = (
      try Peer(transport), try Peer(transport), try Peer(transport), try Peer(transport)
    )
    for peer in [first, second] {
      guard case .welcome? = await peer.hello("alice") else {
        Issue.record("no welcome")
        return
      }
    }
    guard case .error(let error)? = await third.hello("alice") else {
      Issue.record("a third connection was welcomed")
      return
    }
    #expect(error.code == .tooManyConnections && error.fatal)
    #expect(await third.closed() == .tooManyConnections)
    // Other principals are not affected, and a closed connection frees its place.
    guard case .welcome? = await other.hello("bob") else {
      Issue.record("another principal was refused")
      return
    }
    first.socket.close(.normal)
    let fourth = try Peer(transport)
    var welcomed = false
    for _ in 0..<50 where !welcomed {
      if case .welcome? = await fourth.hello("alice") {
        welcomed = true
      } else {
        try await Task.sleep(for: .milliseconds(20))
      }
    }
    #expect(welcomed)
  }

  @Test func disconnectingByAttributeClosesOnlyThoseSessions() async throws {
    // Tokens `user/session`: the principal is the user, the session an attribute (as an app keeps a token's id).
    let hub = RealtimeHub(
      configuration: RealtimeHubConfiguration(epoch: "e1"),
      authenticate: { token in
        RealtimePrincipal(id: String(token.prefix { $0 != "/" }), attributes: ["session": token])
      },
      authorize: { _, _, _ in true })
    let transport = InMemoryRealtimeTransport(hub: hub)
    let (first, second, other) = (try Peer(transport), try Peer(transport), try Peer(transport))
    await first.hello("alice/1")
    await second.hello("alice/2")
    await other.hello("bob/1")

    #expect(await hub.disconnect(matching: ["session": "alice/1"], code: .unauthorized, reason: "signed out") == 1)
    #expect(await first.closed() == .unauthorized)
    for peer in [second, other] {
      peer.send(.ping)
      guard case .pong? = await peer.next() else {
        Issue.record("a session that was not signed out stopped answering")
        return
      }
    }
    #expect(await hub.disconnect(matching: ["session": "alice/1"], code: .unauthorized, reason: "again") == 0)
    #expect(await hub.disconnect(matching: ["session": "carol/1"], code: .unauthorized, reason: "nobody") == 0)
  }

  @Test func aDisconnectWhileSigningInEndsThatSession() async throws {
    let (started, release) = (Gate(isOpen: false), Gate(isOpen: false))
    let hub = RealtimeHub(
      configuration: RealtimeHubConfiguration(epoch: "e1"),
      authenticate: { token in
        if token.hasSuffix("/slow") {
          started.open()
          await release.pass()
        }
        return RealtimePrincipal(id: String(token.prefix { $0 != "/" }), attributes: ["session": token])
      },
      authorize: { _, _, _ in true })
    let transport = InMemoryRealtimeTransport(hub: hub)
    let (slow, other) = (try Peer(transport), try Peer(transport))
    await other.hello("alice/fast")
    slow.send(.hello(Hello(token: "alice/slow", clientName: "test", clientVersion: "1")))
    await started.pass()
    // The token is being checked: there is nothing to close yet, but the session must not start afterwards.
    #expect(await hub.disconnect(matching: ["session": "alice/slow"], code: .unauthorized, reason: "signed out") == 0)
    release.open()
    guard case .error(let error)? = await slow.next() else {
      Issue.record("no error for a session ended while signing in")
      return
    }
    #expect(error.code == .unauthorized && error.fatal)
    #expect(await slow.closed() == .unauthorized)
    other.send(.ping)
    guard case .pong? = await other.next() else {
      Issue.record("the session that was not signed out stopped answering")
      return
    }
  }

  @Test func anythingBeforeHelloIsAProtocolViolation() async throws {
    let transport = InMemoryRealtimeTransport(hub: makeHub())
    let peer = try Peer(transport)
    peer.send(.subscribe(SubscribeRequest(channel: channel)))
    guard case .error(let error)? = await peer.next() else {
      Issue.record("no error")
      return
    }
    #expect(error.code == .protocolViolation)
    #expect(await peer.closed() == .protocolViolation)
  }

  @Test func badFramesAfterHelloAreErrorsAndTheConnectionLives() async throws {
    let transport = InMemoryRealtimeTransport(hub: makeHub())
    let peer = try Peer(transport)
    await peer.hello()
    for text in ["nope", "[]", #"{"type":"teleport"}"#, #"{"type":"subscribe","channel":"x"}"#, "\u{0}\u{1}"] {
      peer.sendText(text)
      guard case .error(let error)? = await peer.next() else {
        Issue.record("no error for \(text)")
        return
      }
      #expect(!error.fatal)
    }
    peer.send(.ping)
    guard case .pong? = await peer.next() else {
      Issue.record("no pong")
      return
    }
    peer.socket.send(.binary(byteCount: 3))
    _ = await peer.next()
    #expect(await peer.closed() == .protocolViolation)
  }

  @Test func oversizedMessageCloses1009() async throws {
    var configuration = RealtimeHubConfiguration(epoch: "e1")
    configuration.limits.maxFrameBytes = 256
    let peer = try Peer(InMemoryRealtimeTransport(hub: makeHub(configuration)))
    await peer.hello()
    peer.send(.publish(PublishRequest(id: "1", channel: channel, payload: .string(String(repeating: "x", count: 300)))))
    #expect(await peer.closed() == .messageTooBig)
  }

  @Test func aReceiveHookTakesPublishesOverAndItsErrorsReachTheClient() async throws {
    // The app stores what it accepts and publishes its own event; an odd number is refused, a 13 fails.
    let stored = LockedValues<Int64>()
    let hubBox = HubBox()
    let hub = makeHub(receive: { principal, request in
      guard case .int(let value) = request.payload else {
        throw RealtimeError(code: .invalidPayload, message: "send a number")
      }
      if value == 13 { throw CancellationError() }
      guard value % 2 == 0 else { throw RealtimeError(code: .invalidPayload, message: "\(value) is odd") }
      stored.append(value)
      await hubBox.hub?.publish(["by": .string(principal.id), "stored": .int(value)], to: request.channel)
    })
    hubBox.hub = hub
    let transport = InMemoryRealtimeTransport(hub: hub)
    let (publisher, subscriber) = try await publisherAndSubscriber(transport, on: channel)

    publisher.send(.publish(PublishRequest(id: "a", channel: channel, payload: 2)))
    #expect(await publisher.next() == .ack(PublishAck(id: "a", channel: channel, offset: 1)))
    // The subscriber gets the app's event, not the raw payload.
    guard case .event(let event)? = await subscriber.next() else {
      Issue.record("no event")
      return
    }
    #expect(event.payload == ["by": "alice", "stored": 2])
    // A re-sent id is acknowledged again without a second call.
    publisher.send(.publish(PublishRequest(id: "a", channel: channel, payload: 2)))
    #expect(await publisher.next() == .ack(PublishAck(id: "a", channel: channel, offset: 1)))
    #expect(stored.values == [2])

    publisher.send(.publish(PublishRequest(id: "b", channel: channel, payload: 3)))
    guard case .error(let refused)? = await publisher.next() else {
      Issue.record("no error")
      return
    }
    #expect(refused == RealtimeError(code: .invalidPayload, message: "3 is odd", id: "b", channel: channel.rawValue))
    publisher.send(.publish(PublishRequest(id: "c", channel: channel, payload: 13)))
    guard case .error(let failed)? = await publisher.next() else {
      Issue.record("no error")
      return
    }
    #expect(failed.code == .internal && failed.id == "c" && failed.code.isRetryable)
    // Neither became an event, and the connection still works.
    publisher.send(.publish(PublishRequest(id: "d", channel: channel, payload: 4)))
    #expect(await publisher.next() == .ack(PublishAck(id: "d", channel: channel, offset: 2)))
    guard case .event(let second)? = await subscriber.next() else {
      Issue.record("no second event")
      return
    }
    #expect(second.offset == 2 && second.payload == ["by": "alice", "stored": 4])
    #expect(stored.values == [2, 4])
  }

  @Test func anIdReSentWhileTheHookRunsIsHandledOnce() async throws {
    // The hook is slow (a commit); meanwhile the client reconnects and re-sends the same id.
    let calls = LockedValues<Int64>()
    let gate = Gate(isOpen: false)
    let hub = makeHub(receive: { _, _ in
      calls.append(1)
      await gate.pass()
    })
    let transport = InMemoryRealtimeTransport(hub: hub)
    let first = try Peer(transport)
    let second = try Peer(transport)
    await first.hello()
    await second.hello()
    first.send(.publish(PublishRequest(id: "slow", channel: channel, payload: 1)))
    try await Task.sleep(for: .milliseconds(50))
    second.send(.publish(PublishRequest(id: "slow", channel: channel, payload: 1)))
    try await Task.sleep(for: .milliseconds(100))
    gate.open()
    #expect(await first.next() == .ack(PublishAck(id: "slow", channel: channel, offset: 0)))
    #expect(await second.next() == .ack(PublishAck(id: "slow", channel: channel, offset: 0)))
    #expect(calls.values == [1])
  }

  @Test func onePayloadToSeveralChannels() async throws {
    let hub = makeHub()
    let transport = InMemoryRealtimeTransport(hub: hub)
    let other = ChannelName.test("user:9")
    await hub.publish(0, to: other)
    let subscriber = try Peer(transport)
    await subscriber.hello("bob")
    for name in [channel, other] {
      subscriber.send(.subscribe(SubscribeRequest(channel: name)))
      _ = await subscriber.next()
    }
    #expect(await hub.publish(["fix": 1], to: [channel, other]) == [1, 2])
    var events: [RealtimeEvent] = []
    for _ in 0..<2 {
      guard case .event(let event)? = await subscriber.next() else { break }
      events.append(event)
    }
    #expect(events.map(\.channel) == [channel, other] && events.map(\.offset) == [1, 2])
    #expect(events.allSatisfy { $0.payload == ["fix": 1] } && events[0].time == events[1].time)
  }

  @Test func publishIsFannedOutInOrderAndDeduplicated() async throws {
    let hub = makeHub()
    let transport = InMemoryRealtimeTransport(hub: hub)
    let (publisher, subscriber) = try await publisherAndSubscriber(transport, on: channel)
    for index in 1...5 {
      publisher.send(.publish(PublishRequest(id: "m\(index)", channel: channel, payload: .int(Int64(index)))))
      #expect(await publisher.next() == .ack(PublishAck(id: "m\(index)", channel: channel, offset: UInt64(index))))
    }
    publisher.send(.publish(PublishRequest(id: "m3", channel: channel, payload: 3)))
    #expect(await publisher.next() == .ack(PublishAck(id: "m3", channel: channel, offset: 3)))
    // A new connection of the same principal re-sending the id is deduplicated too.
    let again = try Peer(transport)
    await again.hello()
    again.send(.publish(PublishRequest(id: "m5", channel: channel, payload: 5)))
    #expect(await again.next() == .ack(PublishAck(id: "m5", channel: channel, offset: 5)))
    var offsets: [UInt64] = []
    for _ in 1...5 {
      guard case .event(let event)? = await subscriber.next() else { break }
      offsets.append(event.offset)
      #expect(event.payload == .int(Int64(event.offset)))
    }
    #expect(offsets == [1, 2, 3, 4, 5])
    #expect(await hub.position(of: channel).offset == 5)
  }

  @Test func resumeReplaysExactlyTheMissedEventsOrReloads() async throws {
    var configuration = RealtimeHubConfiguration(epoch: "e1")
    configuration.historyCapacity = 4
    let hub = makeHub(configuration)
    for index in 1...10 { await hub.publish(.int(Int64(index)), to: channel) }
    let peer = try Peer(InMemoryRealtimeTransport(hub: hub))
    await peer.hello()
    peer.send(.subscribe(SubscribeRequest(channel: channel, resume: ResumePosition(offset: 7, epoch: "e1"))))
    #expect(await peer.next() == .subscribed(ChannelPosition(channel: channel, offset: 10, epoch: "e1")))
    var replayed: [UInt64] = []
    for _ in 8...10 {
      if case .event(let event)? = await peer.next() { replayed.append(event.offset) }
    }
    #expect(replayed == [8, 9, 10])
    // Too old: history holds 7...10 only.
    let other = ChannelName.test("user:1")
    for index in 1...10 { await hub.publish(.int(Int64(index)), to: other) }
    peer.send(.subscribe(SubscribeRequest(channel: other, resume: ResumePosition(offset: 5, epoch: "e1"))))
    _ = await peer.next()
    #expect(await peer.next() == .reload(ChannelPosition(channel: other, offset: 10, epoch: "e1")))
    // Other epoch: history of that epoch is gone.
    let third = ChannelName.test("user:2")
    peer.send(.subscribe(SubscribeRequest(channel: third, resume: ResumePosition(offset: 3, epoch: "old"))))
    _ = await peer.next()
    #expect(await peer.next() == .reload(ChannelPosition(channel: third, offset: 0, epoch: "e1")))
  }

  /// Two servers fan out one shared log (a database's): an offset means the same event on both, so a client that
  /// saw events on one resumes on the other with exactly what it missed — or, from before the other's floor (it
  /// started later), with `reload`, never a silent gap.
  @Test func hubsSharingALogResumeOnEachOtherWithTheLogsOffsets() async throws {
    let (user, group) = (ChannelName.test("user:1"), ChannelName.test("group:2"))
    let nodeA = makeHub(RealtimeHubConfiguration(epoch: "shared"))
    let nodeB = makeHub(RealtimeHubConfiguration(epoch: "shared"))
    await nodeB.setHistoryFloor(3)  // B started reading the log after entry 3
    let log: [(offset: UInt64, payload: JSONValue, channels: [ChannelName])] = [
      (2, ["n": 2], [user]), (3, ["n": 3], [group]), (5, ["n": 5], [user, group]), (8, ["n": 8], [user]),
      (9, ["n": 9], [group]),
    ]
    let onA = try Peer(InMemoryRealtimeTransport(hub: nodeA))
    await onA.hello()
    onA.send(.subscribe(SubscribeRequest(channel: user)))
    #expect(await onA.next() == .subscribed(ChannelPosition(channel: user, offset: 0, epoch: "shared")))
    // A sees the log up to 5, B sees entries after its floor; both then see the rest. A batch read twice (a
    // catch-up after a reconnect) delivers nothing twice.
    #expect(
      await nodeA.publish(log[0..<3].map { ($0.payload, $0.channels) }, offsets: [2, 3, 5]) == [[2], [3], [5, 5]])
    for node in [nodeA, nodeB] { await node.publish(log[2...].map { ($0.payload, $0.channels) }, offsets: [5, 8, 9]) }
    var seen: [UInt64] = []
    for _ in 1...3 {
      if case .event(let event)? = await onA.next() { seen.append(event.offset) }
    }
    #expect(seen == [2, 5, 8])
    #expect(await nodeB.position(of: user) == ChannelPosition(channel: user, offset: 8, epoch: "shared"))
    // Resumed on B after 5: exactly 8. After 2 (before B's floor): reload.
    let onB = try Peer(InMemoryRealtimeTransport(hub: nodeB))
    await onB.hello()
    onB.send(.subscribe(SubscribeRequest(channel: user, resume: ResumePosition(offset: 5, epoch: "shared"))))
    #expect(await onB.next() == .subscribed(ChannelPosition(channel: user, offset: 8, epoch: "shared")))
    guard case .event(let missed)? = await onB.next() else {
      Issue.record("no replay")
      return
    }
    #expect(missed.offset == 8 && missed.payload == ["n": 8])
    let late = try Peer(InMemoryRealtimeTransport(hub: nodeB))
    await late.hello()
    late.send(.subscribe(SubscribeRequest(channel: user, resume: ResumePosition(offset: 2, epoch: "shared"))))
    _ = await late.next()
    #expect(await late.next() == .reload(ChannelPosition(channel: user, offset: 8, epoch: "shared")))
    // A channel with no events since the floor is up to date at the floor: nothing to replay, nothing reloaded.
    let quiet = ChannelName.test("user:3")
    late.send(.subscribe(SubscribeRequest(channel: quiet, resume: ResumePosition(offset: 3, epoch: "shared"))))
    #expect(await late.next() == .subscribed(ChannelPosition(channel: quiet, offset: 3, epoch: "shared")))
    await nodeB.publish([(["n": 10], [quiet])], offsets: [10])
    guard case .event(let next)? = await late.next() else {
      Issue.record("no live event")
      return
    }
    #expect(next.offset == 10 && next.channel == quiet)
  }

  @Test func batchPublishNumbersEachChannelAndResumeReplaysTheSameEvents() async throws {
    let (watched, quiet) = (ChannelName.test("user:1"), ChannelName.test("group:2"))
    let (hub, peer) = try await hubWithAlice(subscribedTo: watched)
    #expect(await hub.presence(of: [watched, quiet]).map { $0.map(\.id) } == [["alice"], []])
    #expect(await hub.publish([]) == [])
    let offsets = await hub.publish([
      (payload: ["n": 1], channels: [watched, quiet]), (payload: ["n": 2], channels: [quiet]),
      (payload: ["n": 3], channels: [watched]),
    ])
    #expect(offsets == [[1, 1], [2], [2]])
    var live: [RealtimeEvent] = []
    for _ in 1...2 {
      if case .event(let event)? = await peer.next() { live.append(event) }
    }
    #expect(live.map(\.offset) == [1, 2] && live.map(\.payload) == [["n": 1], ["n": 3]])
    // The quiet channel had no subscriber: its events are kept and spelled out when a resume asks for them.
    let late = try Peer(InMemoryRealtimeTransport(hub: hub))
    await late.hello()
    late.send(.subscribe(SubscribeRequest(channel: quiet, resume: ResumePosition(offset: 0, epoch: "e1"))))
    #expect(await late.next() == .subscribed(ChannelPosition(channel: quiet, offset: 2, epoch: "e1")))
    var replayed: [RealtimeEvent] = []
    for _ in 1...2 {
      if case .event(let event)? = await late.next() { replayed.append(event) }
    }
    #expect(replayed.map(\.offset) == [1, 2] && replayed.map(\.payload) == [["n": 1], ["n": 2]])
    #expect(replayed.map(\.channel) == [quiet, quiet] && replayed.first?.time == live.first?.time)
  }

  @Test func aCheckedPublishPublishesNothingWhenASubscriberFailsTheCheck() async throws {
    let (watched, quiet) = (ChannelName.test("user:1"), ChannelName.test("group:2"))
    let (hub, peer) = try await hubWithAlice(subscribedTo: watched)
    let events: [(payload: JSONValue, channels: [ChannelName])] = [
      (payload: ["n": 1], channels: [quiet]), (payload: ["n": 2], channels: [watched, quiet]),
    ]
    let checked = LockedValues<String>()
    let refused = await hub.publish(events) { channel, principal in
      checked.append("\(channel.rawValue) \(principal.id)")
      return principal.id != "alice"
    }
    #expect(refused == nil && checked.values == ["user:1 alice"])
    let positions = [await hub.position(of: watched), await hub.position(of: quiet)]
    #expect(positions.map(\.offset) == [0, 0])
    #expect(await hub.publish(events) { _, _ in true } == [[1], [1, 2]])
    if case .event(let event)? = await peer.next() {
      #expect(event.offset == 1 && event.payload == ["n": 2])
    } else {
      Issue.record("no event")
    }
  }

  /// A hub with alice signed in and subscribed to `channel`.
  private func hubWithAlice(subscribedTo channel: ChannelName) async throws -> (RealtimeHub, Peer) {
    let hub = makeHub()
    let peer = try Peer(InMemoryRealtimeTransport(hub: hub))
    await peer.hello()
    peer.send(.subscribe(SubscribeRequest(channel: channel)))
    _ = await peer.next()
    return (hub, peer)
  }

  @Test func authorizationRateAndSubscriptionLimits() async throws {
    var configuration = RealtimeHubConfiguration(epoch: "e1")
    configuration.limits.maxSubscriptions = 2
    configuration.limits.publishBurst = 3
    configuration.limits.publishPerSecond = 1
    let hub = makeHub(configuration) { principal, access, channel in
      !(channel.namespace == "venue" && access == .publish) && channel.id != "secret"
    }
    let peer = try Peer(InMemoryRealtimeTransport(hub: hub))
    await peer.hello()
    peer.send(.subscribe(SubscribeRequest(channel: .test("user:secret"))))
    guard case .error(let forbidden)? = await peer.next() else {
      Issue.record("no error")
      return
    }
    #expect(forbidden.code == .forbidden && forbidden.channel == "user:secret")
    peer.send(.publish(PublishRequest(id: "v", channel: .test("venue:1"), payload: 1)))
    guard case .error(let refused)? = await peer.next() else {
      Issue.record("no error")
      return
    }
    #expect(refused.code == .forbidden && refused.id == "v")
    peer.send(.subscribe(SubscribeRequest(channel: .test("other:1"))))
    guard case .error(let namespace)? = await peer.next() else {
      Issue.record("no error")
      return
    }
    #expect(namespace.code == .invalidChannel)

    peer.send(.subscribe(SubscribeRequest(channel: .test("user:1"))))
    peer.send(.subscribe(SubscribeRequest(channel: .test("user:2"))))
    peer.send(.subscribe(SubscribeRequest(channel: .test("user:3"))))
    _ = await peer.next()
    _ = await peer.next()
    guard case .error(let tooMany)? = await peer.next() else {
      Issue.record("no error")
      return
    }
    #expect(tooMany.code == .tooManySubscriptions)

    var codes: [String] = []
    for index in 1...5 {
      peer.send(.publish(PublishRequest(id: "r\(index)", channel: .test("group:1"), payload: 1)))
      switch await peer.next() {
      case .ack?: codes.append("ack")
      case .error(let error)?: codes.append(error.code.rawValue)
      default: codes.append("?")
      }
    }
    #expect(codes == ["ack", "ack", "ack", "rate_limited", "rate_limited"])
  }

  @Test func revokeRemovesLiveAccessAndPresenceFollows() async throws {
    let hub = makeHub()
    let transport = InMemoryRealtimeTransport(hub: hub)
    let bob = try Peer(transport)
    let carol = try Peer(transport)
    await bob.hello("bob")
    await carol.hello("carol")
    let alice = ChannelName.test("user:alice")
    bob.send(.subscribe(SubscribeRequest(channel: alice)))
    carol.send(.subscribe(SubscribeRequest(channel: alice)))
    _ = await bob.next()
    _ = await carol.next()
    #expect(await hub.presence(of: alice).map(\.id) == ["bob", "carol"])
    await hub.revoke(alice, from: "bob")
    #expect(await bob.next() == .unsubscribed(alice, reason: .revoked))
    await hub.publish("fix", to: alice)
    guard case .event(let event)? = await carol.next() else {
      Issue.record("carol lost access")
      return
    }
    #expect(event.payload == "fix")
    bob.send(.ping)
    guard case .pong? = await bob.next() else {
      Issue.record("bob received an event after revoke")
      return
    }
    #expect(await hub.presence(of: alice).map(\.id) == ["carol"])
  }

  @Test func subscriberCountsCountConnectionsPerChannelOfANamespace() async throws {
    let hub = makeHub()
    let transport = InMemoryRealtimeTransport(hub: hub)
    let first = try Peer(transport)
    let second = try Peer(transport)
    let third = try Peer(transport)
    // Two connections of one principal count twice: the count is of open pages, not of people.
    await first.hello("bob")
    await second.hello("bob")
    await third.hello("carol")
    for (peer, channel) in [(first, "user:alice"), (second, "user:alice"), (third, "user:dave"), (third, "group:1")] {
      peer.send(.subscribe(SubscribeRequest(channel: .test(channel))))
      _ = await peer.next()
    }
    #expect(await hub.subscriberCounts(namespace: "user") == ["alice": 2, "dave": 1])
    #expect(await hub.subscriberCounts(namespace: "group") == ["1": 1])
    await hub.revoke(.test("user:alice"), from: "bob")
    _ = await first.next()
    _ = await second.next()
    #expect(await hub.subscriberCounts(namespace: "user") == ["dave": 1])
  }

  @Test func shutdownClosesWith4004AndHelloTimeoutWith4002() async throws {
    var configuration = RealtimeHubConfiguration(epoch: "e1")
    configuration.helloTimeout = .milliseconds(200)
    configuration.heartbeatInterval = .milliseconds(200)
    configuration.heartbeatTimeout = .milliseconds(200)
    let hub = makeHub(configuration)
    let runner = Task { await hub.run() }
    let transport = InMemoryRealtimeTransport(hub: hub)
    let silent = try Peer(transport)
    #expect(await silent.closed() == .protocolViolation)
    let quiet = try Peer(transport)
    await quiet.hello()
    #expect(await quiet.closed() == .heartbeatTimeout)
    let active = try Peer(transport)
    await active.hello()
    runner.cancel()
    await runner.value
    #expect(await active.closed() == .serverShuttingDown)
    #expect(await hub.connectionCount == 0)
  }
}
