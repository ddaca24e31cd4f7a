// networkingkit-bench: the kit's client against a bare AsyncHTTPClient loop, same loopback server, same run, same
// concurrency. Prints `<name> <value> <unit>` lines.
import AsyncHTTPClient
import Foundation
import HTTPTypes
import NIOCore
import NetworkingKit
import NetworkingKitAsyncHTTPClient
import NetworkingKitTestServer
import NetworkingKitTestSupport

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

let concurrency = 8
let slice = Duration.milliseconds(100)
let slices = Int(ProcessInfo.processInfo.environment["BENCH_SLICES"] ?? "") ?? 80
let body = SampleProfile.json

/// Requests, wall time and process CPU time of one measurement.
struct Sample {
  var requests: Int
  var seconds: Double
  var cpuSeconds: Double

  var rate: Double { Double(requests) / seconds }
  var cpuMicroseconds: Double { cpuSeconds / Double(requests) * 1e6 }
}

extension [Sample] {
  /// Requests per second over all of the samples: their requests over their time.
  var rate: Double { Double(map(\.requests).reduce(0, +)) / map(\.seconds).reduce(0, +) }
  /// CPU time per request over all of the samples.
  var cpuMicroseconds: Double { map(\.cpuSeconds).reduce(0, +) / Double(map(\.requests).reduce(0, +)) * 1e6 }
}

func cpuSeconds() -> Double {
  var usage = rusage()
  #if canImport(Glibc)
    getrusage(RUSAGE_SELF.rawValue, &usage)
  #else
    getrusage(RUSAGE_SELF, &usage)
  #endif
  let user = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
  let system = Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
  return user + system
}

/// Runs `operation` on `tasks` tasks for `duration`; the server runs in this process too, so CPU time per operation
/// covers both ends of the loopback connection, equally for every client measured.
func measure(
  _ duration: Duration, tasks: Int = concurrency, _ operation: @escaping @Sendable () async throws -> Void
) async throws -> Sample {
  let clock = ContinuousClock()
  let start = clock.now
  let cpuStart = cpuSeconds()
  let end = start + duration
  let total = try await withThrowingTaskGroup(of: Int.self) { group in
    for _ in 0..<tasks {
      group.addTask {
        var count = 0
        while clock.now < end {
          try await operation()
          count += 1
        }
        return count
      }
    }
    return try await group.reduce(0, +)
  }
  let elapsed = (clock.now - start).components
  let seconds = Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
  return Sample(requests: total, seconds: seconds, cpuSeconds: cpuSeconds() - cpuStart)
}

func line(_ name: String, _ value: Double, _ unit: String, digits: Int = 2) {
  print("\(name) \(String(format: "%.\(digits)f", value)) \(unit)")
}

/// A transport that answers at once, to measure the kit's own cost per request.
struct InstantTransport: HTTPTransport {
  let response = TransportResponse(status: .ok, headerFields: [.contentType: "application/json"], body: Data(body.utf8))
  func send(_ request: HTTPRequest, body: Data?, options: TransportOptions) async throws -> TransportResponse {
    response
  }
}

let server = try await MisbehavingServer.start(recordsRequests: false) { _ in .json(body) }
let httpClient = HTTPClient(
  eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: AsyncHTTPClientTransport.makeConfiguration())
let transport = AsyncHTTPClientTransport(client: httpClient)
let client = try NetworkClient(baseURL: server.baseURL, transport: transport)
let rawEndpoint = Endpoint<Void, NoBody, Data>(.get, "/v1/me", body: .none, response: .raw)
let jsonEndpoint = SampleAPI.me
let url = server.baseURL.absoluteString + "/v1/me"

let bareAHC: @Sendable () async throws -> Void = {
  var request = HTTPClientRequest(url: url)
  request.method = .GET
  request.headers.add(name: "Accept", value: "application/json")
  request.headers.add(name: "Accept-Encoding", value: "gzip")
  let response = try await httpClient.execute(request, timeout: .seconds(20))
  let buffer = try await response.body.collect(upTo: 16 * 1024 * 1024)
  precondition(response.status == .ok && buffer.readableBytes == body.utf8.count)
}
let kitRaw: @Sendable () async throws -> Void = {
  let data = try await client.send(rawEndpoint)
  precondition(data.count == body.utf8.count)
}
// The same header fields as the client sends, so that every variant puts identical requests on the wire.
let preparedHead = try client.factory.makeRequest(
  rawEndpoint, parameters: (), body: NoBody(), headerFields: [.acceptEncoding: "gzip"]
).head
let transportOnly: @Sendable () async throws -> Void = {
  let response = try await transport.send(
    preparedHead, body: nil, options: TransportOptions(timeout: .seconds(20), maxResponseBytes: 16 * 1024 * 1024))
  precondition(response.body.count == body.utf8.count)
}
let kitJSON: @Sendable () async throws -> Void = {
  _ = try await client.send(jsonEndpoint)
}

