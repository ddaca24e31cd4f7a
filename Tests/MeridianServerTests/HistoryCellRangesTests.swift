import DomainKit
import DomainKitTesting
import Foundation
import GeoKit
import MeridianStore
import Testing

/// The geohash ranges a map view's fixes and per-hour counts are read through
/// (`HistoryCells.ranges(covering:maxLength:)`): every point of the view in one of them, and little besides.
@Suite struct HistoryCellRangesTests {
  static func holds(_ ranges: [(lower: String, upper: String)], _ point: Coordinate) throws -> Bool {
    let geohash = try Geohash.encode(point, precision: 6)
    return ranges.contains { $0.lower <= geohash && geohash < $0.upper }
  }

  static func randomPoint(in box: BoundingBox, _ random: inout SplitMix64) -> Coordinate {
    let width = box.west <= box.east ? box.east - box.west : box.east + 360 - box.west
    var longitude = box.west + Double.random(in: 0...1, using: &random) * width
    if longitude > 180 { longitude -= 360 }
    return Coordinate(
      uncheckedLatitude: Double.random(in: box.south...box.north, using: &random), longitude: longitude)
  }

  @Test func everyPointOfAViewIsInOneOfItsRanges() throws {
    var random = SplitMix64(seed: 7)
    for _ in 0..<300 {
      // Views from a street to a continent, some across the antimeridian or at a pole.
      let height = Double.random(in: -3...1.5, using: &random)
      let (latitudeSpan, longitudeSpan) = (pow(10, height), pow(10, height) * 1.5)
      let south = Double.random(in: -90...(90 - latitudeSpan), using: &random)
      let west = Double.random(in: -180...180, using: &random)
      let east = west + longitudeSpan > 180 ? west + longitudeSpan - 360 : west + longitudeSpan
      let box = BoundingBox(south: south, west: west, north: south + latitudeSpan, east: east)
      let maxLength = Int.random(in: 1...6, using: &random)
      let ranges = HistoryCells.ranges(covering: box, maxLength: maxLength)
      #expect(ranges.count <= HistoryCells.maxRanges)
      #expect(ranges.allSatisfy { $0.lower < $0.upper && $0.lower.count <= maxLength })
      for corner in [
        Coordinate(uncheckedLatitude: box.south, longitude: box.west),
        Coordinate(uncheckedLatitude: box.north, longitude: east),
      ] {
        #expect(try Self.holds(ranges, corner), "\(box): a corner")
      }
      for _ in 0..<50 {
        let point = Self.randomPoint(in: box, &random)
        #expect(try Self.holds(ranges, point), "\(box): \(point)")
      }
    }
  }

  /// A 1024 × 768 screen at zoom 12 in Kyiv (about 25 × 17 km), as the map benchmark's: read through 5-letter cells
  /// of less than twice its area, where the 16 whole-letter prefixes used before were four 4-letter cells (39 × 20 km
  /// each) of seven times its area.
  @Test func aZoom12ViewIsReadThroughCellsOfAboutItsArea() throws {
    let box = BoundingBox(south: 50.38, west: 30.35, north: 50.53, east: 30.70)
    let ranges = HistoryCells.ranges(covering: box)
    #expect(ranges.allSatisfy { $0.lower.count == 5 })
    var area = 0.0  // in square degrees, as the view's
    for range in ranges {
      let (first, last) = (try GeohashCell(range.lower), try GeohashCell(range.upper.dropLast()))
      let cell = try Geohash.decode(range.lower).box
      area += Double(last.value - first.value + 1) * (cell.north - cell.south) * (cell.east - cell.west)
    }
    let view = (box.north - box.south) * (box.east - box.west)
    #expect(area / view > 1 && area / view < 2, "\(area / view)")
  }

  /// The per-hour counts of a length are read through cells of at most that length.
  @Test func theRangesOfAClusterLengthAreNoFiner() throws {
    let box = BoundingBox(south: 50.38, west: 30.35, north: 50.53, east: 30.70)
    for length in 1...6 {
      let ranges = HistoryCells.ranges(covering: box, maxLength: length)
      #expect(ranges.allSatisfy { $0.lower.count == min(length, 5) }, "\(length): \(ranges)")
      #expect(try Self.holds(ranges, Coordinate(latitude: 50.45, longitude: 30.52)))
    }
  }

  @Test func theWholeWorldIsOneRangeOfEveryGeohash() throws {
    let ranges = HistoryCells.ranges(covering: BoundingBox(south: -90, west: -180, north: 90, east: 180))
    let only = try #require(ranges.count == 1 ? ranges.first : nil)
    #expect(only.lower <= "000000" && only.upper > "zzzzzz")
  }

  /// Whole hours split into whole days and the hours left at either end (what the map reads from the counts per day
  /// and per hour): the parts hold every hour once and nothing else, and a whole day is never read as hours.
  @Test func hoursAreReadAsTheirWholeDaysAndTheHoursLeftAtTheEnds() {
    func parts(_ hours: Range<Int64>) -> [String] {
      HistoryCells.periods(hours: hours).map { "\($0.span) \($0.periods)" }
    }
    #expect(parts(23..<77) == ["hour 23..<24", "day 1..<3", "hour 72..<77"])
    #expect(parts(24..<72) == ["day 1..<3"])
    #expect(parts(20..<30) == ["hour 20..<30"])
    #expect(parts(24..<48) == ["day 1..<2"])
    #expect(parts(5..<5).isEmpty)
    // The whole periods of a time range: none before 1970, none when the range holds no whole one.
    #expect(HistoryCells.wholePeriods(from: 1, to: 49, length: 24) == 1..<2)
    #expect(HistoryCells.wholePeriods(from: 24, to: 48, length: 24) == 1..<2)
    #expect(HistoryCells.wholePeriods(from: 25, to: 47, length: 24).isEmpty)
    #expect(HistoryCells.wholePeriods(from: -5, to: 30, length: 24) == 0..<1)
    #expect(HistoryCells.wholePeriods(from: 50, to: 10, length: 24).isEmpty)
    // "All time", as the map asks it: whole days only (one statement, no hours read at the open end).
    #expect(
      parts(HistoryCells.wholeHours(of: TimeRange(start: nil, end: nil))) == ["day 0..<\(Int64.max / HistoryCells.day)"]
    )
    #expect(HistoryCells.wholeHours(of: TimeRange(start: 1, end: 7_200_000)) == 1..<2)
    for lower in Int64(0)..<50 {
      for upper in lower..<(lower + 100) {
        var hours: [Int64] = []
        for part in HistoryCells.periods(hours: lower..<upper) {
          let perPeriod = part.span.milliseconds / HistoryCells.hour
          hours += part.periods.flatMap { period in (period * perPeriod)..<((period + 1) * perPeriod) }
        }
        #expect(hours == Array(lower..<upper), "\(lower)..<\(upper)")
        let whole = (lower..<upper).filter { $0 % 24 == 0 && $0 + 24 <= upper }.count
        let days = HistoryCells.periods(hours: lower..<upper).filter { $0.span == .day }.map(\.periods.count)
        #expect(days.reduce(0, +) == whole, "\(lower)..<\(upper)")
      }
    }
  }
}
