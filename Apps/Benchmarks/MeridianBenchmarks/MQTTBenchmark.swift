import Foundation
import Logging
import MeridianAPI
import MeridianMQTT
import MeridianServer
import NetworkingKit
import NetworkingKitAsyncHTTPClient
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// `mqtt.ingest.messages_per_s`: OwnTracks locations published at QoS 1 to a local `mosquitto` by one phone
/// (`clients` publishes in flight), taken by a second server node on the run's database through its MQTT link, from
/// the first publish until the server counted every one stored (`meridian_fixes_accepted_total`). Runs only with
/// `BENCH_MQTT=1` and `mosquitto` in `/usr/sbin`, `/usr/bin` or `/usr/local/sbin`.
func mqttFigures(
  configuration base: ServerConfiguration, directory: URL, transport: AsyncHTTPClientTransport,
  clientConfiguration: NetworkClient.Configuration, logger: Logger, phase: Duration
) async throws {
  guard ProcessInfo.processInfo.environment["BENCH_MQTT"] == "1" else { return }
  guard
    let executable = ["/usr/sbin/mosquitto", "/usr/bin/mosquitto", "/usr/local/sbin/mosquitto"].first(where: {
      FileManager.default.isExecutableFile(atPath: $0)
    })
  else {
    FileHandle.standardError.write(Data("meridian-server-bench: BENCH_MQTT=1 but no mosquitto; skipped\n".utf8))
    return
  }
  let folder = directory.appendingPathComponent("mqtt")
  try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
  let brokerPort = Int.random(in: 20_000..<30_000)
  var text = """
    listener \(brokerPort) 127.0.0.1
    allow_anonymous false
    password_file \(folder.path)/passwd
    acl_file \(folder.path)/acl
    persistence false
    max_queued_messages 100000

    """
  if geteuid() == 0 { text += "user root\n" }
  try text.write(to: folder.appendingPathComponent("mosquitto.conf"), atomically: true, encoding: .utf8)
  for file in ["passwd", "acl"] { try Data().write(to: folder.appendingPathComponent(file)) }
  var configuration = base
  configuration.port = 0
  var settings = MQTTSettings(host: "127.0.0.1", port: brokerPort)
  settings.username = "meridian"
  settings.password = UUID().uuidString
  settings.clientIdentifier = "meridian-server-bench"
  settings.passwordFile = folder.appendingPathComponent("passwd").path
  settings.aclFile = folder.appendingPathComponent("acl").path
  settings.reconnectMaximumDelay = .milliseconds(200)
  configuration.mqtt = settings
  let node = try await RunningServer.start(configuration: configuration, logger: logger)
  let anonymous = try makeClient(port: node.port, token: nil, transport: transport, configuration: clientConfiguration)
  let session = try await anonymous.send(
    API.register, body: EmailCredentials(email: "mqtt-bench@example.com", password: "benchmark password"))
  let api = try makeClient(
    port: node.port, token: session.token, transport: transport, configuration: clientConfiguration)
  let credentials = try await api.send(API.issueMQTTCredentials, parameters: DeviceRef(id: "mqtt-bench"))

  // The broker starts once the server wrote the device's account: Foundation's `Process` passes on this process's
  // blocked signals, so a SIGHUP (reload) would never reach it (and SIGTERM neither: it ends with SIGKILL).
  let broker = Process()
  broker.executableURL = URL(fileURLWithPath: executable)
  broker.arguments = ["-c", folder.appendingPathComponent("mosquitto.conf").path]
  broker.standardOutput = FileHandle.nullDevice
  broker.standardError = FileHandle.nullDevice
  try broker.run()
  defer { kill(broker.processIdentifier, SIGKILL) }
  try await poll(for: .seconds(10)) { isListening(brokerPort) }

  let phone = MQTTClient(
    MQTTClientConfiguration(
      host: "127.0.0.1", port: brokerPort, clientIdentifier: "bench-phone", username: credentials.username,
      password: credentials.password, cleanSession: true, reconnectInitialDelay: .milliseconds(50),
      reconnectMaximumDelay: .milliseconds(200)),
    logger: logger)
  let phoneTask = Task { await phone.run { _ in } }
  defer { phoneTask.cancel() }
  let ready = ContinuousClock.now + .seconds(30)
  while ContinuousClock.now < ready {
    let health = try await anonymous.send(API.health)
    if phone.state == .connected && health.mqtt == "ok" { break }
    try await Task.sleep(for: .milliseconds(50))
  }
  guard phone.state == .connected else {
    FileHandle.standardError.write(
      Data(
        ("meridian-server-bench: the MQTT phone did not connect (\(phone.state), broker running: "
          + "\(broker.isRunning)); skipped\n").utf8))
    try await node.stop()
    return
  }

  func accepted() async throws -> Double { try await serverMetrics(api, ["meridian_fixes_accepted_total"])[0] }
  let before = try await accepted()
  let next = PublishCounter()
  let start = ContinuousClock.now
  let end = start + phase
  try await withThrowingTaskGroup(of: Void.self) { publishers in
    for _ in 0..<clients {
      publishers.addTask {
        while ContinuousClock.now < end {
          let index = next.value.withLock { value in
            defer { value += 1 }
            return value
          }
          // Seconds, in the past, one per message: each is a new fix of the device.
          let payload =
            #"{"_type":"location","lat":50.45,"lon":30.52,"tst":\#(1_730_000_000 + index),"acc":10,"tid":"mb"}"#
          try await phone.publish(topic: credentials.topic, payload: Array(payload.utf8), qos: .atLeastOnce)
        }
      }
    }
    try await publishers.waitForAll()
  }
  let published = Double(next.value.withLock { $0 })
  try await poll(for: .seconds(120)) { try await accepted() - before >= published }
  let stored = try await accepted() - before
  let elapsed = seconds(ContinuousClock.now - start)
  // Not lost: still queued at the broker (or not yet counted) when the 120 s wait gave up.
  if stored < published { emit("mqtt.ingest.unstored_after_wait", published - stored, "messages") }
  emit("mqtt.ingest.published", published, "messages")
  emit("mqtt.ingest.messages_per_s", stored / elapsed, "messages/s")
  try await node.stop()
}

/// The index of the next message to publish, shared by the publishers.
private final class PublishCounter: Sendable {
  let value = Mutex(0)
}

/// Whether something accepts TCP connections on 127.0.0.1:`port`.
private func isListening(_ port: Int) -> Bool {
  let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
  guard descriptor >= 0 else { return false }
  defer { close(descriptor) }
  var address = sockaddr_in()
  address.sin_family = sa_family_t(AF_INET)
  address.sin_port = in_port_t(UInt16(port).bigEndian)
  address.sin_addr.s_addr = inet_addr("127.0.0.1")
  return withUnsafePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
      connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
    }
  } == 0
}
