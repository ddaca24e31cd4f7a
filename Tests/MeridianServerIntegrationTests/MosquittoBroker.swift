import Foundation
import MeridianServer
import MeridianTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Debian's `/usr/sbin/mosquitto` on a loopback port, run for one test with a configuration the test writes: no
/// anonymous clients, the password and ACL files the server writes (``passwordFile``, ``aclFile``), persistence in
/// its directory, its pid in ``pidFile`` (the server signals it there). ``stop()`` ends it with SIGTERM (it saves
/// its persistent sessions); ``start(directory:port:)`` again on the same directory and port brings them back.
final class MosquittoBroker: Sendable {
  static let executable = URL(fileURLWithPath: "/usr/sbin/mosquitto")
  let process: ChildProcess
  let directory: URL
  let port: Int
  let allowAnonymous: Bool

  var passwordFile: String { directory.appendingPathComponent("passwd").path }
  var aclFile: String { directory.appendingPathComponent("acl").path }
  var pidFile: String { directory.appendingPathComponent("mosquitto.pid").path }

  /// Whether the tests can run a broker here.
  static var isInstalled: Bool { FileManager.default.isExecutableFile(atPath: executable.path) }

  /// Starts a broker in `directory` (a new one when nil) on `port` (a free one when nil) and waits until it listens.
  static func start(directory: URL? = nil, port requested: Int? = nil, allowAnonymous: Bool = false) async throws
    -> MosquittoBroker
  {
    let directory =
      directory ?? FileManager.default.temporaryDirectory.appendingPathComponent("mosquitto-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    var attempt = 0
    while true {
      attempt += 1
      let port = requested ?? Int.random(in: 10_000..<32_000)
      let configuration = directory.appendingPathComponent("mosquitto.conf")
      var text = """
        listener \(port) 127.0.0.1
        allow_anonymous \(allowAnonymous)
        persistence true
        persistence_location \(directory.path)/
        log_dest stderr
        log_type error
        log_type warning
        log_type notice
        log_type information

        """
      // An open broker (for the client's own tests) has no accounts; the server's has the files it writes.
      if !allowAnonymous { text += "password_file \(directory.path)/passwd\nacl_file \(directory.path)/acl\n" }
      // As root, mosquitto would otherwise become the user `mosquitto`, who can't write the test's directory.
      if geteuid() == 0 { text += "user root\n" }
      try text.write(to: configuration, atomically: true, encoding: .utf8)
      for file in ["passwd", "acl"]
      where !FileManager.default.fileExists(atPath: directory.appendingPathComponent(file).path) {
        try Data().write(to: directory.appendingPathComponent(file))
      }
      let process = try ChildProcess(executable, ["-c", configuration.path])
      try "\(process.processIdentifier)\n".write(
        toFile: directory.appendingPathComponent("mosquitto.pid").path, atomically: true, encoding: .utf8)
      let broker = MosquittoBroker(process: process, directory: directory, port: port, allowAnonymous: allowAnonymous)
      do {
        try await GeofenceQueueTests.waitFor("mosquitto on port \(port)", timeout: .seconds(30)) {
          Self.isListening(process.output.value) || !process.isRunning
        }
      } catch {
        await broker.stop()
        throw error
      }
      if process.isRunning { return broker }
      let output = process.output.value
      _ = await process.wait()
      // A port another process holds: a random one is replaced at once. A requested one is the port of a broker this
      // test stopped and waited for; mosquitto binds with SO_REUSEADDR, so its closed connections don't hold it, and
      // waiting would not free a port another test took.
      guard requested == nil, attempt < 20, output.contains("Address already in use") else {
        Issue.record("mosquitto did not start: \(output)")
        throw CancellationError()
      }
    }
  }

  /// Whether mosquitto's log says it runs: `mosquitto version 2.0.11 running`, written once its listeners are open
  /// (after `Opening ipv4 listen socket on port …`), so a client that connects from now on is accepted.
  static func isListening(_ log: String) -> Bool {
    log.split(separator: "\n").contains { line in
      line.hasSuffix(" running") && line.contains("mosquitto version ")
    }
  }

  private init(process: ChildProcess, directory: URL, port: Int, allowAnonymous: Bool) {
    self.process = process
    self.directory = directory
    self.port = port
    self.allowAnonymous = allowAnonymous
  }

  /// The server's settings for this broker: its account `meridian` and the files it writes.
  func settings() -> MQTTSettings {
    var settings = MQTTSettings(host: "127.0.0.1", port: port)
    settings.username = "meridian"
    settings.password = "server-secret"
    settings.clientIdentifier = "meridian-server-test"
    settings.passwordFile = passwordFile
    settings.aclFile = aclFile
    settings.brokerPIDFile = pidFile
    settings.timeout = .seconds(10)
    settings.keepAlive = .seconds(5)
    settings.reconnectInitialDelay = .milliseconds(100)
    settings.reconnectMaximumDelay = .milliseconds(500)
    return settings
  }

  /// Ends the broker (SIGTERM: it saves its sessions and queued messages) and waits for it.
  func stop() async {
    process.terminate(with: SIGTERM)
    _ = await process.wait()
  }

  /// The same broker again: same directory (sessions, queued messages, accounts) and port.
  func restarted() async throws -> MosquittoBroker {
    try await Self.start(directory: directory, port: port, allowAnonymous: allowAnonymous)
  }

  /// Stops it and removes its files.
  func remove() async {
    await stop()
    try? FileManager.default.removeItem(at: directory)
  }
}

/// A phone running OwnTracks in MQTT mode, played by `paho-mqtt` (PyPI; `python3` on the PATH): it connects with a
/// persistent session, subscribes, publishes its messages at QoS 1 one every `interval` seconds (reconnecting by
/// itself when the broker goes away), and at the end prints one JSON line: the CONNACK code, the indexes of the
/// messages the broker acknowledged (PUBACK) and the messages it received.
struct OwnTracksPhone: Codable {
  var port: Int
  var username: String
  var password: String
  var clientID: String
  /// (topic, payload) to publish in order.
  var publish: [[String]] = []
  var interval: Double = 0
  var subscribe: [String] = []
  /// Stop receiving once every one of these topics has brought a message.
  var awaitTopics: [String] = []
  /// The longest the script runs.
  var timeout: Double = 60

