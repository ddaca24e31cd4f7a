import Foundation
import HTTPTypes
import Hummingbird
import Logging
import MeridianAPI
import MeridianServer
import MeridianTestSupport
import NetworkingKit
import Synchronization
import Testing

/// An ntfy-style topic on 127.0.0.1: records every publish (its headers and text) and answers each the next status
/// of `statuses` (the last one repeats) — e.g. `[500, 200]`: the first publish fails, the rest succeed.
final class NtfyReceiver: Sendable {
  struct Publish: Sendable {
    var title: String?
    var tags: String?
    var priority: String?
    var authorization: String?
    var text: String
    var status: Int
  }

  let publishes = Mutex<[Publish]>([])
  let statuses: Mutex<[Int]>
  private let running = Mutex<LocalApp?>(nil)
  var url: String { "http://127.0.0.1:\(running.withLock { $0?.port ?? 0 })/alerts-anna" }
  /// The publishes answered 2xx.
  var accepted: [Publish] { publishes.withLock { $0.filter { (200..<300).contains($0.status) } } }

  init(statuses: [Int]) { self.statuses = Mutex(statuses) }

  static func start(statuses: [Int]) async throws -> NtfyReceiver {
    let receiver = NtfyReceiver(statuses: statuses)
    let router = Router()
    router.post("/{topic}") { request, _ -> Response in
      let body = Data(try await request.body.collect(upTo: 1 << 16).readableBytesView)
      let status = receiver.statuses.withLock { statuses in statuses.count > 1 ? statuses.removeFirst() : statuses[0] }
      let headers = request.headers
      receiver.publishes.withLock {
        $0.append(
          Publish(
            title: headers[HTTPField.Name("Title")!], tags: headers[HTTPField.Name("Tags")!],
            priority: headers[HTTPField.Name("Priority")!], authorization: headers[.authorization],
            text: String(decoding: body, as: UTF8.self), status: status))
      }
      return Response(status: HTTPResponse.Status(code: status))
    }
    var logger = Logger(label: "ntfy-receiver")
    logger.logLevel = .warning
    let app = try await LocalApp.start(router: router, logger: logger)
    receiver.running.withLock { $0 = app }
    return receiver
  }

  func stop() async { await running.withLock { $0 }?.stop() }
}

/// Alert channels on the webhook outbox: an ntfy topic gets each event its owner may see as a short text, through a
/// failure (retried after the outbox's back-off on the server's injected clock), at most the account's quota an hour
/// (the rest logged as skipped), and across a restart with a delivery pending.
@Suite("Alert channels: ntfy")
struct AlertChannelTests {
  /// One attempt per round (the round's back-off, not NetworkingKit's in-call retries, brings the second), fast polls;
  /// an attempt may take 10 s (a loopback request once took more than `fastDelivery`'s 1 s in the busy server stage,
  /// and failed as a timeout instead of the receiver's answer). The lease (deadline + timeout + 30 s: 55 s) stays
  /// shorter than a round on the test clock (61 s): advance it only once no attempt is in flight.
  static func oneAttemptPerRound(_ configuration: inout ServerConfiguration) {
    WebhookTests.fastDelivery(&configuration)
    configuration.webhooks.attemptTimeout = .seconds(10)
    configuration.webhooks.attemptPolicy = RetryPolicy(maxAttempts: 1, deadline: .seconds(15))
    configuration.webhooks.roundPolicy = RetryPolicy(baseDelay: .seconds(60), maxDelay: .seconds(60))
  }

  /// `client`'s delivery log of `id` (the API's) once `done` holds (the suite's ``GeofenceQueueTests/waitFor``, 30 s).
  static func log(
    _ client: NetworkClient, _ id: String, until done: @escaping ([WebhookDelivery]) -> Bool
  ) async throws -> [WebhookDelivery] {
    var items: [WebhookDelivery] = []
    try await GeofenceQueueTests.waitFor("the delivery log of \(id)", timeout: .seconds(30)) {
      items = try await client.send(API.webhookDeliveries, parameters: WebhookRef(id: id)).items
      return done(items)
    }
    return items
  }

