import Foundation
import MeridianStoreEngines
import MeridianStorePostgres
import PersistenceKit

/// The `db` commands' work on a PostgreSQL database (`--database postgres://…`): the migration ledger of
/// ``PostgresStore`` (read without migrating), `pg_dump` backups in its custom format, `VACUUM (ANALYZE)` and the
/// schema check. PostgreSQL's failures become ``AdminError``s in PostgreSQL's own words.
enum AdminPostgres {
  /// Runs `body`; a PostgreSQL failure becomes an ``AdminError``: a database that does not exist is not found
  /// (exit 3), anything else (a server that does not answer, a refused role) a failure (exit 1).
  static func wording<Value>(_ location: StoreLocation, _ body: () async throws -> Value) async throws -> Value {
    do {
      return try await body()
    } catch let error as AdminError {
      throw error
    } catch let error as MigrationError {
      throw error
    } catch {
      let reason = PostgresStore.reason(error) ?? "\(error)"
      if PostgresStore.isMissingDatabase(error) {
        throw AdminError.notFound(
          "There is no PostgreSQL database at \(location): \(reason). Create it (with PostGIS: CREATE DATABASE …; "
            + "CREATE EXTENSION postgis), then run `meridian-admin db migrate`.")
      }
      throw AdminError.failure("PostgreSQL at \(location) failed: \(reason).")
    }
  }

  /// Where each of the PostgreSQL engine's migrations stands on the database; writes nothing.
  static func migrationStatus(_ location: StoreLocation) async throws -> MigrationStatus {
    try await wording(location) { try await PostgresStore.migrationStatus(url: url(location)) }
  }

  /// The migrations `db migrate` would apply; writes nothing.
  static func migrationPlan(_ location: StoreLocation) async throws -> [Migration] {
    try await wording(location) { try await PostgresStore.migrationPlan(url: url(location)) }
  }

  /// Problems with the database's indexes and constraints (empty when healthy).
  static func schemaProblems(_ location: StoreLocation) async throws -> [String] {
    try await wording(location) { try await PostgresStore.schemaProblems(url: url(location)) }
  }

  /// `VACUUM (ANALYZE)`; the database's size before and after.
  static func vacuum(_ location: StoreLocation) async throws -> (before: Int64, after: Int64) {
    try await wording(location) {
      let before = try await PostgresStore.databaseSize(url: url(location))
      try await PostgresStore.vacuumAnalyze(url: url(location))
      return (before, try await PostgresStore.databaseSize(url: url(location)))
    }
  }

  /// A `pg_dump --format=custom` archive of the database, written next to `file` and renamed into place once
  /// `pg_restore --list` reads it back; returns its size in bytes and its number of entries.
  static func backup(_ location: StoreLocation, to file: String) async throws -> (bytes: Int64, entries: Int) {
    // Reach the database first, so that a wrong URL is worded like every other command's.
    _ = try await migrationStatus(location)
    let dump = try tool("pg_dump")
    let target = URL(fileURLWithPath: file)
    let partial = target.deletingLastPathComponent()
      .appendingPathComponent(".\(target.lastPathComponent).\(UUID().uuidString).partial")
    defer { try? FileManager.default.removeItem(at: partial) }
    let dumped = try run(
      dump, ["--format=custom", "--no-password", "--file=\(partial.path)", "--dbname=\(url(location))"])
    guard dumped.status == 0 else {
      throw AdminError.failure("pg_dump failed (exit \(dumped.status)): \(dumped.errors)")
    }
    let header = try FileHandle(forReadingFrom: partial).read(upToCount: 5) ?? Data()
    guard header == Data("PGDMP".utf8) else {
      throw AdminError.failure("pg_dump wrote something that is not a custom-format archive to \(partial.path).")
    }
    // Read the archive back before calling it a backup.
    let restore = URL(fileURLWithPath: dump).deletingLastPathComponent().appendingPathComponent("pg_restore").path
    let listed = try run(
      FileManager.default.isExecutableFile(atPath: restore) ? restore : tool("pg_restore"),
      ["--list", partial.path])
    guard listed.status == 0 else {
      throw AdminError.failure("pg_restore can't read the archive pg_dump wrote: \(listed.errors)")
    }
    let entries = listed.output.split(separator: "\n").filter { !$0.hasPrefix(";") && !$0.isEmpty }.count
    if FileManager.default.fileExists(atPath: target.path) { try FileManager.default.removeItem(at: target) }
    try FileManager.default.moveItem(at: partial, to: target)
    let size = try FileManager.default.attributesOfItem(atPath: target.path)[.size] as? NSNumber
    return (size?.int64Value ?? 0, entries)
  }

  /// The URL of a PostgreSQL location.
  private static func url(_ location: StoreLocation) -> String {
    if case .postgres(let url) = location { return url }
    preconditionFailure("not a PostgreSQL location: \(location)")
  }

  /// A PostgreSQL client program: from `PATH`, else the newest `/usr/lib/postgresql/<version>/bin` (Debian's).
  static func tool(_ name: String) throws -> String {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
    var directories = path.split(separator: ":").map(String.init)
    let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
    directories += versions.compactMap(Int.init).sorted(by: >).map { "/usr/lib/postgresql/\($0)/bin" }
    for directory in directories {
      let candidate = URL(fileURLWithPath: directory).appendingPathComponent(name).path
      if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    throw AdminError.notFound(
      "\(name) is not installed (not in PATH nor /usr/lib/postgresql/*/bin); install PostgreSQL's client programs "
        + "(Debian: apt-get install postgresql-client-15).")
  }

  /// Runs `executable` with `arguments` and waits; its standard output and the last lines of its standard error
  /// (kept in a temporary file, so that neither pipe can fill while the other is read).
  private static func run(_ executable: String, _ arguments: [String]) throws -> (
    status: Int32, output: String, errors: String
  ) {
    let errorsFile = FileManager.default.temporaryDirectory.appendingPathComponent("meridian-admin-\(UUID()).err")
    guard FileManager.default.createFile(atPath: errorsFile.path, contents: nil) else {
      throw AdminError.failure("Can't create \(errorsFile.path) for \(executable)'s messages.")
    }
    defer { try? FileManager.default.removeItem(at: errorsFile) }
    let errors = try FileHandle(forWritingTo: errorsFile)
    defer { try? errors.close() }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let output = Pipe()
    process.standardOutput = output
    process.standardError = errors
    process.standardInput = FileHandle.nullDevice
    try process.run()
    let outputData = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let text = String(decoding: (try? Data(contentsOf: errorsFile)) ?? Data(), as: UTF8.self)
    let lastLines = text.split(separator: "\n").suffix(5).joined(separator: " ")
    return (process.terminationStatus, String(decoding: outputData, as: UTF8.self), lastLines)
  }
}
