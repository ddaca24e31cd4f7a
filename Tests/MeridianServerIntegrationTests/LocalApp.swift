import Hummingbird
import Logging
import ServiceLifecycle

/// A Hummingbird application a test runs on 127.0.0.1 (a webhook receiver, a proxy), stopped by a graceful
/// shutdown: cancelling the task that serves it traps in SwiftNIO when a connection is accepted at that moment
/// ("Deinited NIOAsyncWriter without calling finish()", apple/swift-nio#3481), which crashed the whole test process
/// when a server under test was still delivering to a receiver being stopped.
struct LocalApp: Sendable {
  /// The port it listens on.
  let port: Int
  private let group: ServiceGroup
  private let task: Task<Void, any Error>

  /// Starts `router` on an OS-chosen port of 127.0.0.1 and returns once it accepts connections.
  static func start(router: Router<BasicRequestContext>, logger: Logger) async throws -> LocalApp {
    let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
    let app = Application(
      router: router, configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0)),
      onServerRunning: { continuation.yield($0.localAddress?.port ?? 0) }, logger: logger)
    let group = ServiceGroup(
      configuration: ServiceGroupConfiguration(services: [app], gracefulShutdownSignals: [], logger: logger))
    let task = Task {
      defer { continuation.finish() }
      try await group.run()
    }
    var iterator = ports.makeAsyncIterator()
    guard let port = await iterator.next() else {
      _ = try await task.value
      throw CancellationError()
    }
    return LocalApp(port: port, group: group, task: task)
  }

  /// Stops accepting, lets the open requests end, and returns when it has stopped.
  func stop() async {
    await group.triggerGracefulShutdown()
    _ = try? await task.value
  }
}
