import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A command stopped by Ctrl-C (or SIGTERM) after cleaning up: `message` says what it left behind. Exit status 130
/// (128 + the signal's number).
struct Interrupted: Error, CustomStringConvertible {
  let message: String
  var description: String { message }
}

/// Ctrl-C and SIGTERM for a command: the first one cancels the command's task, which then stops what it does, shuts
/// its connections down and says what it left; a second one ends the process at once.
enum Interruption {
  /// Runs `body` in a task that SIGINT and SIGTERM cancel; returns its value and the signal that cancelled it.
  static func run<T: Sendable>(_ body: @escaping @Sendable () async -> T) async -> (value: T, signal: Int32?) {
    let task = Task { await body() }
    let received = FirstSignal()
    var sources: [any DispatchSourceSignal] = []
    for number in [SIGINT, SIGTERM] {
      signal(number, SIG_IGN)
      let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
      source.setEventHandler {
        if received.record(number) { task.cancel() } else { _exit(128 + number) }
      }
      source.resume()
      sources.append(source)
    }
    let value = await task.value
    for source in sources { source.cancel() }
    return (value, received.value)
  }

  /// The first signal received.
  final class FirstSignal: Sendable {
    private let signal = Mutex<Int32?>(nil)

    /// Records `number`; true when it is the first.
    func record(_ number: Int32) -> Bool {
      signal.withLock { current in
        guard current == nil else { return false }
        current = number
        return true
      }
    }

    var value: Int32? { signal.withLock { $0 } }
  }
}
