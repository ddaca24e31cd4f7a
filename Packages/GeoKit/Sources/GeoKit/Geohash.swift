/// Geohash cells as base-32 strings of 1…12 characters (the common textual form).
///
/// ```swift
/// let hash = try Geohash.encode(point, precision: 7)         // "u4pruyd"
/// let cell = try Geohash.decode("u4pruyd")                    // a GeohashCell: box, centre, error, neighbours
/// let around = try Geohash.neighbors(of: "u4pruyd")           // n ne e se s sw w nw, nil past a pole
/// ```
///
/// Strings and ``GeohashCell`` integers share one bit layout: bit 1 (the most significant) halves the longitude,
/// bit 2 the latitude, and so on alternately; each character holds 5 bits.
public enum Geohash {
  /// The longest supported string (12 characters = 60 bits, cells of about 3.7 cm × 1.9 cm).
  public static let maxPrecision = 12

  /// The base-32 geohash of `coordinate` with `precision` characters (1…12).
  /// - Throws: ``GeohashError/invalidPrecision(_:)`` outside 1…12.
  @inlinable
  public static func encode(_ coordinate: Coordinate, precision: Int) throws(GeohashError) -> String {
    guard precision >= 1, precision <= maxPrecision else { throw .invalidPrecision(precision) }
    return string(bits: GeohashCell.interleave(coordinate), characters: precision)
  }

  /// The cell named by a geohash string (1…12 characters of the geohash alphabet; upper case is accepted).
  /// - Throws: ``GeohashError/invalidLength(_:)`` or ``GeohashError/invalidCharacter(_:offset:)``.
  @inlinable
  public static func decode(_ hash: some StringProtocol) throws(GeohashError) -> GeohashCell {
    try GeohashCell(hash)
  }

  /// Checks that `hash` is a well-formed geohash string.
  /// - Throws: ``GeohashError/invalidLength(_:)`` or ``GeohashError/invalidCharacter(_:offset:)``.
  @inlinable
  public static func validate(_ hash: some StringProtocol) throws(GeohashError) {
    _ = try GeohashCell(hash)
  }

  /// The 8 cells around `hash`, of the same length; `nil` where the neighbour would lie past a pole.
  /// Longitude wraps at ±180°.
  public static func neighbors(of hash: some StringProtocol) throws(GeohashError) -> GeohashNeighbors<String> {
    let neighbors = try GeohashCell(hash).neighbors
    return neighbors.map { $0.string ?? "" }
  }

  /// The base-32 alphabet: digits and lower-case letters without a, i, l and o.
  public static let alphabet: StaticString = "0123456789bcdefghjkmnpqrstuvwxyz"

  /// Spells the first `characters` 5-bit groups of a 64-bit left-aligned interleaved value.
  @inlinable
  static func string(bits: UInt64, characters: Int) -> String {
    guard characters == 12 else {
      return String(unsafeUninitializedCapacity: characters) { buffer in
        let letters = alphabet.utf8Start
        var shifted = bits
        for index in 0..<characters {
          buffer[index] = letters[Int(truncatingIfNeeded: shifted >> 59)]
          shifted <<= 5
        }
        return characters
      }
    }
    // The common full-precision case: six 2-character lookups of 10 bits each, copied as 2-byte units (half the
    // lookups and stores of one character at a time).
    return String(unsafeUninitializedCapacity: 12) { buffer in
      let pairs = UnsafeRawPointer(Self.pairs.utf8Start)
      let bytes = UnsafeMutableRawBufferPointer(buffer)
      for index in 0..<6 {
        let offset = 2 * Int(truncatingIfNeeded: bits >> UInt64(54 - 10 * index) & 1023)
        let pair = pairs.loadUnaligned(fromByteOffset: offset, as: UInt16.self)
        bytes.storeBytes(of: pair, toByteOffset: 2 * index, as: UInt16.self)
      }
      return 12
    }
  }

