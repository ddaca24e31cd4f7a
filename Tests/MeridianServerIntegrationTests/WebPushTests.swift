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

  let service: PythonService
  let hello: Hello
  let client: NetworkClient
  let transport: AsyncHTTPClientTransport

  /// Started as a ``PythonService``.
  static func start() async throws -> PushService {
    let service = try await PythonService.start(pushServiceScript, name: "push-service")
    do {
      return try PushService(service: service, hello: try service.hello(Hello.self))
    } catch {
      await service.stop()
      throw error
    }
  }

  private init(service: PythonService, hello: Hello) throws {
    self.service = service
    self.hello = hello
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
    await service.stop()
    try await transport.shutdown()
  }
}

/// Web Push on the webhook outbox, against a push service that decrypts with `http_ece` and checks the VAPID JWT
/// with `cryptography` (both independent of the server's swift-crypto code): an arrival reaches the browser's
/// decrypted payload, a 500 is retried after the back-off (the server's injected clock) and delivered once, and a
/// subscription answered 410 is deleted.
@Suite("Alert channels: Web Push")
struct WebPushTests {
  @Test(.timeLimit(.minutes(2)))
  func anArrivalIsPushedEncryptedAndSignedAndA410Unsubscribes() async throws {
    let service = try await PushService.start()
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
