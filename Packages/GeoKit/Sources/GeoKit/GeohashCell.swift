/// One geohash cell, held as its 64-bit integer geohash: `value` has `bits` significant bits (1…64),
/// right-aligned, longitude first. A string geohash of n characters is the cell with 5n bits.
///
/// ```swift
/// let cell = try GeohashCell(point, bits: 52)
/// cell.box; cell.center; cell.latitudeError; cell.neighbors.north
/// let key = try GeohashCell(point, bits: 62).value   // an index key for SQLite (fits in Int64)
/// ```
public struct GeohashCell: Sendable, Hashable, Comparable, CustomStringConvertible {
  /// The integer geohash: `bits` bits, right-aligned.
  public let value: UInt64
  /// The bit precision, 1…64.
  public let bits: Int

  /// The cell of `bits` bits (1…64) that contains `coordinate`.
  /// - Throws: ``GeohashError/invalidBits(_:)`` outside 1…64.
  @inlinable @inline(__always)
  public init(_ coordinate: Coordinate, bits: Int = 64) throws(GeohashError) {
    guard bits >= 1, bits <= 64 else { throw .invalidBits(bits) }
    self.init(uncheckedValue: Self.interleave(coordinate) >> UInt64(64 - bits), bits: bits)
  }

  /// A cell from its integer geohash.
  /// - Throws: ``GeohashError/invalidBits(_:)`` or ``GeohashError/valueTooWide(_:bits:)``.
  @inlinable
  public init(value: UInt64, bits: Int) throws(GeohashError) {
    guard bits >= 1, bits <= 64 else { throw .invalidBits(bits) }
    guard bits == 64 || value >> UInt64(bits) == 0 else { throw .valueTooWide(value, bits: bits) }
    self.init(uncheckedValue: value, bits: bits)
  }

  /// The cell named by a geohash string (1…12 characters; upper case is accepted).
  /// - Throws: ``GeohashError/invalidLength(_:)`` or ``GeohashError/invalidCharacter(_:offset:)``.
  @inlinable
  public init(_ hash: some StringProtocol) throws(GeohashError) {
    let utf8 = hash.utf8
    let count = utf8.count
    guard count >= 1, count <= Geohash.maxPrecision else {
      // A non-ASCII character is the real fault (and makes the byte count differ from the character count).
      if let offset = hash.firstIndex(where: { !$0.isASCII }) {
        throw .invalidCharacter(hash[offset], offset: hash.distance(from: hash.startIndex, to: offset))
      }
      throw .invalidLength(count)
    }
    var value: UInt64 = 0
    var offset = 0
    for byte in utf8 {
      let digit = Geohash.digit(byte)
      guard digit < 32 else {
        // Every byte before the bad one is ASCII, so the byte offset is also the character offset.
        let index = utf8.index(utf8.startIndex, offsetBy: offset)
        throw .invalidCharacter(hash[index...].first ?? "?", offset: offset)
      }
      value = value << 5 | UInt64(digit)
      offset += 1
    }
    self.init(uncheckedValue: value, bits: 5 * count)
  }

  @inlinable
  init(uncheckedValue value: UInt64, bits: Int) {
    self.value = value
    self.bits = bits
  }

  // MARK: Forms

  /// The base-32 string of this cell, or `nil` when `bits` is not a multiple of 5 or exceeds 60.
  public var string: String? {
    guard bits % 5 == 0, bits <= 60 else { return nil }
    return Geohash.string(bits: value << UInt64(64 - bits), characters: bits / 5)
  }

  /// The string form, or `value/bits` when the bits are not whole characters.
  public var description: String { string ?? "\(value)/\(bits)" }

  /// The value left-aligned in 64 bits (the cell's first full-precision key).
  @inlinable public var leftAligned: UInt64 { bits == 64 ? value : value << UInt64(64 - bits) }

  // MARK: Geometry

