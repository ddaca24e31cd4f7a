import CZlib
import Foundation

/// Builds gzip bombs for tests without ever holding the inflated data: a small body that inflates to
/// `megabytes` MiB of zeros.
public enum GzipBomb {
  /// A valid gzip stream (correct CRC-32 and size) of `megabytes` MiB of zeros, about 1 KiB compressed per MiB.
  ///
  /// One MiB of zeros is deflated after a full flush, which makes its blocks byte-aligned and independent of what came
  /// before, so they can simply be repeated.
  public static func make(megabytes: Int) -> [UInt8] {
    precondition(megabytes >= 1)
    let mebibyte = 1 << 20
    var stream = z_stream()
    let status = deflateInit2_(
      &stream, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
    precondition(status == Z_OK)
    defer { deflateEnd(&stream) }
    var zeros = [UInt8](repeating: 0, count: mebibyte)
    var output = [UInt8](repeating: 0, count: 64 * 1024)
    func deflateChunk() -> [UInt8] {
      zeros.withUnsafeMutableBufferPointer { input in
        output.withUnsafeMutableBufferPointer { out in
          stream.next_in = input.baseAddress
          stream.avail_in = UInt32(input.count)
          stream.next_out = out.baseAddress
          stream.avail_out = UInt32(out.count)
          let status = deflate(&stream, Z_FULL_FLUSH)
          precondition(status == Z_OK && stream.avail_in == 0 && stream.avail_out > 0)
          return Array(out[0..<(out.count - Int(stream.avail_out))])
        }
      }
    }
    let first = deflateChunk()  // gzip header + the first MiB
    let repeated = deflateChunk()  // one more MiB, context-free
    var bomb = first
    bomb.reserveCapacity(first.count + repeated.count * (megabytes - 1) + 13)
    for _ in 1..<megabytes { bomb += repeated }
    bomb += [0x03, 0x00]  // an empty final fixed-Huffman block
    let crcOfOne = zeros.withUnsafeBufferPointer { crc32(0, $0.baseAddress, UInt32($0.count)) }
    var crc: UInt = 0
    for _ in 0..<megabytes { crc = crc32_combine(crc, crcOfOne, .init(mebibyte)) }
    let size = UInt32(truncatingIfNeeded: megabytes * mebibyte)
    for value in [UInt32(truncatingIfNeeded: crc), size] {
      bomb += (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
    }
    return bomb
  }
}
