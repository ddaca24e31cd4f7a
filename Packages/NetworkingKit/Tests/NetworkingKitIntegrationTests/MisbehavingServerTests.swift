import Foundation
import HTTPTypes
import NetworkingKit
import NetworkingKitAsyncHTTPClient
import NetworkingKitTestServer
import NetworkingKitTestSupport
import NetworkingKitTesting
import Synchronization
import Testing

typealias Profile = SampleProfile
typealias Fix = SampleFix
typealias FixBatch = SampleFixBatch
typealias API = SampleAPI
let profileJSON = SampleProfile.json

/// Starts a server with `handler`, a client over AsyncHTTPClient with a test clock and a seeded random source, runs
/// `body`, and shuts both down.
func withServer(
  credentials: (any CredentialsProvider)? = nil,
  configure: (inout NetworkClient.Configuration) -> Void = { _ in },
  handler: @escaping @Sendable (MisbehavingServer.Request) -> MisbehavingServer.Action,
  _ body: (MisbehavingServer, NetworkClient, TestClock, AttemptRecorder) async throws -> Void
) async throws {
  let server = try await MisbehavingServer.start(handler: handler)
  let transport = AsyncHTTPClientTransport()
  let clock = TestClock()
  let events = AttemptRecorder()
  var configuration = NetworkClient.Configuration()
  configuration.clock = clock
  configuration.random = .constant(0.5)
  configuration.onAttempt = events.record
  configure(&configuration)
  let client = try NetworkClient(
    baseURL: server.baseURL, transport: transport, credentials: credentials, configuration: configuration)
  do {
    try await body(server, client, clock, events)
  } catch {
    try await transport.shutdown()
    try await server.shutdown()
    throw error
  }
  try await transport.shutdown()
  try await server.shutdown()
}

@Suite struct MisbehavingServerTests {
  @Test func serviceUnavailableWithRetryAfterSecondsAndDate() async throws {
    try await withServer { request in
      switch request.index {
      case 0: return .status(503, headers: [("Retry-After", "2")])
      case 1:
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return .status(503, headers: [("Retry-After", formatter.string(from: Date().addingTimeInterval(4)))])
      default: return .json(profileJSON)
      }
    } _: { server, client, clock, events in
      let profile = try await client.send(API.me)
      #expect(profile.name == "Anna")
      #expect(server.requests(for: "/v1/me").count == 3)
      let sleeps = clock.sleeps
      #expect(sleeps.count == 2)
      #expect(sleeps.first == .seconds(2))
      #expect(sleeps.last.map { $0 >= .seconds(3) && $0 <= .seconds(4) } == true)
      #expect(events.events.map(\.outcome) == [.status(503), .status(503), .status(200)])
    }
  }

  @Test func tooManyRequestsIsRetriedAfterBackoff() async throws {
    try await withServer { request in
      request.index == 0 ? .status(429) : .json(profileJSON)
    } _: { server, client, clock, _ in
      _ = try await client.send(API.me)
      #expect(server.requests.count == 2)
      #expect(clock.sleeps == [.milliseconds(250)])
    }
  }

  @Test func connectionResetHalfwayThroughTheResponseIsRetried() async throws {
    try await withServer { request in
      request.index == 0
        ? .resetMidBody(status: 200, declaredLength: 1000, partialBody: Array(profileJSON.utf8)) : .json(profileJSON)
    } _: { server, client, _, events in
      let profile = try await client.send(API.me)
      #expect(profile.id == "42")
      #expect(server.requests.count == 2)
      #expect(events.events.first?.outcome == .transport(.connectionLost))
    }
  }

  @Test func slowResponseTimesOutAndIsRetried() async throws {
    try await withServer(configure: { $0.attemptTimeout = .milliseconds(300) }) { request in
      request.index == 0 ? .delayed(.seconds(3), .json(profileJSON)) : .json(profileJSON)
    } _: { server, client, _, events in
      let started = ContinuousClock.now
      let profile = try await client.send(API.me)
      #expect(profile.id == "42")
      #expect(ContinuousClock.now - started < .seconds(2))
      #expect(server.requests.count == 2)
      #expect(events.events.first?.outcome == .transport(.timedOut))
    }
  }

