import Foundation
import MeridianAPI
import MeridianServer
import MeridianTestSupport
import NetworkingKit
import Testing

/// The Python SMTP server of ``smtpServerScript``, started on loopback for one test.
final class SMTPServer: Sendable {
  /// One message it accepted, as Python's `email` package read it.
  struct Received: Decodable, Sendable {
    var mailFrom: String
    var rcptTo: [String]
    var raw: String
    var headers: [String: String]
    var contentType: String
    var charset: String?
    var body: String
    var defects: [String]
  }
  struct Hello: Decodable { var port: Int }

  let service: PythonService
  let port: Int
  let directory: URL

  private init(service: PythonService, port: Int, directory: URL) {
    self.service = service
    self.port = port
    self.directory = directory
  }

  static func start() async throws -> SMTPServer {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("smtp-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let service = try await PythonService.start(smtpServerScript, name: "smtp-server", arguments: [directory.path])
    do {
      return SMTPServer(service: service, port: try service.hello(Hello.self).port, directory: directory)
    } catch {
      await service.stop()
      throw error
    }
  }

  /// The messages it accepted so far, in order.
  func received() throws -> [Received] {
    try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".json") }.sorted()
      .map { try JSONDecoder().decode(Received.self, from: Data(contentsOf: directory.appendingPathComponent($0))) }
  }

  /// The server's settings to send through it.
  var settings: SMTPSettings { SMTPSettings(host: "127.0.0.1", port: port, sender: "alerts@meridian.test") }

  func stop() async {
    await service.stop()
    try? FileManager.default.removeItem(at: directory)
  }

  /// Runs `body` with an SMTP server and a test server (one attempt a round on `clock`) that sends through it,
  /// `configure` applied too; stops both however `body` ends.
  static func withServers(
    clock: TestClock, _ configure: @escaping @Sendable (inout ServerConfiguration) -> Void = { _ in },
    _ body: @escaping @Sendable (SMTPServer, TestServer) async throws -> Void
  ) async throws {
    let smtp = try await SMTPServer.start()
    let settings = smtp.settings
    do {
      try await TestServer.with(
        clock: clock,
        {
          AlertChannelTests.oneAttemptPerRound(&$0)
          $0.webhooks.smtp = settings
          configure(&$0)
        }
      ) { server in try await body(smtp, server) }
    } catch {
      await smtp.stop()
      throw error
    }
    await smtp.stop()
  }
}

/// Email alerts on the webhook outbox, against a real SMTP server (`aiosmtpd`): an arrival arrives as a plain-text
/// email with its headers; a mailbox refused for a while (451) is retried after the back-off and gets one email; one
/// refused for good (550) is retried until the delivery is abandoned, a failed entry in the log; an invalid address is
/// a 400 and a server without SMTP refuses the channel.
@Suite("Alert channels: email")
struct EmailAlertTests {
  @Test(.timeLimit(.minutes(2))) func anArrivalArrivesAsAnEmailWithItsHeaders() async throws {
    let clock = TestClock()
    try await SMTPServer.withServers(clock: clock) { smtp, server in
      let (session, anna) = try await server.signUp("anna")
      for address in ["mailto:anna", "anna@", "mailto:anna @example.com", "anna@example.com\r\nBcc: x@y.test"] {
        await expectAPIError(.invalidEmail, status: 400) {
          try await anna.send(API.createWebhook, body: NewWebhook(url: address, channel: .email))
        }
      }
      await expectAPIError(.invalidRequest, status: 422) {
        try await anna.send(
          API.createWebhook, body: NewWebhook(url: "anna@example.com", channel: .email, token: "secret"))
      }
      _ = try await anna.send(API.updateProfile, body: ProfileUpdate(fullName: "Anna Kovalenko"))
      _ = try await anna.send(
        API.createGeofence, body: NewGeofence(name: "Café", shape: .circle(center: GeofenceTests.home, radius: 100)))
      let created = try await anna.send(
        API.createWebhook, body: NewWebhook(url: "anna@example.com", channel: .email))
      #expect(created.webhook.channel == .email && created.webhook.url == "mailto:anna@example.com")
      #expect(created.secret.isEmpty)
      let id = created.webhook.id
      let ref = WebhookRef(id: id)
      await expectAPIError(.invalidEmail, status: 400) {
        try await anna.send(API.updateWebhook, parameters: ref, body: WebhookUpdate(url: "not an address"))
      }
      let fixes = try GeofenceTests.arrival(from: clock.now)
      _ = try await anna.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: fixes))

