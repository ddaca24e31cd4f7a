import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// `Tools/postgres` as a caller sees it.
@Suite struct ToolsPostgresScriptTests {
  /// The server that `start` leaves running must hold nothing of the process that ran the script. It once inherited
  /// the socket through which Foundation's `Process` learns that its child ended, and a test process that started
  /// a fresh cluster waited for ever (CI timed out; locally the cluster was always running already).
  @Test(.enabled(if: FileManager.default.fileExists(atPath: "/proc/self/fd"), "descriptor inheritance: Linux"))
  func aStartedClusterKeepsNoDescriptorOfItsCaller() async throws {
    // The script, initdb and the wait for end-of-file block: on a thread of their own, not the test's shared pool.
    let outcome = await withCheckedContinuation { continuation in
      Thread.detachNewThread { continuation.resume(returning: Self.startFreshClusterWithAnInheritedPipe()) }
    }
    #expect(outcome.status == 0, "Tools/postgres start failed (\(outcome.status)); see \(outcome.directory)/server.log")
    #expect(outcome.endOfFile, "the server kept a descriptor of the script's caller")
  }

  /// Starts a fresh cluster in a directory of its own with the write end of a pipe left open in the script, closes
  /// this process's write end, and says whether reading then gives end-of-file at once (every holder has exited);
  /// stops the cluster afterwards.
  private static func startFreshClusterWithAnInheritedPipe() -> (status: Int32, endOfFile: Bool, directory: String) {
    let directory = "/tmp/pk-fds-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    let script = TestCluster.repositoryRoot.appendingPathComponent("Tools/postgres").path
    defer {
      _ = run(script, ["stop"], directory: directory, inheriting: nil)
      try? FileManager.default.removeItem(atPath: directory + ".lock")
    }
    // Close-on-exec here, so that no other test's child takes the write end; the spawn's dup2 gives the script a
    // copy without the flag. (A child spawned between pipe() and fcntl() could still take it: a tiny window.)
    var ends: [Int32] = [0, 0]
    guard pipe(&ends) == 0 else { return (-1, false, directory) }
    for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
    let (readEnd, writeEnd) = (ends[0], ends[1])
    defer { close(readEnd) }
    let status = run(script, ["start"], directory: directory, inheriting: writeEnd)
    close(writeEnd)
    var poller = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
    let ready = poll(&poller, 1, 10_000)
    var byte: UInt8 = 0
    return (status, ready == 1 && read(readEnd, &byte, 1) == 0, directory)
  }

  /// Runs the script with `MERIDIAN_POSTGRES_DIR=directory` and its output discarded, `inheriting` left open in it,
  /// and returns its exit status.
  private static func run(_ script: String, _ arguments: [String], directory: String, inheriting: Int32?) -> Int32 {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    if let inheriting { posix_spawn_file_actions_adddup2(&actions, inheriting, 7) }
    var environment = ProcessInfo.processInfo.environment
    environment["MERIDIAN_POSTGRES_DIR"] = directory
    var argv: [UnsafeMutablePointer<CChar>?] = ([script] + arguments).map { strdup($0) } + [nil]
    var envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer { for pointer in argv + envp { free(pointer) } }
    var pid = pid_t()
    guard posix_spawn(&pid, script, &actions, nil, &argv, &envp) == 0 else { return -1 }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
    return (status & 0x7f) == 0 ? (status >> 8) & 0xff : -1
  }
}
