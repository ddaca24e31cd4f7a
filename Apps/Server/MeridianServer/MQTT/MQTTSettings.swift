import Foundation

/// The MQTT broker the server takes OwnTracks messages from (OwnTracks' MQTT mode); without `MERIDIAN_MQTT_URL` the
/// server speaks no MQTT.
///
/// | setting | default | variable |
/// |---|---|---|
/// | the broker | none: MQTT off | `MERIDIAN_MQTT_URL` (`mqtt://host:port`, port 1883 when absent) |
/// | the server's own broker account | none (an anonymous broker) | `MERIDIAN_MQTT_USERNAME`, `MERIDIAN_MQTT_PASSWORD` |
/// | the client identifier of its persistent session | `meridian-server` | `MERIDIAN_MQTT_CLIENT_ID` |
/// | the password and ACL files the server writes for the broker | none: no device credentials | `MERIDIAN_MQTT_PASSWORD_FILE`, `MERIDIAN_MQTT_ACL_FILE` |
/// | the broker's pid file, signalled (SIGHUP) after each change | none | `MERIDIAN_MQTT_BROKER_PID_FILE` |
/// | the deadline of connecting and of each acknowledgement | 10 s | `MERIDIAN_MQTT_TIMEOUT_MS` |
/// | the keep-alive interval | 30 s | `MERIDIAN_MQTT_KEEPALIVE` (seconds) |
/// | the longest wait between two connection attempts | 30 s | `MERIDIAN_MQTT_RECONNECT_MAX_MS` |
public struct MQTTSettings: Sendable, Hashable {
  /// The broker's host.
  public var host: String
  /// The broker's port.
  public var port = 1883
  /// The server's user name on the broker.
  public var username: String?
  /// The server's password on the broker.
  public var password: String?
  /// The client identifier under which the broker keeps the server's session (and queues QoS 1 messages while the
  /// server is away). Every node of one deployment that connects needs its own.
  public var clientIdentifier = "meridian-server"
  /// The `password_file` the server writes for the broker (`mosquitto_passwd` format).
  public var passwordFile: String?
  /// The `acl_file` the server writes for the broker.
  public var aclFile: String?
  /// The broker's pid file: the server sends the process SIGHUP after writing the files, so it reads them again.
  public var brokerPIDFile: String?
  /// The deadline of connecting and of each acknowledgement awaited.
  public var timeout: Duration = .seconds(10)
  /// The keep-alive interval.
  public var keepAlive: Duration = .seconds(30)
  /// The first wait before connecting again.
  public var reconnectInitialDelay: Duration = .milliseconds(250)
  /// The longest wait between two connection attempts.
  public var reconnectMaximumDelay: Duration = .seconds(30)

  /// A broker at `host:port`.
  public init(host: String, port: Int = 1883) {
    self.host = host
    self.port = port
  }

  /// The settings of the `MERIDIAN_MQTT_*` variables; nil when `MERIDIAN_MQTT_URL` is not set.
  /// - Throws: ``ConfigurationError`` for a value that can't be used.
  static func read(_ environment: [String: String]) throws(ConfigurationError) -> MQTTSettings? {
    func value(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
    guard let text = value("MERIDIAN_MQTT_URL") else { return nil }
    guard let url = URLComponents(string: text), url.scheme?.lowercased() == "mqtt", let host = url.host,
      !host.isEmpty, url.path.isEmpty || url.path == "/", url.port.map({ (1...65535).contains($0) }) ?? true
    else {
      throw ConfigurationError(
        setting: "MERIDIAN_MQTT_URL", value: text, reason: "must be mqtt://host or mqtt://host:port (TLS: see docs)")
    }
    var settings = MQTTSettings(host: host, port: url.port ?? 1883)
    settings.username = value("MERIDIAN_MQTT_USERNAME")
    settings.password = value("MERIDIAN_MQTT_PASSWORD")
    guard settings.password == nil || settings.username != nil else {
      throw ConfigurationError(
        setting: "MERIDIAN_MQTT_PASSWORD", value: nil, reason: "needs MERIDIAN_MQTT_USERNAME")
    }
    if let name = settings.username, !MQTTBrokerAccounts.isAccountName(name) {
      throw ConfigurationError(
        setting: "MERIDIAN_MQTT_USERNAME", value: name, reason: "may hold only letters, digits, '.', '_' and '-'")
    }
    if let identifier = value("MERIDIAN_MQTT_CLIENT_ID") { settings.clientIdentifier = identifier }
    settings.passwordFile = value("MERIDIAN_MQTT_PASSWORD_FILE")
    settings.aclFile = value("MERIDIAN_MQTT_ACL_FILE")
    guard (settings.passwordFile == nil) == (settings.aclFile == nil) else {
      throw ConfigurationError(
        setting: "MERIDIAN_MQTT_ACL_FILE", value: nil,
        reason: "MERIDIAN_MQTT_PASSWORD_FILE and MERIDIAN_MQTT_ACL_FILE are set together or not at all")
    }
    settings.brokerPIDFile = value("MERIDIAN_MQTT_BROKER_PID_FILE")
    func milliseconds(_ name: String) throws(ConfigurationError) -> Duration? {
      guard let text = value(name) else { return nil }
      guard let number = Int64(text), (1...3_600_000).contains(number) else {
        throw ConfigurationError(setting: name, value: text, reason: "must be milliseconds, 1 to 3600000")
      }
      return .milliseconds(number)
    }
    if let timeout = try milliseconds("MERIDIAN_MQTT_TIMEOUT_MS") { settings.timeout = timeout }
    if let delay = try milliseconds("MERIDIAN_MQTT_RECONNECT_MAX_MS") { settings.reconnectMaximumDelay = delay }
    if let text = value("MERIDIAN_MQTT_KEEPALIVE") {
      guard let seconds = Int(text), (1...65535).contains(seconds) else {
        throw ConfigurationError(setting: "MERIDIAN_MQTT_KEEPALIVE", value: text, reason: "must be seconds, 1 to 65535")
      }
      settings.keepAlive = .seconds(seconds)
    }
    return settings
  }
}