  /// Row (latitude) and column (longitude) of the cell, and the number of bits of each.
  @inlinable var indices: (latitude: UInt64, longitude: UInt64, latitudeBits: Int, longitudeBits: Int) {
    let aligned = leftAligned
    let longitudeBits = (bits + 1) / 2
    let latitudeBits = bits / 2
    let longitude = Self.compact(aligned >> 1) >> UInt64(32 - longitudeBits)
    let latitude = latitudeBits == 0 ? 0 : Self.compact(aligned) >> UInt64(32 - latitudeBits)
    return (latitude, longitude, latitudeBits, longitudeBits)
  }

  /// The cell's rectangle (south-west corner inclusive).
  public var box: BoundingBox {
    let (row, column, latitudeBits, longitudeBits) = indices
    let height = Double(sign: .plus, exponent: -latitudeBits, significand: 180)
    let width = Double(sign: .plus, exponent: -longitudeBits, significand: 360)
    let south = -90 + Double(row) * height
    let west = -180 + Double(column) * width
    return BoundingBox(south: south, west: west, north: south + height, east: west + width)
  }

  /// The centre of the cell.
  public var center: Coordinate {
    let box = box
    return Coordinate(uncheckedLatitude: (box.south + box.north) / 2, longitude: (box.west + box.east) / 2)
  }

  /// Half the cell's height in degrees: the largest latitude error of the centre.
  public var latitudeError: Double { Double(sign: .plus, exponent: -(bits / 2), significand: 90) }

  /// Half the cell's width in degrees: the largest longitude error of the centre.
  public var longitudeError: Double { Double(sign: .plus, exponent: -((bits + 1) / 2), significand: 180) }

  /// Whether the cell contains `coordinate` (south and west edges inclusive, as encoding assigns them).
  @inlinable public func contains(_ coordinate: Coordinate) -> Bool {
    Self.interleave(coordinate) >> UInt64(64 - bits) == value
  }

  // MARK: Hierarchy

  /// The enclosing cell with `bits` bits (≤ this cell's bits).
  public func parent(bits parentBits: Int) throws(GeohashError) -> GeohashCell {
    guard parentBits >= 1, parentBits <= bits else { throw .invalidBits(parentBits) }
    return GeohashCell(uncheckedValue: value >> UInt64(bits - parentBits), bits: parentBits)
  }

  /// The integer geohashes with `bits` bits (≥ this cell's bits) that lie inside this cell: an index range scan.
  public func range(bits keyBits: Int) throws(GeohashError) -> ClosedRange<UInt64> {
    guard keyBits >= bits, keyBits <= 64 else { throw .invalidBits(keyBits) }
    let shift = UInt64(keyBits - bits)
    let lower = shift == 64 ? 0 : value << shift
    let span: UInt64 = shift == 64 ? .max : (UInt64(1) << shift) &- 1
    return lower...(lower | span)
  }

  // MARK: Neighbours

  /// The adjacent cell in `direction`, or `nil` past a pole. Longitude wraps at ±180°.
  public func neighbor(_ direction: GeohashDirection) -> GeohashCell? {
    let (row, column, latitudeBits, longitudeBits) = indices
    let step = direction.step
    let rows = UInt64(1) << UInt64(latitudeBits)
    let newRow = Int64(row) + Int64(step.latitude)
    guard newRow >= 0, UInt64(newRow) < rows else { return nil }
    let columnMask = (UInt64(1) << UInt64(longitudeBits)) &- 1
    let newColumn = (column &+ UInt64(bitPattern: Int64(step.longitude))) & columnMask
    let aligned =
      Self.spread((newColumn << UInt64(32 - longitudeBits)) & 0xFFFF_FFFF) << 1
      | Self.spread(latitudeBits == 0 ? 0 : (UInt64(newRow) << UInt64(32 - latitudeBits)) & 0xFFFF_FFFF)
    return GeohashCell(uncheckedValue: aligned >> UInt64(64 - bits), bits: bits)
  }

