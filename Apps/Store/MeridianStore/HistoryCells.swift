import DomainKit
import Foundation
import GeoKit
import MeridianAPI

/// The cell counts both engines keep of every account's fixes per UTC hour (`history_cells`) and per UTC day
/// (`history_cell_days`): per owner, geohash length 2…6, cell and period, the fixes and the sums of their latitudes
/// and longitudes, kept by triggers as fixes are stored and deleted; and the geohash ranges a view is read through —
/// of those counts and of the fixes' own `(user_id, geohash6)` index — so that a map view's time grows with its cells
/// and the days of its period, not with the history.
public enum HistoryCells {
  /// The length of a counted hour in milliseconds: a fix counts in hour `timestamp / hour` (UTC).
  public static let hour: Int64 = 3_600_000
  /// The length of a counted day in milliseconds: a fix counts in day `timestamp / day` (UTC), 24 hours.
  public static let day: Int64 = 86_400_000
  /// Where a period without an end is read to: the end of the last whole day before `Int64.max`, 292 million years
  /// from 1970 (the server refuses fixes dated more than minutes ahead), so that such a period is whole days, with
  /// no hours left at its end to read.
  public static let openEnd: Int64 = Int64.max / day * day

  /// A period the fixes are counted per: each has its own table of counts.
  public enum Span: Sendable, Hashable, CaseIterable {
    /// UTC hours (`history_cells`): what a period's ends are counted in.
    case hour
    /// UTC days (`history_cell_days`): what the whole days of a long period are counted in, 24 times fewer rows.
    case day

    /// Its length in milliseconds.
    public var milliseconds: Int64 { self == .hour ? HistoryCells.hour : HistoryCells.day }
    /// Its table of counts (on both engines).
    public var table: String { self == .hour ? "history_cells" : "history_cell_days" }
    /// Its table's column of the period (`timestamp / milliseconds`).
    public var column: String { self == .hour ? "hour" : "day" }
  }

  /// The whole periods of `length` from `start` to `end` (numbered from 0 at 1970, as `value / length`): from the
  /// first that starts at or after `start` to the last that ends at or before `end`; empty when none does. (No fix is
  /// dated before 1970: what is before counts from 0.)
  public static func wholePeriods(from start: Int64, to end: Int64, length: Int64) -> Range<Int64> {
    let (start, end) = (max(0, start), max(0, end))
    let first = start / length + (start % length > 0 ? 1 : 0)
    return first..<max(first, end / length)
  }

  /// The whole UTC hours of `range` (``wholePeriods(from:to:length:)``): an open start from 1970, an open end
  /// through ``openEnd``.
  public static func wholeHours(of range: TimeRange) -> Range<Int64> {
    wholePeriods(from: range.start ?? 0, to: range.end ?? openEnd, length: hour)
  }

  /// The whole UTC hours `hours` as the fewest counted periods: the whole days within them, and the hours before the
  /// first and after the last (each part non-empty; all hours when no whole day is within them).
  public static func periods(hours: Range<Int64>) -> [(span: Span, periods: Range<Int64>)] {
    guard !hours.isEmpty else { return [] }
    let perDay = day / hour
    let days = wholePeriods(from: hours.lowerBound, to: hours.upperBound, length: perDay)
    guard hours.lowerBound >= 0, !days.isEmpty else { return [(.hour, hours)] }
    let (firstDay, endDay) = (days.lowerBound, days.upperBound)
    let parts: [(span: Span, periods: Range<Int64>)] = [
      (.hour, hours.lowerBound..<firstDay * perDay), (.day, firstDay..<endDay),
      (.hour, endDay * perDay..<hours.upperBound),
    ]
    return parts.filter { !$0.periods.isEmpty }
  }
  /// The geohash lengths counted.
  public static let precisions = 2...6
  /// The most geohash ranges a view is read through (``ranges(covering:maxLength:)``).
  public static let maxRanges = 32

  /// Half-open text ranges of geohashes (each from a cell to past another of the same length) that together hold every
  /// geohash of a point of `box` (which may cross the antimeridian): the cells of the longest length (at most
  /// `maxLength`, at most 6 characters, at most 1,024 cells) whose runs of consecutive cells number at most
  /// ``maxRanges``, or everything for a view too wide. What the fixes' `(user_id, geohash6)` index and the counts of
  /// one length (per hour and per day) are read through: a 25 × 17 km screen in Kyiv reads about 36 5-letter cells of
  /// 3.1 × 4.9 km there, not the four 4-letter cells of 25 × 20 km that 16 whole-letter prefixes were, every row
  /// outside the view a row fetched for nothing.
  public static func ranges(covering box: BoundingBox, maxLength: Int = 6) -> [(lower: String, upper: String)] {
    let longest = min(max(maxLength, 1), 6)
    // One covering, the finest of at most 1,024 cells; each shorter length's cells are its cells' parents.
    guard let covering = try? GeohashCovering(box: box, maxCells: 1_024, maxBits: 5 * longest) else {
      return [range("")]
    }
    for length in stride(from: covering.bits / 5, through: 1, by: -1) {
      let shift = UInt64(covering.bits - 5 * length)
      var runs: [ClosedRange<UInt64>] = []
      for cell in covering.cells {
        let value = cell.value >> shift
        if let last = runs.last, value <= last.upperBound + 1 {
          runs[runs.count - 1] = last.lowerBound...max(last.upperBound, value)
        } else {
          runs.append(value...value)
        }
      }
      guard runs.count <= maxRanges else { continue }
      return runs.map { run in
        // Cells of 5…30 bits, a multiple of 5: each has its text.
        let first = (try? GeohashCell(value: run.lowerBound, bits: 5 * length))?.string ?? ""
        let last = (try? GeohashCell(value: run.upperBound, bits: 5 * length))?.string ?? "~"
        return (first, last + "~")
      }
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
