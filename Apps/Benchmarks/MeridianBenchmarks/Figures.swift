import Foundation

/// How the benchmarks print and measure: `<name> <value> <unit>` lines, durations in seconds and milliseconds, and
/// the process's peak memory.

/// Prints one figure line, at once (a benchmark's output is read while it runs).
func emit(_ name: String, _ value: Double, _ unit: String) {
  let text = value >= 100 ? String(Int(value.rounded())) : String(format: "%.3f", value)
  print("\(name) \(text) \(unit)")
  fflush(nil)
}

/// A duration in seconds.
func seconds(_ duration: Duration) -> Double {
  Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

/// The `q`-quantile of sorted durations, in milliseconds.
func quantile(_ sorted: [Duration], _ q: Double) -> Double {
  guard !sorted.isEmpty else { return .nan }
  let duration = sorted[min(sorted.count - 1, Int(Double(sorted.count) * q))]
  return Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
}

/// Peak resident memory of this process (client and server together), from `/proc/self/status`.
func peakResidentBytes() -> Int {
  guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
    let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
    let kilobytes = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
  else { return 0 }
  return kilobytes * 1024
}

/// CPU time (user and system) this process has used so far, client and server together, in seconds.
func processCPUSeconds() -> Double {
  var usage = rusage()
  #if os(Linux)
    getrusage(RUSAGE_SELF.rawValue, &usage)
  #else
    getrusage(RUSAGE_SELF, &usage)
  #endif
  func inSeconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
  return inSeconds(usage.ru_utime) + inSeconds(usage.ru_stime)
}

/// A bad command line: the executable prints it with the usage and exits 2.
public struct BenchmarkUsageError: Error, CustomStringConvertible {
  /// What was wrong, and the usage line.
  public let description: String
}

/// A load that could not run as designed (the server answered with an error): its figures would mean nothing.
struct BenchmarkFailure: Error, CustomStringConvertible {
  /// What went wrong.
  let description: String
}

/// Resident memory of this process now, from `/proc/self/status`.
func currentResidentBytes() -> Int {
  guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
    let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
    let kilobytes = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
  else { return 0 }
  return kilobytes * 1024
}

/// Sets this process's peak resident memory (``peakResidentBytes()``) back to what it holds now (Linux's
/// `/proc/self/clear_refs`, value 5), so that a phase's own peak can be read after it.
func resetPeakResident() {
  try? Data("5".utf8).write(to: URL(fileURLWithPath: "/proc/self/clear_refs"))
}

/// The benchmarks' one wait for a state nothing announces (the geofence monitor's progress, a broker's port, the
/// server's count of stored fixes): asks `condition` every 20 ms until it holds or `timeout` passed; answers whether
/// it held. A wait that gives up is a figure to report, not an error.
@discardableResult
func poll(for timeout: Duration, until condition: () async throws -> Bool) async throws -> Bool {
  let deadline = ContinuousClock.now + timeout
  while try await !condition() {
    guard ContinuousClock.now < deadline else { return false }
    try await Task.sleep(for: .milliseconds(20))
  }
  return true
}
