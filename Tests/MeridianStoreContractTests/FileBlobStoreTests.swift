import Foundation
import MeridianBlobFiles
import MeridianStore
import NIOPosix
import Testing

/// The file blob store does its file I/O on NIO's thread pool, never on the caller's executor.
@Suite struct FileBlobStoreTests {
  static let png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + Array(repeating: 9, count: 300_000))

  @Test func aBlobMakesTheRoundTripThroughItsThreadPool() async throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("blobs-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: directory) }
    let pool = NIOThreadPool(numberOfThreads: 1)
    pool.start()
    let blobs = FileBlobStore(directory: directory, threadPool: pool)
    let hash = try await blobs.putBlob(Self.png, kind: .png, now: 1_000)
    #expect(try await blobs.hasBlob(hash))
    #expect(try await blobs.blob(hash)?.data == Self.png)
    #expect(try await blobs.blobHashes(uploadedAtOrBefore: 1_000, after: nil, limit: 10) == [hash])
    try await pool.shutdownGracefully()
    // With its pool stopped (NIO then cancels what is handed to it), no call reaches the disk: none runs on the
    // caller's thread.
    await #expect(throws: CancellationError.self) { try await blobs.blob(hash) }
    await #expect(throws: CancellationError.self) { try await blobs.hasBlob(hash) }
    await #expect(throws: CancellationError.self) {
      try await blobs.putBlob(Self.png, kind: .png, now: 2_000)
    }
    await #expect(throws: CancellationError.self) { try await blobs.deleteBlob(hash) }
    await #expect(throws: CancellationError.self) {
      try await blobs.blobHashes(uploadedAtOrBefore: 1_000, after: nil, limit: 10)
    }
    // The file is still there for a store with a running pool.
    #expect(try await FileBlobStore(directory: directory).blob(hash)?.data == Self.png)
  }
}
