import Foundation
import HTTPTypes
import Logging
import NetworkingKit
import NetworkingKitTesting
import Synchronization
import Testing

@Suite struct RetryPolicyTests {
  @Test func fullJitterBackoffIsBoundedByTheExponentialCeiling() {
    let policy = RetryPolicy.default
    #expect(policy.maxAttempts == 3)
    #expect(policy.baseDelay == .milliseconds(500))
    #expect(policy.maxDelay == .seconds(20))
    #expect(policy.backoff(afterAttempt: 1, unit: 1) == .milliseconds(500))
    #expect(policy.backoff(afterAttempt: 2, unit: 1) == .seconds(1))
    #expect(policy.backoff(afterAttempt: 4, unit: 0.5) == .seconds(2))
    #expect(policy.backoff(afterAttempt: 10, unit: 1) == .seconds(20))
    #expect(policy.backoff(afterAttempt: 1, unit: 0) == .zero)
    let random = RandomSource.seeded(7)
    for attempt in 1...8 {
      let delay = policy.backoff(afterAttempt: attempt, unit: random.next())
      #expect(delay >= .zero && delay <= min(.seconds(20), .milliseconds(500) * (1 << (attempt - 1))))
    }
  }

  @Test func seededRandomIsReproducible() {
    let a = RandomSource.seeded(42)
    let b = RandomSource.seeded(42)
    let first = (0..<5).map { _ in a.next() }
    #expect(first == (0..<5).map { _ in b.next() })
    #expect(first.allSatisfy { $0 >= 0 && $0 < 1 })
  }

  @Test func retryAfterParsesSecondsAndHTTPDates() {
    let now = Date(timeIntervalSince1970: 784_111_777)  // Sun, 06 Nov 1994 08:49:37 GMT
    #expect(RetryAfter.parse("120") == .seconds(120))
    #expect(RetryAfter.parse("Sun, 06 Nov 1994 08:50:07 GMT", now: now) == .seconds(30))
    #expect(RetryAfter.parse("Sunday, 06-Nov-94 08:50:07 GMT", now: now) == .seconds(30))
    #expect(RetryAfter.parse("Sun Nov  6 08:50:07 1994", now: now) == .seconds(30))
    #expect(RetryAfter.parse("Sun, 06 Nov 1994 08:00:00 GMT", now: now) == .zero)
    #expect(RetryAfter.parse("soon") == nil)
    #expect(RetryAfter.parse("-1") == nil)
  }

  @Test func budgetFollowsTheAWSStandardMode() {
    let budget = RetryBudget()
    #expect(budget.available == 500)
    #expect(budget.tryAcquire(5))
    #expect(budget.tryAcquire(10))
    #expect(budget.available == 485)
    budget.recordSuccess(retryCost: 10)
    #expect(budget.available == 495)
    budget.recordSuccess(retryCost: nil)
    #expect(budget.available == 496)
    for _ in 0..<10 { budget.recordSuccess(retryCost: nil) }
    #expect(budget.available == 500)
    let small = RetryBudget(configuration: RetryBudgetConfiguration(capacity: 7))
    #expect(small.tryAcquire(5))
    #expect(!small.tryAcquire(5))
  }
}

@Suite struct RetryLoopTests {
  @Test func retriesIdempotentRequestsWithJitteredBackoffAndEmitsEvents() async throws {
    let harness = try Harness([.status(.serviceUnavailable), .status(.badGateway), .json(profileJSON)])
    let profile = try await harness.client.send(API.me)
    #expect(profile.name == "Anna")
    #expect(harness.transport.requests.count == 3)
    #expect(harness.clock.sleeps == [.milliseconds(250), .milliseconds(500)])
    let events = harness.events.events
    #expect(events.map(\.attempt) == [1, 2, 3])
    #expect(events.map(\.outcome) == [.status(503), .status(502), .status(200)])
    #expect(events.map(\.decision) == [.retry(after: .milliseconds(250)), .retry(after: .milliseconds(500)), .finish])
    #expect(events.allSatisfy { $0.pathTemplate == "/v1/me" && $0.method == .get })
  }

