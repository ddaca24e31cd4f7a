import CQRZlib
import Foundation

/// A minimal PNG writer (ISO/IEC 15948): IHDR, one IDAT (the rows deflated by the system zlib at its best level),
/// IEND; chunk checksums by zlib's CRC-32.
enum PNG {
  /// The PNG of a 1-bit greyscale image whose `rows` are packed `(width + 7) / 8` bytes each, high bit first.
  static func greyscale1Bit(width: Int, height: Int, rows: [UInt8]) -> Data {
    let rowBytes = (width + 7) / 8
    precondition(rows.count == rowBytes * height, "rows must hold height × ⌈width / 8⌉ bytes")
    var raw = [UInt8]()
    raw.reserveCapacity((rowBytes + 1) * height)
    for y in 0..<height {
      raw.append(0)  // filter: none
      raw += rows[(y * rowBytes)..<((y + 1) * rowBytes)]
    }
    var header = bigEndian(UInt32(width)) + bigEndian(UInt32(height))
    header += [1, 0, 0, 0, 0]  // bit depth 1, greyscale, deflate, adaptive filters, no interlace
    var png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
    png += chunk("IHDR", header)
    png += chunk("IDAT", zlib(raw))
    png += chunk("IEND", [])
    return Data(png)
  }

  /// A chunk: length, type, data, CRC-32 of type and data.
  static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
    let typed = Array(type.utf8) + data
    let crc = typed.withUnsafeBufferPointer { CQRZlib.crc32(0, $0.baseAddress, uInt($0.count)) }
    return bigEndian(UInt32(data.count)) + typed + bigEndian(UInt32(crc))
  }

  /// A zlib stream (RFC 1950) of `data`, compressed at zlib's best level.
  static func zlib(_ data: [UInt8]) -> [UInt8] {
    var length = compressBound(uLong(data.count))
    var out = [UInt8](repeating: 0, count: Int(length))
    let status = data.withUnsafeBufferPointer { source in
      compress2(&out, &length, source.baseAddress, uLong(source.count), Z_BEST_COMPRESSION)
    }
    // compressBound is always enough and the level is valid: only running out of memory fails.
    precondition(status == Z_OK, "zlib compress2 failed (\(status))")
    return Array(out.prefix(Int(length)))
  }

  static func bigEndian(_ value: UInt32) -> [UInt8] {
    [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
  }
}
