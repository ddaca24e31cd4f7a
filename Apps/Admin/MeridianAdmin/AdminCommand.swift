import ArgumentParser
import DomainKit
import Foundation
import MeridianAPI
import MeridianStore
import MeridianStoreEngines
import MeridianStorePostgres

/// `meridian-admin`: the operators' CLI, run against the server's database: its SQLite file, or its PostgreSQL
/// database (`--database postgres://…`).
public struct AdminCommand: AsyncParsableCommand {
  /// The commands.
  public static let configuration = CommandConfiguration(
    commandName: "meridian-admin",
    abstract: "Operate a Meridian server's database: migrations, backups, users, history, retention, venues.",
    discussion: """
      The database is --database PATH-or-URL, else MERIDIAN_DATABASE_URL, else MERIDIAN_DATABASE, else \
      ./data/meridian.sqlite (as for meridian-server). A postgres://user@host:port/db URL is the PostgreSQL engine: \
      every command works on it; db backup runs pg_dump (custom format), db vacuum VACUUM (ANALYZE), db check checks \
      indexes, constraints and migrations. Every command prints a readable table, or JSON with --json. Destructive \
      commands need --yes.

      Where the database is not local, stats, users list|show|disable|enable|delete, tokens list|revoke, groups list \
      and promotions list|stats use a running server's admin API instead: --server URL (MERIDIAN_SERVER) with --token T (MERIDIAN_ADMIN_TOKEN, the \
      server's admin token).

      Exit codes: 0 success; 1 failure (including problems found by `db check` and `i18n check`); 2 usage error \
      (bad option, missing --yes); 3 not found (user, token, venue, database or input file).
      """,
    subcommands: [
      DatabaseCommand.self, UsersCommand.self, TokensCommand.self, GroupsCommand.self, HistoryCommand.self,
      RetentionCommand.self, VenuesCommand.self, PromotionsCommand.self, AdvertisersCommand.self, StatsCommand.self,
      I18nCommand.self,
      PollsCommand.self, CommentsCommand.self, CouponsCommand.self, PointsCommand.self, BlobsCommand.self,
      PlacesCommand.self, ReviewsCommand.self, NewsCommand.self, GeoCommand.self,
      WebhooksCommand.self,
    ])

  /// Required by ArgumentParser.
  public init() {}
}

/// Options every command takes.
public struct GlobalOptions: ParsableArguments, Sendable {
  @Option(
    help: ArgumentHelp(
      "The server's database: a SQLite file, or postgres://user[:password]@host[:port]/db (MERIDIAN_DATABASE_URL, "
        + "else MERIDIAN_DATABASE; default ./data/meridian.sqlite).",
      valueName: "path-or-url"))
  public var database: String?

  @Option(
    name: .customLong("server"),
    help:
      "A running server's URL: stats, users, tokens, groups and promotion figures go through its admin API (MERIDIAN_SERVER)."
  )
  public var serverURL: String?

  @Option(name: .customLong("token"), help: "The server's admin token, with --server (MERIDIAN_ADMIN_TOKEN).")
  public var adminToken: String?

  @Flag(help: "Print JSON instead of a table.")
  public var json = false

  /// Required by ArgumentParser.
  public init() {}

  /// The server to use instead of a local database: `--server`, else `MERIDIAN_SERVER` unless `--database` is given.
  public var server: String? {
    if let serverURL { return serverURL }
    guard database == nil, let value = ProcessInfo.processInfo.environment["MERIDIAN_SERVER"], !value.isEmpty
    else { return nil }
    return value
  }

  /// The database: the flag, else `MERIDIAN_DATABASE_URL`, else `MERIDIAN_DATABASE`, else the server's default.
  /// - Throws: ``AdminError`` (usage) with a server: the command works on a local database only.
  public var location: StoreLocation {
    get throws(AdminError) {
      if server != nil {
        throw .usage(
          "This command works on a local database only (a file or postgres:// URL): --database PATH-or-URL, without "
            + "--server or MERIDIAN_SERVER. With a server: stats, users list|show|disable|enable|delete, "
            + "tokens list|revoke, groups list, promotions list|stats.")
      }
      if let database { return StoreLocation(database) }
      let environment = ProcessInfo.processInfo.environment
      for name in ["MERIDIAN_DATABASE_URL", "MERIDIAN_DATABASE"] {
        if let value = environment[name], !value.isEmpty { return StoreLocation(value) }
      }
      return StoreLocation(StoreLocation.defaultSQLitePath)
    }
  }

  /// Opens the database (existing, schema up to date); close it when done.
  public func open() async throws -> AdminDatabase { try await AdminDatabase.open(location) }

  /// Runs `body` with the open database, then closes it.
  func withDatabase<Value>(_ body: (AdminDatabase) async throws -> Value) async throws -> Value {
    let database = try await open()
    do {
      let value = try await body(database)
      await database.close()
      return value
    } catch {
      await database.close()
      throw error
    }
  }

  /// Runs `body` with the server's admin API (`--server`) or, without one, the local database, and then closes it.
  func withBackend<Value>(_ body: (any AdminBackend) async throws -> Value) async throws -> Value {
    let backend: any AdminBackend
    var opened: AdminDatabase?
    if let server {
      if database != nil { throw AdminError.usage("Give --database or --server, not both.") }
      let environment = ProcessInfo.processInfo.environment["MERIDIAN_ADMIN_TOKEN"]
      guard let token = adminToken ?? environment, !token.isEmpty else {
        throw AdminError.usage("--server needs the server's admin token: --token T or MERIDIAN_ADMIN_TOKEN.")
      }
      backend = try AdminServer(server: server, token: token)
    } else {
      let local = try await open()
      opened = local
      backend = local.administration
    }
    do {
      let value = try await body(backend)
      await backend.close()
      await opened?.close()
      return value
    } catch {
      await backend.close()
      await opened?.close()
      throw error
    }
  }