// Warm up connections and code paths.
_ = try await measure(.milliseconds(500), bareAHC)
_ = try await measure(.milliseconds(500), kitRaw)

// `BENCH_PROFILE=<variant>` runs one variant alone for 10 s instead (for a profiler), and prints its figures.
// (`instant` is the client over a transport that answers at once, on one task.)
let instantClient = try NetworkClient(baseURL: server.baseURL, transport: InstantTransport())
let kitInstant: @Sendable () async throws -> Void = { _ = try await instantClient.send(rawEndpoint) }
let variants = [
  "ahc": bareAHC, "client": kitRaw, "client_json": kitJSON, "transport": transportOnly, "instant": kitInstant,
]
if let name = ProcessInfo.processInfo.environment["BENCH_PROFILE"], let variant = variants[name] {
  let sample = try await measure(.seconds(10), tasks: name == "instant" ? 1 : concurrency, variant)
  line("\(name).requests_per_s", sample.rate, "req/s")
  line("\(name).cpu_per_request", sample.cpuMicroseconds, "us")
  try await transport.shutdown()
  try await server.shutdown()
  exit(0)
}

// Short alternating slices, order rotated, so that load from other processes on a shared machine hits every
// variant alike.
var ahc: [Sample] = []
var kit: [Sample] = []
var json: [Sample] = []
var adapter: [Sample] = []
for index in 0..<slices {
  var group: [Int: Sample] = [:]
  for offset in 0..<4 {
    let which = (index + offset) % 4
    group[which] = try await measure(slice, [bareAHC, kitRaw, kitJSON, transportOnly][which])
  }
  ahc.append(group[0]!)
  kit.append(group[1]!)
  json.append(group[2]!)
  adapter.append(group[3]!)
}

let instantRaw = try await measure(.seconds(1), tasks: 1, kitInstant)
let instantJSON = try await measure(.seconds(1), tasks: 1) { _ = try await instantClient.send(jsonEndpoint) }

if ProcessInfo.processInfo.environment["BENCH_VERBOSE"] != nil {
  print("# ahc \(ahc.map { Int($0.rate) }) client \(kit.map { Int($0.rate) }) json \(json.map { Int($0.rate) })")
}
// Every variant's rate is its requests over its time in all of its slices; the slices alternate, so drift in the
// machine's load weighs on every variant alike. A ratio is the variant's rate over bare AsyncHTTPClient's, and an
// overhead is that ratio's complement: the share of requests per second the variant loses.
@MainActor func ratio(_ samples: [Sample]) -> Double { samples.rate / ahc.rate }
line("ahc.requests_per_s", ahc.rate, "req/s")
line("client.requests_per_s", kit.rate, "req/s")
line("client_json.requests_per_s", json.rate, "req/s")
line("transport.requests_per_s", adapter.rate, "req/s")
line("client.ratio", ratio(kit), "x", digits: 3)
line("client.overhead", (1 - ratio(kit)) * 100, "%")
line("client_json.ratio", ratio(json), "x", digits: 3)
line("client_json.overhead", (1 - ratio(json)) * 100, "%")
line("transport.ratio", ratio(adapter), "x", digits: 3)
line("ahc.cpu_per_request", ahc.cpuMicroseconds, "us")
line("client.cpu_per_request", kit.cpuMicroseconds, "us")
line("client_json.cpu_per_request", json.cpuMicroseconds, "us")
line("transport.cpu_per_request", adapter.cpuMicroseconds, "us")
line("client.cpu_overhead", (kit.cpuMicroseconds / ahc.cpuMicroseconds - 1) * 100, "%")
// The kit's own work per call, over a transport that answers at once: the per-request overhead, and its share of
// what one loopback request costs through bare AsyncHTTPClient.
let kitMicroseconds = 1e6 / instantRaw.rate
line("client.overhead_per_request", kitMicroseconds, "us")
line("client_json.overhead_per_request", 1e6 / instantJSON.rate, "us")
line("client.overhead_share", kitMicroseconds / ahc.cpuMicroseconds * 100, "%")
line("bench.concurrency", Double(concurrency), "tasks")

try await transport.shutdown()
try await server.shutdown()
