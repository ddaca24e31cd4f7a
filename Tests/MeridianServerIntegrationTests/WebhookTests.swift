import Foundation
import HTTPTypes
import Hummingbird
import Logging
import MeridianAPI
import MeridianSecrets
import MeridianServer
import MeridianStore
import MeridianStoreEngines
import MeridianTestSupport
import NIOCore
import NetworkingKit
import NetworkingKitAsyncHTTPClient
import Synchronization
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// A webhook receiver on 127.0.0.1 that misbehaves on purpose, then dedups by `Idempotency-Key`. Each new key gets the
/// next behaviour in turn: `fail` answers its first two requests 500, `stall` its first one not within the sender's
/// timeout, `busy` its first one 429 with `Retry-After: 1`, `down` every one, `ok` none. It checks every signature by recomputing it and counts what it processed per key.
final class WebhookReceiver: Sendable {
  struct Record: Sendable {
    /// Requests per key (every attempt).
    var requests: [String: Int] = [:]
    /// Times processed per key (the dedup keeps it at 1).
    var processed: [String: Int] = [:]
    /// Duplicates recognized by key and answered 200 without processing.
    var duplicates = 0
    /// Requests whose signature, idempotency key or body didn't check out.
    var bad: [String] = []
    /// When each key's first and last requests came.
    var firstSeen: [String: ContinuousClock.Instant] = [:]
    var lastSeen: [String: ContinuousClock.Instant] = [:]
    /// Each key's behaviour, in the order keys first came.
    var modes: [String: String] = [:]
  }

  let record = Mutex(Record())
  let secret = Mutex<String?>(nil)
  let behaviours: [String]
  private let waiters = Mutex<[(Int, CheckedContinuation<Void, Never>)]>([])
  private let running = Mutex<LocalApp?>(nil)
  var port: Int { running.withLock { $0?.port ?? 0 } }

  init(behaviours: [String]) { self.behaviours = behaviours }

  static func start(behaviours: [String]) async throws -> WebhookReceiver {
    let receiver = WebhookReceiver(behaviours: behaviours)
    let router = Router()
    router.post("/hooks/{name}") { request, _ -> Response in
      let body = Data(try await request.body.collect(upTo: 1 << 20).readableBytesView)
      return try await receiver.handle(request.headers, body)
    }
    var logger = Logger(label: "webhook-receiver")
    logger.logLevel = .warning
    let app = try await LocalApp.start(router: router, logger: logger)
    receiver.running.withLock { $0 = app }
    return receiver
  }

  func stop() async {
    await running.withLock { $0 }?.stop()
  }

  var url: String { "http://127.0.0.1:\(port)/hooks/main" }

  func handle(_ headers: HTTPFields, _ body: Data) async throws -> Response {
    let key = headers[.idempotencyKey] ?? ""
    let signature = headers[HTTPField.Name("Meridian-Signature")!] ?? ""
    let envelope = try? JSONSerialization.jsonObject(with: body) as? [String: Any]
    let secret = self.secret.withLock { $0 } ?? ""
    let now = Int64(Date().timeIntervalSince1970)
    let signed = Self.recompute(signature: signature, secret: secret, body: body, now: now)
    let (attempt, mode) = record.withLock { record -> (Int, String) in
      record.requests[key, default: 0] += 1
      if record.modes[key] == nil { record.modes[key] = behaviours[record.modes.count % behaviours.count] }
      let clock = ContinuousClock.now
      if record.firstSeen[key] == nil { record.firstSeen[key] = clock }
      record.lastSeen[key] = clock
      if !signed || key.isEmpty || envelope?["id"] as? String != key {
        record.bad.append("\(key): signature \(signature)")
      }
      return (record.requests[key] ?? 1, record.modes[key] ?? "ok")
    }
    switch (mode, attempt) {
    case ("fail", 1...2), ("down", _): return Response(status: .internalServerError)
    case ("stall", 1):
      try await Task.sleep(for: .seconds(3))  // longer than the sender's attempt timeout
      return Response(status: .ok)
    case ("busy", 1): return Response(status: .tooManyRequests, headers: [.retryAfter: "1"])
    default: break
    }
    let count = record.withLock { record -> Int in
      if record.processed[key] != nil {
        record.duplicates += 1
      } else {
        record.processed[key] = 1
      }
      return record.processed.count
    }
    let ready = waiters.withLock { waiters -> [CheckedContinuation<Void, Never>] in
      let due = waiters.filter { $0.0 <= count }.map(\.1)
      waiters.removeAll { $0.0 <= count }
      return due
    }
    for waiter in ready { waiter.resume() }
    return Response(status: .noContent)
  }

