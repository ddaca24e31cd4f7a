import Foundation
import Logging
import MeridianStoreEngines
import RealtimeKitHummingbird

/// Everything the server is configured with, as one typed value.
///
/// Resolution order: the defaults below (local development), then `MERIDIAN_*` environment variables, then flags.
/// Secrets (the admin token) have a default only in development mode.
public struct ServerConfiguration: Sendable, Hashable {
  /// How the server runs: development allows default secrets and the log SMS sender.
  public enum Mode: String, Sendable, Hashable, CaseIterable {
    /// Local development.
    case development
    /// A real deployment: every secret must be configured.
    case production
  }

  /// Where one-time codes go.
  public enum SMSSenderKind: String, Sendable, Hashable, CaseIterable {
    /// One log line `OTP <phone> <code>` (development mode only).
    case log
    /// A generic HTTP gateway (``SMSSettings``: URL, method, JSON or form body template, auth header).
    case http
    /// Twilio's Messages API or a compatible one (``SMSSettings``: account SID, auth token, sender number).
    case twilio
  }

  /// The address to listen on.
  public var host = "127.0.0.1"
  /// The port to listen on; 0 lets the system choose.
  public var port = 8080
  /// The store: a SQLite file (the default, created and migrated on start) or a PostgreSQL database shared by
  /// several server nodes (`--database postgres://…`).
  public var database = StoreLocation.sqlite(path: StoreLocation.defaultSQLitePath)
  /// The SQLite file, when the store is one (setting it selects SQLite).
  public var databasePath: String {
    get {
      if case .sqlite(let path) = database { return path }
      return StoreLocation.defaultSQLitePath
    }
    set { database = .sqlite(path: newValue) }
  }
  /// The most connections the server keeps to a PostgreSQL store (`MERIDIAN_DATABASE_CONNECTIONS`, 1…1000); every
  /// node counts against the database's `max_connections`.
  public var databaseConnections = StoreLocation.defaultMaximumConnections
  /// A streaming replica of the PostgreSQL store (`MERIDIAN_DATABASE_REPLICA_URL`) that reads which may lag go to —
  /// history pages and exports, places, polls feeds, statistics — each person's own writes kept in view
  /// (`docs/operations.md`, "Read replicas"); nil: every read goes to the primary.
  public var databaseReplicaURL: String?
  /// The deadlines of every call to a PostgreSQL store (`docs/operations.md`, "When the database fails"):
  /// `MERIDIAN_DATABASE_CONNECTION_WAIT_MS` (3000), `MERIDIAN_DATABASE_STATEMENT_TIMEOUT_MS` (30000),
  /// `MERIDIAN_DATABASE_COMMIT_TIMEOUT_MS` (5000) and `MERIDIAN_HEALTH_DATABASE_TIMEOUT_MS` (2000).
  public var databaseTimeouts = DatabaseTimeouts()
  /// The longest an upload may wait for its commit before `GET /health` reports the node unhealthy
  /// (`MERIDIAN_HEALTH_WRITER_STALL_MS`, 3000).
  public var writerStallLimit = Duration.seconds(3)
  /// How long a graceful shutdown (SIGTERM) may take before what still runs is cancelled
  /// (`MERIDIAN_SHUTDOWN_TIMEOUT`, seconds, 30).
  public var shutdownTimeout = Duration.seconds(30)
  /// Development or production.
  public var mode = Mode.development
  /// The SMS sender.
  public var smsSender = SMSSenderKind.log
  /// The `http` and `twilio` senders' settings (``SMSSettings``, `MERIDIAN_SMS_*`).
  public var sms = SMSSettings()
  /// The bearer token of the operators' admin API.
  public var adminToken: String? = nil
  /// How long a bearer token is valid, in seconds.
  public var tokenLifetime: Int64 = 30 * 24 * 3600
  /// The bcrypt cost for passwords (4…31).
  public var bcryptCost = 12
  /// The largest request body accepted on the wire, in bytes.
  public var maxBodyBytes = 2 * 1024 * 1024
  /// The largest request body after gzip decompression, in bytes.
  public var maxDecompressedBytes = 16 * 1024 * 1024
  /// The largest history file `POST /v1/history/import` takes, on the wire and inflated, in bytes
  /// (`MERIDIAN_MAX_HISTORY_IMPORT_BYTES`).
  public var maxHistoryImportBytes = 512 * 1024 * 1024
  /// How many group commits of fixes run at once (`MERIDIAN_FIX_COMMITS_IN_FLIGHT`, 1…64); nil: the store's
  /// default (``FixStore/fixCommitsInFlight``: 1 on SQLite, which has one writer; 4 on PostgreSQL).
  public var fixCommitsInFlight: Int?
  /// One-time codes per phone number per hour.
  public var otpPerPhonePerHour = 5
  /// One-time code requests per client address per hour.
  public var otpPerAddressPerHour = 30
  /// The least time between two codes to one phone number, in seconds (DomainKit's `OneTimeCodeRateLimit`); 0 off.
  public var otpSpacingSeconds = 60
  /// The log level.
  public var logLevel = Logger.Level.info
  /// Who may read `GET /metrics`.
  public var metricsAccess = MetricsAccess.admin
  /// How long a connection may stay idle between requests, send one request's head, and send its body, in seconds
  /// (`MERIDIAN_HTTP_IDLE_TIMEOUT` 60, `MERIDIAN_HTTP_HEADER_TIMEOUT` 10, `MERIDIAN_HTTP_BODY_TIMEOUT` 60).
  public var httpTimeouts = RealtimeWebSocketConfiguration.HTTPTimeouts()
  /// Limits on what one account, address or device may do (`MERIDIAN_LIMIT_*`; `docs/security.md` lists them).
  public var limits = ServerLimits()
  /// Polls and rewards: points per action, and where poll images and profile photos are kept (``PollSettings``).
  public var polls = PollSettings()
  /// Webhook delivery: allowed addresses, abandon time, pacing (``WebhookSettings``).
  public var webhooks = WebhookSettings()
  /// Geofence rules (dwell time, gap reset, exit margin) and the fences per person (``GeofenceSettings``).
  public var geofences = GeofenceSettings()
  /// The web app's files and map tiles (``WebAppSettings``).
  public var web = WebAppSettings()
  /// Password sign-in, registration and the OpenID provider (``SignInSettings``).
  public var signIn = SignInSettings()
  /// The MQTT broker OwnTracks phones publish to (``MQTTSettings``, `MERIDIAN_MQTT_*`); nil: no MQTT.
  public var mqtt: MQTTSettings? = nil

