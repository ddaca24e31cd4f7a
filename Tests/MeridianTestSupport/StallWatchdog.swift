import Foundation
import NIOCore
import NIOPosix
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Watches the three shared pools every test of a process depends on (the concurrency pool, NIO's event loops and
/// NIO's blocking thread pool) and reports on standard error each time one of them doesn't start a trivial job within
/// `MERIDIAN_STALL_SECONDS`: a test holding a pool's thread with blocking or long CPU work stalls every other test
/// (and every in-process server) behind it. With `MERIDIAN_STALL_DIR` too, it writes every thread's stack there with
/// gdb at each stall, which names what held the pool. Without either variable it does nothing.
public enum StallWatchdog {
  private static let started = Mutex(false)

  /// Starts watching, once per process, if `MERIDIAN_STALL_SECONDS` or `MERIDIAN_STALL_DIR` is set (3 s when only
  /// the directory is).
  public static func start() {
    let environment = ProcessInfo.processInfo.environment
    let directory = environment["MERIDIAN_STALL_DIR"]
    guard let threshold = environment["MERIDIAN_STALL_SECONDS"].flatMap(Double.init) ?? directory.map({ _ in 3 })
    else { return }
    guard
      started.withLock({ wasStarted in
        defer { wasStarted = true }
        return !wasStarted
      })
    else { return }
    Thread.detachNewThread { watch(directory: directory, threshold: threshold) }
  }

  private static func watch(directory: String?, threshold: Double) {
    var dumps = 0
    let probes: [(String, (@escaping @Sendable () -> Void) -> Void)] = [
      ("concurrency pool", { done in Task.detached { done() } }),
      ("event loops", { done in MultiThreadedEventLoopGroup.singleton.next().execute { done() } }),
      ("blocking pool", { done in NIOThreadPool.singleton.submit { _ in done() } }),
    ]
    while true {
      // The sampling period: a probe every quarter second. The watchdog measures real time; it makes no test wait.
      Thread.sleep(forTimeInterval: 0.25)
      for (name, probe) in probes {
        // The job itself says it ran: the watchdog waits for that acknowledgement, up to the threshold, then for
        // as long as it takes.
        let ran = DispatchSemaphore(value: 0)
        let start = ContinuousClock.now
        probe { ran.signal() }
        guard ran.wait(timeout: .now() + threshold) == .timedOut else { continue }
        dumps += 1
        report(name, threshold: threshold, dumpingTo: dumps <= 20 ? directory : nil, number: dumps)
        ran.wait()
        let waited = ContinuousClock.now - start
        FileHandle.standardError.write(Data("stall watchdog: the \(name) started a job after \(waited)\n".utf8))
      }
    }
  }

  private static func report(_ name: String, threshold: Double, dumpingTo directory: String?, number: Int) {
    let stall = "stall watchdog: the \(name) started no job for \(threshold) s"
    guard let directory else {
      FileHandle.standardError.write(Data("\(stall)\n".utf8))
      return
    }
    let path = "\(directory)/stall-\(getpid())-\(number).txt"
    FileHandle.standardError.write(Data("\(stall); every thread's stack in \(path)\n".utf8))
    _ = try? ChildProcess(
      URL(fileURLWithPath: "/bin/sh"),
      ["-c", "gdb -p \(getpid()) -batch -ex 'thread apply all bt 40' > '\(path)' 2>&1"])
  }
}
