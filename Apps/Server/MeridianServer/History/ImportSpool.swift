import Foundation
import MeridianAPI
import NIOCore
import NIOPosix

/// The temporary file a history import is written to and read back from (``HistoryImport``), with every file
/// system call on `threadPool` — NIO's pool for blocking I/O — never on Swift's cooperative pool, which every request
/// shares: writing and reading back a file of up to 512 MiB blocks one of the pool's threads, not the server.
///
/// The file is unlinked as soon as it is created, so its space returns to the file system when the spool closes,
/// however the process ends (`kill -9` included). Writes are gathered into ``writeSize`` pieces: one trip to the
/// pool per piece, not per network buffer.
final class ImportSpool: Sendable {
  /// The file, open for reading and writing.
  private let descriptor: CInt
  /// The threads the file calls block.
  let threadPool: NIOThreadPool
  /// The bytes gathered to write at once.
  static let writeSize = 256 * 1024

  private init(descriptor: CInt, threadPool: NIOThreadPool) {
    self.descriptor = descriptor
    self.threadPool = threadPool
  }

  deinit { close(descriptor) }

  /// A new, already unlinked temporary file in the system's temporary directory.
  static func create(threadPool: NIOThreadPool = .singleton) async throws -> ImportSpool {
    let descriptor = try await threadPool.runIfActive { () throws -> CInt in
      let path = FileManager.default.temporaryDirectory.appendingPathComponent("meridian-import-\(UUID()).dat").path
      let descriptor = open(path, O_RDWR | O_CREAT | O_EXCL, 0o600)
      guard descriptor >= 0 else {
        throw APIError(status: 500, code: .internal, message: "The upload can't be stored for reading.")
      }
      unlink(path)
      return descriptor
    }
    return ImportSpool(descriptor: descriptor, threadPool: threadPool)
  }

  /// Appends every buffer of `body` to the file; returns the number of bytes written.
  @discardableResult
  func append<Body: AsyncSequence>(_ body: Body) async throws -> Int where Body.Element == ByteBuffer {
    var pending = ByteBuffer()
    var written = 0
    for try await buffer in body {
      var buffer = buffer
      pending.writeBuffer(&buffer)
      if pending.readableBytes >= Self.writeSize {
        written += try await appendPiece(pending)
        pending.clear()
      }
    }
    if pending.readableBytes > 0 { written += try await appendPiece(pending) }
    return written
  }

  /// Writes `buffer` at the file's end, on the pool.
  private func appendPiece(_ buffer: ByteBuffer) async throws -> Int {
    let descriptor = self.descriptor
    return try await threadPool.runIfActive {
      try buffer.withUnsafeReadableBytes { bytes in
        var offset = 0
        while offset < bytes.count {
          let count = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
          if count < 0 {
            if errno == EINTR { continue }
            throw APIError(status: 500, code: .internal, message: "The upload can't be stored for reading.")
          }
          offset += count
        }
        return offset
      }
    }
  }

  /// Up to `count` bytes from `offset` (fewer only at the file's end, none past it), read on the pool.
  func read(at offset: Int, upTo count: Int) async throws -> Data {
    let descriptor = self.descriptor
    return try await threadPool.runIfActive {
      var data = Data(count: count)
      var filled = 0
      try data.withUnsafeMutableBytes { bytes in
        while filled < count {
          let read = pread(descriptor, bytes.baseAddress! + filled, count - filled, off_t(offset + filled))
          if read < 0 {
            if errno == EINTR { continue }
            throw APIError(status: 500, code: .internal, message: "The upload can't be read back.")
          }
          if read == 0 { break }
          filled += read
        }
      }
      data.count = filled
      return data
    }
  }
}
