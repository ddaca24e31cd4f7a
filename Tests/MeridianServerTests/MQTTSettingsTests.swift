import MeridianServer
import Testing

/// The `MERIDIAN_MQTT_*` settings (issue 40 §1): off without a URL, every value read, bad ones named.
struct MQTTSettingsTests {
  @Test func offWithoutAURLAndReadWithOne() throws {
    #expect(try ServerConfiguration.resolve(environment: [:]).mqtt == nil)
    let settings = try #require(
      try ServerConfiguration.resolve(environment: [
        "MERIDIAN_MQTT_URL": "mqtt://broker.local:1884", "MERIDIAN_MQTT_USERNAME": "meridian",
        "MERIDIAN_MQTT_PASSWORD": "secret", "MERIDIAN_MQTT_CLIENT_ID": "node-a",
        "MERIDIAN_MQTT_PASSWORD_FILE": "/var/lib/meridian/mqtt/passwd",
        "MERIDIAN_MQTT_ACL_FILE": "/var/lib/meridian/mqtt/acl",
        "MERIDIAN_MQTT_BROKER_PID_FILE": "/run/mosquitto/mosquitto.pid", "MERIDIAN_MQTT_TIMEOUT_MS": "2500",
        "MERIDIAN_MQTT_KEEPALIVE": "15", "MERIDIAN_MQTT_RECONNECT_MAX_MS": "5000",
      ]).mqtt)
    var expected = MQTTSettings(host: "broker.local", port: 1884)
    expected.username = "meridian"
    expected.password = "secret"
    expected.clientIdentifier = "node-a"
    expected.passwordFile = "/var/lib/meridian/mqtt/passwd"
    expected.aclFile = "/var/lib/meridian/mqtt/acl"
    expected.brokerPIDFile = "/run/mosquitto/mosquitto.pid"
    expected.timeout = .milliseconds(2500)
    expected.keepAlive = .seconds(15)
    expected.reconnectMaximumDelay = .milliseconds(5000)
    #expect(settings == expected)
    #expect(try ServerConfiguration.resolve(environment: ["MERIDIAN_MQTT_URL": "mqtt://127.0.0.1"]).mqtt?.port == 1883)
  }

  @Test(arguments: [
    ["MERIDIAN_MQTT_URL": "http://127.0.0.1:1883"],
    ["MERIDIAN_MQTT_URL": "mqtt://127.0.0.1:0"],
    ["MERIDIAN_MQTT_URL": "mqtt://127.0.0.1", "MERIDIAN_MQTT_PASSWORD": "no user"],
    ["MERIDIAN_MQTT_URL": "mqtt://127.0.0.1", "MERIDIAN_MQTT_USERNAME": "two words"],
    ["MERIDIAN_MQTT_URL": "mqtt://127.0.0.1", "MERIDIAN_MQTT_PASSWORD_FILE": "/tmp/passwd"],
    ["MERIDIAN_MQTT_URL": "mqtt://127.0.0.1", "MERIDIAN_MQTT_TIMEOUT_MS": "0"],
    ["MERIDIAN_MQTT_URL": "mqtt://127.0.0.1", "MERIDIAN_MQTT_KEEPALIVE": "70000"],
  ])
  func badValuesNameTheSetting(_ environment: [String: String]) {
    #expect {
      try ServerConfiguration.resolve(environment: environment)
    } throws: { error in
      guard let error = error as? ConfigurationError else { return false }
      return error.setting.hasPrefix("MERIDIAN_MQTT_")
    }
  }
}
