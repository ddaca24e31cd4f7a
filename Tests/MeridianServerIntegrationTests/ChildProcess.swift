import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// An executable of this package that `swift build` put next to the test bundle, if it was built.
func builtExecutable(_ name: String) -> URL? {
  let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
  for candidate in [directory, directory.deletingLastPathComponent()] {
    let url = candidate.appendingPathComponent(name)
    if FileManager.default.isExecutableFile(atPath: url.path) { return url }
  }
  return nil
}

/// Text a child process writes, collected from a pipe's handler thread.
final class CollectedOutput: @unchecked Sendable {
  private let lock = NSLock()
  private var text = ""

  func append(_ data: Data) {
    lock.lock()
    text += String(decoding: data, as: UTF8.self)
    lock.unlock()
  }

  var value: String {
    lock.lock()
    defer { lock.unlock() }
    return text
  }
}

/// A running child process with its standard output and error collected together.
final class ChildProcess: Sendable {
  let process: Process
  let output = CollectedOutput()
  private let pipe = Pipe()
  private let exited: AsyncStream<Int32>

  /// Starts `executable` with `arguments`; `input` is written to its standard input, which is then closed.
  init(_ executable: URL, _ arguments: [String], input: String? = nil) throws {
    process = Process()
    process.executableURL = executable
    process.arguments = arguments
    process.standardOutput = pipe
    process.standardError = pipe
    let output = self.output
    pipe.fileHandleForReading.readabilityHandler = { handle in output.append(handle.availableData) }
    let (stream, continuation) = AsyncStream.makeStream(of: Int32.self)
    exited = stream
    process.terminationHandler = { process in
      continuation.yield(process.terminationStatus)
      continuation.finish()
    }
    let stdin = Pipe()
    process.standardInput = stdin
    try process.run()
    if let input { stdin.fileHandleForWriting.write(Data(input.utf8)) }
    try? stdin.fileHandleForWriting.close()
  }

  /// Waits for the process to end and returns its exit status.
  func wait() async -> Int32 {
    var status: Int32 = -1
    for await code in exited { status = code }
    pipe.fileHandleForReading.readabilityHandler = nil
    return status
  }

  /// Sends `signal` (SIGKILL by default: `kill -9`).
  func terminate(with signal: Int32 = SIGKILL) {
    _ = kill(process.processIdentifier, signal)
  }

  /// Runs to the end and returns status and output.
  static func run(_ executable: URL, _ arguments: [String], input: String? = nil) async throws -> (
    status: Int32, output: String
  ) {
    let child = try ChildProcess(executable, arguments, input: input)
    let status = await child.wait()
    return (status, child.output.value)
  }
}