  /// Prints `value` as JSON with `--json`, else `text()`.
  public func emit(_ value: some Encodable, _ text: () -> String) throws {
    if json { try Console.json(value) } else { Console.print(text()) }
  }
}

/// Runs the CLI and maps every outcome to a documented exit code.
public enum AdminCLI {
  /// Parses `arguments` (without the program name), runs the command and returns the exit code.
  public static func main(_ arguments: [String]) async -> Int32 {
    do {
      var command = try AdminCommand.parseAsRoot(arguments)
      if var command = command as? any AsyncParsableCommand {
        try await command.run()
      } else {
        try command.run()
      }
      return ExitStatus.ok
    } catch let error as ExitCode {
      return error.rawValue
    } catch let error as AdminError {
      Console.error("error: \(error.message)")
      return error.exitCode
    } catch let error as APIError {
      Console.error("error: \(error.message)")
      return AdminError(status: error.status, message: error.message).exitCode
    } catch {
      if let reason = PostgresStore.reason(error) {
        // postgres-nio's own description hides the server's message.
        Console.error("error: PostgreSQL: \(reason)")
        return ExitStatus.failure
      }
      let code = AdminCommand.exitCode(for: error)
      let message = AdminCommand.fullMessage(for: error)
      if code == .success {
        if !message.isEmpty { Console.print(message) }
        return ExitStatus.ok
      }
      if code == .validationFailure {
        Console.error(message)
        return ExitStatus.usage
      }
      Console.error("error: \(message)")
      return ExitStatus.failure
    }
  }
}

/// Refuses to run a destructive command without `--yes`.
func requireConfirmation(_ yes: Bool, _ what: String) throws(AdminError) {
  guard yes else { throw .usage("\(what) can't be undone; pass --yes to confirm (or --dry-run where offered).") }
}

// MARK: stats

struct StatsCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "stats",
    abstract:
      "Users, devices, fixes per day for the last 7 days, database size; with --server, live connections and ingest.")

  @OptionGroup var options: GlobalOptions

  @Option(help: "Days of fixes per day to show.")
  var days = 7

  func run() async throws {
    guard (1...366).contains(days) else { throw AdminError.usage("--days must be 1…366.") }
    let statistics = try await options.withBackend { try await $0.statistics(days: days) }
    try options.emit(statistics) {
      var table = TextTable(["what", "count"])
      table.add(["users", "\(statistics.users) (\(statistics.disabledUsers) disabled)"])
      table.add(["devices", "\(statistics.devices)"])
      table.add(["fixes", "\(statistics.fixes)"])
      table.add(["active tokens", "\(statistics.activeTokens)"])
      table.add(["venues", "\(statistics.venues)"])
      table.add(["promotions", "\(statistics.promotions)"])
      table.add(["database", AdminFormat.bytes(statistics.databaseBytes)])
      table.add(["free in database", AdminFormat.bytes(statistics.freeBytes)])
      table.add(["write-ahead log", AdminFormat.bytes(statistics.walBytes)])
      if let live = statistics.live {
        table.add(["live connections", "\(live.connections)"])
        table.add([
          "ingest (last \(live.windowSeconds) s)",
          "\(live.fixesAccepted) fixes, " + String(format: "%.1f", live.fixesPerSecond) + " fixes/s",
        ])
      }
      var perDay = TextTable(["day (UTC)", "fixes"])
      for day in statistics.fixesPerDay { perDay.add([day.day, "\(day.fixes)"]) }
      return table.text + "\n\n" + perDay.text
    }
  }
}

// MARK: retention

struct RetentionCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "retention", abstract: "Delete old location history.", subcommands: [Apply.self])

  struct Apply: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Delete fixes older than a duration, in small batches that never block the server's writers for long.")

    @OptionGroup var options: GlobalOptions

    @Option(help: "Delete fixes older than this: 365d, 8w, 12h, 30m.")
    var olderThan: String

    @Option(help: "Rows per write transaction.")
    var batchSize = 1000

    @Flag(help: "Only count what would be deleted.")
    var dryRun = false

    @Flag(help: "Confirm the deletion.")
    var yes = false

    func run() async throws {
      let age = try AdminFormat.parseDuration(olderThan, option: "--older-than")
      guard (1...100_000).contains(batchSize) else { throw AdminError.usage("--batch-size must be 1…100000.") }
      if !dryRun { try requireConfirmation(yes, "retention apply") }
      let cutoff = Timestamp.milliseconds(Date()) - age
      let report = try await options.withDatabase { [dryRun, batchSize] database in
        if dryRun { return try await database.retentionPreview(olderThan: cutoff) }
        let report = try await database.applyRetention(olderThan: cutoff, batchSize: batchSize) { deleted in
          Console.progress("deleted \(deleted) fixes…")
        }
        Console.endProgress()
        return report
      }
      try options.emit(report) {
        let verb = report.dryRun ? "Would delete" : "Deleted"
        var text =
          "\(verb) \(report.deleted) fixes of \(report.users) users older than \(AdminFormat.time(report.cutoff))"
        if !report.dryRun { text += " in \(report.batches) batches" }
        if report.deleted > 0 {
          text += " (from \(AdminFormat.time(report.oldest)) to \(AdminFormat.time(report.newest)))"
        }
        return text + "."
      }
    }
  }
}
