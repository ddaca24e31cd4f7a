// The server benchmark (`meridian-server-bench`): the real server (a SQLite file or a PostgreSQL database, group
// commit, live hub) on a loopback port, loaded by 32 concurrent clients through the shared API client, next to a
// trivial Hummingbird route taking the same requests in the same run (the framework's ceiling), which the single-fix
// load takes turns with. On PostgreSQL a second node on the same database measures live updates across nodes.
// Prints `<name> <value> <unit>` lines.
//
//   swift run -c release meridian-server-bench [--engine sqlite|postgres] [seconds-per-phase]
//   BENCH_PHASES=geofences swift run -c release meridian-server-bench   # one phase (names: BenchmarkPhase)
import AsyncHTTPClient
import DomainKit
import Foundation
import GeoKit
import Hummingbird
import Logging
import MeridianAPI
import MeridianServer
import MeridianStore
import NIOCore
import NetworkingKit
import NetworkingKitAsyncHTTPClient
import RealtimeKit
import RealtimeKitWebSocketClient
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// The values of the unlabelled samples `names` in the server's `/metrics` (0 for one not there yet).
func serverMetrics(_ client: NetworkClient, _ names: [String]) async throws -> [Double] {
  let text = String(decoding: try await client.send(API.metrics), as: UTF8.self)
  let lines = text.split(separator: "\n")
  return names.map { name in
    lines.first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ")[1]) } ?? 0
  }
}

/// Group commits so far and the requests they held, from the server's `/metrics`.
func commitCounts(_ client: NetworkClient) async throws -> (commits: Double, requests: Double) {
  let values = try await serverMetrics(
    client, ["meridian_commit_requests_count_count", "meridian_commit_requests_count_sum"])
  return (values[0], values[1])
}

/// Concurrent clients in every HTTP phase.
let clients = 32

/// What a load measured: requests completed, the time and process CPU they took, and their latencies.
struct LoadFigures {
  var count = 0
  var seconds = 0.0
  var cpuSeconds = 0.0
  var latencies: [Duration] = []

  var requestsPerSecond: Double { Double(count) / max(seconds, 1e-9) }
  /// Process CPU (client and server together) per request.
  var cpuMicrosecondsPerRequest: Double { cpuSeconds * 1e6 / Double(max(count, 1)) }
  /// How many cores the process kept busy on average (2 is all of this box): what is missing waited on something.
  var busyCores: Double { cpuSeconds / max(seconds, 1e-9) }
  /// The latencies, sorted, for ``quantile(_:_:)``.
  var sortedLatencies: [Duration] { latencies.sorted() }

  static func + (lhs: LoadFigures, rhs: LoadFigures) -> LoadFigures {
    LoadFigures(
      count: lhs.count + rhs.count, seconds: lhs.seconds + rhs.seconds, cpuSeconds: lhs.cpuSeconds + rhs.cpuSeconds,
      latencies: lhs.latencies + rhs.latencies)
  }
}

/// Runs `operation(task, iteration)` on `clients` tasks for `phase`; iterations count from `firstIteration`.
func load(for phase: Duration, firstIteration: Int = 0, _ operation: @escaping LoadOperation) async throws
  -> LoadFigures
{
  let end = ContinuousClock.now + phase
  return try await load(firstIteration: firstIteration, while: { ContinuousClock.now < end }, operation)
}

/// Runs `operation` as ``load(for:firstIteration:_:)`` does, for as long as `body` runs; answers `body`'s result and
/// the load's figures.
func load<Result: Sendable>(
  firstIteration: Int, _ operation: @escaping LoadOperation, during body: () async throws -> Result
) async throws -> (Result, LoadFigures) {
  let running = Running()
  let loading = Task { try await load(firstIteration: firstIteration, while: running.get, operation) }
  do {
    let result = try await body()
    running.stop()
    return (result, try await loading.value)
  } catch {
    running.stop()
    _ = try? await loading.value
    throw error
  }
}

/// Whether a load goes on (``load(firstIteration:_:during:)``).
private final class Running: Sendable {
  private let value = Mutex(true)
  @Sendable func get() -> Bool { value.withLock { $0 } }
  func stop() { value.withLock { $0 = false } }
}

/// Runs `operation(task, iteration)` on `clients` tasks while `going()`; iterations count from `firstIteration`.
private func load(
  firstIteration: Int, while going: @escaping @Sendable () -> Bool, _ operation: @escaping LoadOperation
) async throws -> LoadFigures {
  let clock = ContinuousClock()
  let start = clock.now
  let cpuAtStart = processCPUSeconds()
  let latencies = try await withThrowingTaskGroup(of: [Duration].self) { group in
    for task in 0..<clients {
      group.addTask {
        var latencies: [Duration] = []
        var iteration = firstIteration
        while going() {
          let begin = clock.now
          try await operation(task, iteration)
          latencies.append(clock.now - begin)
          iteration += 1
        }
        return latencies
      }
    }
    return try await group.reduce(into: []) { $0 += $1 }
  }
  return LoadFigures(
    count: latencies.count, seconds: seconds(clock.now - start), cpuSeconds: processCPUSeconds() - cpuAtStart,
    latencies: latencies)
}

