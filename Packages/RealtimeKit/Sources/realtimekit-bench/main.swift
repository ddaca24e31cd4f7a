// realtimekit-bench: fan-out latency, throughput and idle memory of RealtimeKit over loopback WebSockets.
//
// The server (Hummingbird + RealtimeHub) runs in this process; the clients run in a child process (this executable
// with `clients ...`), so the memory figures are the server's alone. Prints `<name>{clients=N} <value> <unit>`.
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOPosix
import RealtimeKit
import RealtimeKitHummingbird
import Synchronization
import WSClient

#if canImport(Glibc)
  import Glibc
#endif

func raiseFileLimit() -> Int {
  var limit = rlimit()
  getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
  limit.rlim_cur = limit.rlim_max
  setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
  getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
  return Int(limit.rlim_cur)
}

#if canImport(Glibc)
  @_silgen_name("malloc_trim")
  func glibcMallocTrim(_ pad: Int) -> Int32
#endif

/// Resident set size after returning freed heap pages to the OS, so the figure is memory in use.
func residentBytes() -> Int {
  #if canImport(Glibc)
    _ = glibcMallocTrim(0)
  #endif
  guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
  let fields = text.split(separator: " ")
  guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
  return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

func microsecondsNow() -> Int64 { Int64(Date().timeIntervalSince1970 * 1_000_000) }

func emit(_ name: String, _ clients: Int, _ value: Double, _ unit: String) {
  print("\(name){clients=\(clients)} \(String(format: value < 100 ? "%.2f" : "%.0f", value)) \(unit)")
}

func quietLogger() -> Logger {
  var logger = Logger(label: "realtimekit-bench")
  logger.logLevel = .critical
  return logger
}

/// Thread-safe counters and latency samples of the client process.
final class ClientStats: Sendable {
  private struct State {
    var ready = 0
    var failed = 0
    var latencies: [Double] = []
    var firstReceipt: Int64 = 0
    var lastReceipt: Int64 = 0
  }

  private let state = Mutex(State())

  func markReady() { state.withLock { $0.ready += 1 } }
  func markFailed() { state.withLock { $0.failed += 1 } }
  func record(sentMicros: Int64) {
    let now = microsecondsNow()
    state.withLock { state in
      if state.firstReceipt == 0 { state.firstReceipt = now }
      state.lastReceipt = now
      state.latencies.append(Double(now - sentMicros) / 1000)
    }
  }
  var snapshot: (ready: Int, failed: Int, received: Int, first: Int64, last: Int64) {
    state.withLock { ($0.ready, $0.failed, $0.latencies.count, $0.firstReceipt, $0.lastReceipt) }
  }
  var sortedLatencies: [Double] { state.withLock { $0.latencies.sorted() } }
}

/// Extracts the publish timestamp from `..."payload":{"t":123...`.
func sentMicros(in text: String) -> Int64? {
  guard let range = text.range(of: "\"payload\":{\"t\":") else { return nil }
  var value: Int64 = 0
  for character in text[range.upperBound...] {
    guard let digit = character.wholeNumberValue else { break }
    value = value * 10 + Int64(digit)
  }
  return value
}

// MARK: Client process

func runClients(port: Int, count: Int, expected: Int) async {
  _ = raiseFileLimit()
  let stats = ClientStats()
  var headers = HTTPFields()
  headers[.secWebSocketProtocol] = RealtimeProtocol.subprotocol
  let configuration = WebSocketClientConfiguration(maxFrameSize: 1 << 16, additionalHeaders: headers)
  let logger = quietLogger()
  await withTaskGroup(of: Void.self) { group in
    for index in 0..<count {
      if index >= 256 { await group.next() }
      group.addTask {
        let hello = RealtimeCodec.encode(
          .hello(Hello(token: "bench-\(index)", clientName: "bench", clientVersion: "1")))
        let subscribe = RealtimeCodec.encode(
          .subscribe(SubscribeRequest(channel: ChannelName(namespace: "group", id: String(index / 10))!))
        )
        let (setupDone, setupSink) = AsyncStream<Void>.makeStream()
        Task {
          do {
            try await WebSocketClient.connect(
              url: "ws://127.0.0.1:\(port)/ws",
              configuration: configuration,
              logger: logger
            ) { inbound, outbound, _ in
              try await outbound.write(.text(hello))
              try await outbound.write(.text(subscribe))
              var iterator = inbound.makeAsyncIterator()
              var setup = 0
              while let message = try await iterator.nextMessage(maxSize: 1 << 16) {
                guard case .text(let text) = message else { continue }
                if setup < 2 {
                  setup += 1
                  if setup == 2 {
                    stats.markReady()
                    setupSink.finish()
                  }
                } else if let sent = sentMicros(in: text) {
                  stats.record(sentMicros: sent)
                }
              }
            }
          } catch {
            stats.markFailed()
          }
          setupSink.finish()
        }
        // Hold the slot until this connection is set up (or failed), bounding concurrent handshakes.
        for await _ in setupDone {}
      }
    }
    await group.waitForAll()
  }
  let setup = stats.snapshot
  print("READY \(setup.ready) \(setup.failed)")
  fflush(nil)
  // Wait for the fan-out events (or 20 s of nothing new).
  var lastCount = -1
  var idleSince = ContinuousClock.now
  while true {
    let now = stats.snapshot
    if now.received >= expected { break }
    if now.received != lastCount {
      lastCount = now.received
      idleSince = .now
    } else if idleSince.duration(to: .now) > .seconds(20) {
      break
    }
    try? await Task.sleep(for: .milliseconds(50))
  }
  let done = stats.snapshot
  let sorted = stats.sortedLatencies
  func percentile(_ p: Double) -> Double {
    sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
  }
  let seconds = Double(max(1, done.last - done.first)) / 1_000_000
  print("RESULT \(done.received) \(percentile(0.5)) \(percentile(0.99)) \(seconds)")
  fflush(nil)
  exit(0)
}

// MARK: Server process

/// Lines printed by the client process.
final class ChildOutput {
  let process = Process()
  let lines: AsyncStream<String>
  private let sink: AsyncStream<String>.Continuation

  init(arguments: [String]) throws {
    (lines, sink) = AsyncStream<String>.makeStream()
    let pipe = Pipe()
    process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
    process.arguments = arguments
    process.standardOutput = pipe
    try process.run()
    let handle = pipe.fileHandleForReading
    let sink = self.sink
    Thread.detachNewThread {
      var buffer = ""
      while true {
        let data = handle.availableData
        if data.isEmpty { break }
        buffer += String(decoding: data, as: UTF8.self)
        while let newline = buffer.firstIndex(of: "\n") {
          sink.yield(String(buffer[..<newline]))
          buffer = String(buffer[buffer.index(after: newline)...])
        }
      }
      sink.finish()
    }
  }
}

func runPhase(hub: RealtimeHub, port: Int, clients: Int, eventsPerSecond: Int, seconds: Int) async throws {
  let channels = max(1, clients / 10)
  let events = eventsPerSecond * seconds
  let expected = events * 10
  let before = residentBytes()
  let child = try ChildOutput(arguments: ["clients", String(port), String(clients), String(expected)])
  var lines = child.lines.makeAsyncIterator()
  guard let ready = await lines.next(), ready.hasPrefix("READY") else {
    print("# client process failed to start")
    return
  }
  let held = await hub.connectionCount
  try await Task.sleep(for: .seconds(1))
  let after = residentBytes()
  emit("connections.held", clients, Double(held), "connections")
  emit("idle.bytes_per_connection", clients, Double(after - before) / Double(max(1, held)), "bytes")

  // Fan-out: `eventsPerSecond` events, each to a channel with 10 subscribers, paced every 10 ms.
  let clock = ContinuousClock()
  let start = clock.now
  let perTick = max(1, eventsPerSecond / 100)
  var sent = 0
  var tick = 0
  while sent < events {
    for _ in 0..<perTick where sent < events {
      let channel = ChannelName(namespace: "group", id: String(sent % channels))!
      await hub.publish(["t": .int(microsecondsNow())], to: channel)
      sent += 1
    }
    tick += 1
    try await Task.sleep(until: start + .milliseconds(10 * tick), clock: clock)
  }
  guard let result = await lines.next(), result.hasPrefix("RESULT") else {
    print("# client process ended without a result")
    return
  }
  let fields = result.split(separator: " ").dropFirst().compactMap { Double($0) }
  guard fields.count == 4 else { return }
  emit("fanout.delivered_per_s", clients, fields[0] / max(fields[3], 0.001), "events/s")
  emit("fanout.delivered", clients, fields[0], "events")
  emit("fanout.expected", clients, Double(expected), "events")
  emit("fanout.p50_ms", clients, fields[1], "ms")
  emit("fanout.p99_ms", clients, fields[2], "ms")
  child.process.waitUntilExit()
  while await hub.connectionCount > 0 { try await Task.sleep(for: .milliseconds(50)) }
}

func runServer(sizes: [Int]) async throws {
  let limit = raiseFileLimit()
  print("# open-file limit \(limit); server in this process, clients in a child process; loopback 127.0.0.1")
  let hub = RealtimeHub(
    configuration: RealtimeHubConfiguration(heartbeatInterval: .seconds(120), helloTimeout: .seconds(60)),
    authenticate: { token in RealtimePrincipal(id: token) }
  )
  let (ports, portSink) = AsyncStream<Int>.makeStream()
  let app = Application(
    router: Router(),
    server: .realtime(hub: hub, configuration: .init(http1: .init(idleTimeout: nil))),
    configuration: .init(address: .hostname("127.0.0.1", port: 0), backlog: 4096),
    onServerRunning: { portSink.yield($0.localAddress?.port ?? 0) },
    logger: quietLogger()
  )
  try await withThrowingTaskGroup(of: Void.self) { group in
    group.addTask { try await app.run() }
    group.addTask { await hub.run() }
    var iterator = ports.makeAsyncIterator()
    guard let port = await iterator.next() else { return }
    for clients in sizes {
      try await runPhase(hub: hub, port: port, clients: clients, eventsPerSecond: 1000, seconds: 5)
    }
    group.cancelAll()
  }
}

let arguments = CommandLine.arguments
if arguments.count == 5, arguments[1] == "clients", let port = Int(arguments[2]), let count = Int(arguments[3]),
  let expected = Int(arguments[4])
{
  await runClients(port: port, count: count, expected: expected)
} else {
  let sizes = arguments.dropFirst().compactMap { Int($0) }
  try await runServer(sizes: sizes.isEmpty ? [1000, 10000] : sizes)
}