  /// Who may read `GET /metrics`.
  public enum MetricsAccess: String, Sendable, Hashable, CaseIterable {
    /// Only with the admin token as the bearer token (Prometheus: `authorization: {credentials: …}`).
    case admin
    /// Anyone who can reach the port (for a server whose port only the monitoring network reaches).
    case `public`
  }

  /// The development defaults.
  public init() {}

  /// The development admin token, used only in development mode when none is configured.
  public static let developmentAdminToken = "development-admin-token"

  /// Resolves defaults, then `environment` (`MERIDIAN_*`), then `settings`.
  /// - Throws: ``ConfigurationError`` naming the bad setting.
  public static func resolve(environment: [String: String], settings options: ServerSettings = ServerSettings())
    throws(ConfigurationError)
    -> ServerConfiguration
  {
    var configuration = ServerConfiguration()
    func value(_ flag: String?, _ name: String) -> String? {
      flag ?? environment[name].flatMap { $0.isEmpty ? nil : $0 }
    }
    func parse<T>(_ flag: String?, _ name: String, _ convert: (String) -> T?) throws(ConfigurationError) -> T? {
      guard let text = value(flag, name) else { return nil }
      guard let result = convert(text) else { throw ConfigurationError(setting: name, value: text) }
      return result
    }
    if let host = value(options.host, "MERIDIAN_HOST") { configuration.host = host }
    if let port = try parse(options.port, "MERIDIAN_PORT", { Int($0).flatMap { (0...65535).contains($0) ? $0 : nil } })
    {
      configuration.port = port
    }
    if let location = value(options.database, "MERIDIAN_DATABASE_URL") ?? value(nil, "MERIDIAN_DATABASE") {
      configuration.database = StoreLocation(location)
    }
    if let replica = value(nil, "MERIDIAN_DATABASE_REPLICA_URL") {
      guard case .postgres = configuration.database, case .postgres = StoreLocation(replica) else {
        throw ConfigurationError(
          setting: "MERIDIAN_DATABASE_REPLICA_URL", value: StoreLocation(replica).description,
          reason: "must be the postgres:// URL of a replica of the PostgreSQL database MERIDIAN_DATABASE_URL names")
      }
      configuration.databaseReplicaURL = replica
    }
    if let connections = try parse(
      nil, "MERIDIAN_DATABASE_CONNECTIONS", { Int($0).flatMap { (1...1000).contains($0) ? $0 : nil } })
    {
      configuration.databaseConnections = connections
    }
    func milliseconds(_ name: String) throws(ConfigurationError) -> Duration? {
      try parse(nil, name) { Int64($0).flatMap { (1...3_600_000).contains($0) ? .milliseconds($0) : nil } }
    }
    if let wait = try milliseconds("MERIDIAN_DATABASE_CONNECTION_WAIT_MS") {
      configuration.databaseTimeouts.connectionWait = wait
    }
    if let limit = try milliseconds("MERIDIAN_DATABASE_STATEMENT_TIMEOUT_MS") {
      configuration.databaseTimeouts.statement = limit
    }
    if let limit = try milliseconds("MERIDIAN_DATABASE_COMMIT_TIMEOUT_MS") {
      configuration.databaseTimeouts.commit = limit
    }
    if let limit = try milliseconds("MERIDIAN_HEALTH_DATABASE_TIMEOUT_MS") {
      configuration.databaseTimeouts.health = limit
    }
    if let limit = try milliseconds("MERIDIAN_HEALTH_WRITER_STALL_MS") { configuration.writerStallLimit = limit }
    if let mode = try parse(options.mode, "MERIDIAN_MODE", Mode.init(rawValue:)) { configuration.mode = mode }
    if let sender = try parse(options.smsSender, "MERIDIAN_SMS_SENDER", SMSSenderKind.init(rawValue:)) {
      configuration.smsSender = sender
    }
    try configuration.sms.read(environment, sender: configuration.smsSender)
    configuration.adminToken = value(options.adminToken, "MERIDIAN_ADMIN_TOKEN")
    if let lifetime = try parse(
      options.tokenLifetime, "MERIDIAN_TOKEN_LIFETIME", { Int64($0).flatMap { $0 > 0 ? $0 : nil } })
    {
      configuration.tokenLifetime = lifetime
    }
    if let cost = try parse(
      options.bcryptCost, "MERIDIAN_BCRYPT_COST", { Int($0).flatMap { (4...31).contains($0) ? $0 : nil } })
    {
      configuration.bcryptCost = cost
    }
    if let bytes = try parse(options.maxBodyBytes, "MERIDIAN_MAX_BODY_BYTES", { Int($0).flatMap { $0 > 0 ? $0 : nil } })
    {
      configuration.maxBodyBytes = bytes
    }
    if let bytes = try parse(nil, "MERIDIAN_MAX_HISTORY_IMPORT_BYTES", { Int($0).flatMap { $0 > 0 ? $0 : nil } }) {
      configuration.maxHistoryImportBytes = bytes
    }
    if let commits = try parse(
      nil, "MERIDIAN_FIX_COMMITS_IN_FLIGHT", { Int($0).flatMap { (1...64).contains($0) ? $0 : nil } })
    {
      configuration.fixCommitsInFlight = commits
    }
    if let level = try parse(options.logLevel, "MERIDIAN_LOG_LEVEL", Logger.Level.init(rawValue:)) {
      configuration.logLevel = level
    }
    if let access = try parse(options.metrics, "MERIDIAN_METRICS", MetricsAccess.init(rawValue:)) {
      configuration.metricsAccess = access
    }
    try configuration.limits.read(environment)
    try configuration.polls.read(environment)
    try configuration.webhooks.read(environment)
    try configuration.geofences.read(environment)
    try configuration.web.read(environment)
    try configuration.signIn.read(environment)
    configuration.mqtt = try MQTTSettings.read(environment)
    func seconds(_ name: String) throws(ConfigurationError) -> Int? {
      try parse(nil, name) { Int($0).flatMap { $0 > 0 ? $0 : nil } }
    }
    if let idle = try seconds("MERIDIAN_HTTP_IDLE_TIMEOUT") { configuration.httpTimeouts.idle = .seconds(idle) }
    if let header = try seconds("MERIDIAN_HTTP_HEADER_TIMEOUT") { configuration.httpTimeouts.header = .seconds(header) }
    if let body = try seconds("MERIDIAN_HTTP_BODY_TIMEOUT") { configuration.httpTimeouts.body = .seconds(body) }
    if let shutdown = try seconds("MERIDIAN_SHUTDOWN_TIMEOUT") { configuration.shutdownTimeout = .seconds(shutdown) }
    if configuration.adminToken == nil {
      guard configuration.mode == .development else {
        throw ConfigurationError(
          setting: "MERIDIAN_ADMIN_TOKEN", value: nil,
          reason: "is required in production mode (set it or pass --admin-token)")
      }
      configuration.adminToken = developmentAdminToken
    }
    return configuration
  }
}

