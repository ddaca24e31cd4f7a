import Foundation
import Logging
import MeridianAPI
import MeridianServer
import MeridianStoreTesting
import NetworkingKit
import NetworkingKitAsyncHTTPClient
import NetworkingKitTestServer
import Synchronization
import Testing

/// The `http` and `twilio` SMS senders against a local gateway (NetworkingKit's `MisbehavingServer` on 127.0.0.1)
/// that accepts, fails, stalls and answers 429; and the OTP route answering 503 `sms_unavailable` without counting.
@Suite struct SMSGatewayTests {
  static let logger = Logger(label: "sms-test")

  /// Settings for `gateway`, with short timeouts.
  static func settings(_ gateway: MisbehavingServer) -> SMSSettings {
    var settings = SMSSettings()
    settings.httpURL = gateway.baseURL.absoluteString + "/v1/send?account=7"
    settings.twilioURL = gateway.baseURL.absoluteString
    settings.twilioAccountSID = "AC0123456789abcdef"
    settings.twilioAuthToken = "auth-token-secret"
    settings.twilioFrom = "+15550199"
    // Generous for a test process sharing two cores with hundreds of tests; the stalled gateway answers after 60 s.
    settings.attemptTimeout = .seconds(2)
    settings.deadline = .seconds(30)
    settings.attempts = 3
    return settings
  }

  static func twilio(_ settings: SMSSettings) throws -> TwilioSMSSender {
    try TwilioSMSSender(settings: settings, metrics: SMSMetrics(registry: ServerMetrics().registry), logger: logger)
  }

  static func http(_ settings: SMSSettings) throws -> HTTPGatewaySMSSender {
    try HTTPGatewaySMSSender(
      settings: settings, metrics: SMSMetrics(registry: ServerMetrics().registry), logger: logger)
  }

  /// Expects `request`'s method, target (path and query) and `Content-Type`.
  static func expect(
    _ request: MisbehavingServer.Request, _ method: String, _ target: String, _ contentType: String,
    sourceLocation: SourceLocation = #_sourceLocation
  ) {
    #expect(request.method == method, sourceLocation: sourceLocation)
    #expect(request.uri == target, sourceLocation: sourceLocation)
    #expect(request.header("content-type") == contentType, sourceLocation: sourceLocation)
  }

  /// The form fields of a body, decoded as a form is (`+` is a space, `%XX` a byte).
  static func form(_ body: [UInt8]) -> [String: String] {
    var fields: [String: String] = [:]
    for pair in String(decoding: body, as: UTF8.self).split(separator: "&") {
      let parts = pair.split(separator: "=", maxSplits: 1).map {
        String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? ""
      }
      fields[parts[0]] = parts.count > 1 ? parts[1] : ""
    }
    return fields
  }