  /// All 1024 two-character strings of the alphabet in order: the characters of the 10-bit value `v` are at
  /// offset `2 * v`.
  @usableFromInline static let pairs: StaticString = """
    000102030405060708090b0c0d0e0f0g0h0j0k0m0n0p0q0r0s0t0u0v0w0x0y0z\
    101112131415161718191b1c1d1e1f1g1h1j1k1m1n1p1q1r1s1t1u1v1w1x1y1z\
    202122232425262728292b2c2d2e2f2g2h2j2k2m2n2p2q2r2s2t2u2v2w2x2y2z\
    303132333435363738393b3c3d3e3f3g3h3j3k3m3n3p3q3r3s3t3u3v3w3x3y3z\
    404142434445464748494b4c4d4e4f4g4h4j4k4m4n4p4q4r4s4t4u4v4w4x4y4z\
    505152535455565758595b5c5d5e5f5g5h5j5k5m5n5p5q5r5s5t5u5v5w5x5y5z\
    606162636465666768696b6c6d6e6f6g6h6j6k6m6n6p6q6r6s6t6u6v6w6x6y6z\
    707172737475767778797b7c7d7e7f7g7h7j7k7m7n7p7q7r7s7t7u7v7w7x7y7z\
    808182838485868788898b8c8d8e8f8g8h8j8k8m8n8p8q8r8s8t8u8v8w8x8y8z\
    909192939495969798999b9c9d9e9f9g9h9j9k9m9n9p9q9r9s9t9u9v9w9x9y9z\
    b0b1b2b3b4b5b6b7b8b9bbbcbdbebfbgbhbjbkbmbnbpbqbrbsbtbubvbwbxbybz\
    c0c1c2c3c4c5c6c7c8c9cbcccdcecfcgchcjckcmcncpcqcrcsctcucvcwcxcycz\
    d0d1d2d3d4d5d6d7d8d9dbdcdddedfdgdhdjdkdmdndpdqdrdsdtdudvdwdxdydz\
    e0e1e2e3e4e5e6e7e8e9ebecedeeefegehejekemenepeqereseteuevewexeyez\
    f0f1f2f3f4f5f6f7f8f9fbfcfdfefffgfhfjfkfmfnfpfqfrfsftfufvfwfxfyfz\
    g0g1g2g3g4g5g6g7g8g9gbgcgdgegfggghgjgkgmgngpgqgrgsgtgugvgwgxgygz\
    h0h1h2h3h4h5h6h7h8h9hbhchdhehfhghhhjhkhmhnhphqhrhshthuhvhwhxhyhz\
    j0j1j2j3j4j5j6j7j8j9jbjcjdjejfjgjhjjjkjmjnjpjqjrjsjtjujvjwjxjyjz\
    k0k1k2k3k4k5k6k7k8k9kbkckdkekfkgkhkjkkkmknkpkqkrksktkukvkwkxkykz\
    m0m1m2m3m4m5m6m7m8m9mbmcmdmemfmgmhmjmkmmmnmpmqmrmsmtmumvmwmxmymz\
    n0n1n2n3n4n5n6n7n8n9nbncndnenfngnhnjnknmnnnpnqnrnsntnunvnwnxnynz\
    p0p1p2p3p4p5p6p7p8p9pbpcpdpepfpgphpjpkpmpnpppqprpsptpupvpwpxpypz\
    q0q1q2q3q4q5q6q7q8q9qbqcqdqeqfqgqhqjqkqmqnqpqqqrqsqtquqvqwqxqyqz\
    r0r1r2r3r4r5r6r7r8r9rbrcrdrerfrgrhrjrkrmrnrprqrrrsrtrurvrwrxryrz\
    s0s1s2s3s4s5s6s7s8s9sbscsdsesfsgshsjsksmsnspsqsrssstsusvswsxsysz\
    t0t1t2t3t4t5t6t7t8t9tbtctdtetftgthtjtktmtntptqtrtstttutvtwtxtytz\
    u0u1u2u3u4u5u6u7u8u9ubucudueufuguhujukumunupuqurusutuuuvuwuxuyuz\
    v0v1v2v3v4v5v6v7v8v9vbvcvdvevfvgvhvjvkvmvnvpvqvrvsvtvuvvvwvxvyvz\
    w0w1w2w3w4w5w6w7w8w9wbwcwdwewfwgwhwjwkwmwnwpwqwrwswtwuwvwwwxwywz\
    x0x1x2x3x4x5x6x7x8x9xbxcxdxexfxgxhxjxkxmxnxpxqxrxsxtxuxvxwxxxyxz\
    y0y1y2y3y4y5y6y7y8y9ybycydyeyfygyhyjykymynypyqyrysytyuyvywyxyyyz\
    z0z1z2z3z4z5z6z7z8z9zbzczdzezfzgzhzjzkzmznzpzqzrzsztzuzvzwzxzyzz
    """

