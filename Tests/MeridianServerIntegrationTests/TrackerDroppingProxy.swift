import Foundation
import MeridianTestSupport
import NIOCore
import NIOPosix
import Synchronization

/// A TCP proxy on 127.0.0.1 in front of `upstream` that drops connections: it closes every fourth connection as soon
/// as it is accepted, and on the others it throws away every fifth chunk the upstream sends and closes both sides
/// (the request arrived, its answer never does). Put in front of ``FlakyProxy`` it makes a link that drops
/// connections and answers 503.
final class DroppingProxy: Sendable {
  struct Counts: Sendable, CustomStringConvertible {
    var accepted = 0
    var dropped = 0
    var answersCut = 0
    var description: String { "accepted \(accepted), dropped \(dropped), answers cut \(answersCut)" }
  }

  let port: Int
  private let channel: any Channel
  private let task: Task<Void, any Error>
  private let state: Stats

  final class Stats: Sendable {
    let counts = Mutex(Counts())
    /// Counts an accepted connection; true when it is to be dropped.
    func accept() -> Bool {
      counts.withLock {
        $0.accepted += 1
        if $0.accepted % 4 == 0 { $0.dropped += 1 }
        return $0.accepted % 4 == 0
      }
    }
    private let chunks = Mutex(0)
    /// Counts a chunk from the upstream; true when it is to be thrown away.
    func cut() -> Bool {
      let cut = chunks.withLock {
        $0 += 1
        return $0 % 5 == 0
      }
      if cut { counts.withLock { $0.answersCut += 1 } }
      return cut
    }
  }

  private struct Cut: Error {}

  private init(port: Int, channel: any Channel, task: Task<Void, any Error>, state: Stats) {
    self.port = port
    self.channel = channel
    self.task = task
    self.state = state
  }

  /// What the proxy did so far.
  var counts: Counts { state.counts.withLock { $0 } }

  static func start(upstream: Int) async throws -> DroppingProxy {
    let (server, port) = try await listenOnLoopback()
    let stats = Stats()
    let task = Task {
      try await server.executeThenClose { connections in
        try await withThrowingDiscardingTaskGroup { group in
          for try await connection in connections {
            if stats.accept() {
              try? await connection.channel.close()
              continue
            }
            group.addTask { await relay(connection, to: upstream, stats) }
          }
        }
      }
    }
    return DroppingProxy(port: port, channel: server.channel, task: task, state: stats)
  }

  /// Copies bytes both ways until either side closes, or until a chunk from the upstream is cut.
  private static func relay(_ client: NIOAsyncChannel<ByteBuffer, ByteBuffer>, to upstream: Int, _ stats: Stats) async {
    do {
      let server = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        .connect(host: "127.0.0.1", port: upstream) { channel in
          channel.eventLoop.makeCompletedFuture {
            try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
          }
        }
      try await client.executeThenClose { clientIn, clientOut in
        try await server.executeThenClose { serverIn, serverOut in
          try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
              for try await chunk in clientIn { try await serverOut.write(chunk) }
            }
            group.addTask {
              for try await chunk in serverIn {
                if stats.cut() { throw Cut() }
                try await clientOut.write(chunk)
              }
            }
            // Either side's end (or a cut) closes both.
            _ = try await group.next()
            group.cancelAll()
          }
        }
      }
    } catch {
      try? await client.channel.close()
    }
  }

  func stop() async {
    try? await channel.close()
    task.cancel()
  }
}
