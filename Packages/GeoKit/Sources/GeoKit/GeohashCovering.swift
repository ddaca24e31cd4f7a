#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// A set of geohash cells, all of one bit precision, that together contain a circle or a box: every point of the
/// shape lies in one of the cells (no false negatives; false positives are filtered later by exact distance).
///
/// This turns "what is within r metres" into a few index range scans:
/// ```swift
/// let covering = try GeohashCovering(center: here, radius: 1_000, maxCells: 16)
/// for range in covering.ranges(keyBits: 62) {   // the column holds GeohashCell(point, bits: 62).value
///   // SELECT … WHERE geohash BETWEEN range.lowerBound AND range.upperBound
/// }
/// ```
public struct GeohashCovering: Sendable, Hashable {
  /// The covering cells, sorted by value, all with ``bits`` bits.
  public let cells: [GeohashCell]
  /// The bit precision of the cells.
  public let bits: Int

  /// Covers every point within `radius` metres of `center` — by haversine or by WGS84 geodesic distance (the
  /// radius is widened by 0.6 %, more than the largest difference between the two) — with at most `maxCells`
  /// cells of at most `maxBits` bits. (A shape that crosses the antimeridian or covers a pole needs at least 2.)
  /// - Throws: ``CoveringError`` for a negative or non-finite radius or a bad limit.
  public init(center: Coordinate, radius: Double, maxCells: Int = 16, maxBits: Int = 60) throws(CoveringError) {
    guard radius.isFinite, radius >= 0 else { throw .invalidRadius(radius) }
    let reach = radius * 1.006 + 0.01
    let box = BoundingBox(around: center, radius: reach)
    try self.init(box: box, maxCells: maxCells, maxBits: maxBits) { cell in
      Self.minimumDistance(from: center, to: cell.box) <= reach
    }
  }

  /// Covers every point of `box` (which may cross the antimeridian) with at most `maxCells` cells of at most
  /// `maxBits` bits.
  /// - Throws: ``CoveringError`` for an invalid box or limit.
  public init(box: BoundingBox, maxCells: Int = 16, maxBits: Int = 60) throws(CoveringError) {
    try self.init(box: box, maxCells: maxCells, maxBits: maxBits) { _ in true }
  }

  init(box: BoundingBox, maxCells: Int, maxBits: Int, keep: (GeohashCell) -> Bool) throws(CoveringError) {
    guard maxCells >= 1 else { throw .invalidCellLimit(maxCells) }
    guard maxBits >= 1, maxBits <= 64 else { throw .invalidBits(maxBits) }
    guard box.south.isFinite, box.north.isFinite, box.west.isFinite, box.east.isFinite,
      box.south >= -90, box.north <= 90, box.south <= box.north
    else { throw .invalidBox(box) }
    // A west edge at +180 starts on the meridian where a geohash puts longitude 180 (the easternmost column), not on
    // −180's column.
    var west = Coordinate.normalizedLongitude(box.west)
    if west == -180, box.west > 0 { west = 180 }
    let east = box.east >= 180 ? 180 : Coordinate.normalizedLongitude(box.east)
    let parts =
      west <= east
      ? [(west, east)] : [(west, 180.0), (-180.0, east)]
    // The finest precision whose cell grid over the box stays within the limit.
    // (The count grows with the bits, so a binary search finds it.)
    var low = 1
    var high = maxBits
    while low < high {
      let middle = (low + high + 1) / 2
      if Self.cellCount(south: box.south, north: box.north, parts: parts, bits: middle) <= maxCells {
        low = middle
      } else {
        high = middle - 1
      }
    }
    let bits = low
    var cells: [GeohashCell] = []
    let latitudeBits = bits / 2
    let longitudeBits = (bits + 1) / 2
    let rows = Self.indexRange(box.south, box.north, half: 90, bits: latitudeBits)
    for (partWest, partEast) in parts {
      let columns = Self.indexRange(partWest, partEast, half: 180, bits: longitudeBits)
      for row in rows {
        for column in columns {
          let aligned =
            GeohashCell.spread(column << UInt64(32 - longitudeBits) & 0xFFFF_FFFF) << 1
            | GeohashCell.spread(latitudeBits == 0 ? 0 : row << UInt64(32 - latitudeBits) & 0xFFFF_FFFF)
          let cell = GeohashCell(uncheckedValue: aligned >> UInt64(64 - bits), bits: bits)
          if keep(cell) { cells.append(cell) }
        }
      }
    }
    cells.sort { $0.value < $1.value }
    var unique: [GeohashCell] = []
    unique.reserveCapacity(cells.count)
    for cell in cells where unique.last != cell { unique.append(cell) }
    self.cells = unique
    self.bits = bits
  }

