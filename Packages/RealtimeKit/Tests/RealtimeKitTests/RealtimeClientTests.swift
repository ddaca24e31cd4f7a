import Foundation
import RealtimeKit
import RealtimeKitTesting
import Testing

@Suite struct RealtimeClientTests {
  let channel = ChannelName.test("user:7")

  @Test func reconnectsAndResumesWithoutGapsOrDuplicates() async throws {
    let hub = makeHub()
    let transport = InMemoryRealtimeTransport(hub: hub)
    let client = RealtimeClient(transport: transport, configuration: fastClientConfiguration())
    await client.start()
    await client.subscribe(channel)
    while await hub.presence(of: channel).isEmpty { try await Task.sleep(for: .milliseconds(5)) }
    let publisher = Task {
      for index in 1...60 {
        await hub.publish(.int(Int64(index)), to: channel)
        if index == 20 || index == 40 { transport.cutAll() }
        try? await Task.sleep(for: .milliseconds(2))
      }
    }
    let events = try await collect(client) { $0.last?.offset == 60 }
    await publisher.value
    #expect(events.map(\.offset) == Array(1...60))
    #expect(events.map(\.payload) == (1...60).map { JSONValue.int(Int64($0)) })
    await client.stop()
  }

  @Test func outboxIsResentWithTheSameIDsAndPublishedOnce() async throws {
    let hub = makeHub()
    let transport = InMemoryRealtimeTransport(hub: hub)
    transport.setRefusesConnections(true)
    let client = RealtimeClient(transport: transport, configuration: fastClientConfiguration())
    await client.start()
    let publishes = Task {
      try await withThrowingTaskGroup(of: PublishAck.self) { group in
        for index in 1...3 {
          group.addTask {
            try await client.publish(.int(Int64(index)), to: ChannelName.test("group:1"), id: "m\(index)")
          }
        }
        var acks: [PublishAck] = []
        for try await ack in group { acks.append(ack) }
        return acks
      }
    }
    try await Task.sleep(for: .milliseconds(100))
    #expect(await client.pendingPublishCount == 3)
    transport.setRefusesConnections(false)
    let acks = try await publishes.value
    #expect(Set(acks.map(\.offset)) == [1, 2, 3])
    #expect(await hub.position(of: .test("group:1")).offset == 3)
    await client.stop()
  }

  @Test func watchdogDetectsAHalfOpenConnection() async throws {
    var configuration = RealtimeHubConfiguration(epoch: "e1")
    configuration.heartbeatInterval = .milliseconds(100)
    configuration.heartbeatTimeout = .milliseconds(100)
    let hub = makeHub(configuration)
    let transport = InMemoryRealtimeTransport(hub: hub)
    let client = RealtimeClient(transport: transport, configuration: fastClientConfiguration())
    await client.start()
    _ = try await waitForState(client) {
      if case .connected = $0 { return true }
      return false
    }
    transport.setDropsServerMessages(true)
    let started = ContinuousClock.now
    let states = try await waitForState(client, timeout: .seconds(2)) {
      if case .disconnected(let code, _) = $0 { return code == .heartbeatTimeout }
      return false
    }
    #expect(started.duration(to: .now) < .milliseconds(600))
    #expect(!states.isEmpty)
    transport.setDropsServerMessages(false)
    _ = try await waitForState(client) {
      if case .connected = $0 { return true }
      return false
    }
    await client.stop()
  }

  @Test func badTokenStopsTheClientWith4001() async throws {
    let transport = InMemoryRealtimeTransport(hub: makeHub())
    let client = RealtimeClient(transport: transport, configuration: fastClientConfiguration(token: "bad"))
    await client.start()
    let states = try await waitForState(client) {
      if case .stopped = $0 { return true }
      return false
    }
    #expect(states.last == .stopped(code: .unauthorized))
  }

  @Test func cancellingAPublishWithdrawsItFromTheOutbox() async throws {
    let hub = makeHub()
    let transport = InMemoryRealtimeTransport(hub: hub)
    transport.setRefusesConnections(true)
    let client = RealtimeClient(transport: transport, configuration: fastClientConfiguration())
    await client.start()
    let channel = ChannelName.test("group:1")
    let withdrawn = Task { try await client.publish(1, to: channel, id: "withdrawn") }
    let kept = Task { try await client.publish(2, to: channel, id: "kept") }
    // A second caller waiting for the same id keeps it alive when the first one gives up.
    let shared = Task { try await client.publish(3, to: channel, id: "shared") }
    let sharedAgain = Task { try await client.publish(3, to: channel, id: "shared") }
    let deadline = ContinuousClock.now + .seconds(10)
    while await client.pendingPublishCount < 3, ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(5))
    }
    #expect(await client.pendingPublishCount == 3)
    withdrawn.cancel()
    shared.cancel()
    await #expect(throws: CancellationError.self) { try await withdrawn.value }
    await #expect(throws: CancellationError.self) { try await shared.value }
    #expect(await client.pendingPublishCount == 2)
    transport.setRefusesConnections(false)
    #expect(try await kept.value.offset >= 1)
    #expect(try await sharedAgain.value.id == "shared")
    #expect(await hub.position(of: channel).offset == 2)
    // A publish from an already cancelled task never enters the outbox.
    let late = Task {
      withUnsafeCurrentTask { $0?.cancel() }
      return try await client.publish(4, to: channel, id: "late")
    }
    await #expect(throws: CancellationError.self) { try await late.value }
    #expect(await client.pendingPublishCount == 0)
    await client.stop()
  }

  @Test func rejectedPublishThrows() async throws {
    let hub = makeHub { _, access, _ in access == .subscribe }
    let client = RealtimeClient(
      transport: InMemoryRealtimeTransport(hub: hub), configuration: fastClientConfiguration())
    await client.start()
    await #expect(throws: RealtimeClientError.self) {
      try await client.publish("x", to: ChannelName.test("group:1"))
    }
    await client.stop()
  }
}