  @Test func cancellationStopsAnAttemptAtOnce() async throws {
    try await withServer { _ in
      .delayed(.seconds(10), .json(profileJSON))
    } _: { server, client, _, _ in
      let task = Task { try await client.send(API.me) }
      while server.requests.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
      let started = ContinuousClock.now
      task.cancel()
      await #expect(throws: CancellationError.self) { try await task.value }
      #expect(ContinuousClock.now - started < .seconds(1))
      #expect(server.requests.count == 1)
    }
  }

  @Test func gzipResponseIsDecodedAndABombIsRefused() async throws {
    let compressed = try Gzip.compress(Data(profileJSON.utf8))
    let bomb = try Gzip.compress(Data(count: 20_000_000))
    try await withServer(configure: { $0.maxResponseBytes = 1_000_000 }) { request in
      let body = request.path == "/v1/me" ? compressed : bomb
      return .respond(
        status: 200, headers: [("Content-Type", "application/json"), ("Content-Encoding", "gzip")], body: Array(body))
    } _: { server, client, _, _ in
      let profile = try await client.send(API.me)
      #expect(profile == Profile(id: "42", name: "Anna"))
      #expect(server.requests.first?.header("Accept-Encoding") == "gzip")
      let bombEndpoint = Endpoint<Void, NoBody, Profile>(.get, "/bomb")
      let error = await #expect(throws: NetworkingError.self) { try await client.send(bombEndpoint) }
      guard case .responseTooLarge = error else {
        Issue.record("got \(String(describing: error))")
        return
      }
    }
  }