  /// All 8 neighbours; those past a pole are `nil`.
  public var neighbors: GeohashNeighbors<GeohashCell> {
    GeohashNeighbors(all: GeohashDirection.allCases.map { neighbor($0) })
  }

  /// Orders cells by their left-aligned key, then coarser cells first (a parent sorts before its children).
  public static func < (lhs: GeohashCell, rhs: GeohashCell) -> Bool {
    (lhs.leftAligned, lhs.bits) < (rhs.leftAligned, rhs.bits)
  }

  // MARK: Bit twiddling

  /// The row of `latitude` among 2³² rows of the bisection of [-90, 90] (row 0 in the south).
  @inlinable @inline(__always)
  static func row(_ latitude: Double) -> UInt64 { index(latitude, half: 90) }

  /// The column of `longitude` among 2³² columns of the bisection of [-180, 180] (column 0 in the west).
  @inlinable @inline(__always)
  static func column(_ longitude: Double) -> UInt64 { index(longitude, half: 180) }

  /// The 32-bit index of `x` in [-half, half] that 32 exact bisections give: `x` goes to the upper half iff
  /// `x >= mid`, so a cell holds its lower edge, and the top cell also holds `half`.
  ///
  /// The fraction bits of `x / (2 half) + 1.5` (a value in [1, 2)) are the index, but computing that value rounds
  /// twice, so a value a few ulps below an edge can land in the cell above it. Here it is computed with a bias of
  /// 2⁻⁵¹ upwards, which makes it at least the exact value and at most 3 · 2⁻⁵² above it: the candidate index is
  /// right or one too high. One comparison with the candidate cell's lower edge, which is exact in a `Double`
  /// (`-half + k · 2 half / 2³²` has at most 38 significant bits), settles it.
  @inlinable @inline(__always)
  static func index(_ x: Double, half: Double) -> UInt64 {
    let biased = min(x * (0.5 / half) + (1.5 + 0x1p-51), 0x1.fffffffffffffp0)
    // 1 + candidate · 2⁻³²: the biased value with the fraction bits below the 32 of the index cleared.
    let edge = Double(bitPattern: biased.bitPattern & ~0xF_FFFF)
    let lower = (edge - 1.5) * (2 * half)
    let candidate = UInt32(truncatingIfNeeded: biased.bitPattern >> 20)
    return UInt64(candidate &- (x < lower ? 1 : 0))
  }

  /// The 64-bit interleaved geohash of `coordinate` (longitude bits at odd positions from the top).
  @inlinable @inline(__always)
  static func interleave(_ coordinate: Coordinate) -> UInt64 {
    spread(column(coordinate.longitude)) << 1 | spread(row(coordinate.latitude))
  }

  /// Spreads the low 32 bits of `x` to the even bit positions.
  @inlinable @inline(__always)
  static func spread(_ x: UInt64) -> UInt64 {
    var x = x
    x = (x | x << 16) & 0x0000_FFFF_0000_FFFF
    x = (x | x << 8) & 0x00FF_00FF_00FF_00FF
    x = (x | x << 4) & 0x0F0F_0F0F_0F0F_0F0F
    x = (x | x << 2) & 0x3333_3333_3333_3333
    x = (x | x << 1) & 0x5555_5555_5555_5555
    return x
  }

  /// Gathers the even bit positions of `x` into the low 32 bits (the inverse of ``spread(_:)``).
  @inlinable @inline(__always)
  static func compact(_ x: UInt64) -> UInt64 {
    var x = x & 0x5555_5555_5555_5555
    x = (x | x >> 1) & 0x3333_3333_3333_3333
    x = (x | x >> 2) & 0x0F0F_0F0F_0F0F_0F0F
    x = (x | x >> 4) & 0x00FF_00FF_00FF_00FF
    x = (x | x >> 8) & 0x0000_FFFF_0000_FFFF
    x = (x | x >> 16) & 0x0000_0000_FFFF_FFFF
    return x
  }
}