  /// The covering as sorted, merged, inclusive ranges of integer geohashes with `keyBits` bits (≥ ``bits``):
  /// the ranges to scan in an index of `GeohashCell(point, bits: keyBits).value`.
  public func ranges(keyBits: Int) -> [ClosedRange<UInt64>] {
    var ranges: [ClosedRange<UInt64>] = []
    for cell in cells {
      guard let range = try? cell.range(bits: max(keyBits, bits)) else { continue }
      if let last = ranges.last, last.upperBound != .max, last.upperBound + 1 == range.lowerBound {
        ranges[ranges.count - 1] = last.lowerBound...range.upperBound
      } else {
        ranges.append(range)
      }
    }
    return ranges
  }

  /// Whether `point` lies in one of the cells.
  public func contains(_ point: Coordinate) -> Bool {
    let key = GeohashCell.interleave(point) >> UInt64(64 - bits)
    var low = 0
    var high = cells.count
    while low < high {
      let middle = (low + high) / 2
      if cells[middle].value < key { low = middle + 1 } else { high = middle }
    }
    return low < cells.count && cells[low].value == key
  }

  static func cellCount(south: Double, north: Double, parts: [(Double, Double)], bits: Int) -> Int {
    let rows = indexRange(south, north, half: 90, bits: bits / 2).count
    var total = 0
    for (west, east) in parts {
      total += rows * indexRange(west, east, half: 180, bits: (bits + 1) / 2).count
    }
    return total
  }

  /// The cell indices along one axis of [-half, half] that overlap [low, high]: the cells of its ends as points are
  /// encoded, so a point inside the interval always falls in one of them.
  static func indexRange(_ low: Double, _ high: Double, half: Double, bits: Int) -> ClosedRange<UInt64> {
    guard bits > 0 else { return 0...0 }
    let shift = UInt64(32 - bits)
    return GeohashCell.index(low, half: half) >> shift...GeohashCell.index(high, half: half) >> shift
  }

  /// A lower bound of the spherical distance in metres from `point` to any point of `box` (`west <= east`).
  static func minimumDistance(from point: Coordinate, to box: BoundingBox) -> Double {
    if box.contains(point) { return 0 }
    let toRadians = Double.pi / 180
    let pointLatitude = point.latitude * toRadians
    if box.west <= point.longitude && point.longitude <= box.east {
      let latitude = min(max(point.latitude, box.south), box.north)
      return abs(latitude - point.latitude) * toRadians * meanEarthRadius
    }
    var best = Double.infinity
    for edge in [box.west, box.east] {
      // On the meridian `edge`, the distance is smallest at atan2(sin φ, cos φ cos Δλ), or at an end of the edge.
      let deltaLongitude = (edge - point.longitude) * toRadians
      let nearest = atan2(sin(pointLatitude), cos(pointLatitude) * cos(deltaLongitude)) / toRadians
      for latitude in [box.south, box.north, min(max(nearest, box.south), box.north)] {
        best = min(best, point.haversineDistance(to: Coordinate(uncheckedLatitude: latitude, longitude: edge)))
      }
    }
    // Allow for rounding in the trigonometry.
    return max(0, best * (1 - 1e-9) - 1e-6)
  }
}

/// Why a covering could not be computed.
public enum CoveringError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The radius is negative or not finite.
  case invalidRadius(Double)
  /// The cell limit is below 1.
  case invalidCellLimit(Int)
  /// The bit precision is outside 1…64.
  case invalidBits(Int)
  /// The box has non-finite edges, latitudes outside [-90, 90] or south > north.
  case invalidBox(BoundingBox)

  /// What was wrong and what a valid value looks like.
  public var description: String {
    switch self {
    case .invalidRadius(let radius): "radius \(radius) must be a finite number of metres ≥ 0"
    case .invalidCellLimit(let limit): "cell limit \(limit) must be at least 1"
    case .invalidBits(let bits): "bit precision \(bits) is outside 1...64"
    case .invalidBox(let box): "bounding box \(box) is not valid"
    }
  }
}

extension Geohash {
  /// The longest string precision (1…12) whose cells are at least `radius` metres tall and wide at `latitude`, so
  /// that a cell and its 8 neighbours contain every point within `radius` of any point of the cell.
  public static func precision(forRadius radius: Double, latitude: Double = 0) -> Int {
    var precision = 1
    for candidate in 1...maxPrecision {
      let bits = 5 * candidate
      let height = 180 / Double(UInt64(1) << UInt64(bits / 2)) * Double.pi / 180 * meanEarthRadius * 0.994
      let width =
        360 / Double(UInt64(1) << UInt64((bits + 1) / 2)) * Double.pi / 180 * meanEarthRadius
        * cos(min(89.9, abs(latitude)) * Double.pi / 180) * 0.994
      if min(height, width) >= radius { precision = candidate } else { break }
    }
    return precision
  }
}