  @Test func unauthorizedWithTenConcurrentRequestsRefreshesOnce() async throws {
    let credentials = BearerTokenCredentials(token: "stale") { _ in
      try await Task.sleep(for: .milliseconds(100))
      return "fresh"
    }
    try await withServer(credentials: credentials) { request in
      request.header("Authorization") == "Bearer fresh"
        ? .json(profileJSON)
        : .json(#"{"error":{"code":"token_invalid","message":"Token expired"}}"#, status: 401)
    } _: { server, client, _, _ in
      let names = try await withThrowingTaskGroup(of: String.self) { group in
        for _ in 0..<10 { group.addTask { try await client.send(API.me).name } }
        return try await group.reduce(into: []) { $0.append($1) }
      }
      #expect(names == Array(repeating: "Anna", count: 10))
      #expect(await credentials.refreshCount == 1)
      let auth = server.requests.map { $0.header("Authorization") }
      #expect(auth.filter { $0 == "Bearer stale" }.count == 10)
      #expect(auth.filter { $0 == "Bearer fresh" }.count == 10)
    }
  }

  @Test func postWithIdempotencyKeyKeepsTheKeyAndCompressesTheBody() async throws {
    let batch = FixBatch(deviceId: "d1", fixes: Array(repeating: Fix(lat: 52.52, lon: 13.405), count: 400))
    try await withServer { request in
      request.index < 2 ? .status(503) : .json(#"{"accepted":400}"#)
    } _: { server, client, clock, _ in
      let receipt = try await client.send(API.postFixes, body: batch)
      #expect(receipt.accepted == 400)
      let requests = server.requests
      #expect(requests.count == 3)
      let keys = Set(requests.map { $0.header("Idempotency-Key") })
      #expect(keys.count == 1 && keys.first! != nil)
      #expect(clock.sleeps == [.milliseconds(250), .milliseconds(500)])
      let last = try #require(requests.last)
      #expect(last.header("Content-Encoding") == "gzip")
      let body = try Gzip.decompress(Data(last.body), limit: 1 << 20)
      #expect(try JSONDecoder().decode(FixBatch.self, from: body) == batch)
    }
  }

  @Test func postWithoutKeyIsNotRetried() async throws {
    try await withServer { _ in
      .json(#"{"error":{"code":"unavailable","message":"down"}}"#, status: 503)
    } _: { server, client, clock, _ in
      let error = await #expect(throws: NetworkingError.self) {
        try await client.send(API.plainPost, body: FixBatch(deviceId: "d", fixes: []))
      }
      #expect(error?.serverError?.code == "unavailable")
      #expect(server.requests.count == 1)
      #expect(server.requests.first?.header("Idempotency-Key") == nil)
      #expect(clock.sleeps.isEmpty)
    }
  }

  @Test func retryBudgetRunsOutAndFailsFast() async throws {
    let budgets = RetryBudgets(configuration: RetryBudgetConfiguration(capacity: 14))
    try await withServer(configure: { $0.retryBudgets = budgets }) { _ in
      .status(503)
    } _: { server, client, _, _ in
      await #expect(throws: NetworkingError.self) { try await client.send(API.me) }
      #expect(server.requests.count == 3)
      let error = await #expect(throws: NetworkingError.self) { try await client.send(API.me) }
      guard case .retryBudgetExhausted(_, let last) = error else {
        Issue.record("got \(String(describing: error))")
        return
      }
      #expect(last.serverError?.status == .serviceUnavailable)
      #expect(server.requests.count == 4)
    }
  }

  @Test func refusedConnectionIsReportedAtOnce() async throws {
    let closed = try await MisbehavingServer.start { _ in .status(200) }
    let url = closed.baseURL
    try await closed.shutdown()
    let transport = AsyncHTTPClientTransport()
    let clock = TestClock()
    var configuration = NetworkClient.Configuration()
    configuration.clock = clock
    let client = try NetworkClient(baseURL: url, transport: transport, configuration: configuration)
    let started = ContinuousClock.now
    let error = await #expect(throws: NetworkingError.self) { try await client.send(API.me) }
    try await transport.shutdown()
    #expect(ContinuousClock.now - started < .seconds(2))
    #expect(error?.transportError?.kind == .connectionRefused)
    #expect(clock.sleeps.isEmpty)
  }
}

@Suite struct URLSessionTransportTests {
  @Test func getsAndClassifiesRefusal() async throws {
    let compressed = try Array(Gzip.compress(Data(profileJSON.utf8)))
    let server = try await MisbehavingServer.start { request in
      if request.path == "/gzip" {
        return .respond(status: 200, headers: [("Content-Encoding", "gzip")], body: compressed)
      }
      return request.index == 0 ? .status(503) : .json(profileJSON)
    }
    var configuration = NetworkClient.Configuration()
    configuration.clock = TestClock()
    let client = try NetworkClient(
      baseURL: server.baseURL, transport: URLSessionTransport(), configuration: configuration)
    #expect(try await client.send(API.me).name == "Anna")
    #expect(server.requests.count == 2)
    let gzipped = try await client.send(Endpoint<Void, NoBody, Profile>(.get, "/gzip"))
    #expect(gzipped.name == "Anna")
    try await server.shutdown()

    let closed = try await MisbehavingServer.start { _ in .status(200) }
    try await closed.shutdown()
    let refused = try NetworkClient(
      baseURL: closed.baseURL, transport: URLSessionTransport(), configuration: configuration)
    let error = await #expect(throws: NetworkingError.self) { try await refused.send(API.me) }
    #expect(error?.transportError?.isUnreachable == true)
  }
}

extension URLSessionTransportTests {
  /// A gzip bomb with `Content-Encoding: gzip`: URLSession inflates it itself, so the transport must count the decoded
  /// bytes as they arrive and cancel at the limit. 1 GiB (about 1 MB on the wire) on Apple platforms. On Linux,
  /// FoundationNetworking has libcurl inflate everything it has read before a cancel can take effect (and queues
  /// the chunks for the delegate), so memory and time are not bounded there: the bomb is 128 MiB by default
  /// (`NK_BOMB_MIB` overrides) so as not to starve the timing tests running alongside, and the bounds are known issues.
  @Test func gzipBombIsCutOffAtTheLimitQuicklyWithBoundedMemory() async throws {
    #if canImport(FoundationNetworking)
      let megabytes = ProcessInfo.processInfo.environment["NK_BOMB_MIB"].flatMap { Int($0) } ?? 128
    #else
      let megabytes = 1024
    #endif
    let bomb = GzipBomb.make(megabytes: megabytes)
    let plain = [UInt8](repeating: 0x20, count: 3 << 20)
    let server = try await MisbehavingServer.start { request in
      if request.path == "/plain" { return .respond(status: 200, headers: [], body: plain) }
      return .respond(
        status: 200, headers: [("Content-Type", "application/json"), ("Content-Encoding", "gzip")], body: bomb)
    }
    let limit = 2 << 20
    var configuration = NetworkClient.Configuration()
    configuration.clock = TestClock()
    configuration.maxResponseBytes = limit
    let transport = URLSessionTransport()
    let client = try NetworkClient(baseURL: server.baseURL, transport: transport, configuration: configuration)
    let sampler = MemorySampler()
    let baseline = MemorySampler.residentBytes()
    let sampling = Task { await sampler.run() }
    let started = ContinuousClock.now
    let error = await #expect(throws: NetworkingError.self) {
      try await client.send(Endpoint<Void, NoBody, Profile>(.get, "/bomb"))
    }
    let elapsed = ContinuousClock.now - started
    sampling.cancel()
    _ = await sampling.value
    guard case .responseTooLarge(let reported) = error else {
      Issue.record("got \(String(describing: error))")
      try await server.shutdown()
      return
    }
    #expect(reported == limit)
    let bounds = {
      #expect(elapsed < .seconds(5))
      if let baseline, let peak = sampler.peak {
        // Inflating all of it would take the whole bomb; other tests in this process allocate too, hence the margin.
        #expect(peak - baseline < 64 << 20, "resident memory grew by \((peak - baseline) >> 20) MiB")
      }
    }
    #if canImport(FoundationNetworking)
      withKnownIssue("libcurl inflates what it has read before the cancel takes effect", isIntermittent: true) {
        bounds()
      }
    #else
      bounds()
    #endif
    #expect(server.requests(for: "/bomb").count == 1)

    // The transport alone throws `ResponseTooLargeError`, for an uncompressed body too.
    let head = HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:\(server.port)", path: "/plain")
    await #expect(throws: ResponseTooLargeError(limit: limit)) {
      try await transport.send(
        head, body: nil, options: TransportOptions(timeout: .seconds(20), maxResponseBytes: limit))
    }
    let whole = try await transport.send(
      head, body: nil, options: TransportOptions(timeout: .seconds(20), maxResponseBytes: plain.count))
    #expect(whole.body.count == plain.count)
    try await server.shutdown()
  }

