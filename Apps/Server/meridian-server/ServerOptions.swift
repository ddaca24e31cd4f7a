import ArgumentParser
import MeridianServer

/// The command-line flags; each overrides its environment variable. `--help` lists them all.
struct ServerOptions: ParsableArguments, Sendable {
  @Option(help: "Address to listen on (MERIDIAN_HOST, default 127.0.0.1).")
  var host: String?
  @Option(help: "Port to listen on, 0 for any free port (MERIDIAN_PORT, default 8080).")
  var port: String?
  @Option(
    help: ArgumentHelp(
      "SQLite database file, or a postgres://user@host:port/db URL for several nodes on one PostgreSQL database "
        + "(MERIDIAN_DATABASE_URL or MERIDIAN_DATABASE, default ./data/meridian.sqlite)."))
  var database: String?
  @Option(help: "development or production (MERIDIAN_MODE, default development).")
  var mode: String?
  @Option(
    help: ArgumentHelp(
      "Where one-time codes go: log (development only), http or twilio; MERIDIAN_SMS_* configure the gateway "
        + "(MERIDIAN_SMS_SENDER, default log)."))
  var smsSender: String?
  @Option(help: "Admin API token, a secret (MERIDIAN_ADMIN_TOKEN; required in production).")
  var adminToken: String?
  @Option(help: "Bearer token lifetime in seconds (MERIDIAN_TOKEN_LIFETIME, default 2592000 = 30 days).")
  var tokenLifetime: String?
  @Option(help: "bcrypt cost 4…31 (MERIDIAN_BCRYPT_COST, default 12).")
  var bcryptCost: String?
  @Option(help: "Largest request body in bytes (MERIDIAN_MAX_BODY_BYTES, default 2097152).")
  var maxBodyBytes: String?
  @Option(help: "trace, debug, info, notice, warning, error or critical (MERIDIAN_LOG_LEVEL, default info).")
  var logLevel: String?
  @Option(help: "Who may read /metrics: admin (the admin token) or public (MERIDIAN_METRICS, default admin).")
  var metrics: String?

  /// The flags as the server library's settings.
  var settings: ServerSettings {
    ServerSettings(
      host: host, port: port, database: database, mode: mode, smsSender: smsSender, adminToken: adminToken,
      tokenLifetime: tokenLifetime, bcryptCost: bcryptCost, maxBodyBytes: maxBodyBytes, logLevel: logLevel,
      metrics: metrics)
  }
}
