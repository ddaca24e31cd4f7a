import ArgumentParser
import Logging
import MeridianServer
import MeridianStore
import MeridianStoreSQLite
import Testing

@testable import meridian_server

@Suite struct ConfigurationTests {
  @Test func defaultsAreForLocalDevelopment() throws {
    let configuration = try ServerConfiguration.resolve(environment: [:], settings: ServerSettings())
    #expect(configuration.host == "127.0.0.1")
    #expect(configuration.port == 8080)
    #expect(configuration.databasePath == "./data/meridian.sqlite")
    #expect(configuration.mode == .development)
    #expect(configuration.smsSender == .log)
    #expect(configuration.adminToken == ServerConfiguration.developmentAdminToken)
  }

  @Test func environmentThenFlags() throws {
    let environment = [
      "MERIDIAN_HOST": "0.0.0.0", "MERIDIAN_PORT": "9000", "MERIDIAN_DATABASE": "/tmp/x.sqlite",
      "MERIDIAN_LOG_LEVEL": "debug", "MERIDIAN_BCRYPT_COST": "10", "MERIDIAN_DATABASE_CONNECTIONS": "6",
      "MERIDIAN_FIX_COMMITS_IN_FLIGHT": "1",
    ]
    let fromEnvironment = try ServerConfiguration.resolve(
      environment: environment, settings: ServerSettings())
    #expect(fromEnvironment.host == "0.0.0.0")
    #expect(fromEnvironment.port == 9000)
    #expect(fromEnvironment.databasePath == "/tmp/x.sqlite")
    #expect(fromEnvironment.logLevel == .debug)
    #expect(fromEnvironment.bcryptCost == 10)
    #expect(fromEnvironment.databaseConnections == 6)
    #expect(fromEnvironment.fixCommitsInFlight == 1)
    #expect(try ServerConfiguration.resolve(environment: [:], settings: ServerSettings()).fixCommitsInFlight == nil)

    let options = try ServerOptions.parse(["--port", "9100", "--database", "/tmp/y.sqlite"])
    let flagged = try ServerConfiguration.resolve(environment: environment, settings: options.settings)
    #expect(flagged.port == 9100)
    #expect(flagged.databasePath == "/tmp/y.sqlite")
    #expect(flagged.host == "0.0.0.0")
  }