  /// The signature recomputed with HMAC-SHA256 over `t.body`, compared with the header's `v1`.
  static func recompute(signature: String, secret: String, body: Data, now: Int64) -> Bool {
    let parts = Dictionary(
      signature.split(separator: ",").map { part in
        let pair = part.split(separator: "=", maxSplits: 1)
        return (String(pair.first ?? ""), String(pair.count > 1 ? pair[1] : ""))
      }, uniquingKeysWith: { first, _ in first })
    guard let t = parts["t"].flatMap({ Int64($0) }), abs(now - t) < 300, let v1 = parts["v1"] else { return false }
    return WebhookSignature.hex(secret: secret, timestamp: t, body: body) == v1
  }

  /// Returns once `count` distinct keys were processed, or after `timeout`.
  func waitForProcessed(_ count: Int, timeout: Duration) async {
    let timer = Task {
      try? await Task.sleep(for: timeout)
      let all = waiters.withLock { waiters in
        defer { waiters.removeAll() }
        return waiters.map(\.1)
      }
      for waiter in all { waiter.resume() }
    }
    defer { timer.cancel() }
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let done = record.withLock { $0.processed.count >= count }
      if done {
        continuation.resume()
      } else {
        waiters.withLock { $0.append((count, continuation)) }
        // Processed meanwhile?
        if record.withLock({ $0.processed.count >= count }) {
          let mine = waiters.withLock { waiters -> [CheckedContinuation<Void, Never>] in
            let due = waiters.filter { $0.0 <= count }.map(\.1)
            waiters.removeAll { $0.0 <= count }
            return due
          }
          for waiter in mine { waiter.resume() }
        }
      }
    }
  }
}

@Suite("Webhooks")
struct WebhookTests {
  static func fastDelivery(_ configuration: inout ServerConfiguration) {
    configuration.webhooks.allowPrivateAddresses = true
    configuration.webhooks.attemptTimeout = .seconds(1)
    configuration.webhooks.attemptPolicy = RetryPolicy(
      maxAttempts: 2, baseDelay: .milliseconds(100), maxDelay: .milliseconds(300), deadline: .seconds(5),
      maxRetryAfter: .seconds(2))
    configuration.webhooks.roundPolicy = RetryPolicy(baseDelay: .milliseconds(200), maxDelay: .seconds(1))
    configuration.webhooks.pollInterval = .milliseconds(200)
    configuration.limits.webhookTestsPerAccountPerMinute = 0  // these tests send more test events than a person may
  }

  @Test func privateAndMetadataAddressesAreRefusedByDefault() async throws {
    try await TestServer.with { server in
      let (_, anna) = try await server.signUp("anna")
      for url in [
        "http://127.0.0.1:9/hook", "http://localhost/hook", "http://10.1.2.3/hook", "http://192.168.0.10/hook",
        "http://169.254.169.254/latest/meta-data", "http://[::1]/hook", "http://[fe80::1]/hook",
        "http://[::ffff:127.0.0.1]/hook", "http://100.64.0.1/hook", "http://0.0.0.0/hook",
      ] {
        await expectAPIError(.webhookAddressForbidden, status: 422) {
          try await anna.send(API.createWebhook, body: NewWebhook(url: url))
        }
      }
      for url in ["ftp://example.com/hook", "not a url", "http:///nohost", "https://user:pw@example.com/"] {
        await expectAPIError(.webhookURLInvalid, status: 422) {
          try await anna.send(API.createWebhook, body: NewWebhook(url: url))
        }
      }
      #expect(try await anna.send(API.webhooks).items.isEmpty)
    }
    // The metadata address stays refused when private addresses are allowed.
    try await TestServer.with({ $0.webhooks.allowPrivateAddresses = true }) { server in
      let (_, anna) = try await server.signUp("anna")
      await expectAPIError(.webhookAddressForbidden, status: 422) {
        try await anna.send(API.createWebhook, body: NewWebhook(url: "http://169.254.169.254/"))
      }
      let created = try await anna.send(API.createWebhook, body: NewWebhook(url: "http://127.0.0.1:9/hook"))
      #expect(created.secret.hasPrefix("whsec_") && created.webhook.enabled)
    }
  }

