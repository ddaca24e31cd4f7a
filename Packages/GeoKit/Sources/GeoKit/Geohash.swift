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
    return String(GeohashText(coordinate, count: precision))
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
    String(GeohashText(leftAlignedBits: bits, count: characters))
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

  /// The character pairs by axis bits: at offset `2 * (x << 5 | y)` are the two characters whose 10 interleaved bits
  /// are the 5 longitude bits `x` and the 5 latitude bits `y` (longitude first).
  @usableFromInline static let axisPairs: StaticString = """
    000104050h0j0n0p202124252h2j2n2p808184858h8j8n8pb0b1b4b5bhbjbnbp\
    020306070k0m0q0r222326272k2m2q2r828386878k8m8q8rb2b3b6b7bkbmbqbr\
    08090d0e0s0t0w0x28292d2e2s2t2w2x88898d8e8s8t8w8xb8b9bdbebsbtbwbx\
    0b0c0f0g0u0v0y0z2b2c2f2g2u2v2y2z8b8c8f8g8u8v8y8zbbbcbfbgbubvbybz\
    101114151h1j1n1p303134353h3j3n3p909194959h9j9n9pc0c1c4c5chcjcncp\
    121316171k1m1q1r323336373k3m3q3r929396979k9m9q9rc2c3c6c7ckcmcqcr\
    18191d1e1s1t1w1x38393d3e3s3t3w3x98999d9e9s9t9w9xc8c9cdcecsctcwcx\
    1b1c1f1g1u1v1y1z3b3c3f3g3u3v3y3z9b9c9f9g9u9v9y9zcbcccfcgcucvcycz\
    404144454h4j4n4p606164656h6j6n6pd0d1d4d5dhdjdndpf0f1f4f5fhfjfnfp\
    424346474k4m4q4r626366676k6m6q6rd2d3d6d7dkdmdqdrf2f3f6f7fkfmfqfr\
    48494d4e4s4t4w4x68696d6e6s6t6w6xd8d9dddedsdtdwdxf8f9fdfefsftfwfx\
    4b4c4f4g4u4v4y4z6b6c6f6g6u6v6y6zdbdcdfdgdudvdydzfbfcfffgfufvfyfz\
    505154555h5j5n5p707174757h7j7n7pe0e1e4e5ehejenepg0g1g4g5ghgjgngp\
    525356575k5m5q5r727376777k7m7q7re2e3e6e7ekemeqerg2g3g6g7gkgmgqgr\
    58595d5e5s5t5w5x78797d7e7s7t7w7xe8e9edeeesetewexg8g9gdgegsgtgwgx\
    5b5c5f5g5u5v5y5z7b7c7f7g7u7v7y7zebecefegeueveyezgbgcgfgggugvgygz\
    h0h1h4h5hhhjhnhpk0k1k4k5khkjknkps0s1s4s5shsjsnspu0u1u4u5uhujunup\
    h2h3h6h7hkhmhqhrk2k3k6k7kkkmkqkrs2s3s6s7sksmsqsru2u3u6u7ukumuqur\
    h8h9hdhehshthwhxk8k9kdkeksktkwkxs8s9sdsessstswsxu8u9udueusutuwux\
    hbhchfhghuhvhyhzkbkckfkgkukvkykzsbscsfsgsusvsyszubucufuguuuvuyuz\
    j0j1j4j5jhjjjnjpm0m1m4m5mhmjmnmpt0t1t4t5thtjtntpv0v1v4v5vhvjvnvp\
    j2j3j6j7jkjmjqjrm2m3m6m7mkmmmqmrt2t3t6t7tktmtqtrv2v3v6v7vkvmvqvr\
    j8j9jdjejsjtjwjxm8m9mdmemsmtmwmxt8t9tdtetstttwtxv8v9vdvevsvtvwvx\
    jbjcjfjgjujvjyjzmbmcmfmgmumvmymztbtctftgtutvtytzvbvcvfvgvuvvvyvz\
    n0n1n4n5nhnjnnnpq0q1q4q5qhqjqnqpw0w1w4w5whwjwnwpy0y1y4y5yhyjynyp\
    n2n3n6n7nknmnqnrq2q3q6q7qkqmqqqrw2w3w6w7wkwmwqwry2y3y6y7ykymyqyr\
    n8n9ndnensntnwnxq8q9qdqeqsqtqwqxw8w9wdwewswtwwwxy8y9ydyeysytywyx\
    nbncnfngnunvnynzqbqcqfqgquqvqyqzwbwcwfwgwuwvwywzybycyfygyuyvyyyz\
    p0p1p4p5phpjpnppr0r1r4r5rhrjrnrpx0x1x4x5xhxjxnxpz0z1z4z5zhzjznzp\
    p2p3p6p7pkpmpqprr2r3r6r7rkrmrqrrx2x3x6x7xkxmxqxrz2z3z6z7zkzmzqzr\
    p8p9pdpepsptpwpxr8r9rdrersrtrwrxx8x9xdxexsxtxwxxz8z9zdzezsztzwzx\
    pbpcpfpgpupvpypzrbrcrfrgrurvryrzxbxcxfxgxuxvxyxzzbzczfzgzuzvzyzz
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
