import Foundation

/// A minimal PNG writer (ISO/IEC 15948): IHDR, one IDAT of stored (uncompressed) deflate blocks in a zlib stream,
/// IEND. QR images are small, so compression would save little.
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
    png += chunk("IDAT", zlibStored(raw))
    png += chunk("IEND", [])
    return Data(png)
  }

  /// A chunk: length, type, data, CRC-32 of type and data.
  static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
    let typed = Array(type.utf8) + data
    return bigEndian(UInt32(data.count)) + typed + bigEndian(crc32(typed))
  }

  /// A zlib stream (RFC 1950) of stored deflate blocks (RFC 1951, at most 65,535 bytes each).
  static func zlibStored(_ data: [UInt8]) -> [UInt8] {
    var out: [UInt8] = [0x78, 0x01]
    var start = 0
    repeat {
      let count = min(65_535, data.count - start)
      let last: UInt8 = start + count == data.count ? 1 : 0
      let length = UInt16(count)
      out += [last, UInt8(length & 0xFF), UInt8(length >> 8), UInt8(~length & 0xFF), UInt8(~length >> 8)]
      out += data[start..<(start + count)]
      start += count
    } while start < data.count
    return out + bigEndian(adler32(data))
  }

  static func bigEndian(_ value: UInt32) -> [UInt8] {
    [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
  }

  static let crcTable: [UInt32] = (0..<256).map { index in
    var value = UInt32(index)
    for _ in 0..<8 { value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
    return value
  }

  /// CRC-32 as PNG defines it (the ISO 3309 polynomial, reflected).
  static func crc32(_ bytes: [UInt8]) -> UInt32 {
    var crc: UInt32 = 0xFFFF_FFFF
    for byte in bytes { crc = crcTable[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
    return crc ^ 0xFFFF_FFFF
  }

  /// Adler-32 (RFC 1950).
  static func adler32(_ bytes: [UInt8]) -> UInt32 {
    var a: UInt32 = 1
    var b: UInt32 = 0
    for byte in bytes {
      a = (a + UInt32(byte)) % 65_521
      b = (b + a) % 65_521
    }
    return b << 16 | a
  }
}