  @Test func registrationsBelongToTheirOwner() async throws {
    try await TestServer.with({ $0.webhooks.allowPrivateAddresses = true }) { server in
      let (_, anna) = try await server.signUp("anna")
      let (_, boris) = try await server.signUp("boris")
      let created = try await anna.send(
        API.createWebhook, body: NewWebhook(url: "http://127.0.0.1:9/a", events: ["geofence.enter", "geofence.enter"]))
      #expect(created.webhook.events == ["geofence.enter"])
      let ref = WebhookRef(id: created.webhook.id)
      #expect(try await anna.send(API.webhook, parameters: ref) == created.webhook)
      await expectAPIError(.notFound, status: 404) { try await boris.send(API.webhook, parameters: ref) }
      await expectAPIError(.notFound, status: 404) {
        try await boris.send(API.updateWebhook, parameters: ref, body: WebhookUpdate(enabled: false))
      }
      await expectAPIError(.notFound, status: 404) { try await boris.send(API.deleteWebhook, parameters: ref) }
      await expectAPIError(.invalidRequest, status: 422) {
        try await anna.send(API.updateWebhook, parameters: ref, body: WebhookUpdate(events: ["bad kind!"]))
      }
      await expectAPIError(.webhookAddressForbidden, status: 422) {
        try await anna.send(API.updateWebhook, parameters: ref, body: WebhookUpdate(url: "http://169.254.169.254/"))
      }
      let updated = try await anna.send(API.updateWebhook, parameters: ref, body: WebhookUpdate(enabled: false))
      #expect(!updated.enabled && updated.url == "http://127.0.0.1:9/a")  // the refused change changed nothing
      #expect(try await boris.send(API.webhooks).items.isEmpty)
      _ = try await anna.send(API.deleteWebhook, parameters: ref)
      #expect(try await anna.send(API.webhooks).items.isEmpty)
    }
  }

