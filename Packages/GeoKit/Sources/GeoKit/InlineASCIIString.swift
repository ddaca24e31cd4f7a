/// Builds `String`s of 1…15 ASCII bytes without a call into the standard library.
///
/// On 64-bit little-endian platforms the standard library keeps such a string inline in its two words: the bytes in
/// memory order, and a top byte of `0xE0 | count` (immortal, small, ASCII). `String(unsafeUninitializedCapacity:)`
/// costs about 10 ns for this, which is most of a geohash encode; writing the two words takes under 1 ns.
///
/// The layout is not public API, but the compiler emits every short string literal in it, so ``layoutVerified``
/// compares the words of a few literals with the layout assumed here. The comparison folds to a constant when this
/// module is compiled; if it is false (another layout, another platform), strings are built through the public
/// initializer instead. Either way the result is an ordinary `String`.
@usableFromInline
enum InlineASCIIString {
  /// Whether short string literals are laid out as this type builds strings.
  @inlinable @inline(__always)
  static var layoutVerified: Bool {
    #if _endian(little) && _pointerBitWidth(_64)
      MemoryLayout<String>.size == 16
        && unsafeBitCast("u", to: (UInt64, UInt64).self) == (0x75, 0xE100_0000_0000_0000)
        && unsafeBitCast("0123456789bc", to: (UInt64, UInt64).self)
          == (0x3736_3534_3332_3130, 0xEC00_0000_6362_3938)
        && unsafeBitCast("0123456789bcdef", to: (UInt64, UInt64).self)
          == (0x3736_3534_3332_3130, 0xEF66_6564_6362_3938)
    #else
      false
    #endif
  }

  /// The top byte of a small ASCII string's second word.
  @inlinable @inline(__always)
  static func discriminator(count: Int) -> UInt64 { (0xE0 | UInt64(truncatingIfNeeded: count)) << 56 }

  /// The string of the first `count` (1…15) bytes of `low` then `high` in memory order; every byte must be ASCII
  /// and the bytes past `count` zero.
  @inlinable @inline(__always)
  static func make(low: UInt64, high: UInt64, count: Int) -> String {
    if layoutVerified {
      return unsafeBitCast((low, high | discriminator(count: count)), to: String.self)
    }
    var words = (low, high)
    return withUnsafeBytes(of: &words) { raw in
      String(unsafeUninitializedCapacity: count) { buffer in
        UnsafeMutableRawBufferPointer(buffer).copyMemory(from: UnsafeRawBufferPointer(rebasing: raw[0..<count]))
        return count
      }
    }
  }
}