  @Test func badValuesNameTheSetting() throws {
    #expect(throws: ConfigurationError(setting: "MERIDIAN_PORT", value: "eighty")) {
      try ServerConfiguration.resolve(environment: ["MERIDIAN_PORT": "eighty"], settings: ServerSettings())
    }
    #expect(throws: ConfigurationError(setting: "MERIDIAN_FIX_COMMITS_IN_FLIGHT", value: "0")) {
      try ServerConfiguration.resolve(environment: ["MERIDIAN_FIX_COMMITS_IN_FLIGHT": "0"], settings: ServerSettings())
    }
    #expect(throws: ConfigurationError(setting: "MERIDIAN_DATABASE_CONNECTIONS", value: "0")) {
      try ServerConfiguration.resolve(environment: ["MERIDIAN_DATABASE_CONNECTIONS": "0"], settings: ServerSettings())
    }
    // A replica only of a PostgreSQL primary, and only a PostgreSQL one.
    let reason = "must be the postgres:// URL of a replica of the PostgreSQL database MERIDIAN_DATABASE_URL names"
    #expect(
      throws: ConfigurationError(setting: "MERIDIAN_DATABASE_REPLICA_URL", value: "/tmp/r.sqlite", reason: reason)
    ) {
      try ServerConfiguration.resolve(
        environment: [
          "MERIDIAN_DATABASE_URL": "postgres://m@db1/meridian", "MERIDIAN_DATABASE_REPLICA_URL": "/tmp/r.sqlite",
        ],
        settings: ServerSettings())
    }
    #expect(
      throws: ConfigurationError(
        setting: "MERIDIAN_DATABASE_REPLICA_URL", value: "postgres://m@db2:5432/meridian", reason: reason)
    ) {
      try ServerConfiguration.resolve(
        environment: ["MERIDIAN_DATABASE_REPLICA_URL": "postgres://m@db2/meridian"], settings: ServerSettings())
    }
    let replicated = try ServerConfiguration.resolve(
      environment: [
        "MERIDIAN_DATABASE_URL": "postgres://m@db1/meridian",
        "MERIDIAN_DATABASE_REPLICA_URL": "postgres://m@db2/meridian",
      ], settings: ServerSettings())
    #expect(replicated.databaseReplicaURL == "postgres://m@db2/meridian")
    #expect(throws: ConfigurationError(setting: "MERIDIAN_MODE", value: "staging")) {
      try ServerConfiguration.resolve(
        environment: [:], settings: try ServerOptions.parse(["--mode", "staging"]).settings)
    }
  }

  @Test func blobSweepIntervalIsReadAndZeroTurnsItOff() throws {
    #expect(try ServerConfiguration.resolve(environment: [:]).polls.blobSweepInterval == 6 * 3600 * 1000)
    let every = try ServerConfiguration.resolve(environment: ["MERIDIAN_BLOB_SWEEP_SECONDS": "60"])
    #expect(every.polls.blobSweepInterval == 60_000)
    #expect(
      try ServerConfiguration.resolve(environment: ["MERIDIAN_BLOB_SWEEP_SECONDS": "0"]).polls.blobSweepInterval == 0)
    #expect(throws: ConfigurationError.self) {
      try ServerConfiguration.resolve(environment: ["MERIDIAN_BLOB_SWEEP_SECONDS": "-1"])
    }
  }

  @Test func geofenceRulesAndTheFenceCapAreRead() throws {
    let defaults = try ServerConfiguration.resolve(environment: [:]).geofences
    #expect(defaults.rules.dwellTime == 300_000 && defaults.rules.maximumGap == 7_200_000)
    #expect(defaults.rules.hysteresisFraction == 0.2 && defaults.rules.minimumHysteresis == 30)
    #expect(defaults.maximumPerPerson == 100 && defaults.queueBatch == 512 && defaults.queueFixes == 5_000)
    let set = try ServerConfiguration.resolve(environment: [
      "MERIDIAN_GEOFENCE_DWELL_SECONDS": "120", "MERIDIAN_GEOFENCE_GAP_SECONDS": "600",
      "MERIDIAN_GEOFENCE_HYSTERESIS_PERCENT": "35", "MERIDIAN_GEOFENCE_HYSTERESIS_METRES": "50",
      "MERIDIAN_GEOFENCE_MAX_PER_PERSON": "7", "MERIDIAN_GEOFENCE_QUEUE_BATCH": "64",
      "MERIDIAN_GEOFENCE_QUEUE_FIXES": "20000",
    ]).geofences
    #expect(set.rules.dwellTime == 120_000 && set.rules.maximumGap == 600_000)
    #expect(set.rules.hysteresisFraction == 0.35 && set.rules.minimumHysteresis == 50)
    #expect(set.maximumPerPerson == 7 && set.queueBatch == 64 && set.queueFixes == 20_000)
    for (name, value) in [
      ("MERIDIAN_GEOFENCE_DWELL_SECONDS", "0"), ("MERIDIAN_GEOFENCE_GAP_SECONDS", "soon"),
      ("MERIDIAN_GEOFENCE_HYSTERESIS_PERCENT", "101"), ("MERIDIAN_GEOFENCE_HYSTERESIS_METRES", "-1"),
      ("MERIDIAN_GEOFENCE_MAX_PER_PERSON", "0"), ("MERIDIAN_GEOFENCE_QUEUE_BATCH", "0"),
      ("MERIDIAN_GEOFENCE_QUEUE_BATCH", "10001"), ("MERIDIAN_GEOFENCE_QUEUE_FIXES", "0"),
    ] {
      #expect(throws: ConfigurationError.self, "\(name)=\(value)") {
        try ServerConfiguration.resolve(environment: [name: value])
      }
      do {
        _ = try ServerConfiguration.resolve(environment: [name: value])
      } catch {
        #expect(error.setting == name && error.value == value)
      }
    }
  }

  @Test func secretsHaveNoDefaultsInProduction() throws {
    #expect(throws: ConfigurationError.self) {
      try ServerConfiguration.resolve(
        environment: ["MERIDIAN_MODE": "production"], settings: ServerSettings())
    }
    let configured = try ServerConfiguration.resolve(
      environment: ["MERIDIAN_MODE": "production", "MERIDIAN_ADMIN_TOKEN": "s3cret"],
      settings: ServerSettings())
    #expect(configured.adminToken == "s3cret")
  }

  @Test func helpListsEverySetting() {
    let help = ServerOptions.helpMessage()
    for name in [
      "MERIDIAN_HOST", "MERIDIAN_PORT", "MERIDIAN_DATABASE", "MERIDIAN_MODE", "MERIDIAN_SMS_SENDER",
      "MERIDIAN_ADMIN_TOKEN", "MERIDIAN_TOKEN_LIFETIME", "MERIDIAN_BCRYPT_COST", "MERIDIAN_MAX_BODY_BYTES",
      "MERIDIAN_LOG_LEVEL",
    ] {
      #expect(help.contains(name), "--help does not mention \(name)")
    }
  }
}