  @Test func attemptEventsAreLoggedWithSwiftLog() async throws {
    let lines = LogCapture()
    let logger = Logger(label: "test") { _ in CapturingLogHandler(capture: lines) }
    let harness = try Harness(
      [.status(.serviceUnavailable), .json(profileJSON)],
      configure: { $0.onAttempt = AttemptEvent.logger(logger) })
    _ = try await harness.client.send(API.me)
    let logged = lines.entries
    #expect(logged.map(\.level) == [.notice, .debug])
    #expect(logged.first?.metadata["decision"] == "retry after 0.25 seconds")
    #expect(logged.first?.metadata["http.route"] == "/v1/me")
    #expect(logged.last?.metadata["outcome"] == "200")
  }

  @Test func givesUpAfterThreeAttemptsWithTheServerError() async throws {
    let harness = try Harness(Array(repeating: .envelope(.internalServerError, code: "boom", message: "x"), count: 5))
    let error = await #expect(throws: NetworkingError.self) { try await harness.client.send(API.me) }
    #expect(error?.serverError?.code == "boom")
    #expect(harness.transport.requests.count == 3)
    #expect(harness.events.events.last?.decision == .attemptsExhausted)
  }

  @Test func doesNotRetryOtherStatuses() async throws {
    let harness = try Harness([.status(.badRequest), .json(profileJSON)])
    await #expect(throws: NetworkingError.self) { try await harness.client.send(API.me) }
    #expect(harness.transport.requests.count == 1)
  }

  @Test func retryAfterIsNeverShortenedAndTooLongIsNotWaited() async throws {
    let harness = try Harness([.status(.tooManyRequests, headerFields: [.retryAfter: "7"]), .json(profileJSON)])
    _ = try await harness.client.send(API.me)
    #expect(harness.clock.sleeps == [.seconds(7)])

    let long = try Harness([.status(.serviceUnavailable, headerFields: [.retryAfter: "3600"]), .json(profileJSON)])
    let error = await #expect(throws: NetworkingError.self) { try await long.client.send(API.me) }
    #expect(error?.serverError?.retryAfter == .seconds(3600))
    #expect(long.transport.requests.count == 1)
    #expect(long.clock.sleeps.isEmpty)
  }

  @Test func retryAfterWithinTheMaximumIsHonouredExactlyAndBeyondItEndsWithTheRequestedWait() async throws {
    // Within the maximum: exactly the server's wait, even when the backoff would be longer (10 s × 0.5 = 5 s here).
    let within = try Harness(
      [.status(.serviceUnavailable, headerFields: [.retryAfter: "1"]), .json(profileJSON)],
      configure: { $0.retryPolicy = RetryPolicy(baseDelay: .seconds(10), maxRetryAfter: .seconds(30)) })
    _ = try await within.client.send(API.me)
    #expect(within.clock.sleeps == [.seconds(1)])
    #expect(within.events.events.first?.decision == .retry(after: .seconds(1)))

    // At the maximum: still honoured.
    let atMaximum = try Harness(
      [.status(.tooManyRequests, headerFields: [.retryAfter: "30"]), .json(profileJSON)],
      configure: { $0.retryPolicy = RetryPolicy(maxRetryAfter: .seconds(30)) })
    _ = try await atMaximum.client.send(API.me)
    #expect(atMaximum.clock.sleeps == [.seconds(30)])

    // Beyond it: no wait, no second attempt, a server error carrying the full requested wait.
    let beyond = try Harness(
      [.status(.tooManyRequests, headerFields: [.retryAfter: "31"]), .json(profileJSON)],
      configure: { $0.retryPolicy = RetryPolicy(maxRetryAfter: .seconds(30)) })
    let error = await #expect(throws: NetworkingError.self) { try await beyond.client.send(API.me) }
    guard case .server(let serverError) = error else {
      Issue.record("got \(String(describing: error))")
      return
    }
    #expect(serverError.status == .tooManyRequests)
    #expect(serverError.retryAfter == .seconds(31))
    #expect(error?.retryAfter == .seconds(31))
    #expect(beyond.transport.requests.count == 1)
    #expect(beyond.clock.sleeps.isEmpty)
    #expect(beyond.events.events.map(\.decision) == [.retryAfterTooLong(.seconds(31))])
  }

