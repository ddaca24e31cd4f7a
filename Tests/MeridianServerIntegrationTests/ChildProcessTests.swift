import Foundation
import MeridianTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The suite's ``ChildProcess`` hands a child nothing of the test process but its standard input, output and error:
/// a descriptor opened without close-on-exec (as another test's listening socket or pipe may be) is closed in it, and
/// its signals are as a fresh process's.
@Suite("Test support: child processes")
struct ChildProcessTests {
  @Test(.timeLimit(.minutes(1))) func aChildInheritsNoDescriptorBeyondTheStandardThree() async throws {
    // Without O_CLOEXEC: only the spawn's own rule can keep it from the child.
    let descriptor = open("/dev/null", O_RDONLY)
    try #require(descriptor > 2)
    defer { close(descriptor) }
    let (status, output) = try await ChildProcess.run(
      URL(fileURLWithPath: "/bin/sh"),
      ["-c", "for fd in 0 1 2 \(descriptor); do [ -e /proc/self/fd/$fd ] && echo open $fd || echo closed $fd; done"])
    #expect(status == 0)
    #expect(output == "open 0\nopen 1\nopen 2\nclosed \(descriptor)\n", "\(output)")
  }

  /// Nothing blocked or ignored: the concurrency pool's threads block nearly every signal, and a child that inherited
  /// that mask never saw the SIGTERM meant to stop it (the push service and SMTP server of the alert tests).
  @Test(.timeLimit(.minutes(1))) func aChildStartsWithNoSignalBlockedOrIgnored() async throws {
    let (status, output) = try await ChildProcess.run(URL(fileURLWithPath: "/bin/cat"), ["/proc/self/status"])
    #expect(status == 0)
    func mask(_ name: String) -> UInt64? {
      output.split(separator: "\n").first { $0.hasPrefix(name + ":") }
        .flatMap { UInt64($0.dropFirst(name.count + 1).trimmingCharacters(in: .whitespaces), radix: 16) }
    }
    #expect(mask("SigBlk") == 0, "\(output)")
    // Signals 1–31 (glibc keeps its own two real-time signals, 32 and 33, ignored in every process).
    #expect(mask("SigIgn").map { $0 & 0x7fff_ffff } == 0, "\(output)")
  }

  @Test(.timeLimit(.minutes(1))) func sigtermEndsAChild() async throws {
    let child = try ChildProcess(URL(fileURLWithPath: "/bin/sleep"), ["60"])
    child.terminate(with: SIGTERM)
    #expect(await child.wait() == SIGTERM)
  }
}
