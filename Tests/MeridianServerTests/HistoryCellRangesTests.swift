import DomainKitTesting
import Foundation
import GeoKit
import MeridianStore
import Testing

/// The geohash ranges a map view's fixes are read through (`HistoryCells.ranges(covering:)`): every point of the
/// view in one of them, and far less besides than the whole-letter prefixes they replaced.
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
      let ranges = HistoryCells.ranges(covering: box)
      #expect(ranges.count <= HistoryCells.maxRanges)
      #expect(ranges.allSatisfy { $0.lower < $0.upper })
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

  /// A 1024 × 768 screen at zoom 12 in Kyiv (about 25 × 17 km), as the map benchmark's: 5-letter cells, where the
  /// 16-cell prefixes were four 4-letter cells (39 × 20 km each).
  @Test func aZoom12ViewIsReadThroughFarLessThanItsWholeLetterPrefixes() throws {
    let box = BoundingBox(south: 50.38, west: 30.35, north: 50.53, east: 30.70)
    let ranges = HistoryCells.ranges(covering: box)
    #expect(ranges.allSatisfy { $0.lower.count == 5 })
    let prefixes = HistoryCells.prefixes(covering: box)
    #expect(prefixes.allSatisfy { $0.count == 4 })
    // Points spread over the prefixes' cells: the share the ranges hold is what they read of the prefixes' rows.
    var random = SplitMix64(seed: 12)
    var (inPrefixes, inRanges) = (0, 0)
    for prefix in prefixes {
      let cell = try Geohash.decode(prefix).box
      for _ in 0..<2_000 {
        let point = Self.randomPoint(in: cell, &random)
        inPrefixes += 1
        if try Self.holds(ranges, point) { inRanges += 1 }
      }
    }
    #expect(Double(inRanges) / Double(inPrefixes) < 0.5, "\(inRanges) of \(inPrefixes)")
  }

  @Test func theWholeWorldIsOneRangeOfEveryGeohash() throws {
    let ranges = HistoryCells.ranges(covering: BoundingBox(south: -90, west: -180, north: 90, east: 180))
    let only = try #require(ranges.count == 1 ? ranges.first : nil)
    #expect(only.lower <= "000000" && only.upper > "zzzzzz")
  }
}