  /// One sender keeps one connection pool for its codes; once the server shut it down it refuses, counted.
  @Test func aSenderKeepsItsPoolUntilItIsShutDown() async throws {
    let gateway = try await MisbehavingServer.start { _ in .json(#"{"sid":"SM1","status":"queued"}"#, status: 201) }
    defer { Task { try await gateway.shutdown() } }
    let sender = try Self.twilio(Self.settings(gateway))
    do {
      try await sender.sendCode("111111", to: "+15550100")
      try await sender.sendCode("222222", to: "+15550100")
    } catch {
      await sender.shutdown()
      throw error
    }
    await sender.shutdown()
    await sender.shutdown()  // twice is fine
    #expect(gateway.requests.count == 2)
    await #expect(throws: SMSDeliveryError.self) { try await sender.sendCode("333333", to: "+15550100") }
    #expect(gateway.requests.count == 2)
  }

  @Test func twilioRequestIsTheMessagesAPIs() async throws {
    let gateway = try await MisbehavingServer.start { _ in .json(#"{"sid":"SM1","status":"queued"}"#, status: 201) }
    defer { Task { try await gateway.shutdown() } }
    try await Self.twilio(Self.settings(gateway)).sendOnce("123456", to: "+15550100")
    try #require(gateway.requests.count == 1)
    let request = gateway.requests[0]
    Self.expect(
      request, "POST", "/2010-04-01/Accounts/AC0123456789abcdef/Messages.json", "application/x-www-form-urlencoded")
    let basic = Data("AC0123456789abcdef:auth-token-secret".utf8).base64EncodedString()
    #expect(request.header("authorization") == "Basic \(basic)")
    #expect(request.header("idempotency-key")?.isEmpty == false)
    // `+` must arrive as %2B, or the gateway reads a space.
    #expect(
      String(decoding: request.body, as: UTF8.self)
        == "Body=Your%20Meridian%20code%3A%20123456&From=%2B15550199&To=%2B15550100")
    #expect(Self.form(request.body) == ["To": "+15550100", "From": "+15550199", "Body": "Your Meridian code: 123456"])
  }

  @Test func httpGatewayFillsJSONAndFormTemplates() async throws {
    let gateway = try await MisbehavingServer.start { _ in .status(202) }
    defer { Task { try await gateway.shutdown() } }
    var settings = Self.settings(gateway)
    settings.message = #"Code "{code}" \ Meridian"#
    settings.httpBody = #"{"recipient":{"msisdn":"{phone}"},"message":"{text}","source":"meridian"}"#
    settings.httpAuth = "Key gw-secret"
    settings.httpAuthHeader = "X-Api-Key"
    try await Self.http(settings).sendOnce("654321", to: "+15550100")

    settings.httpFormat = .form
    settings.httpBody = nil
    settings.httpMethod = .put
    try await Self.http(settings).sendOnce("111222", to: "+15550100")

    let requests = gateway.requests
    try #require(requests.count == 2)
    let json = requests[0]
    Self.expect(json, "POST", "/v1/send?account=7", "application/json")
    #expect(json.header("x-api-key") == "Key gw-secret")
    #expect(json.header("authorization") == nil)
    let object = try #require(try JSONSerialization.jsonObject(with: Data(json.body)) as? [String: Any])
    #expect((object["recipient"] as? [String: String]) == ["msisdn": "+15550100"])
    #expect(object["message"] as? String == #"Code "654321" \ Meridian"#)
    #expect(object["source"] as? String == "meridian")

    let form = requests[1]
    Self.expect(form, "PUT", "/v1/send?account=7", "application/x-www-form-urlencoded")
    #expect(Self.form(form.body) == ["to": "+15550100", "text": #"Code "111222" \ Meridian"#])
    #expect(String(decoding: form.body, as: UTF8.self).hasPrefix("to=%2B15550100&text=Code%20%22111222%22"))
  }

  @Test func failuresAreRetriedWithOneIdempotencyKey() async throws {
    // 500, then 500, then accepted: three attempts of one code, one key.
    let gateway = try await MisbehavingServer.start { request in
      request.index < 2 ? .status(500, body: "gateway down") : .json(#"{"sid":"SM2"}"#, status: 201)
    }
    defer { Task { try await gateway.shutdown() } }
    try await Self.twilio(Self.settings(gateway)).sendOnce("123456", to: "+15550100")
    let keys = gateway.requests.map { $0.header("idempotency-key") }
    #expect(keys.count == 3)
    #expect(Set(keys).count == 1 && keys[0] != nil)
    #expect(Set(gateway.requests.map { $0.body }).count == 1)

    // A second code is another logical request: another key.
    try await Self.twilio(Self.settings(gateway)).sendOnce("999999", to: "+15550100")
    #expect(gateway.requests.count == 4)
    #expect(gateway.requests[3].header("idempotency-key") != keys[0])
  }

  @Test func aStatusThatStaysFailedIsAnError() async throws {
    let gateway = try await MisbehavingServer.start { _ in .status(503) }
    defer { Task { try await gateway.shutdown() } }
    await #expect(throws: SMSDeliveryError.self) {
      try await Self.http(Self.settings(gateway)).sendOnce("123456", to: "+15550100")
    }
    #expect(gateway.requests.count == 3)
    // A refusal that retrying can't fix (400) is not retried.
    let refusing = try await MisbehavingServer.start { _ in .json(#"{"code":21211,"message":"bad To"}"#, status: 400) }
    defer { Task { try await refusing.shutdown() } }
    let error = await #expect(throws: SMSDeliveryError.self) {
      try await Self.twilio(Self.settings(refusing)).sendOnce("123456", to: "+15550100")
    }
    #expect(error?.reason == "status")
    #expect(refusing.requests.count == 1)
  }

  @Test func tooManyRequestsWaitsForRetryAfter() async throws {
    let gateway = try await MisbehavingServer.start { request in
      request.index == 0 ? .status(429, headers: [("Retry-After", "1")]) : .json("{}", status: 201)
    }
    defer { Task { try await gateway.shutdown() } }
    let clock = ContinuousClock()
    let start = clock.now
    try await Self.twilio(Self.settings(gateway)).sendOnce("123456", to: "+15550100")
    let elapsed = start.duration(to: clock.now)
    #expect(gateway.requests.count == 2)
    #expect(elapsed >= .milliseconds(950), "Retry-After: 1 was not honoured (\(elapsed))")
    #expect(gateway.requests[0].header("idempotency-key") == gateway.requests[1].header("idempotency-key"))
  }

  @Test func aStalledGatewayTimesOut() async throws {
    let gateway = try await MisbehavingServer.start { _ in .delayed(.seconds(60), .status(200)) }
    defer { Task { try await gateway.shutdown() } }
    var settings = Self.settings(gateway)
    settings.attempts = 2
    let clock = ContinuousClock()
    let start = clock.now
    let error = await #expect(throws: SMSDeliveryError.self) {
      try await Self.http(settings).sendOnce("123456", to: "+15550100")
    }
    #expect(error?.reason == "timeout")
    // Each attempt ended before the gateway's 60 s answer (else the send would have succeeded). The two 2 s attempts
    // take 4 s on a quiet machine; AsyncHTTPClient ends an attempt at its deadline through a task on the shared
    // executor, which in a CI run of the busy server stage started more than 8 s late (the 10 s answer this gateway
    // gave then arrived first), hence the wide bound: it only says "not for ever".
    #expect(start.duration(to: clock.now) < .seconds(60))
    #expect(gateway.requests.count == 2)
  }

  @Test func productionRefusesTheLogSenderAndGatewaysNeedTheirSecrets() async throws {
    var configuration = ServerConfiguration()
    configuration.mode = .production
    configuration.adminToken = "s3cret"
    configuration.port = 0
    configuration.databasePath =
      FileManager.default.temporaryDirectory
      .appendingPathComponent("meridian-sms-\(UUID().uuidString).sqlite").path
    defer { try? FileManager.default.removeItem(atPath: configuration.databasePath) }
    let error = await #expect(throws: ConfigurationError.self) {
      _ = try await RunningServer.start(configuration: configuration, logger: Self.logger)
    }
    #expect(error?.setting == "MERIDIAN_SMS_SENDER")
    #expect(error?.description.contains("production") == true)

    func refusal(_ environment: [String: String]) -> String? {
      #expect(throws: ConfigurationError.self) { try ServerConfiguration.resolve(environment: environment) }?.setting
    }
    #expect(
      refusal([
        "MERIDIAN_SMS_SENDER": "twilio", "MERIDIAN_SMS_TWILIO_ACCOUNT_SID": "AC1", "MERIDIAN_SMS_TWILIO_FROM": "+1555",
      ]) == "MERIDIAN_SMS_TWILIO_AUTH_TOKEN")
    #expect(refusal(["MERIDIAN_SMS_SENDER": "http"]) == "MERIDIAN_SMS_HTTP_URL")
    #expect(
      refusal([
        "MERIDIAN_SMS_SENDER": "http", "MERIDIAN_SMS_HTTP_URL": "https://sms.example/send",
        "MERIDIAN_SMS_HTTP_BODY": "to={phone}",
      ]) == "MERIDIAN_SMS_HTTP_BODY")
    #expect(refusal(["MERIDIAN_SMS_SENDER": "sms"]) == "MERIDIAN_SMS_SENDER")
    #expect(refusal(["MERIDIAN_SMS_MESSAGE": "no code here"]) == "MERIDIAN_SMS_MESSAGE")
    let resolved = try ServerConfiguration.resolve(
      environment: [
        "MERIDIAN_MODE": "production", "MERIDIAN_ADMIN_TOKEN": "s3cret", "MERIDIAN_SMS_SENDER": "twilio",
        "MERIDIAN_SMS_TWILIO_ACCOUNT_SID": "AC1", "MERIDIAN_SMS_TWILIO_AUTH_TOKEN": "t",
        "MERIDIAN_SMS_TWILIO_FROM": "+1555",
        "MERIDIAN_SMS_TIMEOUT": "2.5", "MERIDIAN_SMS_ATTEMPTS": "4",
      ])
    #expect(resolved.smsSender == .twilio)
    #expect(resolved.sms.attemptTimeout == .milliseconds(2500))
    #expect(resolved.sms.attempts == 4)
  }