/// One request of a load: `(task, iteration)`.
typealias LoadOperation = @Sendable (Int, Int) async throws -> Void

/// What the single-fix comparison measured: the single-fix load, the trivial route taking the same requests (the
/// framework's ceiling) and `GET /ping`.
struct Comparison {
  var single = LoadFigures()
  var ceiling = LoadFigures()
  var ping = LoadFigures()
}

/// Runs the three loads of a ``Comparison`` for `phase` each, in `rounds` slices taking turns, so that a change in
/// the machine's speed during the run (a shared VM's drifts by several percent from second to second) weighs on all of
/// them alike; their ratios are what the benchmark compares. Before each slice the server gets `settle` untimed to
/// finish what the previous slice left behind (the checkpointer's copying, the live fan-out), so no load is charged
/// with another's work. Every slice's iterations start a million after the previous slice's, so no two slices send
/// the same fix or key.
func compare(
  for phase: Duration, rounds: Int = 5, settle: Duration = .milliseconds(200), single: @escaping LoadOperation,
  ceiling: @escaping LoadOperation, ping: @escaping LoadOperation
) async throws -> Comparison {
  let figures = try await takingTurns(for: phase, rounds: rounds, settle: settle, [single, ceiling, ping])
  return Comparison(single: figures[0], ceiling: figures[1], ping: figures[2])
}

/// Runs `operations` for `phase` each, in `rounds` slices taking turns (as ``compare(for:rounds:settle:single:ceiling:ping:)``
/// does), starting the slices' iterations at `firstSlice` millions; answers each operation's figures.
func takingTurns(
  for phase: Duration, rounds: Int = 5, settle: Duration = .milliseconds(200), firstSlice: Int = 0,
  _ operations: [LoadOperation]
) async throws -> [LoadFigures] {
  var figures = [LoadFigures](repeating: LoadFigures(), count: operations.count)
  var slice = firstSlice
  for _ in 0..<rounds {
    for (index, operation) in operations.enumerated() {
      try await Task.sleep(for: settle)
      figures[index] =
        figures[index] + (try await load(for: phase / rounds, firstIteration: slice * 1_000_000, operation))
      slice += 1
    }
  }
  return figures
}

func makeClient(
  port: Int, token: String?, transport: AsyncHTTPClientTransport, configuration: NetworkClient.Configuration
) throws -> NetworkClient {
  try NetworkClient(
    baseURL: URL(string: "http://127.0.0.1:\(port)")!, transport: transport,
    credentials: token.map { token in BearerTokenCredentials(token: token) { _ in nil } },
    configuration: configuration)
}

/// The fix the benchmark sends for `timestamp`; its place moves with the timestamp's last digits.
func fix(_ timestamp: Int64) throws -> LocationFix {
  let step = Double(timestamp % 10_000) * 0.00001
  return try LocationFix(
    timestamp: timestamp, latitude: 50.45 + step, longitude: 30.52 + step, horizontalAccuracy: 8, kind: .movement)
}

/// `POST /v1/fixes` (with an `Idempotency-Key`, as the tracker sends it) taking a body the load generator formats
/// itself, as a device's firmware would: the clients share the server's 2 cores, and encoding with `JSONEncoder`
/// would spend a sixth of them on the client side.
let postFormattedFixes = Endpoint<Void, Data, FixReceipt>(
  .post, PathTemplate(stringLiteral: API.postFixes.pathTemplate), body: .raw(contentType: "application/json"),
  response: .json(), idempotency: .key)

/// The JSON of a `FixBatch` of ``fix(_:)``s at `timestamps`, the same document `JSONEncoder` writes with sorted keys.
func formattedBatch(device: String, timestamps: some Sequence<Int64>) -> Data {
  var text = #"{"deviceId":""# + device + #"","fixes":["#
  var first = true
  for timestamp in timestamps {
    let step = Double(timestamp % 10_000) * 0.00001
    if !first { text += "," }
    first = false
    text += #"{"horizontalAccuracy":8,"kind":"movement","latitude":\#(50.45 + step),"longitude":\#(30.52 + step),"#
    text += #""timestamp":\#(timestamp)}"#
  }
  text += "]}"
  return Data(text.utf8)
}

/// A position a live watcher received: the timestamp of its first fix and when it arrived.
typealias LiveArrival = (timestamp: Int64, at: ContinuousClock.Instant)

