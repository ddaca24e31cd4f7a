// Where `meridian-server-bench` keeps its data: a SQLite file in a temporary directory, or a PostgreSQL database made
// for the run — in the cluster `MERIDIAN_BENCH_DATABASE_URL` names, else in a throwaway cluster that
// `Tools/postgres start` runs.
import Foundation
import MeridianServer

#if canImport(Glibc)
  import Glibc
#endif

/// The store engines the server benchmark runs on.
public enum BenchmarkEngine: String, Sendable, CaseIterable {
  /// A SQLite file (the embedded default).
  case sqlite
  /// A PostgreSQL/PostGIS database shared by several server nodes.
  case postgres
}

/// The database of one benchmark run and how to remove it afterwards.
struct BenchmarkDatabase {
  /// The server's configuration with this database selected.
  let configure: @Sendable (inout ServerConfiguration) -> Void
  /// What an operator would read: the file, or the URL without its password.
  let description: String
  /// Removes the database (and stops the cluster when the run started it).
  let remove: () -> Void

  /// A fresh database for `engine`; a SQLite file lives in `directory`.
  ///
  /// PostgreSQL: with `MERIDIAN_BENCH_DATABASE_URL` (`postgres://user@host:port/db`, a role that may create
  /// databases), a database `meridian_bench_<pid>` is created next to `db` from the template `meridian_template`
  /// when that exists (`Tools/postgres` makes it, with PostGIS), else as an empty database in which the migrations
  /// create PostGIS; it is dropped at the end. Without the variable, `Tools/postgres start` runs a cluster in
  /// `MERIDIAN_POSTGRES_DIR` (default `$TMPDIR/meridian-bench-postgres-<uid>`, apart from the tests' cluster), and
  /// the run stops and deletes it at the end unless it was running before. `BENCH_KEEP_DATABASE=1` keeps
  /// the database and the cluster, to look at the run's statements at its sizes afterwards.
  static func make(_ engine: BenchmarkEngine, directory: URL) throws -> BenchmarkDatabase {
    switch engine {
    case .sqlite:
      let path = directory.appendingPathComponent("bench.sqlite").path
      return BenchmarkDatabase(configure: { $0.databasePath = path }, description: path, remove: {})
    case .postgres:
      return try postgres()
    }
  }

  private static func postgres() throws -> BenchmarkDatabase {
    let environment = ProcessInfo.processInfo.environment
    var stopCluster: () -> Void = {}
    let serverURL: String
    if let given = environment["MERIDIAN_BENCH_DATABASE_URL"], !given.isEmpty {
      serverURL = given
    } else {
      let tool = try postgresTool()
      var toolEnvironment = environment
      if toolEnvironment["MERIDIAN_POSTGRES_DIR"]?.isEmpty ?? true {
        let temporary = environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        toolEnvironment["MERIDIAN_POSTGRES_DIR"] = "\(temporary)/meridian-bench-postgres-\(getuid())"
      }
      let wasRunning = try run(tool, ["status"], environment: toolEnvironment, allowFailure: true).status == 0
      let started = try run(tool, ["start"], environment: toolEnvironment)
      guard let last = started.output.split(separator: "\n").last.map(String.init), last.hasPrefix("postgres")
      else { throw BenchmarkFailure(description: "Tools/postgres start printed no URL: \(started.output)") }
      serverURL = last
      if !wasRunning {
        stopCluster = { _ = try? run(tool, ["stop"], environment: toolEnvironment, allowFailure: true) }
      }
    }
    guard var components = URLComponents(string: serverURL), components.host != nil else {
      throw BenchmarkFailure(description: "'\(serverURL)' is not a postgres://user@host:port/db URL")
    }
    let name = "meridian_bench_\(getpid())"
    let psql =
      FileManager.default.isExecutableFile(atPath: "/usr/lib/postgresql/15/bin/psql")
      ? "/usr/lib/postgresql/15/bin/psql" : "/usr/bin/psql"
    func sql(_ statement: String) throws -> (status: Int32, output: String) {
      try run(psql, [serverURL, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-c", statement], allowFailure: true)
    }
    var created = try sql("CREATE DATABASE \(name) TEMPLATE meridian_template")
    if created.status != 0 { created = try sql("CREATE DATABASE \(name)") }
    guard created.status == 0 else {
      stopCluster()
      throw BenchmarkFailure(description: "could not create the database \(name): \(created.output)")
    }
    components.path = "/" + name
    let url = components.string ?? serverURL
    var shown = components
    if shown.password != nil { shown.password = "***" }
    return BenchmarkDatabase(
      configure: { $0.database = .postgres(url: url) }, description: shown.string ?? name,
      remove: {
        if environment["BENCH_KEEP_DATABASE"] != "1" {
          _ = try? sql("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
          stopCluster()
        }
      })
  }

  /// `Tools/postgres`, looked for from the working directory up (the benchmark runs from the repository).
  private static func postgresTool() throws -> String {
    var directory = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
    while true {
      let candidate = directory.appendingPathComponent("Tools/postgres").path
      if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
      let parent = directory.deletingLastPathComponent()
      if parent.path == directory.path { break }
      directory = parent
    }
    throw BenchmarkFailure(
      description: "Tools/postgres not found: run the benchmark from the repository, or set MERIDIAN_BENCH_DATABASE_URL"
    )
  }

  /// Runs `executable` with `arguments` and waits for it; its standard output (standard error passes through).
  /// Throws when it exits with a failure unless `allowFailure`.
  ///
  /// posix_spawn and waitpid, and the output through a file, not Foundation's `Process` with a pipe: `Tools/postgres
  /// start` leaves a server running that must not hold the benchmark's pipe open, and `Process` did not notice the
  /// script's exit here (it stayed a zombie while the benchmark waited).
  @discardableResult
  private static func run(
    _ executable: String, _ arguments: [String], environment: [String: String]? = nil, allowFailure: Bool = false
  ) throws -> (status: Int32, output: String) {
    let outputPath = FileManager.default.temporaryDirectory
      .appendingPathComponent("meridian-server-bench-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).out").path
    defer { unlink(outputPath) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    let variables = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
    var argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
    var envp: [UnsafeMutablePointer<CChar>?] = variables.map { strdup($0) } + [nil]
    defer { for pointer in argv + envp { free(pointer) } }
    var pid = pid_t()
    let spawned = posix_spawn(&pid, executable, &actions, nil, &argv, &envp)
    guard spawned == 0 else {
      throw BenchmarkFailure(description: "could not run \(executable): \(String(cString: strerror(spawned)))")
    }
    var waitStatus: Int32 = 0
    while waitpid(pid, &waitStatus, 0) == -1 && errno == EINTR {}
    // WIFEXITED / WEXITSTATUS: the low 7 bits are the signal (0 when it exited), the next 8 the exit status.
    let status = waitStatus & 0x7f == 0 ? (waitStatus >> 8) & 0xff : 128 + (waitStatus & 0x7f)
    let output = ((try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "")
      .trimmingCharacters(in: .whitespacesAndNewlines)
    if status != 0 && !allowFailure {
      throw BenchmarkFailure(description: "\(executable) \(arguments.joined(separator: " ")) exited with \(status)")
    }
    return (status, output)
  }
}
