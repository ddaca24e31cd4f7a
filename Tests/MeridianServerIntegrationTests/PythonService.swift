import Foundation
import MeridianTestSupport
import Testing

/// A Python script run as a local service for one test (a push service, an SMTP server): started with the suite's
/// ``ChildProcess`` (posix_spawn: it inherits no descriptor of the test process beyond 0–2, so no other test's
/// listening socket or pipe), its first line of output — what it tells the test, e.g. its port — read from the file
/// its output goes to, polled by the suite's ``GeofenceQueueTests/waitFor`` (no blocking read on the cooperative
/// pool). It runs until ``stop()`` (SIGTERM).
final class PythonService: Sendable {
  let process: ChildProcess
  /// Its first line.
  let firstLine: String
  let script: URL

  /// Starts `source` with `arguments` (`python3` on the PATH, where the test's Python packages are) and waits up to
  /// 30 s for its first line.
  static func start(_ source: String, name: String, arguments: [String] = []) async throws -> PythonService {
    let script = FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString).py")
    try source.write(to: script, atomically: true, encoding: .utf8)
    let process = try ChildProcess(URL(fileURLWithPath: "/usr/bin/env"), ["python3", script.path] + arguments)
    var line: Substring?
    do {
      try await GeofenceQueueTests.waitFor("the first line of \(name)", timeout: .seconds(30)) {
        let output = process.standardOutput.value
        line = output.firstIndex(of: "\n").map { output[..<$0] }
        if line == nil && !process.isRunning {
          Issue.record("\(name) ended: \(process.output.value)")
          throw CancellationError()
        }
        return line != nil
      }
      return PythonService(process: process, firstLine: String(try #require(line)), script: script)
    } catch {
      process.terminate()
      _ = await process.wait()
      try? FileManager.default.removeItem(at: script)
      throw error
    }
  }

  private init(process: ChildProcess, firstLine: String, script: URL) {
    self.process = process
    self.firstLine = firstLine
    self.script = script
  }

  /// Its first line decoded as JSON.
  func hello<Hello: Decodable>(_ type: Hello.Type) throws -> Hello {
    try JSONDecoder().decode(type, from: Data(firstLine.utf8))
  }

  /// Ends it (SIGTERM) and waits for it.
  func stop() async {
    process.terminate(with: SIGTERM)
    _ = await process.wait()
    try? FileManager.default.removeItem(at: script)
  }
}