/// Live latency over `/ws`: a watcher signed in with `token` on the server at `port` subscribes to `user`'s channel,
/// then ``liveLatencies(arrivals:posting:device:base:events:)`` posts and times.
func liveLatencies(
  watching port: Int, token: String, user: UserID, posting api: NetworkClient, device: String, base: Int64,
  events: Int = 500
) async throws -> (latencies: [Duration], lost: Int) {
  let watcher = RealtimeClient(
    transport: WebSocketRealtimeTransport(url: "ws://127.0.0.1:\(port)/ws"),
    configuration: RealtimeClientConfiguration(clientName: "meridian-server-bench", clientVersion: "1") { token })
  let (arrivals, arrived) = AsyncStream<LiveArrival>.makeStream()
  let forwarding = Task {
    for await item in watcher.events {
      guard case .event(let event) = item,
        let location = try? event.payload.decode(as: LiveLocation.self), let first = location.fixes.first
      else { continue }
      arrived.yield((first.timestamp, .now))
    }
    arrived.finish()
  }
  await watcher.start()
  defer { forwarding.cancel() }
  await watcher.subscribe(ChannelName.user(user.rawValue)!)
  do {
    try await Task.sleep(for: .milliseconds(300))  // the client API has no signal for the subscription's answer
    let result = try await liveLatencies(
      arrivals: arrivals, posting: api, device: device, base: base, events: events)
    await watcher.stop()
    return result
  } catch {
    await watcher.stop()
    throw error
  }
}

/// Live latency: `events` single fixes of `device` (timestamps from `base`, a second apart) are posted through `api`,
/// 2 ms apart, to a watcher already listening whose positions arrive in `arrivals`; each latency runs from just
/// before the POST to the arrival of its fix. Events still missing 15 s after the last POST count as lost.
func liveLatencies(
  arrivals: AsyncStream<LiveArrival>, posting api: NetworkClient, device: String, base: Int64, events: Int = 500
) async throws -> (latencies: [Duration], lost: Int) {
  let sendTimes = SendTimes()
  let received = Task {
    var latencies: [Duration] = []
    for await arrival in arrivals {  // ends when cancelled (a failed post, the watchdog)
      guard let sent = await sendTimes.time(of: arrival.timestamp) else { continue }
      latencies.append(arrival.at - sent)
      if latencies.count == events { break }
    }
    return latencies.sorted()
  }
  do {
    for index in 0..<events {
      let timestamp = base + Int64(index) * 1000
      await sendTimes.mark(timestamp)
      _ = try await api.send(API.postFixes, body: FixBatch(deviceId: DeviceID(device), fixes: [try fix(timestamp)]))
      try await Task.sleep(for: .milliseconds(2))
    }
  } catch {
    received.cancel()
    throw error
  }
  let watchdog = Task {
    try await Task.sleep(for: .seconds(15))
    received.cancel()  // a lost event must not hang the benchmark; the quantiles then cover what arrived
  }
  let latencies = await received.value
  watchdog.cancel()
  return (latencies, events - latencies.count)
}

actor SendTimes {
  var sent: [Int64: ContinuousClock.Instant] = [:]
  func mark(_ timestamp: Int64) { sent[timestamp] = .now }
  func time(of timestamp: Int64) -> ContinuousClock.Instant? { sent[timestamp] }
}

/// Gives the uploading account what a person using precision per audience and privacy zones has (issue 39 §2, §3),
/// so that every ingest phase pays for them: three privacy zones away from the fixes (one storing nothing, so each fix
/// is tested against the zones on arrival; none holds a fix, so every upload is still stored) and `viewer` in a group
/// seeing the account at about 1 km (a second view of each batch in the live fan-out).
func usePrivacySettings(_ api: NetworkClient, viewer: UserID) async throws {
  for (index, store) in [true, true, false].enumerated() {
    _ = try await api.send(
      API.createPrivacyZone,
      body: PrivacyZoneBody(
        name: "Zone \(index)", latitude: 50.40 - Double(index) * 0.01, longitude: 30.40, radius: 300, store: store))
  }
  let group = try await api.send(
    API.createGroup,
    body: NewGroup(
      name: "Approximately", visibility: GroupVisibility(location: true, fields: [], precision: .approximate)))
  _ = try await api.send(API.addMember, parameters: GroupMemberRef(groupID: group.id, userID: viewer))
}

/// A phase of the run, as `BENCH_PHASES` names it (`BENCH_PHASES=geofences,places`: only those; all when unset).
/// The server, its accounts and the trivial route start whatever the phases chosen.
enum BenchmarkPhase: String, CaseIterable {
  case gazetteer, ingest, mqtt, live
  case crossNode = "cross_node"
  case venues, polls, places, geofences, proximity, advertiser
  case historyMap = "history_map"
  case historyImport = "import"
}

/// The phases a run does.
struct BenchmarkPhases {
  let chosen: Set<BenchmarkPhase>