  /// An arrival decided by fixes 45 s ahead of the server's clock (a phone's clock running fast) is delivered at
  /// once, not when the fixes say: due, and abandoned counting, from when it was queued; the body keeps the fix's time.
  @Test(.timeLimit(.minutes(2))) func anEventDatedAheadIsDeliveredAtOnce() async throws {
    let receiver = try await WebhookReceiver.start(behaviours: ["ok"])
    try await TestServer.with(Self.fastDelivery) { server in
      let (_, anna) = try await server.signUp("anna")
      _ = try await anna.send(
        API.createGeofence, body: NewGeofence(name: "Home", shape: .circle(center: GeofenceTests.home, radius: 100)))
      let webhook = try await anna.send(API.createWebhook, body: NewWebhook(url: receiver.url))
      receiver.secret.withLock { $0 = webhook.secret }
      let before = GeofenceTests.now()
      let track = try GeofenceTests.arrival(from: before + 45_000)
      _ = try await anna.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: track))
      // Well before the fixes' time comes (the first is 45 s ahead).
      await receiver.waitForProcessed(1, timeout: .seconds(20))
      let record = receiver.record.withLock { $0 }
      #expect(record.processed.count == 1 && record.bad.isEmpty, "\(record.processed) \(record.bad)")
      let queued = try await server.app.environment.store.webhookDeliveries(
        webhook: webhook.webhook.id, state: nil, limit: 10)
      let delivery = try #require(queued.first)
      #expect(delivery.createdAt >= before && delivery.createdAt < before + 45_000, "\(delivery)")
    }
    await receiver.stop()
  }

  /// Every event reaches the receiver exactly once per idempotency key, through failures, a stalled answer, a 429
  /// with `Retry-After` and a server restart in the middle; every request is signed.
  @Test(.timeLimit(.minutes(3))) func deliveryIsDurableAndExactlyOncePerKey() async throws {
    let receiver = try await WebhookReceiver.start(behaviours: ["ok", "fail", "stall", "busy"])
    var server = try await TestServer.start(Self.fastDelivery)
    let (session, anna) = try await server.signUp("anna")
    let created = try await anna.send(API.createWebhook, body: NewWebhook(url: receiver.url))
    receiver.secret.withLock { $0 = created.secret }
    let ref = WebhookRef(id: created.webhook.id)
    var keys: [String] = []
    for _ in 0..<8 { keys.append(try await anna.send(API.testWebhook, parameters: ref).idempotencyKey) }
    // Restart while some are still failing, stalled or waiting out their Retry-After.
    await receiver.waitForProcessed(2, timeout: .seconds(30))
    try await server.stop(keepingFiles: true)
    // The same database on a new port (the old one may be taken meanwhile by a concurrent test).
    server = try await TestServer.start(directory: server.directory, Self.fastDelivery)
    let again = try server.client(token: session.token)
    for _ in 8..<16 { keys.append(try await again.send(API.testWebhook, parameters: ref).idempotencyKey) }
    await receiver.waitForProcessed(keys.count, timeout: .seconds(90))

    let record = receiver.record.withLock { $0 }
    #expect(record.bad.isEmpty, "\(record.bad)")
    #expect(Set(record.processed.keys) == Set(keys))
    #expect(record.processed.values.allSatisfy { $0 == 1 })
    #expect(Set(record.modes.values) == ["ok", "fail", "stall", "busy"])
    for key in keys {
      let mode = record.modes[key] ?? "?"
      let requests = record.requests[key] ?? 0
      switch mode {
      case "fail": #expect(requests >= 3, "\(key) \(requests)")
      case "stall", "busy": #expect(requests >= 2, "\(key) \(requests)")
      default: #expect(requests >= 1)
      }
      // (A restart forgets a Retry-After being waited out: the keys queued after it show the wait.)
      if mode == "busy", keys[8...].contains(key), let first = record.firstSeen[key], let last = record.lastSeen[key] {
        #expect(first.duration(to: last) >= .milliseconds(900), "Retry-After: 1 was not honoured for \(key)")
      }
    }
    // The outbox agrees: every delivery recorded as delivered (the last outcomes are recorded just after the
    // receiver answered, so the store is polled for them).
    var deliveries: [WebhookDelivery] = []
    let deadline = ContinuousClock.now + .seconds(30)
    repeat {
      deliveries = try await server.app.environment.store.webhookDeliveries(
        webhook: created.webhook.id, state: nil, limit: 100)
      if deliveries.allSatisfy({ $0.state == .delivered }) { break }
      try await Task.sleep(for: .milliseconds(50))
    } while ContinuousClock.now < deadline
    #expect(deliveries.count == keys.count)
    #expect(deliveries.allSatisfy { $0.state == .delivered && $0.deliveredAt != nil })
    try await server.stop()
    await receiver.stop()
  }

  /// A delivery still failing after the configured time is abandoned with its last error kept.
  @Test(.timeLimit(.minutes(3))) func aFailingDeliveryIsAbandonedWithItsError() async throws {
    let receiver = try await WebhookReceiver.start(behaviours: ["down"])
    try await TestServer.with({
      Self.fastDelivery(&$0)
      $0.webhooks.abandonAfterMilliseconds = 1
    }) { server in
      let (_, anna) = try await server.signUp("anna")
      let created = try await anna.send(API.createWebhook, body: NewWebhook(url: receiver.url))
      receiver.secret.withLock { $0 = created.secret }
      _ = try await anna.send(API.testWebhook, parameters: WebhookRef(id: created.webhook.id))
      let store = server.app.environment.store
      var failed: [WebhookDelivery] = []
      let deadline = ContinuousClock.now + .seconds(30)
      while failed.isEmpty && ContinuousClock.now < deadline {
        try await Task.sleep(for: .milliseconds(100))  // polling the store for the outcome
        failed = try await store.webhookDeliveries(webhook: created.webhook.id, state: .failed, limit: 10)
      }
      let delivery = try #require(failed.first)
      #expect(delivery.lastError?.contains("abandoned") == true, "\(delivery.lastError ?? "-")")
      #expect(delivery.lastError?.contains("500") == true, "\(delivery.lastError ?? "-")")
      #expect(receiver.record.withLock { $0.processed.isEmpty })
    }
    await receiver.stop()
  }
}

