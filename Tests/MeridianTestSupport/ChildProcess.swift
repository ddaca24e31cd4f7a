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

/// A running child process whose standard output and error go to files, awaited without blocking a thread; it
/// inherits no descriptor of this process but its standard input, output and error, and no blocked or ignored signal.
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
    // Nothing else of this process: another test's listening socket or pipe held open by a child it never knew
    // (a restart on the same port fails with EADDRINUSE; a pipe's reader never sees its end) — whether or not it was
    // opened close-on-exec. On Darwin, POSIX_SPAWN_CLOEXEC_DEFAULT does the same.
    #if canImport(Glibc)
      guard let closeFrom = Self.addCloseFrom else {
        throw CocoaError(
          .featureUnsupported,
          userInfo: [NSLocalizedDescriptionKey: "posix_spawn_file_actions_addclosefrom_np needs glibc 2.34 or later"])
      }
      closeFrom(&actions, 3)
    #endif
    let variables = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
    var argv: [UnsafeMutablePointer<CChar>?] = ([executable.path] + arguments).map { strdup($0) } + [nil]
    var envp: [UnsafeMutablePointer<CChar>?] = variables.map { strdup($0) } + [nil]
    defer { for pointer in argv + envp { free(pointer) } }
    // Signals as a fresh process has them: none blocked (the spawning thread — one of the concurrency pool's, which
    // block nearly every signal — would hand its mask down, and the child would never see SIGTERM) and every one at
    // its default action.
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var none = sigset_t()
    sigemptyset(&none)
    var all = sigset_t()
    sigfillset(&all)
    posix_spawnattr_setsigmask(&attributes, &none)
    posix_spawnattr_setsigdefault(&attributes, &all)
    var flags = Int32(POSIX_SPAWN_SETSIGMASK) | Int32(POSIX_SPAWN_SETSIGDEF)
    #if canImport(Darwin)
      flags |= Int32(POSIX_SPAWN_CLOEXEC_DEFAULT)
    #endif
    posix_spawnattr_setflags(&attributes, Int16(flags))
    var pid = pid_t()
    let spawned = posix_spawn(&pid, executable.path, &actions, &attributes, &argv, &envp)
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

  #if canImport(Glibc)
    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which its Swift module does not show:
    /// closes every descriptor from the given one up in the child, atomically with the spawn.
    private static let addCloseFrom:
      (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? =
        dlsym(nil, "posix_spawn_file_actions_addclosefrom_np").map {
          unsafeBitCast(
            $0, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
        }
  #endif

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
