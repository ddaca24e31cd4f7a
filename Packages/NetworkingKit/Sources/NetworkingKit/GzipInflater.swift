import CZlib
import Foundation

/// Streaming gzip (or zlib) decompression through the system zlib: input is fed chunk by chunk as it arrives and the
/// output is handed on in pieces of at most 64 KiB, so neither is ever held whole. Concatenated gzip members are read
/// one after another (RFC 1952 allows them).
public final class GzipInflater {
  private let stream: UnsafeMutablePointer<z_stream>
  private var output = [UInt8](repeating: 0, count: 64 * 1024)
  private var ended = false
  /// The largest output accepted, in bytes.
  public let limit: Int
  /// Bytes produced so far.
  public private(set) var produced = 0

  /// An inflater that fails with ``Gzip/Failure/limitExceeded(limit:)`` once its output would pass `limit` bytes.
  public init(limit: Int) throws(Gzip.Failure) {
    self.limit = limit
    stream = .allocate(capacity: 1)
    stream.initialize(to: z_stream())
    let status = inflateInit2_(stream, 15 + 32, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
    guard status == Z_OK else {
      stream.deallocate()
      throw .corrupt("inflateInit2 failed (\(status))")
    }
  }

  deinit {
    inflateEnd(stream)
    stream.deinitialize(count: 1)
    stream.deallocate()
  }

  /// Inflates `input` and calls `body` with each piece of output (valid only during the call).
  /// - Throws: ``Gzip/Failure`` when the data is corrupt or the output passes ``limit``; whatever `body` throws.
  public func feed(_ input: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
    guard let base = input.baseAddress, !input.isEmpty else { return }
    stream.pointee.next_in = UnsafeMutablePointer(mutating: base.assumingMemoryBound(to: Bytef.self))
    stream.pointee.avail_in = UInt32(input.count)
    while stream.pointee.avail_in > 0 || !ended {
      if ended {  // another gzip member follows
        guard inflateReset(stream) == Z_OK else { throw Gzip.Failure.corrupt("inflateReset failed") }
        ended = false
      }
      let (status, count) = output.withUnsafeMutableBufferPointer { buffer in
        stream.pointee.next_out = buffer.baseAddress
        stream.pointee.avail_out = UInt32(buffer.count)
        let status = inflate(stream, Z_NO_FLUSH)
        return (status, buffer.count - Int(stream.pointee.avail_out))
      }
      if count > 0 {
        guard produced + count <= limit else { throw Gzip.Failure.limitExceeded(limit: limit) }
        produced += count
        try output.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
      }
      switch status {
      case Z_STREAM_END: ended = true
      case Z_OK: break
      case Z_BUF_ERROR: if count == 0 { return }  // needs more input
      default:
        let message = stream.pointee.msg.map { String(cString: $0) } ?? "inflate failed (\(status))"
        throw Gzip.Failure.corrupt(message)
      }
      if ended && stream.pointee.avail_in == 0 { return }
      if !ended && stream.pointee.avail_in == 0 && count < output.count { return }
    }
  }

  /// Inflates `input` (any contiguous bytes), as ``feed(_:_:)-(UnsafeRawBufferPointer,_)``.
  public func feed(_ input: some ContiguousBytes, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
    try input.withUnsafeBytes { try feed($0, body) }
  }

  /// Checks that the input ended where a gzip member ends.
  /// - Throws: ``Gzip/Failure/corrupt(_:)`` when the input stopped mid-stream (or there was none).
  public func finish() throws(Gzip.Failure) {
    guard ended else { throw .corrupt("the compressed data ends before its end marker") }
  }
}
