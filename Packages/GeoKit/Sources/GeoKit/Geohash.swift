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
    String(unsafeUninitializedCapacity: characters) { buffer in
      let letters = alphabet.utf8Start
      guard characters == 12 else {
        var shifted = bits
        for index in 0..<characters {
          buffer[index] = letters[Int(truncatingIfNeeded: shifted >> 59)]
          shifted <<= 5
        }
        return characters
      }
      // The common full-precision case, unrolled.
      buffer[0] = letters[Int(truncatingIfNeeded: bits >> 59)]
      buffer[1] = letters[Int(truncatingIfNeeded: bits >> 54 & 31)]
      buffer[2] = letters[Int(truncatingIfNeeded: bits >> 49 & 31)]
      buffer[3] = letters[Int(truncatingIfNeeded: bits >> 44 & 31)]
      buffer[4] = letters[Int(truncatingIfNeeded: bits >> 39 & 31)]
      buffer[5] = letters[Int(truncatingIfNeeded: bits >> 34 & 31)]
      buffer[6] = letters[Int(truncatingIfNeeded: bits >> 29 & 31)]
      buffer[7] = letters[Int(truncatingIfNeeded: bits >> 24 & 31)]
      buffer[8] = letters[Int(truncatingIfNeeded: bits >> 19 & 31)]
      buffer[9] = letters[Int(truncatingIfNeeded: bits >> 14 & 31)]
      buffer[10] = letters[Int(truncatingIfNeeded: bits >> 9 & 31)]
      buffer[11] = letters[Int(truncatingIfNeeded: bits >> 4 & 31)]
      return 12
    }
  }

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
