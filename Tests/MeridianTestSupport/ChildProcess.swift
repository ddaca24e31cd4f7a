import Foundation
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// An executable of this package that `swift build` put next to the test bundle, if it was built.
public func builtExecutable(_ name: String) -> URL? {
  let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
  for candidate in [directory, directory.deletingLastPathComponent()] {
    let url = candidate.appendingPathComponent(name)
    if FileManager.default.isExecutableFile(atPath: url.path) { return url }
  }
  return nil
}

/// What a child process has written so far to one or more files (read on demand, also while it runs).
public struct CollectedOutput: Sendable {
  let paths: [String]

  /// Everything written so far (several files one after the other).
  public var value: String {
    paths.map { (try? String(contentsOfFile: $0, encoding: .utf8)) ?? "" }.joined()
  }
}

/// A running child process whose standard output and error go to files, awaited without blocking a thread.
///
/// Files rather than pipes: nothing has to drain them while the child runs, and many children can run at once
/// without a reader thread or dispatch source each. Started with posix_spawn, not Foundation's `Process`, whose
/// `run()` crashed (SIGSEGV in `memcpy`) in this test process while many tests ran at once.
public final class ChildProcess: Sendable {
  /// The child's process id.
  public let processIdentifier: pid_t
  /// Standard output.
  public let standardOutput: CollectedOutput
  /// Standard error.
  public let standardError: CollectedOutput
  /// Standard output, then standard error.
  public let output: CollectedOutput
  private let directory: URL
  private let exited: AsyncStream<Int32>
  private let running = RunningFlag()

  /// Starts `executable` with `arguments` (and `environment`, else this process's); `input` is its standard input
  /// (else `/dev/null`).
  public init(_ executable: URL, _ arguments: [String], input: String? = nil, environment: [String: String]? = nil)
    throws
  {
    directory = FileManager.default.temporaryDirectory.appendingPathComponent("child-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let outPath = directory.appendingPathComponent("stdout").path
    let errPath = directory.appendingPathComponent("stderr").path
    let inPath = directory.appendingPathComponent("stdin").path
    for path in [outPath, errPath, inPath]
    where !FileManager.default.createFile(atPath: path, contents: path == inPath ? Data((input ?? "").utf8) : nil) {
      throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
    }
    standardOutput = CollectedOutput(paths: [outPath])
    standardError = CollectedOutput(paths: [errPath])
    output = CollectedOutput(paths: [outPath, errPath])

    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, inPath, O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_TRUNC, 0)
    posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_TRUNC, 0)
    let variables = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
    var argv: [UnsafeMutablePointer<CChar>?] = ([executable.path] + arguments).map { strdup($0) } + [nil]
    var envp: [UnsafeMutablePointer<CChar>?] = variables.map { strdup($0) } + [nil]
    defer { for pointer in argv + envp { free(pointer) } }
    var pid = pid_t()
    let spawned = posix_spawn(&pid, executable.path, &actions, nil, &argv, &envp)
    guard spawned == 0 else {
      throw CocoaError(
        .executableLoad,
        userInfo: [NSFilePathErrorKey: executable.path, NSLocalizedDescriptionKey: String(cString: strerror(spawned))])
    }
    processIdentifier = pid
    let (stream, continuation) = AsyncStream.makeStream(of: Int32.self)
    exited = stream
    let running = running
    let child = pid
    // One thread per child blocks in waitpid; the status goes to whoever awaits it.
    Thread.detachNewThread {
      var waitStatus: Int32 = 0
      while waitpid(child, &waitStatus, 0) == -1 && errno == EINTR {}
      running.value.withLock { $0 = false }
      // WIFEXITED / WEXITSTATUS, else WTERMSIG: the low 7 bits are the signal (0 when it exited).
      let signal = waitStatus & 0x7f
      continuation.yield(signal == 0 ? (waitStatus >> 8) & 0xff : signal)
      continuation.finish()
    }
  }

  deinit { try? FileManager.default.removeItem(at: directory) }

  /// Whether the process is still running.
  public var isRunning: Bool { running.value.withLock { $0 } }

  /// Waits for the process to end and returns its exit status (the signal's number when a signal ended it, as
  /// Foundation's `Process.terminationStatus` says).
  public func wait() async -> Int32 {
    var status: Int32 = -1
    for await code in exited { status = code }
    return status
  }

  /// Sends `signal` (SIGKILL by default: `kill -9`).
  public func terminate(with signal: Int32 = SIGKILL) {
    _ = kill(processIdentifier, signal)
  }

  /// Runs to the end and returns status and output.
  public static func run(
    _ executable: URL, _ arguments: [String], input: String? = nil, environment: [String: String]? = nil
  ) async throws -> (status: Int32, output: String) {
    let child = try ChildProcess(executable, arguments, input: input, environment: environment)
    let status = await child.wait()
    return (status, child.output.value)
  }
}

/// Whether a child still runs, shared with the thread that waits for it.
private final class RunningFlag: Sendable {
  let value = Mutex(true)
}

/// Starts Foundation `Process`es one at a time (the few tests that still use one): its `run()` crashed (SIGSEGV in
/// `memcpy`) in this test process while many tests ran at once.
public enum ProcessLauncher {
  private static let lock = NSLock()

  /// Runs `process`, after any other launch in this test process has returned.
  public static func run(_ process: Process) throws {
    lock.lock()
    defer { lock.unlock() }
    try process.run()
  }
}