/// The delivery loop sleeps when it has nothing due: a `meridian-server` process that has delivered (a success, a
/// 429 answered later, and a receiver that keeps failing, so one delivery waits for its next round) burns almost no
/// CPU while no request comes. Before the fix the loop woke itself at once after every wake-up and kept a core busy.
@Suite("Webhooks: an idle server")
struct WebhookIdleTests {
  @Test(.timeLimit(.minutes(2))) func anIdleServerAfterDeliveriesUsesNoCPU() async throws {
    let receiver = try await WebhookReceiver.start(behaviours: ["ok", "busy", "down"])
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("meridian-idle-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let server = try await ServerProcess.start(
      database: directory.appendingPathComponent("meridian.sqlite").path,
      environment: ["MERIDIAN_WEBHOOK_ALLOW_PRIVATE": "true", "MERIDIAN_WEBHOOK_POLL_MS": "200"])
    defer { server.child.terminate() }
    let transport = AsyncHTTPClientTransport()
    let session = try await server.client(transport: transport)
      .send(API.register, body: EmailCredentials(email: "anna@example.com", password: "correct horse"))
    let anna = try server.client(transport: transport, token: session.token)
    let created = try await anna.send(API.createWebhook, body: NewWebhook(url: receiver.url))
    receiver.secret.withLock { $0 = created.secret }
    for _ in 0..<3 { _ = try await anna.send(API.testWebhook, parameters: WebhookRef(id: created.webhook.id)) }
    // A success, a 429 then a success, and a failure waiting for its next round.
    await receiver.waitForProcessed(2, timeout: .seconds(30))
    let seen = ContinuousClock.now
    while receiver.record.withLock({ $0.requests.count < 3 }) && ContinuousClock.now < seen + .seconds(30) {
      try await Task.sleep(for: .milliseconds(50))
    }
    try await transport.shutdown()
    #expect(receiver.record.withLock { $0.requests.count } == 3)
    // Measured once the server has recorded the three outcomes (each delivery's first attempt), read from its
    // database: the failing one's next round is not due for seconds.
    let database = try await StoreLocation(directory.appendingPathComponent("meridian.sqlite").path).open(
      logger: Logger(label: "test"))
    let recorded = ContinuousClock.now
    while ContinuousClock.now < recorded + .seconds(30) {
      let deliveries = try await database.store.webhookDeliveries(webhook: nil, state: nil, limit: 10)
      if deliveries.count == 3 && deliveries.allSatisfy({ $0.attempts >= 1 }) { break }
      try await Task.sleep(for: .milliseconds(50))  // polling the database for the outcomes
    }
    await database.close()

    let before = try Self.cpuSeconds(of: server.child.processIdentifier)
    let start = ContinuousClock.now
    try await Task.sleep(for: .seconds(3))
    let used = try Self.cpuSeconds(of: server.child.processIdentifier) - before
    let share = used / (start.duration(to: .now) / .seconds(1))
    // A spinning loop used 74–97 % of a core here; a sleeping one a few polls of the outbox a second.
    #expect(share < 0.10, "the idle server used \(Int(share * 100)) % of a core after its deliveries")
    await receiver.stop()
  }

  /// User plus system CPU seconds of process `pid` so far (Linux `/proc/PID/stat`).
  static func cpuSeconds(of pid: pid_t) throws -> Double {
    let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
    // Fields after the command name (which may hold spaces) start at the state, field 3; utime and stime are 14, 15.
    let fields = stat[stat.index(after: try #require(stat.lastIndex(of: ")")))...].split(separator: " ")
    let ticks = try #require(Double(fields[11])) + (try #require(Double(fields[12])))
    return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
  }
}