  /// Reads `BENCH_PHASES`: comma-separated names of ``BenchmarkPhase``, every phase when unset or empty.
  /// - Throws: ``BenchmarkUsageError`` naming the phases there are, for a name that is not one.
  static func fromEnvironment() throws -> BenchmarkPhases {
    let names = (ProcessInfo.processInfo.environment["BENCH_PHASES"] ?? "").split(separator: ",").map {
      $0.trimmingCharacters(in: .whitespaces)
    }.filter { !$0.isEmpty }
    guard !names.isEmpty else { return BenchmarkPhases(chosen: Set(BenchmarkPhase.allCases)) }
    return BenchmarkPhases(
      chosen: Set(
        try names.map { name in
          guard let phase = BenchmarkPhase(rawValue: name) else {
            throw BenchmarkUsageError(
              description: "BENCH_PHASES: no phase \(name); there are "
                + BenchmarkPhase.allCases.map(\.rawValue).joined(separator: ", "))
          }
          return phase
        }))
  }

  /// Whether `phase` is one of the run's.
  func runs(_ phase: BenchmarkPhase) -> Bool { chosen.contains(phase) }
}

/// The whole run, phase by phase.
/// `meridian-server-bench`: ingest (single fixes and batches of 100), the framework's ceiling, live latency and the
/// 1 km venue query, printed as `<name> <value> <unit>` lines.
public enum ServerBenchmark {
  /// The command line's usage.
  static let usage = "usage: meridian-server-bench [--engine sqlite|postgres] [seconds-per-phase > 0]"

  /// Runs every phase; `arguments` are the command line's (`[--engine sqlite|postgres] [seconds-per-phase]`, SQLite
  /// and 5 seconds by default).
  /// - Throws: ``BenchmarkUsageError`` for a bad command line.
  public static func run(arguments: [String]) async throws {
    var arguments = arguments[...]
    var engine = BenchmarkEngine.sqlite
    if arguments.first == "--engine" {
      guard arguments.count >= 2, let chosen = BenchmarkEngine(rawValue: arguments[arguments.startIndex + 1]) else {
        throw BenchmarkUsageError(description: usage)
      }
      engine = chosen
      arguments = arguments.dropFirst(2)
    }
    guard arguments.count <= 1, let phaseSeconds = arguments.first.map(Double.init) ?? 5, phaseSeconds > 0 else {
      throw BenchmarkUsageError(description: usage)
    }
    let phase = Duration.milliseconds(Int(phaseSeconds * 1000))
    let phases = try BenchmarkPhases.fromEnvironment()
    if phases.runs(.gazetteer) {
      gazetteerFigures()  // GazetteerBenchmark.swift: in memory, before the server starts
    }

    // MARK: The server and the clients

    var logger = Logger(label: "meridian-server-bench")
    logger.logLevel = .error
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("meridian-server-bench-\(getpid())")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }

    let database = try BenchmarkDatabase.make(engine, directory: directory)
    defer { database.remove() }
    FileHandle.standardError.write(Data("meridian-server-bench: \(engine.rawValue), \(database.description)\n".utf8))

    var configuration = ServerConfiguration()
    configuration.port = 0
    database.configure(&configuration)
    configuration.bcryptCost = 4
    // The benchmark measures the server's speed, not its per-account limits: 32 clients of a few accounts send far
    // more than any account may. It reads the commit counts from /metrics without the admin token.
    configuration.limits = .unlimited
    configuration.metricsAccess = .public
    configuration.maxHistoryImportBytes = 64 << 30  // the import phase sends 1 GiB
    // The operators' setting, to compare: MERIDIAN_FIX_COMMITS_IN_FLIGHT=1 … 64.
    configuration.fixCommitsInFlight = ProcessInfo.processInfo.environment["MERIDIAN_FIX_COMMITS_IN_FLIGHT"]
      .flatMap(Int.init).map { min(max($0, 1), 64) }
    let server = try await RunningServer.start(configuration: configuration, logger: logger)
    let port = server.port