  @Test func cancellationCancelsTheURLSessionTask() async throws {
    let server = try await MisbehavingServer.start { _ in .delayed(.seconds(10), .json(profileJSON)) }
    var configuration = NetworkClient.Configuration()
    configuration.clock = TestClock()
    let client = try NetworkClient(
      baseURL: server.baseURL, transport: URLSessionTransport(), configuration: configuration)
    let task = Task { try await client.send(API.me) }
    while server.requests.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
    let started = ContinuousClock.now
    task.cancel()
    await #expect(throws: CancellationError.self) { try await task.value }
    #expect(ContinuousClock.now - started < .seconds(2))
    #expect(server.requests.count == 1)
    try await server.shutdown()
  }
}

/// Samples this process's resident memory (Linux `/proc/self/status`) every few milliseconds, keeping the peak.
final class MemorySampler: Sendable {
  private let maximum = Mutex<Int?>(nil)

  var peak: Int? { maximum.withLock { $0 } }

  private func record(_ resident: Int) {
    maximum.withLock { $0 = max($0 ?? 0, resident) }
  }

  func run() async {
    while !Task.isCancelled {
      if let resident = Self.residentBytes() { record(resident) }
      try? await Task.sleep(for: .milliseconds(2))
    }
  }

  /// `VmRSS` in bytes, or `nil` where there is no `/proc`.
  static func residentBytes() -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
    for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
      let kilobytes = line.split(separator: " ").dropFirst().first.flatMap { Int($0) }
      return kilobytes.map { $0 * 1024 }
    }
    return nil
  }
}
