import Foundation
import NIOCore
import NIOPosix

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

/// A file of the repository's `Tools/examples` folder, e.g. `kyiv-walk.gpx` (the walk `Tools/run` replays).
public func exampleFile(_ name: String) -> URL {
  URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Tools/examples").appendingPathComponent(name)
}