  @Test func postWithoutKeyIsNotRetriedButWithKeyIsWithTheSameKey() async throws {
    let batch = FixBatch(deviceId: "d", fixes: [])
    let plain = try Harness([.status(.serviceUnavailable), .json(#"{"accepted":0}"#)])
    await #expect(throws: NetworkingError.self) { try await plain.client.send(API.plainPost, body: batch) }
    #expect(plain.transport.requests.count == 1)
    #expect(plain.transport.requests[0].head.headerFields[.idempotencyKey] == nil)

    let keyed = try Harness([
      .status(.serviceUnavailable), .failure(TransportError(.connectionLost)), .json(#"{"accepted":0}"#),
    ])
    _ = try await keyed.client.send(API.postFixes, body: batch)
    let keys = keyed.transport.requests.map { $0.head.headerFields[.idempotencyKey] }
    #expect(keys.count == 3)
    #expect(keys[0] != nil && Set(keys).count == 1)

    let explicit = try Harness([.status(.serviceUnavailable), .json(#"{"accepted":0}"#)])
    _ = try await explicit.client.send(API.plainPost, body: batch, idempotencyKey: "mine")
    #expect(explicit.transport.requests.map { $0.head.headerFields[.idempotencyKey] } == ["mine", "mine"])
  }

  @Test func generatedKeysNeverRepeat() async {
    let (first, second) = (IdempotencyKeys(), IdempotencyKeys())
    let keys = await withTaskGroup(of: [String].self) { group in
      for generator in [first, second, first, second] {
        group.addTask { (0..<500).map { _ in generator.next() } }
      }
      return await group.reduce(into: [String]()) { $0 += $1 }
    }
    #expect(keys.count == 2000 && Set(keys).count == 2000)
    #expect(keys.allSatisfy { (1...255).contains($0.utf8.count) && $0.allSatisfy { $0.isASCII && !$0.isWhitespace } })
    #expect(first.next().prefix(36) != second.next().prefix(36))
  }

  @Test func unreachableFailsAtOnceButTimeoutsAreRetried() async throws {
    let refused = try Harness([.failure(TransportError(.connectionRefused)), .json(profileJSON)])
    let error = await #expect(throws: NetworkingError.self) { try await refused.client.send(API.me) }
    #expect(error?.transportError?.isUnreachable == true)
    #expect(refused.transport.requests.count == 1)

    let slow = try Harness([.failure(TransportError(.timedOut)), .json(profileJSON)])
    _ = try await slow.client.send(API.me)
    #expect(slow.transport.requests.count == 2)
  }

  @Test func emptyBudgetFailsFast() async throws {
    let budgets = RetryBudgets(configuration: RetryBudgetConfiguration(capacity: 14, retryCost: 5, timeoutCost: 10))
    let harness = try Harness(
      Array(repeating: .status(.serviceUnavailable), count: 10), configure: { $0.retryBudgets = budgets })
    await #expect(throws: NetworkingError.self) { try await harness.client.send(API.me) }  // takes 5 + 5
    #expect(harness.transport.requests.count == 3)
    #expect(budgets.budget(for: "api.test").available == 4)
    let error = await #expect(throws: NetworkingError.self) { try await harness.client.send(API.me) }
    guard case .retryBudgetExhausted(let host, let last) = error else {
      Issue.record("got \(String(describing: error))")
      return
    }
    #expect(host == "api.test")
    #expect(last.serverError?.status == .serviceUnavailable)
    #expect(harness.transport.requests.count == 4)
    #expect(harness.events.events.last?.decision == .budgetExhausted)
  }

  @Test func budgetExhaustionCarriesTheLastTransportError() async throws {
    let budgets = RetryBudgets(configuration: RetryBudgetConfiguration(capacity: 9, retryCost: 5, timeoutCost: 10))
    let harness = try Harness(
      [.failure(TransportError(.timedOut, detail: "slow")), .json(profileJSON)],
      configure: { $0.retryBudgets = budgets })
    let error = await #expect(throws: NetworkingError.self) { try await harness.client.send(API.me) }
    guard case .retryBudgetExhausted(let host, let last) = error else {
      Issue.record("got \(String(describing: error))")
      return
    }
    #expect(host == "api.test")
    guard case .transport(let transportError) = last else {
      Issue.record("got last error \(last)")
      return
    }
    #expect(transportError == TransportError(.timedOut, detail: "slow"))
    #expect(harness.transport.requests.count == 1)
  }

  @Test func deadlineStopsRetries() async throws {
    let harness = try Harness(
      [.status(.serviceUnavailable, headerFields: [.retryAfter: "5"]), .json(profileJSON)],
      configure: { $0.retryPolicy.deadline = .seconds(3) })
    let error = await #expect(throws: NetworkingError.self) { try await harness.client.send(API.me) }
    guard case .deadlineExceeded(let last) = error else {
      Issue.record("got \(String(describing: error))")
      return
    }
    #expect(last?.serverError?.status == .serviceUnavailable)
    #expect(harness.clock.sleeps.isEmpty)
  }

  @Test func attemptTimeoutNeverExceedsWhatIsLeftOfTheDeadline() async throws {
    let harness = try Harness(
      [.failure(TransportError(.timedOut)), .json(profileJSON)],
      configure: {
        $0.retryPolicy.deadline = .seconds(5)
        $0.attemptTimeout = .seconds(8)
        $0.random = .constant(1)
      })
    _ = try await harness.client.send(API.me)
    #expect(harness.transport.requests.map(\.options.timeout) == [.seconds(5), .milliseconds(4500)])
  }

  /// Sends a request that gets a 503 with `Retry-After: 30` and returns once the client waits on a manual clock.
  private func startWaitingRequest() async throws -> (Harness, TestClock, Task<Profile, any Error>) {
    let clock = TestClock(mode: .manual)
    let harness = try Harness(
      [.status(.serviceUnavailable, headerFields: [.retryAfter: "30"]), .json(profileJSON)], clock: clock)
    let task = Task { try await harness.client.send(API.me) }
    while clock.pendingSleeps == 0 { await Task.yield() }
    return (harness, clock, task)
  }

  @Test func cancellationStopsAWaitAtOnce() async throws {
    let (harness, _, task) = try await startWaitingRequest()
    task.cancel()
    await #expect(throws: CancellationError.self) { try await task.value }
    #expect(harness.transport.requests.count == 1)
  }

  @Test func manualClockResumesWhenAdvanced() async throws {
    let (_, clock, task) = try await startWaitingRequest()
    clock.advance(by: .seconds(29))
    #expect(clock.pendingSleeps == 1)
    clock.advance(by: .seconds(1))
    #expect(try await task.value.name == "Anna")
    #expect(clock.sleeps == [.seconds(30)])
  }
}

@Suite struct CredentialsTests {
  @Test func refreshIsSingleFlight() async throws {
    let credentials = BearerTokenCredentials(token: "old") { _ in
      try await Task.sleep(for: .milliseconds(50))
      return "new"
    }
    let tokens = try await withThrowingTaskGroup(of: String?.self) { group in
      for _ in 0..<10 { group.addTask { try await credentials.refreshToken(rejected: "old") } }
      return try await group.reduce(into: []) { $0.append($1) }
    }
    #expect(tokens == Array(repeating: "new", count: 10))
    #expect(await credentials.refreshCount == 1)
    #expect(try await credentials.refreshToken(rejected: "old") == "new")
    #expect(await credentials.refreshCount == 1)
  }

  @Test func unauthorizedIsReplayedOnceWithTheFreshToken() async throws {
    let credentials = BearerTokenCredentials(token: "old") { _ in "new" }
    let harness = try Harness(
      [.envelope(.unauthorized, code: "token_invalid", message: "expired"), .json(profileJSON)],
      credentials: credentials)
    _ = try await harness.client.send(API.me)
    #expect(harness.transport.requests.map { $0.head.headerFields[.authorization] } == ["Bearer old", "Bearer new"])
    #expect(harness.events.events.first?.decision == .refreshCredentials)

    let stubborn = try Harness(
      Array(repeating: .status(.unauthorized), count: 3), credentials: BearerTokenCredentials(token: "a") { _ in "b" })
    let error = await #expect(throws: NetworkingError.self) { try await stubborn.client.send(API.me) }
    guard case .unauthorized = error else {
      Issue.record("got \(String(describing: error))")
      return
    }
    #expect(stubborn.transport.requests.count == 2)
  }

  @Test func tokenErrorCodesAreConfiguration() async throws {
    let custom = try Harness(
      [.envelope(.forbidden, code: "session_gone", message: "expired"), .json(profileJSON)],
      credentials: BearerTokenCredentials(token: "old") { _ in "new" }
    ) { $0.tokenErrorCodes = ["session_gone"] }
    _ = try await custom.client.send(API.me)
    #expect(custom.transport.requests.map { $0.head.headerFields[.authorization] } == ["Bearer old", "Bearer new"])
    #expect(custom.events.events.map(\.decision) == [.refreshCredentials, .finish])

    // Codes that are not configured are server errors like any other, without a refresh.
    let replaced = try Harness(
      [.envelope(.forbidden, code: "token_expired", message: "expired")],
      credentials: BearerTokenCredentials(token: "old") { _ in "new" }
    ) { $0.tokenErrorCodes = [] }
    let error = await #expect(throws: NetworkingError.self) { try await replaced.client.send(API.me) }
    guard case .server(let server) = error else {
      Issue.record("got \(String(describing: error))")
      return
    }
    #expect(server.code == "token_expired" && replaced.transport.requests.count == 1)
    #expect(replaced.events.events.map(\.decision) == [.finish])
    #expect(NetworkClient.Configuration().tokenErrorCodes == ["token_invalid", "token_expired"])
  }

  @Test func lateFailureAfterASignedOutRefreshDoesNotRefreshAgain() async throws {
    let credentials = BearerTokenCredentials(token: "old") { _ in
      try await Task.sleep(for: .milliseconds(20))
      return nil
    }
    let first = try await withThrowingTaskGroup(of: String?.self) { group in
      for _ in 0..<5 { group.addTask { try await credentials.refreshToken(rejected: "old") } }
      return try await group.reduce(into: []) { $0.append($1) }
    }
    #expect(first == Array(repeating: nil, count: 5))
    #expect(await credentials.refreshCount == 1)
    // A request that was still in flight with the old token fails later: no second refresh.
    #expect(try await credentials.refreshToken(rejected: "old") == nil)
    #expect(try await credentials.refreshToken(rejected: "old") == nil)
    #expect(await credentials.refreshCount == 1)
    // After signing in again, a rejection of the new token refreshes again.
    await credentials.setToken("signed-in")
    #expect(try await credentials.refreshToken(rejected: "old") == "signed-in")
    #expect(try await credentials.refreshToken(rejected: "signed-in") == nil)
    #expect(await credentials.refreshCount == 2)
  }

  @Test func refreshThatThrewMayBeRetried() async throws {
    struct Offline: Error {}
    let attempts = AttemptCounter()
    let credentials = BearerTokenCredentials(token: "old") { _ in
      if attempts.next() == 0 { throw Offline() }
      return "new"
    }
    await #expect(throws: Offline.self) { try await credentials.refreshToken(rejected: "old") }
    #expect(try await credentials.refreshToken(rejected: "old") == "new")
    #expect(await credentials.refreshCount == 2)
  }

  @Test func signedOutRefreshReportsUnauthorized() async throws {
    let harness = try Harness([.status(.unauthorized)], credentials: BearerTokenCredentials(token: "a") { _ in nil })
    let error = await #expect(throws: NetworkingError.self) { try await harness.client.send(API.me) }
    guard case .unauthorized = error else {
      Issue.record("got \(String(describing: error))")
      return
    }
  }
}

final class LogCapture: Sendable {
  struct Entry {
    var level: Logger.Level
    var metadata: [String: String]
  }

  private let storage = Mutex<[Entry]>([])

  func append(_ entry: Entry) {
    storage.withLock { $0.append(entry) }
  }

  var entries: [Entry] { storage.withLock { $0 } }
}

struct CapturingLogHandler: LogHandler {
  let capture: LogCapture
  var metadata: Logger.Metadata = [:]
  var logLevel: Logger.Level = .trace

  subscript(metadataKey key: String) -> Logger.Metadata.Value? {
    get { metadata[key] }
    set { metadata[key] = newValue }
  }

  func log(event: LogEvent) {
    let merged = (event.metadata ?? [:]).mapValues { "\($0)" }
    capture.append(LogCapture.Entry(level: event.level, metadata: merged))
  }
}

final class AttemptCounter: Sendable {
  private let count = Mutex(0)

  func next() -> Int {
    count.withLock { count in
      defer { count += 1 }
      return count
    }
  }
}
