import DomainKit
import Foundation
import GeoKit
import MeridianAPI

/// The per-hour cell counts both engines keep of every account's fixes (`history_cells`: per owner, geohash length
/// 2…6, cell and UTC hour, the fixes and the sums of their latitudes and longitudes, kept by triggers as fixes are
/// stored and deleted), and the geohash prefixes and ranges a view is read through — of those counts and of the
/// fixes' own `(user_id, geohash6)` index — so that a map view's time grows with its cells and hours, not with the
/// history.
public enum HistoryCells {
  /// The length of a counted hour in milliseconds: a fix counts in hour `timestamp / hour` (UTC).
  public static let hour: Int64 = 3_600_000
  /// The geohash lengths counted.
  public static let precisions = 2...6
  /// The most prefixes a view is read through (each one index range).
  public static let maxPrefixes = 16

  /// Geohash prefixes of at most `maxLength` characters whose cells together hold every point of `box` (which may
  /// cross the antimeridian): at most ``maxPrefixes``, or `[""]` (every cell) for a view too wide for any.
  public static func prefixes(covering box: BoundingBox, maxLength: Int = 6) -> [String] {
    guard
      let covering = try? GeohashCovering(
        box: box, maxCells: maxPrefixes, maxBits: 5 * min(max(maxLength, 1), 6))
    else { return [""] }
    // Whole characters only: each cell is widened to its enclosing cell of a multiple of 5 bits.
    let bits = covering.bits / 5 * 5
    guard bits >= 5 else { return [""] }
    var prefixes: [String] = []
    for cell in covering.cells {
      guard let prefix = (try? cell.parent(bits: bits))?.string, prefixes.last != prefix else { continue }
      prefixes.append(prefix)
    }
    return prefixes
  }

  /// The most geohash ranges a view's fixes are read through (``ranges(covering:)``).
  public static let maxRanges = 32

  /// Half-open text ranges of geohashes (each from a cell to past another of the same length) that together hold
  /// every geohash of a point of `box` (which may cross the antimeridian): the cells of the longest length (at most 6
  /// characters) whose runs of consecutive cells number at most ``maxRanges``, or everything for a view too wide.
  /// Finer than ``prefixes(covering:maxLength:)``, whose whole-character widening of 16 cells reads up to 32 times
  /// the view's area (a 25 × 17 km screen through four 4-letter cells of 39 × 20 km): what an index of fixes is read
  /// through, where every row outside the view is a row fetched for nothing.
  public static func ranges(covering box: BoundingBox) -> [(lower: String, upper: String)] {
    for length in stride(from: 6, through: 1, by: -1) {
      // Cells of exactly `length` characters (a covering that would need more than 1,024 comes out coarser).
      guard let covering = try? GeohashCovering(box: box, maxCells: 1_024, maxBits: 5 * length),
        covering.bits == 5 * length
      else { continue }
      let runs = covering.ranges(keyBits: covering.bits)
      guard runs.count <= maxRanges else { continue }
      let ranges = runs.compactMap { run -> (lower: String, upper: String)? in
        guard let first = (try? GeohashCell(value: run.lowerBound, bits: covering.bits))?.string,
          let last = (try? GeohashCell(value: run.upperBound, bits: covering.bits))?.string
        else { return nil }
        return (first, last + "~")
      }
      if ranges.count == runs.count { return ranges }
    }
    return [range("")]
  }

  /// The half-open text range of the geohashes starting with `prefix` (every geohash character sorts before `~`).
  public static func range(_ prefix: String) -> (lower: String, upper: String) { (prefix, prefix + "~") }

  /// Whether the cell `geohash` meets `box` (shares a point with it).
  public static func cell(_ geohash: String, meets box: BoundingBox) -> Bool {
    guard let cell = try? Geohash.decode(geohash).box else { return false }
    guard cell.south <= box.north, cell.north >= box.south else { return false }
    return box.antimeridianSplit.contains { part in cell.west <= part.east && cell.east >= part.west }
  }
}
