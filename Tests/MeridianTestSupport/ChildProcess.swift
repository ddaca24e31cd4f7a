import Foundation

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
/// without a reader thread or dispatch source each.
public final class ChildProcess: Sendable {
  /// The process.
  public let process: Process
  /// Standard output.
  public let standardOutput: CollectedOutput
  /// Standard error.
  public let standardError: CollectedOutput
  /// Standard output, then standard error.
  public let output: CollectedOutput
  private let directory: URL
  private let exited: AsyncStream<Int32>

  /// Starts `executable` with `arguments` (and `environment`, else this process's); `input` is written to its
  /// standard input, which is then closed.
  public init(_ executable: URL, _ arguments: [String], input: String? = nil, environment: [String: String]? = nil)
    throws
  {
    directory = FileManager.default.temporaryDirectory.appendingPathComponent("child-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let outPath = directory.appendingPathComponent("stdout").path
    let errPath = directory.appendingPathComponent("stderr").path
    for path in [outPath, errPath] where !FileManager.default.createFile(atPath: path, contents: nil) {
      throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
    }
    standardOutput = CollectedOutput(paths: [outPath])
    standardError = CollectedOutput(paths: [errPath])
    output = CollectedOutput(paths: [outPath, errPath])

    process = Process()
    process.executableURL = executable
    process.arguments = arguments
    if let environment { process.environment = environment }
    let out = try FileHandle(forWritingTo: URL(fileURLWithPath: outPath))
    let err = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
    process.standardOutput = out
    process.standardError = err
    let (stream, continuation) = AsyncStream.makeStream(of: Int32.self)
    exited = stream
    process.terminationHandler = { process in
      try? out.close()
      try? err.close()
      continuation.yield(process.terminationStatus)
      continuation.finish()
    }
    let stdin = Pipe()
    process.standardInput = stdin
    try ProcessLauncher.run(process)
    if let input { stdin.fileHandleForWriting.write(Data(input.utf8)) }
    try? stdin.fileHandleForWriting.close()
  }

  deinit { try? FileManager.default.removeItem(at: directory) }

  /// Whether the process is still running.
  public var isRunning: Bool { process.isRunning }

  /// Waits for the process to end and returns its exit status.
  public func wait() async -> Int32 {
    var status: Int32 = -1
    for await code in exited { status = code }
    return status
  }

  /// Sends `signal` (SIGKILL by default: `kill -9`).
  public func terminate(with signal: Int32 = SIGKILL) {
    _ = kill(process.processIdentifier, signal)
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

/// Starts processes one at a time. Foundation's `Process.run()` on Linux crashed (in `memcpy`, SIGSEGV) when the
/// test process's many concurrent tests started children at the same moment; every test that starts a process goes
/// through here.
public enum ProcessLauncher {
  private static let lock = NSLock()

  /// Runs `process`, after any other launch in this test process has returned.
  public static func run(_ process: Process) throws {
    lock.lock()
    defer { lock.unlock() }
    try process.run()
  }
}
