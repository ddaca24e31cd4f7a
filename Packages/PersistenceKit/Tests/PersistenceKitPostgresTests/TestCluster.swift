import Foundation
import PersistenceKitPostgres
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The development cluster of `Tools/postgres`, started once for the whole test run. When PostgreSQL can't be
/// installed or started, every test that needs it fails with the script's own words; none is skipped.
enum TestCluster {
  struct StartFailure: Error, CustomStringConvertible {
    var description: String
  }

  /// The repository's root, four directories above this file's folder.
  static let repositoryRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()

  private static let started: Result<PostgresURL, StartFailure> = start()

  /// The URL of the cluster's `postgres` database.
  static func url() throws -> PostgresURL {
    try started.get()
  }

  private static func start() -> Result<PostgresURL, StartFailure> {
    let printed: String
    switch runScript("start") {
    case .success(let output): printed = output
    case .failure(let failure):
      return .failure(
        StartFailure(description: "\(failure.description); PostgreSQL 15 with PostGIS is needed for these tests"))
    }
    guard let last = printed.split(separator: "\n").last.map(String.init) else {
      return .failure(StartFailure(description: "Tools/postgres start printed no URL"))
    }
    do {
      return .success(try PostgresURL(last))
    } catch {
      return .failure(StartFailure(description: "Tools/postgres start printed '\(last)': \(error)"))
    }
  }

  /// Runs `Tools/postgres command` (with `environment` added to this process's) and waits for it: what it printed
  /// on standard output, or why it failed with what it printed on standard error. Blocks: call it from a thread of
  /// its own, not the tests' shared pool.
  static func runScript(_ command: String, environment: [String: String] = [:]) -> Result<String, StartFailure> {
    // posix_spawn, not Foundation's Process: its run() crashed (SIGSEGV in memcpy) in the root package's test
    // process while many tests started children at once (as MeridianTestSupport's ChildProcess says).
    let script = repositoryRoot.appendingPathComponent("Tools/postgres")
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pg-script-\(UUID().uuidString)")
    do {
      try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    } catch {
      return .failure(StartFailure(description: "Can't make \(directory.path): \(error)"))
    }
    defer { try? FileManager.default.removeItem(at: directory) }
    let outPath = directory.appendingPathComponent("stdout").path
    let errPath = directory.appendingPathComponent("stderr").path
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    let variables = ProcessInfo.processInfo.environment.merging(environment) { $1 }.map { "\($0.key)=\($0.value)" }
    var argv: [UnsafeMutablePointer<CChar>?] = [script.path, command].map { (text: String) in strdup(text) } + [nil]
    var envp: [UnsafeMutablePointer<CChar>?] = variables.map { strdup($0) } + [nil]
    defer { for pointer in argv + envp { free(pointer) } }
    var pid = pid_t()
    let spawned = posix_spawn(&pid, script.path, &actions, nil, &argv, &envp)
    guard spawned == 0 else {
      return .failure(StartFailure(description: "Can't run \(script.path): \(String(cString: strerror(spawned)))"))
    }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
    let printed = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? ""
    let complaint = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
    // WIFEXITED with WEXITSTATUS 0.
    guard status & 0x7f == 0, (status >> 8) & 0xff == 0 else {
      return .failure(
        StartFailure(description: "Tools/postgres \(command) failed (status \(status)):\n\(complaint)"))
    }
    return .success(printed)
  }

  /// Warnings and errors only: closing a pool while it opens a connection logs at info level.
  static let logger = {
    var logger = Logger(label: "persistencekit.postgres.tests")
    logger.logLevel = .warning
    return logger
  }()

  /// Runs `body` with a fresh database made from `meridian_template` (PostGIS included), dropped afterwards.
  static func withFreshDatabase<T: Sendable>(
    maxConnections: Int = 4,
    _ body: (PostgresDatabase) async throws -> T
  ) async throws -> T {
    let admin = try url()
    let name = "pk_test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
    let control = PostgresDatabase(url: admin, logger: logger)
    try await control.withDedicatedConnection { connection in
      try await connection.execute(script: "CREATE DATABASE \(name) TEMPLATE meridian_template", logger: logger)
    }
    let database = try await PostgresDatabase.open(
      url: admin.with(database: name), maxConnections: maxConnections, logger: logger)
    do {
      let result = try await body(database)
      await database.close()
      try await drop(name, using: control)
      return result
    } catch {
      await database.close()
      try? await drop(name, using: control)
      throw error
    }
  }

  private static func drop(_ name: String, using control: PostgresDatabase) async throws {
    try await control.withDedicatedConnection { connection in
      try await connection.execute(script: "DROP DATABASE IF EXISTS \(name) WITH (FORCE)", logger: logger)
    }
  }

  /// Calls `call` as a client does: an answer of `unavailable` (``PostgresDatabase/isUnavailable(_:)``) is tried again
  /// every 20 ms until `limit` has passed since `start`; any other error, or `unavailable` after that, is thrown.
  static func retryingWhileUnavailable<T>(
    since start: ContinuousClock.Instant = .now, for limit: Duration = .seconds(20), _ call: () async throws -> T
  ) async throws -> T {
    while true {
      do {
        return try await call()
      } catch  where PostgresDatabase.isUnavailable(error) && ContinuousClock.now - start < limit {
        try await Task.sleep(for: .milliseconds(20))
      }
    }
  }
}

extension PostgresDatabase {
  /// The single integer `sql` returns.
  func integer(_ sql: String) async throws -> Int {
    let rows = try await query(PostgresQuery(unsafeSQL: sql))
    guard let row = rows.first else { throw TestCluster.StartFailure(description: "no row for \(sql)") }
    return try row.decode(Int.self)
  }
}