  /// What the phone saw.
  struct Outcome: Codable {
    var connack: Int?
    var acked: [Int]
    var received: [[String]]
  }

  static let script = #"""
    import json, signal, sys, threading, time
    import paho.mqtt.client as mqtt
    cfg = json.loads(sys.argv[1])
    signal.alarm(int(cfg["timeout"]) + 30)  # never outlive the test, whatever paho does
    # paho's callbacks (on its network thread, from `loop_start`) are the only events waited on: `connected` is set by
    # the first CONNACK, `changed` notified by each PUBACK and each message. `changed` guards the lists only and is
    # never held while calling paho, whose network thread runs the callbacks under paho's own locks (holding both in
    # opposite orders deadlocks).
    connack, acked_mids, received = [], set(), []
    connected, changed = threading.Event(), threading.Condition()
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=cfg["clientID"], clean_session=False)
    client.username_pw_set(cfg["username"], cfg["password"])
    client.reconnect_delay_set(0.1, 0.5)
    client.max_queued_messages_set(0)
    def on_connect(c, userdata, flags, rc, props):
        with changed: connack.append(rc.value)
        connected.set()
        if rc.value == 0 and cfg["subscribe"]:
            c.subscribe([(t, 1) for t in cfg["subscribe"]])
    def on_publish(c, userdata, mid, rc, props):
        with changed:
            acked_mids.add(mid)
            changed.notify_all()
    def on_message(c, userdata, m):
        with changed:
            received.append([m.topic, m.payload.decode()])
            changed.notify_all()
    client.on_connect, client.on_publish, client.on_message = on_connect, on_publish, on_message
    deadline = time.monotonic() + cfg["timeout"]
    client.connect_async("127.0.0.1", cfg["port"], keepalive=5)
    client.loop_start()
    connected.wait(cfg["timeout"])
    with changed: accepted = connack[:1] == [0]
    mids = []
    if accepted:
        for topic, payload in cfg["publish"]:
            mids.append(client.publish(topic, payload, qos=1).mid)
            # The phone's pace (a phone publishes while the broker restarts), not a wait for anything.
            if cfg["interval"]: time.sleep(cfg["interval"])
        with changed:
            changed.wait_for(
                lambda: all(mid in acked_mids for mid in mids)
                and all(any(t == r[0] for r in received) for t in cfg["awaitTopics"]),
                timeout=max(0, deadline - time.monotonic()))
    client.disconnect()
    client.loop_stop()
    with changed:
        acked = [index for index, mid in enumerate(mids) if mid in acked_mids]
        print(json.dumps({"connack": connack[0] if connack else None, "acked": acked, "received": received}))
    """#

  /// Starts the phone; ``Running/outcome()`` waits for its line.
  func start() throws -> Running {
    let script = FileManager.default.temporaryDirectory.appendingPathComponent(
      "owntracks-phone-\(UUID().uuidString).py")
    try Self.script.write(to: script, atomically: true, encoding: .utf8)
    let arguments = String(decoding: try JSONEncoder().encode(self), as: UTF8.self)
    let process = try ChildProcess(URL(fileURLWithPath: "/usr/bin/env"), ["python3", script.path, arguments])
    return Running(process: process, script: script)
  }

  /// Runs the phone to its end.
  func run() async throws -> Outcome { try await start().outcome() }

  /// A running phone.
  struct Running {
    let process: ChildProcess
    let script: URL

    /// Waits for the phone's end and reads its line.
    func outcome() async throws -> Outcome {
      _ = await process.wait()
      try? FileManager.default.removeItem(at: script)
      let output = process.standardOutput.value
      guard let line = output.split(separator: "\n").last, let data = line.data(using: .utf8),
        let outcome = try? JSONDecoder().decode(Outcome.self, from: data)
      else {
        Issue.record("the phone printed no outcome: \(process.output.value)")
        throw CancellationError()
      }
      return outcome
    }
  }
}
