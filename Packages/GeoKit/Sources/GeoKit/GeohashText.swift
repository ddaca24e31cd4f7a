/// A geohash string spelled into inline storage: up to 12 ASCII characters held in 16 bytes, with no heap
/// allocation and no `String` construction.
///
/// Use it on hot paths (bulk ingest, binding geohash columns, hashing) and convert with `String(text)` or
/// ``description`` only where a `String` is needed.
///
/// ```swift
/// let text = try Geohash.encodeText(point, precision: 6)   // "u4pruy", inline
/// text.withUTF8 { bytes in /* bind to SQLite without a String */ }
/// ```
public struct GeohashText: Sendable, Hashable, Comparable, CustomStringConvertible {
  /// The ASCII characters in memory order: characters 0…7 in `low`, 8…11 in `high`; unused bytes are zero.
  @usableFromInline var low: UInt64
  @usableFromInline var high: UInt64
  /// The number of characters (1…12).
  public let count: Int

  @inlinable
  init(low: UInt64, high: UInt64, count: Int) {
    self.low = low
    self.high = high
    self.count = count
  }

  /// Spells the first `count` 5-bit groups of a left-aligned interleaved geohash value.
  @inlinable
  init(leftAlignedBits bits: UInt64, count: Int) {
    let pairs = UnsafeRawPointer(Geohash.pairs.utf8Start)
    // Characters 2i and 2i+1 (10 bits) as one 2-byte load from the pair table.
    self.init(count: count) { index in
      pairs.loadUnaligned(
        fromByteOffset: 2 * Int(truncatingIfNeeded: bits >> UInt64(54 - 10 * index) & 1023), as: UInt16.self)
    }
  }

  /// Spells the first `count` characters of the geohash of `coordinate`.
  ///
  /// Each character pair holds 5 bits of each quantized axis, so it is looked up by those bits directly: the axes
  /// are never interleaved, which saves a third of the work of encoding.
  @inlinable
  init(_ coordinate: Coordinate, count: Int) {
    let latitude = GeohashCell.row(coordinate.latitude)
    let longitude = GeohashCell.column(coordinate.longitude) << 5
    let pairs = UnsafeRawPointer(Geohash.axisPairs.utf8Start)
    self.init(count: count) { index in
      let shift = UInt64(27 - 5 * index)
      let offset = 2 * Int(truncatingIfNeeded: longitude >> shift & 0x3E0 | latitude >> shift & 31)
      return pairs.loadUnaligned(fromByteOffset: offset, as: UInt16.self)
    }
  }

  /// Assembles all 12 characters branch-free from six 2-character pairs (first character in the low byte), then
  /// masks off the unused ones.
  @inlinable @inline(__always)
  init(count: Int, pair: (Int) -> UInt16) {
    @inline(__always) func placed(_ index: Int) -> UInt64 {
      UInt64(UInt16(littleEndian: pair(index))) << UInt64(16 * (index & 3))
    }
    let low = placed(0) | placed(1) | placed(2) | placed(3)
    let high = placed(4) | placed(5)
    let lowMask: UInt64 = count >= 8 ? ~0 : (1 << UInt64(8 * count)) &- 1
    let highMask: UInt64 = count <= 8 ? 0 : (1 << UInt64(8 * (count - 8))) &- 1
    self.init(low: (low & lowMask).littleEndian, high: (high & highMask).littleEndian, count: count)
  }

  /// Calls `body` with the characters as UTF-8 (ASCII) bytes; the pointer is valid only inside `body`.
  @inlinable
  public func withUTF8<Result>(_ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result {
    var storage = (low, high)
    return try withUnsafeBytes(of: &storage) { raw in
      try body(UnsafeBufferPointer(rebasing: raw.bindMemory(to: UInt8.self)[0..<count]))
    }
  }

  /// The geohash as a `String`.
  @inlinable
  public var description: String {
    // Room for 15 bytes, which any string of up to 15 UTF-8 bytes has without an allocation, takes all 12 possible
    // characters in one fixed-size copy; the first `count` bytes are the string.
    String(unsafeUninitializedCapacity: 15) { buffer in
      withUnsafeBytes(of: (low, high)) { bytes in
        UnsafeMutableRawBufferPointer(buffer).copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[..<12]))
      }
      return count
    }
  }

  /// Orders like the strings do: byte-wise, a prefix first. (Unused bytes are zero, below every character, so the
  /// words compared as big-endian numbers order the same way.)
  @inlinable
  public static func < (lhs: GeohashText, rhs: GeohashText) -> Bool {
    (UInt64(bigEndian: lhs.low), UInt64(bigEndian: lhs.high)) < (
      UInt64(bigEndian: rhs.low), UInt64(bigEndian: rhs.high)
    )
  }
}

extension Geohash {
  /// The geohash of `coordinate` with `precision` characters (1…12) as inline ``GeohashText``: the same
  /// characters as ``encode(_:precision:)`` without building a `String`.
  /// - Throws: ``GeohashError/invalidPrecision(_:)`` outside 1…12.
  @inlinable
  public static func encodeText(_ coordinate: Coordinate, precision: Int) throws(GeohashError) -> GeohashText {
    guard precision >= 1, precision <= maxPrecision else { throw .invalidPrecision(precision) }
    return GeohashText(coordinate, count: precision)
  }
}

extension String {
  /// The characters of a ``GeohashText``.
  @inlinable
  public init(_ text: GeohashText) { self = text.description }
}
