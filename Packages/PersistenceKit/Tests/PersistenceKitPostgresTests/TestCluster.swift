import Foundation
import PersistenceKitPostgres
import Testing

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
    let script = repositoryRoot.appendingPathComponent("Tools/postgres")
    let process = Process()
    process.executableURL = script
    process.arguments = [command]
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    let output = Pipe()
    let errors = Pipe()
    process.standardOutput = output
    process.standardError = errors
    do {
      try process.run()
    } catch {
      return .failure(StartFailure(description: "Can't run \(script.path): \(error)"))
    }
    let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    let complaint = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
      return .failure(
        StartFailure(
          description: "Tools/postgres \(command) failed (exit \(process.terminationStatus)):\n\(complaint)"))
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
}

extension PostgresDatabase {
  /// The single integer `sql` returns.
  func integer(_ sql: String) async throws -> Int {
    let rows = try await query(PostgresQuery(unsafeSQL: sql))
    guard let row = rows.first else { throw TestCluster.StartFailure(description: "no row for \(sql)") }
    return try row.decode(Int.self)
  }
}