    var httpConfiguration = AsyncHTTPClientTransport.makeConfiguration()
    httpConfiguration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = clients
    let httpClient = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: httpConfiguration)
    let transport = AsyncHTTPClientTransport(client: httpClient)
    var clientConfiguration = NetworkClient.Configuration()
    clientConfiguration.retryBudgets = nil
    clientConfiguration.compressionThreshold = nil

    let session = try await makeClient(port: port, token: nil, transport: transport, configuration: clientConfiguration)
      .send(
        API.register, body: EmailCredentials(email: "bench@example.com", password: "benchmark password"))
    let api = try makeClient(port: port, token: session.token, transport: transport, configuration: clientConfiguration)
    let viewer = try await makeClient(port: port, token: nil, transport: transport, configuration: clientConfiguration)
      .send(API.register, body: EmailCredentials(email: "viewer@example.com", password: "benchmark password"))
    try await usePrivacySettings(api, viewer: viewer.userId)

    // MARK: The framework's ceiling: a trivial route taking the same requests, same clients, same run

    // It answers every single-fix upload with the same receipt and does nothing else, not even read the body
    // (Hummingbird drains it after the answer); `GET /ping`, a request without a body, header fields or an answer to
    // decode, shows what the framework and the clients cost at their lightest.
    let trivialRouter = Router()
    let trivialReceipt = FixReceipt(accepted: 1, duplicates: 0).commonFormJSON
    trivialRouter.post(RouterPath(API.postFixes.pathTemplate)) { _, _ in
      Response(
        status: .ok, headers: [.contentType: "application/json"],
        body: ResponseBody(byteBuffer: ByteBuffer(bytes: trivialReceipt)))
    }
    trivialRouter.get("/ping") { _, _ in "ok" }
    let ping = Endpoint<Void, NoBody, Data>(.get, "/ping", body: .none, response: .raw, authentication: .none)
    let trivialPorts = AsyncStream.makeStream(of: Int.self)
    var quiet = logger
    quiet.logLevel = .critical  // cancelling the trivial server at the end of its phases is expected
    let trivial = Application(
      router: trivialRouter, configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0)),
      onServerRunning: { trivialPorts.continuation.yield($0.localAddress?.port ?? 0) }, logger: quiet)
    let trivialTask = Task { try await trivial.runService() }
    var trivialIterator = trivialPorts.stream.makeAsyncIterator()
    guard let trivialPort = await trivialIterator.next() else { fatalError("the trivial server did not start") }
    let trivialClient = try makeClient(
      port: trivialPort, token: session.token, transport: transport, configuration: clientConfiguration)

    // MARK: Ingest

    if phases.runs(.ingest) {
      let base: Int64 = 1_700_000_000_000
      let check = try JSONDecoder().decode(
        FixBatch.self, from: formattedBatch(device: "check", timestamps: [base, base + 1]))
      guard check == FixBatch(deviceId: "check", fixes: [try fix(base), try fix(base + 1)]) else {
        fatalError("formattedBatch(device:timestamps:) no longer writes the fixes of fix(_:)")
      }
      /// One single-fix upload per call, through `client`, of device `<devices>-<task>`; the answer must say the fix was
      /// stored (not a duplicate or a replay, which would cost the server less).
      @Sendable func sharedClientUpload(through client: NetworkClient, devices: String = "single") -> LoadOperation {
        { task, iteration in
          let timestamp = base + Int64(iteration) * 1000
          let receipt = try await client.send(
            postFormattedFixes, body: formattedBatch(device: "\(devices)-\(task)", timestamps: [timestamp]))
          guard receipt == FixReceipt(accepted: 1, duplicates: 0) else {
            throw BenchmarkFailure(description: "a single-fix upload answered \(receipt)")
          }
        }
      }
      // Single fixes, the trivial route taking the same requests, and `GET /ping` take turns, five slices each.
      let comparison = try await compare(
        for: phase, single: sharedClientUpload(through: api),
        ceiling: sharedClientUpload(through: trivialClient), ping: { _, _ in _ = try await trivialClient.send(ping) })
      let (single, ceiling, pinged) = (comparison.single, comparison.ceiling, comparison.ping)
      let singleLatencies = single.sortedLatencies
      emit("ingest.single.requests_per_s", single.requestsPerSecond, "requests/s")
      emit("ingest.single.p50_ms", quantile(singleLatencies, 0.5), "ms")
      emit("ingest.single.p99_ms", quantile(singleLatencies, 0.99), "ms")
      emit("ingest.single.cpu_per_request_us", single.cpuMicrosecondsPerRequest, "µs")
      emit("ingest.single.busy_cores", single.busyCores, "cores")
      let commitsAfterSingle = try await commitCounts(api)
      emit(
        "ingest.single.requests_per_commit", commitsAfterSingle.requests / max(commitsAfterSingle.commits, 1),
        "requests")

      // What precision per audience and privacy zones cost (issue 39): the account with them (usePrivacySettings) and
      // one without any take turns with the same single-fix load; slices 20… so that no fix repeats one sent above.
      let plainSession = try await makeClient(
        port: port, token: nil, transport: transport, configuration: clientConfiguration
      ).send(API.register, body: EmailCredentials(email: "plain@example.com", password: "benchmark password"))
      let plainAPI = try makeClient(
        port: port, token: plainSession.token, transport: transport, configuration: clientConfiguration)
      let privacy = try await takingTurns(
        for: phase, firstSlice: 20,
        [sharedClientUpload(through: api), sharedClientUpload(through: plainAPI, devices: "plain")])
      emit("ingest.single.with_privacy.requests_per_s", privacy[0].requestsPerSecond, "requests/s")
      emit("ingest.single.without_privacy.requests_per_s", privacy[1].requestsPerSecond, "requests/s")
      emit("ingest.single.privacy_cost", (1 - privacy[0].requestsPerSecond / privacy[1].requestsPerSecond) * 100, "%")

      let batch = try await load(for: phase) { task, iteration in
        let first = base + Int64(iteration) * 100_000
        let timestamps = (0..<100).lazy.map { first + Int64($0) * 1000 }
        _ = try await api.send(
          postFormattedFixes, body: formattedBatch(device: "batch-\(task)", timestamps: timestamps))
      }
      let batchLatencies = batch.sortedLatencies
      emit("ingest.batch100.fixes_per_s", batch.requestsPerSecond * 100, "fixes/s")
      emit("ingest.batch100.p50_ms", quantile(batchLatencies, 0.5), "ms")
      emit("ingest.batch100.p99_ms", quantile(batchLatencies, 0.99), "ms")
      emit("ingest.batch100.cpu_per_request_us", batch.cpuMicrosecondsPerRequest, "µs")
      let commitsAfterBatch = try await commitCounts(api)
      emit(
        "ingest.batch100.requests_per_commit",
        (commitsAfterBatch.requests - commitsAfterSingle.requests)
          / max(commitsAfterBatch.commits - commitsAfterSingle.commits, 1), "requests")

      // MARK: The ceiling's figures

      emit("ceiling.requests_per_s", ceiling.requestsPerSecond, "requests/s")
      emit("ceiling.p99_ms", quantile(ceiling.sortedLatencies, 0.99), "ms")
      emit("ceiling.cpu_per_request_us", ceiling.cpuMicrosecondsPerRequest, "µs")
      emit("ceiling.busy_cores", ceiling.busyCores, "cores")
      emit("ingest.single.share_of_ceiling", single.requestsPerSecond / ceiling.requestsPerSecond * 100, "%")
      emit("ping.requests_per_s", pinged.requestsPerSecond, "requests/s")
      emit("ping.p99_ms", quantile(pinged.sortedLatencies, 0.99), "ms")
      emit("ping.cpu_per_request_us", pinged.cpuMicrosecondsPerRequest, "µs")
      emit("ping.busy_cores", pinged.busyCores, "cores")
      emit("ingest.single.share_of_ping", single.requestsPerSecond / pinged.requestsPerSecond * 100, "%")

      // MARK: The same comparison with a load generator that costs almost nothing: the server's own share

      var leanIngest: [LeanHTTPConnection] = []
      var leanTrivial: [LeanHTTPConnection] = []
      for _ in 0..<clients {
        leanIngest.append(try await LeanHTTPConnection.connect(port: port))
        leanTrivial.append(try await LeanHTTPConnection.connect(port: trivialPort))
      }
      let (ingestConnections, trivialConnections) = (leanIngest, leanTrivial)
      let pingRequest = LeanHTTPConnection.request("GET", "/ping")
      let authorization = "Bearer \(session.token)"
      @Sendable func expectOK(_ status: Int, from route: String) throws {
        guard status == 200 else { throw BenchmarkFailure(description: "\(route) answered \(status)") }
      }
      /// One single-fix upload per call, on `connections[task]`; `name` says where in a failure.
      @Sendable func leanUpload(on connections: [LeanHTTPConnection], name: String) -> LoadOperation {
        { task, iteration in
          let body = formattedBatch(device: "lean-\(task)", timestamps: [base + Int64(iteration) * 1000])
          let request = LeanHTTPConnection.request(
            "POST", API.postFixes.pathTemplate,
            fields: [
              ("Authorization", authorization), ("Idempotency-Key", "lean-\(task)-\(iteration)"),
              ("Content-Type", "application/json"),
            ], body: Array(body))
          try expectOK(try await connections[task].send(request), from: name)
        }
      }
      let leanComparison = try await compare(
        for: phase, single: leanUpload(on: ingestConnections, name: "POST /v1/fixes"),
        ceiling: leanUpload(on: trivialConnections, name: "the trivial POST /v1/fixes"),
        ping: { task, _ in try expectOK(try await trivialConnections[task].send(pingRequest), from: "GET /ping") })
      let (leanSingle, leanCeiling, leanPinged) = (leanComparison.single, leanComparison.ceiling, leanComparison.ping)
      emit("lean_client.ingest.single.requests_per_s", leanSingle.requestsPerSecond, "requests/s")
      emit("lean_client.ingest.single.cpu_per_request_us", leanSingle.cpuMicrosecondsPerRequest, "µs")
      emit("lean_client.ingest.single.busy_cores", leanSingle.busyCores, "cores")
      emit("lean_client.ceiling.requests_per_s", leanCeiling.requestsPerSecond, "requests/s")
      emit("lean_client.ceiling.cpu_per_request_us", leanCeiling.cpuMicrosecondsPerRequest, "µs")
      emit("lean_client.ceiling.busy_cores", leanCeiling.busyCores, "cores")
      emit(
        "lean_client.ingest.single.share_of_ceiling",
        leanSingle.requestsPerSecond / leanCeiling.requestsPerSecond * 100,
        "%")
      emit("lean_client.ping.requests_per_s", leanPinged.requestsPerSecond, "requests/s")
      emit("lean_client.ping.cpu_per_request_us", leanPinged.cpuMicrosecondsPerRequest, "µs")
      emit("lean_client.ping.busy_cores", leanPinged.busyCores, "cores")
      emit(
        "lean_client.ingest.single.share_of_ping", leanSingle.requestsPerSecond / leanPinged.requestsPerSecond * 100,
        "%")
      for connection in leanIngest + leanTrivial { try await connection.close() }
    }
    trivialTask.cancel()

    // MARK: OwnTracks over MQTT, beside ingest.single (MQTTBenchmark.swift: only with BENCH_MQTT=1 and mosquitto)

    if phases.runs(.mqtt) {
      try await mqttFigures(  // MQTTBenchmark.swift: only with BENCH_MQTT=1 and mosquitto installed
        configuration: configuration, directory: directory, transport: transport,
        clientConfiguration: clientConfiguration, logger: logger, phase: phase)
    }

    // MARK: Live: from sending a fix to a subscriber receiving it

    if phases.runs(.live) {
      // Apart from the ingest phases' times, and in the past: the server refuses fixes dated ahead of its clock.
      let live = try await liveLatencies(
        watching: port, token: session.token, user: session.userId, posting: api, device: "live",
        base: 1_750_000_000_000)
      if live.lost > 0 { emit("live.lost_events", Double(live.lost), "events") }
      emit("live.p50_ms", quantile(live.latencies, 0.5), "ms")
      emit("live.p99_ms", quantile(live.latencies, 0.99), "ms")
      // The same over Socket.IO (SocketIOLatency.swift), watched by the viewer, who sees the account approximately
      // (on `seen_approximate:`; the account has privacy zones).
      let socketIO = try await socketIOLiveLatencies(
        watching: port, token: viewer.token, posting: api, device: "live-socketio", base: 1_755_000_000_000)
      if socketIO.lost > 0 { emit("socketio.live.lost_events", Double(socketIO.lost), "events") }
      emit("socketio.live.p50_ms", quantile(socketIO.latencies, 0.5), "ms")
      emit("socketio.live.p99_ms", quantile(socketIO.latencies, 0.99), "ms")
    }

    // MARK: Across nodes: a second server on the same database, fixes posted to the first, the watcher on the second

    if engine == .postgres, phases.runs(.crossNode) {
      let nodeB = try await RunningServer.start(configuration: configuration, logger: logger)
      let crossNode = try await liveLatencies(
        watching: nodeB.port, token: session.token, user: session.userId, posting: api, device: "cross-node",
        base: 1_760_000_000_000)
      if crossNode.lost > 0 { emit("cross_node.live.lost_events", Double(crossNode.lost), "events") }
      emit("cross_node.live.p50_ms", quantile(crossNode.latencies, 0.5), "ms")
      emit("cross_node.live.p99_ms", quantile(crossNode.latencies, 0.99), "ms")
      // The same while the clients upload single fixes to node A as fast as it takes them (issue 35 §6): what a
      // watcher on another node waits while ingest runs. The load is another person's (the viewer's), so that the
      // watcher is sent the watched person's fixes only, as a phone watching a friend would be. Fewer events: each
      // POST waits its turn behind the load.
      let others = try makeClient(
        port: port, token: viewer.token, transport: transport, configuration: clientConfiguration)
      let (loaded, load) = try await load(
        firstIteration: 0,
        { task, iteration in
          let timestamp: Int64 = 1_770_000_000_000 + Int64(iteration) * 1000
          _ = try await others.send(
            postFormattedFixes, body: formattedBatch(device: "cross-load-\(task)", timestamps: [timestamp]))
        },
        during: {
          try await liveLatencies(
            watching: nodeB.port, token: session.token, user: session.userId, posting: api,
            device: "cross-node-loaded", base: 1_765_000_000_000, events: 200)
        })
      if loaded.lost > 0 { emit("cross_node.live_under_ingest.lost_events", Double(loaded.lost), "events") }
      emit("cross_node.live_under_ingest.p50_ms", quantile(loaded.latencies, 0.5), "ms")
      emit("cross_node.live_under_ingest.p99_ms", quantile(loaded.latencies, 0.99), "ms")
      emit("cross_node.live_under_ingest.load_requests_per_s", load.requestsPerSecond, "requests/s")
      try await nodeB.stop()
    }

    // MARK: Radius query: 1 km around random points over 1,000,000 venues

    let opened = try await configuration.database.open(logger: logger)
    let store = opened.store
    if phases.runs(.venues) {
      let venueCount = Int(ProcessInfo.processInfo.environment["BENCH_VENUES"] ?? "") ?? 1_000_000
      let seedStart = ContinuousClock.now
      var random = SystemRandomNumberGenerator()
      let types = ["cafe", "restaurant", "museum", "park", "shop"]
      for chunk in stride(from: 0, to: venueCount, by: 10_000) {
        let records = try (chunk..<min(chunk + 10_000, venueCount)).map { index in
          // Kyiv and around: 1° of latitude × 1.5° of longitude, about 270 venues within 1 km of any point.
          let location = try Coordinate(
            latitude: Double.random(in: 50.0...51.0, using: &random),
            longitude: Double.random(in: 30.0...31.5, using: &random))
          let place = try Place(
            id: PlaceID("venue-\(index)"), kind: .venue, name: LocalizedText(["en": "Venue \(index)"]),
            location: location, venueType: types[index % types.count])
          return try VenueRecord(place: place, rating: RatingAggregate(sum: index % 50, count: index % 11))
        }
        try await store.upsertVenues(records)
      }
      let seeded = ContinuousClock.now - seedStart
      // As `meridian-admin venues import` ends: the planner's statistics at the new size, before the queries.
      try await store.refreshPlannerStatistics(after: .places)
      emit(
        "venues.seed_rows_per_s",
        Double(venueCount) / (seconds(seeded)), "rows/s")
      var queryLatencies: [Duration] = []
      var found = 0
      for _ in 0..<2000 {
        let center = try Coordinate(
          latitude: Double.random(in: 50.1...50.9, using: &random),
          longitude: Double.random(in: 30.1...31.4, using: &random))
        let begin = ContinuousClock.now
        found += try await store.venues(within: 1000, of: center, type: nil).count
        queryLatencies.append(ContinuousClock.now - begin)
      }
      queryLatencies.sort()
      emit("venues.radius_1km.p50_ms", quantile(queryLatencies, 0.5), "ms")
      emit("venues.radius_1km.p99_ms", quantile(queryLatencies, 0.99), "ms")
      emit("venues.radius_1km.matches", Double(found) / 2000, "venues")
    }

    // MARK: Polls: votes on one hot poll, feed pages over 100,000 polls

    if phases.runs(.polls) {
      try await pollFigures(
        port: port, transport: transport, configuration: clientConfiguration, store: store, phase: phase)
    }
    if phases.runs(.places) {
      try await placeFigures(  // PlaceBenchmark.swift
        port: port, transport: transport, configuration: clientConfiguration, store: store, phase: phase)
    }
    if phases.runs(.geofences) {
      // Geofences (GeofenceBenchmark.swift): ingest without any, 10,000 seeded around the fixes and shared with the
      // uploader and 16 drivers, their evaluation, the drivers' tracks checked against a model of the rules
      // (GeofenceTracks.swift), and ingest again with the fences concerning every fix.
      let signUp = try makeClient(port: port, token: nil, transport: transport, configuration: clientConfiguration)
      var drivers: [(session: AuthSession, api: NetworkClient)] = []
      for index in 0..<16 {
        let driver = try await signUp.send(
          API.register, body: EmailCredentials(email: "driver-\(index)@example.com", password: "benchmark password"))
        let api = try makeClient(
          port: port, token: driver.token, transport: transport, configuration: clientConfiguration)
        drivers.append((driver, api))
      }
      let unfenced = try await geofenceIngestFigures(
        api: api, store: store, user: session.userId, phase: phase, start: 1_710_000_000_000, label: "without")
      let fences = try await geofenceFigures(store: store, viewers: [session.userId] + drivers.map(\.session.userId))
      try await geofenceTrackFigures(drivers: drivers, fences: fences, store: store, start: 1_730_000_000_000)
      let fenced = try await geofenceIngestFigures(
        api: api, store: store, user: session.userId, phase: phase, start: 1_720_000_000_000, label: "with")
      emit("ingest.single.with_geofences.share_of_without", fenced.single / unfenced.single * 100, "%")
      emit("ingest.batch100.with_geofences.share_of_without", fenced.batch / unfenced.batch * 100, "%")
    }
    if phases.runs(.proximity) {
      try proximityFigures()  // ProximityBenchmark.swift: people near people, 10,000 in one city
    }
    if phases.runs(.advertiser) {
      try await advertiserFigures(  // AdvertiserBenchmark.swift
        port: port, transport: transport, configuration: clientConfiguration, store: store)
    }
    if phases.runs(.historyMap) {
      try await historyMapFigures(  // HistoryMapBenchmark.swift
        port: port, transport: transport, configuration: clientConfiguration, store: store)
    }

    await opened.close()

    emit("memory.peak_rss_mb", Double(peakResidentBytes()) / 1_048_576, "MiB")
    // Last: it adds millions of fixes that the other phases should not see, and resets the peak memory.
    if phases.runs(.historyImport) {
      try await historyImportFigures(  // HistoryImportBenchmark.swift
        port: port, httpClient: httpClient, token: session.token, directory: directory)
    }

    try await transport.shutdown()
    try await server.stop()

  }
}