      let log = try await AlertChannelTests.log(anna, id) { $0.first?.state == .delivered }
      #expect(log.count == 1 && log.first?.attempts == 1, "\(log)")
      let messages = try smtp.received()
      let message = try #require(messages.first)
      #expect(messages.count == 1)
      #expect(message.mailFrom == "alerts@meridian.test" && message.rcptTo == ["anna@example.com"])
      #expect(message.defects.isEmpty, "\(message.defects)")
      let headers = message.headers
      #expect(headers["From"] == "Meridian <alerts@meridian.test>", "\(headers)")
      #expect(headers["To"] == "anna@example.com", "\(headers)")
      #expect(headers["Subject"]?.contains("arrived at Café") == true, "\(headers)")
      #expect(headers["MIME-Version"] == "1.0")
      #expect(message.contentType == "text/plain" && message.charset == "utf-8", "\(headers)")
      #expect(
        headers["Message-ID"]?.hasPrefix("<") == true && headers["Message-ID"]?.hasSuffix("@meridian.test>") == true)
      #expect(headers["Date"]?.hasSuffix("+0000") == true, "\(headers)")
      // Who, which fence, arrival or departure, when.
      let body = message.body
      // The person by name, never by id.
      #expect(body.contains("Anna Kovalenko arrived at Café"), "\(body)")
      #expect(body.contains("Who: Anna Kovalenko"), "\(body)")
      #expect(!body.contains(session.userId.rawValue), "\(body)")
      #expect(body.contains("Where: Café"), "\(body)")
      #expect(body.contains("What: arrival (geofence.enter)"), "\(body)")
      #expect(body.contains("When: 20"), "\(body)")
      // Every line of the raw message ends CRLF.
      #expect(!message.raw.replacingOccurrences(of: "\r\n", with: "").contains("\n"))
    }
  }

  @Test(.timeLimit(.minutes(2))) func aRefusingServerIsRetriedAndTheRefusalLoggedNeverLost() async throws {
    let clock = TestClock()
    // Back-off 0–60 s (full jitter) a round: the third round, past 121 s, is abandoned at the latest.
    try await SMTPServer.withServers(clock: clock, { $0.webhooks.abandonAfterMilliseconds = 120_000 }) {
      smtp, server in
      let (_, anna) = try await server.signUp("anna")
      let flaky = try await anna.send(
        API.createWebhook, body: NewWebhook(url: "mailto:flaky@example.com", channel: .email)
      ).webhook.id
      let refused = try await anna.send(
        API.createWebhook, body: NewWebhook(url: "mailto:refuse@example.com", channel: .email)
      ).webhook.id
      _ = try await anna.send(
        API.createGeofence, body: NewGeofence(name: "Home", shape: .circle(center: GeofenceTests.home, radius: 100)))
      _ = try await anna.send(
        API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: try GeofenceTests.arrival(from: clock.now)))

      // Both refused once (451, 550): pending, the reply in the log, nothing sent yet.
      for id in [flaky, refused] {
        let log = try await AlertChannelTests.log(anna, id) { $0.first?.attempts == 1 }
        let pending = try #require(log.first)
        #expect(pending.state == .pending, "\(pending)")
        #expect(pending.lastError?.contains(id == flaky ? "451" : "550") == true, "\(pending)")
      }
      #expect(try smtp.received().isEmpty)

      // Rounds on the server's clock: the flaky mailbox gets its one email in the next; the refused one is abandoned.
      // The clock moves on only once the flaky round has ended: a jump past its lease (36 s here) while it still
      // talked to the SMTP server would let the next round claim it again and send a second email, as a node
      // that died would (which the lease is for).
      clock.advance(61_000)
      let delivered = try await AlertChannelTests.log(anna, flaky) { $0.first?.state == .delivered }
      #expect(delivered.first?.attempts == 2, "\(delivered)")
      _ = try await AlertChannelTests.log(anna, refused) { ($0.first?.attempts ?? 0) >= 2 }
      let failed = try await Self.roundsUntilSettled(anna, refused, clock: clock)
      #expect(failed?.state == .failed && (failed?.attempts ?? 0) >= 2, "\(String(describing: failed))")
      #expect(failed?.lastError?.contains("abandoned") == true && failed?.lastError?.contains("550") == true)
      let messages = try smtp.received()
      #expect(messages.map(\.rcptTo) == [["flaky@example.com"]], "\(messages.map(\.rcptTo))")
    }
  }

  /// Advances `clock` a round (61 s) at a time, each time waiting for the next attempt, until the delivery of `id` is
  /// no longer pending (at most 3 rounds); returns it.
  static func roundsUntilSettled(_ client: NetworkClient, _ id: String, clock: TestClock) async throws
    -> WebhookDelivery?
  {
    for _ in 1...3 {
      let current = try await client.send(API.webhookDeliveries, parameters: WebhookRef(id: id)).items.first
      guard let current, current.state == .pending else { return current }
      clock.advance(61_000)
      _ = try await AlertChannelTests.log(client, id) { items in
        items.first.map { $0.attempts > current.attempts || $0.state != .pending } ?? false
      }
    }
    return try await client.send(API.webhookDeliveries, parameters: WebhookRef(id: id)).items.first
  }

  @Test(.timeLimit(.minutes(2))) func aStoppedServerLeavesTheAlertPendingAndAServerWithoutSMTPRefusesTheChannel()
    async throws
  {
    let smtp = try await SMTPServer.start()
    let settings = smtp.settings
    await smtp.stop()
    let clock = TestClock()
    try await TestServer.with(
      clock: clock,
      {
        AlertChannelTests.oneAttemptPerRound(&$0)
        $0.webhooks.smtp = settings
      }
    ) { server in
      let (_, anna) = try await server.signUp("anna")
      let id = try await anna.send(
        API.createWebhook, body: NewWebhook(url: "mailto:anna@example.com", channel: .email)
      ).webhook.id
      _ = try await anna.send(API.testWebhook, parameters: WebhookRef(id: id))
      let log = try await AlertChannelTests.log(anna, id) { $0.first?.attempts == 1 }
      let pending = try #require(log.first)
      #expect(pending.state == .pending && pending.lastError?.contains("SMTP connect") == true, "\(pending)")
    }
    try await TestServer.with(clock: clock, AlertChannelTests.oneAttemptPerRound) { server in
      let (_, anna) = try await server.signUp("anna")
      await expectAPIError(.invalidRequest, status: 422) {
        try await anna.send(API.createWebhook, body: NewWebhook(url: "mailto:anna@example.com", channel: .email))
      }
    }
  }
}
