import CZlib
import Foundation

/// gzip compression through the system zlib, with a limit on decompressed size.
public enum Gzip {
  /// Why compression or decompression failed.
  public enum Failure: Error, Sendable, Hashable, CustomStringConvertible {
    /// The decompressed data would exceed the limit (a zip bomb, or simply too large).
    case limitExceeded(limit: Int)
    /// The data is not valid gzip or zlib data.
    case corrupt(String)

    /// A sentence for logs.
    public var description: String {
      switch self {
      case .limitExceeded(let limit): "decompressed data exceeds \(limit) bytes"
      case .corrupt(let reason): "corrupt compressed data: \(reason)"
      }
    }
  }

  /// Compresses `data` into the gzip format (RFC 1952).
  public static func compress(_ data: Data, level: Int32 = 6) throws(Failure) -> Data {
    var stream = z_stream()
    let initStatus = deflateInit2_(
      &stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
    guard initStatus == Z_OK else { throw .corrupt("deflateInit2 failed (\(initStatus))") }
    defer { deflateEnd(&stream) }
    let bound = Int(deflateBound(&stream, UInt(data.count)))
    var output = [UInt8](repeating: 0, count: bound)
    var input = [UInt8](data)
    let status: Int32 = input.withUnsafeMutableBufferPointer { inBuffer in
      output.withUnsafeMutableBufferPointer { outBuffer in
        stream.next_in = inBuffer.baseAddress
        stream.avail_in = UInt32(inBuffer.count)
        stream.next_out = outBuffer.baseAddress
        stream.avail_out = UInt32(outBuffer.count)
        return deflate(&stream, Z_FINISH)
      }
    }
    guard status == Z_STREAM_END else { throw .corrupt("deflate failed (\(status))") }
    return Data(output[0..<Int(stream.total_out)])
  }

  /// Decompresses gzip (or zlib) data, failing with ``Failure/limitExceeded(limit:)`` as soon as the output would
  /// pass `limit` bytes, so a zip bomb costs at most `limit` bytes of memory.
  public static func decompress(_ data: Data, limit: Int) throws(Failure) -> Data {
    var stream = z_stream()
    let initStatus = inflateInit2_(&stream, 15 + 32, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
    guard initStatus == Z_OK else { throw .corrupt("inflateInit2 failed (\(initStatus))") }
    defer { inflateEnd(&stream) }
    var input = [UInt8](data)
    var output = Data()
    var chunk = [UInt8](repeating: 0, count: 64 * 1024)
    let result: Failure? = input.withUnsafeMutableBufferPointer { inBuffer in
      stream.next_in = inBuffer.baseAddress
      stream.avail_in = UInt32(inBuffer.count)
      while true {
        let (status, produced) = chunk.withUnsafeMutableBufferPointer { outBuffer in
          stream.next_out = outBuffer.baseAddress
          stream.avail_out = UInt32(outBuffer.count)
          let status = inflate(&stream, Z_NO_FLUSH)
          return (status, outBuffer.count - Int(stream.avail_out))
        }
        if produced > 0 {
          guard output.count + produced <= limit else { return .limitExceeded(limit: limit) }
          output.append(contentsOf: chunk[0..<produced])
        }
        switch status {
        case Z_STREAM_END:
          return nil
        case Z_OK:
          continue
        case Z_BUF_ERROR where stream.avail_in == 0:
          return .corrupt("truncated data")
        default:
          let message = stream.msg.map { String(cString: $0) } ?? "inflate status \(status)"
          return .corrupt(message)
        }
      }
    }
    if let result { throw result }
    return output
  }
}
