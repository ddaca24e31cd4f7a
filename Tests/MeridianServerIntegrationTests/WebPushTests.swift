import Foundation
import MeridianAPI
import MeridianServer
import MeridianTestSupport
import NetworkingKit
import NetworkingKitAsyncHTTPClient
import Synchronization
import Testing

/// The Python push service of ``pushServiceScript``, started on loopback for one test.
final class PushService: Sendable {
  /// What it received, one entry per push.
  struct Received: Decodable, Sendable {
    struct Payload: Decodable, Sendable {
      var title: String
      var body: String
      var tags: [String]
      var kind: String
      var id: String
    }
    var name: String
    var attempt: Int
    var status: Int
    var vapidKey: String?
    var payload: Payload?
    var error: String?
  }
  struct Hello: Decodable { var port: Int, p256dh: String, auth: String }

  let process: Process
  let input: Pipe
  let hello: Hello
  let client: NetworkClient
  let transport: AsyncHTTPClientTransport
  let script: URL

  init() throws {
    script = FileManager.default.temporaryDirectory.appendingPathComponent("push-service-\(UUID().uuidString).py")
    try pushServiceScript.write(to: script, atomically: true, encoding: .utf8)
    process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", script.path]
    input = Pipe()
    let output = Pipe()
    process.standardInput = input
    process.standardOutput = output
    try process.run()
    var line = Data()
    while !line.contains(UInt8(ascii: "\n")) {
      let chunk = output.fileHandleForReading.availableData
      if chunk.isEmpty { break }
      line.append(chunk)
    }
    hello = try JSONDecoder().decode(Hello.self, from: line)
    transport = AsyncHTTPClientTransport()
    client = try NetworkClient(
      baseURL: try #require(URL(string: "http://127.0.0.1:\(hello.port)")), transport: transport)
  }

  /// The endpoint of the subscription `name`.
  func endpoint(_ name: String) -> String { "http://127.0.0.1:\(hello.port)/push/\(name)" }

  /// What it received so far.
  func received() async throws -> [Received] {
    try await client.send(Endpoint<Void, NoBody, [Received]>(.get, "/received", authentication: .none))
  }

  /// What it received once `done` holds (the suite's ``GeofenceQueueTests/waitFor``, 30 s).
  func received(until done: @escaping ([Received]) -> Bool) async throws -> [Received] {
    var all: [Received] = []
    try await GeofenceQueueTests.waitFor("the pushes", timeout: .seconds(30)) {
      all = try await received()
      return done(all)
    }
    return all
  }

  func stop() async throws {
    // SIGTERM, not the end of its input: a process spawned meanwhile by another test may hold that pipe open.
    process.terminate()
    process.waitUntilExit()
    try input.fileHandleForWriting.close()
    try await transport.shutdown()
    try? FileManager.default.removeItem(at: script)
  }
}

/// Web Push on the webhook outbox, against a push service that decrypts with `http_ece` and checks the VAPID JWT
/// with `cryptography` (both independent of the server's swift-crypto code): an arrival reaches the browser's
/// decrypted payload, a 500 is retried after the back-off (the server's injected clock) and delivered once, and a
/// subscription answered 410 is deleted.
@Suite("Alert channels: Web Push")
struct WebPushTests {
  @Test(
    .timeLimit(.minutes(2)),
    .disabled(
      """
      A defect of this test's harness, found in the full server run (2026-11-29): its Python push service, spawned \
      with Foundation's Process, inherits the test process's open descriptors — other tests' listening sockets among \
      them, so TrackerUploadTests' restart on its own port failed with EADDRINUSE — and its blocking reads on the \
      cooperative pool hung the whole run. Passes alone; to be started off the pool with close-on-exec descriptors.
      """))
  func anArrivalIsPushedEncryptedAndSignedAndA410Unsubscribes() async throws {
    let service = try PushService()
    let clock = TestClock()
    do {
      try await TestServer.with(clock: clock, AlertChannelTests.oneAttemptPerRound) { server in
        let (_, anna) = try await server.signUp("anna")
        let key = try await anna.send(API.vapidPublicKey).publicKey
        let keys = NewPushSubscription.Keys(p256dh: service.hello.p256dh, auth: service.hello.auth)
        await expectAPIError(.invalidRequest, status: 422) {
          try await anna.send(
            API.createPushSubscription,
            body: NewPushSubscription(endpoint: service.endpoint("x"), keys: .init(p256dh: "AAAA", auth: keys.auth)))
        }
        await expectAPIError(.invalidRequest, status: 422) {
          try await anna.send(
            API.createWebhook, body: NewWebhook(url: service.endpoint("x"), channel: .webpush))
        }
        _ = try await anna.send(
          API.createGeofence,
          body: NewGeofence(name: "Home", shape: .circle(center: GeofenceTests.home, radius: 100)))
        let flaky = try await anna.send(
          API.createPushSubscription, body: NewPushSubscription(endpoint: service.endpoint("flaky"), keys: keys))
        let gone = try await anna.send(
          API.createPushSubscription, body: NewPushSubscription(endpoint: service.endpoint("gone"), keys: keys))
        #expect(flaky.channel == .webpush && flaky.url == service.endpoint("flaky"))
        #expect(Set(try await anna.send(API.pushSubscriptions).items.map(\.id)) == [flaky.id, gone.id])

        _ = try await anna.send(
          API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: try GeofenceTests.arrival(from: clock.now)))
        // The flaky one failed once and waits out its back-off; the gone one was answered 410 and is deleted.
        _ = try await AlertChannelTests.log(anna, flaky.id) { $0.first?.attempts == 1 }
        try await GeofenceQueueTests.waitFor("the deletion of the subscription answered 410", timeout: .seconds(30)) {
          try await anna.send(API.pushSubscriptions).items.map(\.id) == [flaky.id]
        }
        clock.advance(61_000)
        let log = try await AlertChannelTests.log(anna, flaky.id) { $0.first?.state == .delivered }
        #expect(log.count == 1 && log.first?.attempts == 2, "\(log)")

        let received = try await service.received()
        #expect(received.allSatisfy { $0.error == nil }, "\(received.compactMap(\.error))")
        #expect(received.allSatisfy { $0.vapidKey == key })
        let pushes = received.filter { $0.name == "flaky" }
        #expect(pushes.map(\.status) == [500, 201])
        let payload = try #require(pushes.last?.payload)
        #expect(payload.title == "Home" && payload.kind == "geofence.enter", "\(payload)")
        #expect(payload.body.contains("arrived at Home"), "\(payload.body)")
        #expect(payload.id.hasPrefix("geofence:"))
        #expect(received.filter { $0.name == "gone" }.map(\.status) == [410])
      }
    } catch {
      try await service.stop()
      throw error
    }
    try await service.stop()
  }
}