/// A setting that could not be used; `description` says which and why.
public struct ConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The environment variable (or flag) name.
  public var setting: String
  /// The value given, if any.
  public var value: String?
  /// Why it was refused.
  public var reason: String
  /// An error for `setting`.
  public init(setting: String, value: String?, reason: String = "has an invalid value") {
    self.setting = setting
    self.value = value
    self.reason = reason
  }
  /// `MERIDIAN_PORT has an invalid value: 'abc'`.
  public var description: String { "\(setting) \(reason)" + (value.map { ": '\($0)'" } ?? ".") }
}

/// The settings given on the command line (each overrides its environment variable), as text: the executable's
/// flags fill it in, and ``ServerConfiguration/resolve(environment:settings:)`` checks every value.
public struct ServerSettings: Sendable, Hashable {
  /// `--host`.
  public var host: String?
  /// `--port`.
  public var port: String?
  /// `--database`.
  public var database: String?
  /// `--mode`.
  public var mode: String?
  /// `--sms-sender`.
  public var smsSender: String?
  /// `--admin-token`.
  public var adminToken: String?
  /// `--token-lifetime`.
  public var tokenLifetime: String?
  /// `--bcrypt-cost`.
  public var bcryptCost: String?
  /// `--max-body-bytes`.
  public var maxBodyBytes: String?
  /// `--log-level`.
  public var logLevel: String?
  /// `--metrics`.
  public var metrics: String?

  /// Settings; nil leaves the environment variable or the default.
  public init(
    host: String? = nil, port: String? = nil, database: String? = nil, mode: String? = nil,
    smsSender: String? = nil, adminToken: String? = nil, tokenLifetime: String? = nil, bcryptCost: String? = nil,
    maxBodyBytes: String? = nil, logLevel: String? = nil, metrics: String? = nil
  ) {
    self.host = host
    self.port = port
    self.database = database
    self.mode = mode
    self.smsSender = smsSender
    self.adminToken = adminToken
    self.tokenLifetime = tokenLifetime
    self.bcryptCost = bcryptCost
    self.maxBodyBytes = maxBodyBytes
    self.logLevel = logLevel
    self.metrics = metrics
  }
}