  /// The 5-bit value of an ASCII geohash character (upper case accepted), or a value ≥ 32 if it is not one.
  @inlinable @inline(__always)
  static func digit(_ byte: UInt8) -> UInt8 {
    guard byte < 128 else { return 0xFF }
    return decodeTable.utf8Start[Int(byte)] &- 48
  }

  /// For each ASCII code, '0' + its 5-bit value, or '~' (not a geohash character).
  @usableFromInline static let decodeTable: StaticString =
    "~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~0123456789~~~~~~~~:;<=>?@~AB~CD~EFGHIJKLMNO~~~~~~~:;<=>?@~AB~CD~EFGHIJKLMNO~~~~~"
}

/// Why a geohash operation was rejected.
public enum GeohashError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The precision is outside the supported range.
  case invalidPrecision(Int)
  /// The string contains a character outside the geohash alphabet, at this offset.
  case invalidCharacter(Character, offset: Int)
  /// The string is empty or longer than 12 characters.
  case invalidLength(Int)
  /// An integer geohash's bit precision is outside 1…64.
  case invalidBits(Int)
  /// An integer geohash value has bits set above its bit precision.
  case valueTooWide(UInt64, bits: Int)

  /// What was wrong and what a valid value looks like.
  public var description: String {
    switch self {
    case .invalidPrecision(let precision): "geohash precision \(precision) is outside 1...12"
    case .invalidCharacter(let character, let offset):
      "geohash character '\(character)' at offset \(offset) is not in the alphabet 0-9, b-h, j, k, m, n, p-z"
    case .invalidLength(let length): "geohash length \(length) is outside 1...12"
    case .invalidBits(let bits): "integer geohash bit precision \(bits) is outside 1...64"
    case .valueTooWide(let value, let bits): "integer geohash \(value) does not fit in \(bits) bits"
    }
  }
}

/// The eight compass directions to a cell's neighbours.
public enum GeohashDirection: Int, Sendable, Hashable, CaseIterable {
  /// Towards the North Pole.
  case north
  /// North and east.
  case northEast
  /// Towards increasing longitude (wrapping at 180°).
  case east
  /// South and east.
  case southEast
  /// Towards the South Pole.
  case south
  /// South and west.
  case southWest
  /// Towards decreasing longitude (wrapping at -180°).
  case west
  /// North and west.
  case northWest

  /// The (latitude, longitude) step of this direction in cells.
  @inlinable var step: (latitude: Int, longitude: Int) {
    switch self {
    case .north: (1, 0)
    case .northEast: (1, 1)
    case .east: (0, 1)
    case .southEast: (-1, 1)
    case .south: (-1, 0)
    case .southWest: (-1, -1)
    case .west: (0, -1)
    case .northWest: (1, -1)
    }
  }
}

/// The 8 neighbours of a cell. A neighbour is `nil` when it would lie past a pole (cells in the top or bottom row
/// have no northern or southern neighbours); longitude wraps at ±180°, so east and west always exist.
public struct GeohashNeighbors<Cell: Sendable & Hashable>: Sendable, Hashable {
  /// The neighbours in the order n, ne, e, se, s, sw, w, nw.
  public var all: [Cell?]

  /// The neighbour in `direction`, or `nil` past a pole.
  public subscript(direction: GeohashDirection) -> Cell? { all[direction.rawValue] }

  /// The neighbour to the north (`nil` in the top row).
  public var north: Cell? { all[0] }
  /// The neighbour to the north-east (`nil` in the top row).
  public var northEast: Cell? { all[1] }
  /// The neighbour to the east.
  public var east: Cell? { all[2] }
  /// The neighbour to the south-east (`nil` in the bottom row).
  public var southEast: Cell? { all[3] }
  /// The neighbour to the south (`nil` in the bottom row).
  public var south: Cell? { all[4] }
  /// The neighbour to the south-west (`nil` in the bottom row).
  public var southWest: Cell? { all[5] }
  /// The neighbour to the west.
  public var west: Cell? { all[6] }
  /// The neighbour to the north-west (`nil` in the top row).
  public var northWest: Cell? { all[7] }

  /// The same neighbours transformed by `transform`.
  public func map<Other>(_ transform: (Cell) -> Other) -> GeohashNeighbors<Other> {
    GeohashNeighbors<Other>(all: all.map { $0.map(transform) })
  }
}
