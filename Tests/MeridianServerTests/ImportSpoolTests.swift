import Foundation
import NIOCore
import NIOPosix
import Testing

@testable import MeridianServer

/// The history import's spool writes and reads its file on NIO's thread pool, never on the caller's executor.
@Suite struct ImportSpoolTests {
  /// `count` bytes of a repeating pattern, as network buffers of `piece` bytes.
  static func buffers(_ count: Int, piece: Int) -> (data: Data, stream: AsyncStream<ByteBuffer>) {
    let data = Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 / 251) })
    let stream = AsyncStream<ByteBuffer> { continuation in
      var offset = 0
      while offset < count {
        continuation.yield(ByteBuffer(bytes: data[offset..<min(count, offset + piece)]))
        offset += piece
      }
      continuation.finish()
    }
    return (data, stream)
  }

  @Test func aLargeBodyComesBackAsItWentIn() async throws {
    // 16 of the spool's pieces and a bit, in network-sized buffers that line up with neither its writes nor its reads.
    let (data, stream) = Self.buffers(16 * ImportSpool.writeSize + 4_321, piece: 16_381)
    let spool = try await ImportSpool.create()
    #expect(try await spool.append(stream) == data.count)
    var read = Data()
    var offset = 0
    while case let chunk = try await spool.read(at: offset, upTo: 65_536), !chunk.isEmpty {
      read.append(chunk)
      offset += chunk.count
    }
    #expect(read == data)
    #expect(try await spool.read(at: data.count - 10, upTo: 100) == data.suffix(10))
  }

  @Test func itsFileCallsRunOnItsThreadPool() async throws {
    let pool = NIOThreadPool(numberOfThreads: 1)
    pool.start()
    let spool = try await ImportSpool.create(threadPool: pool)
    try await spool.append(Self.buffers(1_000, piece: 100).stream)
    #expect(try await spool.read(at: 0, upTo: 10).count == 10)
    try await pool.shutdownGracefully()
    // With its pool stopped (NIO then cancels what is handed to it), the spool can't touch the file: no call of it
    // runs on the caller's thread.
    await #expect(throws: CancellationError.self) {
      try await spool.append(Self.buffers(10, piece: 10).stream)
    }
    await #expect(throws: CancellationError.self) { try await spool.read(at: 0, upTo: 10) }
  }
}