  /// What the OTP route does after a failed send (a take of −1) returns the unit on every engine: on PostgreSQL
  /// through the counters every node shares.
  @Test(arguments: StoreEngine.all)
  func aUnitGivenBackCanBeTakenAgain(_ engine: StoreEngine) async throws {
    try await engine.withTwoNodes { first, second in
      var configuration = ServerConfiguration()
      configuration.otpPerPhonePerHour = 2
      let nodes = [first, second].map {
        ServerEnvironment(store: $0, smsSender: CapturingSMSSender(), configuration: configuration, now: { 1_000 })
      }
      let phone = "+15550100"
      for node in nodes { while await node.otpPhoneLimiter.allow(phone, now: 1_000) {} }
      #expect(await !nodes[0].otpPhoneLimiter.allow(phone, now: 1_000))
      // Shared on PostgreSQL: the other node gives it back; each SQLite process counts (and gives back) its own.
      _ = await nodes[engine.name == "postgres" ? 1 : 0].otpPhoneLimiter.take(phone, cost: -1, now: 1_000)
      #expect(await nodes[0].otpPhoneLimiter.allow(phone, now: 1_000))
      #expect(await !nodes[0].otpPhoneLimiter.allow(phone, now: 1_000))
    }
  }

  /// Over HTTP: a send that fails is 503 `sms_unavailable`, keeps the number's current code and its attempts, and
  /// takes nothing from the per-number limit.
  @Test func aFailedSendIsRetryableAndCountsNothing() async throws {
    let failing = Atomic<Bool>(false)
    let gateway = try await MisbehavingServer.start { _ in
      failing.load(ordering: .relaxed) ? .status(500) : .json(#"{"sid":"SM3"}"#, status: 201)
    }
    defer { Task { try await gateway.shutdown() } }
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("meridian-sms-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    var configuration = ServerConfiguration()
    configuration.port = 0
    configuration.databasePath = directory.appendingPathComponent("meridian.sqlite").path
    configuration.bcryptCost = 4
    configuration.adminToken = ServerConfiguration.developmentAdminToken
    configuration.smsSender = .twilio
    configuration.sms = Self.settings(gateway)
    configuration.sms.attempts = 2
    configuration.otpPerPhonePerHour = 2
    configuration.otpSpacingSeconds = 0  // codes to one number in quick succession (AuthThrottleTests tests it)
    var logger = Logger(label: "sms-test")
    logger.logLevel = .critical
    let running = try await RunningServer.start(configuration: configuration, logger: logger)
    let server = TestServer(
      running: running, sms: CapturingSMSSender(), directory: directory, transport: AsyncHTTPClientTransport())
    do {
      let client = try server.client()
      let phone = "+15550100"
      func lastCode() throws -> String {
        let body = try #require(gateway.requests.last.map { Self.form($0.body)["Body"] } ?? nil)
        return String(body.suffix(6))
      }
      _ = try await client.send(API.requestOTP, body: OTPRequest(phone: phone))
      let first = try lastCode()
      let wrong = first == "000000" ? "000001" : "000000"
      await expectAPIError(.otpInvalid, status: 401) {
        try await client.send(API.verifyOTP, body: OTPVerification(phone: phone, code: wrong))
      }

      failing.store(true, ordering: .relaxed)
      let before = gateway.requests.count
      await expectAPIError(.smsUnavailable, status: 503) {
        try await client.send(API.requestOTP, body: OTPRequest(phone: phone))
      }
      #expect(gateway.requests.count == before + 2, "the failed send was not retried")

      // The code sent before still works, with the attempts it had: 5 − 1 wrong − 1 now = 3 left.
      do {
        _ = try await client.send(API.verifyOTP, body: OTPVerification(phone: phone, code: wrong))
        Issue.record("a wrong code was accepted")
      } catch let error as NetworkingError {
        #expect(error.serverError?.code == "otp_invalid")
        #expect(error.serverError?.message?.contains("3 attempts left") == true, "\(error)")
      }

      // The limit is 2 codes per hour: the failed one didn't count, so one more goes out, then 429.
      failing.store(false, ordering: .relaxed)
      _ = try await client.send(API.requestOTP, body: OTPRequest(phone: phone))
      let second = try lastCode()
      await expectAPIError(.rateLimited, status: 429) {
        try await client.send(API.requestOTP, body: OTPRequest(phone: phone))
      }
      let session = try await client.send(API.verifyOTP, body: OTPVerification(phone: phone, code: second))
      #expect(session.isNew == true)

      let metrics = String(
        decoding: try await server.client(token: ServerConfiguration.developmentAdminToken).send(API.metrics),
        as: UTF8.self)
      let lines = metrics.split(separator: "\n").filter { $0.hasPrefix("meridian_sms_") }
      #expect(lines.contains(#"meridian_sms_sent_total{sender="twilio"} 2"#), "\(lines)")
      #expect(lines.contains(#"meridian_sms_failed_total{sender="twilio",reason="status"} 1"#), "\(lines)")
      #expect(lines.contains(#"meridian_sms_retries_total{sender="twilio"} 1"#), "\(lines)")
    } catch {
      try await server.stop()
      throw error
    }
    try await server.stop()
  }
}

extension SMSSender {
  /// Sends one code, then shuts the sender down (as the server does when it stops), whether it was sent or not.
  func sendOnce(_ code: String, to phone: String) async throws {
    do {
      try await sendCode(code, to: phone)
    } catch {
      await shutdown()
      throw error
    }
    await shutdown()
  }
}
