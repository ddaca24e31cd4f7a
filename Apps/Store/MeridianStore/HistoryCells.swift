import DomainKit
import Foundation
import GeoKit
import MeridianAPI

/// The per-hour cell counts both engines keep of every account's fixes (`history_cells`: per owner, geohash length
/// 2…6, cell and UTC hour, the fixes and the sums of their latitudes and longitudes, kept by triggers as fixes are
/// stored and deleted), and the geohash prefixes a view is read through — of those counts and of the fixes' own
/// `(user_id, geohash6)` index — so that a map view's time grows with its cells and hours, not with the history.
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

  /// The half-open text range of the geohashes starting with `prefix` (every geohash character sorts before `~`).
  public static func range(_ prefix: String) -> (lower: String, upper: String) { (prefix, prefix + "~") }

  /// Whether the cell `geohash` meets `box` (shares a point with it).
  public static func cell(_ geohash: String, meets box: BoundingBox) -> Bool {
    guard let cell = try? Geohash.decode(geohash).box else { return false }
    guard cell.south <= box.north, cell.north >= box.south else { return false }
    return box.antimeridianSplit.contains { part in cell.west <= part.east && cell.east >= part.west }
  }
}