  @Test(.timeLimit(.minutes(2))) func anArrivalReachesTheTopicOnceAfterAFailureAndTheBackOff() async throws {
    let receiver = try await NtfyReceiver.start(statuses: [500, 200])
    let clock = TestClock()
    try await TestServer.with(clock: clock, Self.oneAttemptPerRound) { server in
      let (_, anna) = try await server.signUp("anna")
      await expectAPIError(.invalidRequest, status: 422) {
        try await anna.send(API.createWebhook, body: NewWebhook(url: receiver.url, token: "tk_for_a_webhook"))
      }
      await expectAPIError(.invalidRequest, status: 422) {
        try await anna.send(API.createWebhook, body: NewWebhook(url: receiver.url, channel: .ntfy, token: "a b"))
      }
      await expectAPIError(.webhookAddressForbidden, status: 422) {
        try await anna.send(API.createWebhook, body: NewWebhook(url: "http://169.254.169.254/t", channel: .ntfy))
      }
      _ = try await anna.send(
        API.createGeofence, body: NewGeofence(name: "Home", shape: .circle(center: GeofenceTests.home, radius: 100)))
      let created = try await anna.send(
        API.createWebhook, body: NewWebhook(url: receiver.url, channel: .ntfy, token: "tk_anna_topic"))
      #expect(created.webhook.channel == .ntfy && created.secret.isEmpty)
      #expect(try await anna.send(API.webhooks).items.map(\.channel) == [.ntfy])
      let id = created.webhook.id
      _ = try await anna.send(
        API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: try GeofenceTests.arrival(from: clock.now)))

      // The first attempt fails: the delivery waits out its back-off (60 s on the server's clock).
      let failed = try await Self.log(anna, id) { $0.first?.attempts == 1 }
      let pending = try #require(failed.first)
      #expect(pending.state == .pending && pending.kind == "geofence.enter", "\(pending)")
      #expect(pending.lastError?.contains("500") == true, "\(pending)")
      #expect(pending.nextAttemptAt >= clock.now, "\(pending)")
      #expect(receiver.publishes.withLock { $0.count } == 1)
      clock.advance(61_000)
      let delivered = try await Self.log(anna, id) { $0.first?.state == .delivered }
      #expect(delivered.count == 1 && delivered.first?.attempts == 2, "\(delivered)")

      let publishes = receiver.accepted
      #expect(publishes.count == 1 && receiver.publishes.withLock { $0.count } == 2)
      let publish = try #require(publishes.first)
      #expect(publish.title == "Home")
      #expect(publish.text.contains("arrived at Home"), "\(publish.text)")
      #expect(publish.tags?.split(separator: ",").contains("geofence.enter") == true, "\(publish.tags ?? "-")")
      #expect(publish.priority == "4")
      #expect(publish.authorization == "Bearer tk_anna_topic")
    }
    await receiver.stop()
  }

  @Test(.timeLimit(.minutes(2))) func pastTheHourlyQuotaAnAlertIsLoggedNotSent() async throws {
    let receiver = try await NtfyReceiver.start(statuses: [200])
    let clock = TestClock()
    try await TestServer.with(
      clock: clock,
      {
        // An attempt may take 10 s here too: with `fastDelivery`'s 1 s, a busy server stage once timed out the first
        // test event, whose next round waits on the test clock, and the wait for its delivery ran out.
        Self.oneAttemptPerRound(&$0)
        $0.webhooks.alertsPerAccountPerHour = 1
      }
    ) { server in
      let (_, anna) = try await server.signUp("anna")
      let created = try await anna.send(API.createWebhook, body: NewWebhook(url: receiver.url, channel: .ntfy))
      let ref = WebhookRef(id: created.webhook.id)
      _ = try await anna.send(API.testWebhook, parameters: ref)
      _ = try await Self.log(anna, ref.id) { $0.first?.state == .delivered }
      _ = try await anna.send(API.testWebhook, parameters: ref)
      let log = try await Self.log(anna, ref.id) { $0.count == 2 && $0.allSatisfy { $0.state != .pending } }
      let skipped = try #require(log.first { $0.state == .failed }, "\(log)")
      #expect(skipped.lastError?.contains("quota") == true, "\(skipped)")
      #expect(log.filter { $0.state == .delivered }.count == 1)
      // Recorded as skipped, so never sent: the receiver saw the first only, without a token.
      #expect(receiver.publishes.withLock { $0.count } == 1)
      #expect(receiver.accepted.first?.authorization == nil)
      #expect(receiver.accepted.first?.text == "A test event from Meridian.")
      // The log is its owner's only.
      let (_, boris) = try await server.signUp("boris")
      await expectAPIError(.notFound, status: 404) { try await boris.send(API.webhookDeliveries, parameters: ref) }
      // An hour later (the server's clock) the quota has room again.
      clock.advance(3_601_000)
      _ = try await anna.send(API.testWebhook, parameters: ref)
      let later = try await Self.log(anna, ref.id) { $0.filter { $0.state == .delivered }.count == 2 }
      #expect(later.filter { $0.state == .delivered }.count == 2, "\(later)")
    }
    await receiver.stop()
  }

  @Test(.timeLimit(.minutes(2))) func aPendingAlertIsDeliveredAfterARestart() async throws {
    let receiver = try await NtfyReceiver.start(statuses: [500])
    let clock = TestClock()
    var server = try await TestServer.start(clock: clock, Self.oneAttemptPerRound)
    let (session, anna) = try await server.signUp("anna")
    let created = try await anna.send(API.createWebhook, body: NewWebhook(url: receiver.url, channel: .ntfy))
    let ref = WebhookRef(id: created.webhook.id)
    _ = try await anna.send(API.testWebhook, parameters: ref)
    _ = try await Self.log(anna, ref.id) { $0.first?.attempts == 1 }
    try await server.stop(keepingFiles: true)
    receiver.statuses.withLock { $0 = [200] }
    server = try await TestServer.start(directory: server.directory, clock: clock, Self.oneAttemptPerRound)
    let again = try server.client(token: session.token)
    clock.advance(61_000)
    let log = try await Self.log(again, ref.id) { $0.first?.state == .delivered }
    #expect(log.count == 1 && log.first?.state == .delivered && log.first?.attempts == 2, "\(log)")
    #expect(receiver.accepted.count == 1)
    try await server.stop()
    await receiver.stop()
  }
}
