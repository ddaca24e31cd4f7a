import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// A TCP listener on 127.0.0.1 and a port the OS chooses, whose connections are async channels of bytes (for the
/// tests' fake servers and proxies).
public func listenOnLoopback() async throws -> (
  server: NIOAsyncChannel<NIOAsyncChannel<ByteBuffer, ByteBuffer>, Never>, port: Int
) {
  let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
    .bind(host: "127.0.0.1", port: 0) { channel in
      channel.eventLoop.makeCompletedFuture {
        try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
      }
    }
  guard let port = server.channel.localAddress?.port else { throw ChannelError.inappropriateOperationForState }
  return (server, port)
}

/// Runs `body` with the port of a listener on loopback that accepts every connection and never answers (a server
/// that hangs). Each connection is read until its peer closes it; when `body` ends, the listener and the
/// connections still open are closed and their tasks awaited. Closed, not cancelled: NIO traps on a connection it
/// accepted and nobody served ("Deinited NIOAsyncWriter without calling finish()", swift-nio#3481), which is what an
/// unserved listener or a cancelled accept loop leaves behind.
public func withSilentListener<T: Sendable>(_ body: (_ port: Int) async throws -> T) async throws -> T {
  let (listener, port) = try await listenOnLoopback()
  let open = OpenChannels()
  return try await withThrowingTaskGroup(of: Void.self) { group in
    group.addTask {
      try await listener.executeThenClose { inbound in
        try await withThrowingDiscardingTaskGroup { connections in
          for try await connection in inbound {
            open.channels.withLock { $0.append(connection.channel) }
            connections.addTask { try? await connection.executeThenClose { input, _ in for try await _ in input {} } }
          }
        }
      }
    }
    func closeEverything() async {
      try? await listener.channel.close()
      for channel in open.channels.withLock({ $0 }) { try? await channel.close() }
    }
    let result: T
    do {
      result = try await body(port)
    } catch {
      await closeEverything()
      try? await group.waitForAll()
      throw error
    }
    await closeEverything()
    try await group.waitForAll()
    return result
  }
}

/// The connections a listener accepted, for closing them.
private final class OpenChannels: Sendable {
  let channels = Mutex<[any Channel]>([])
}

/// A file of the repository's `Tools/examples` folder, e.g. `kyiv-walk.gpx` (the walk `Tools/run` replays).
public func exampleFile(_ name: String) -> URL {
  URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Tools/examples").appendingPathComponent(name)
}
