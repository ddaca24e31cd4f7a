import Foundation
import Testing

@testable import GeoKit

@Suite struct CoveringTests {
  /// Every sampled point within the radius (by haversine or by WGS84 geodesic) is inside the covering.
  @Test func circleCoveringHasNoFalseNegatives() throws {
    var random = SeededRandom(seed: 11)
    for round in 0..<300 {
      let center =
        round < 30
        ? random.coordinate(latitudes: 85...90)
        : round < 60
          ? Coordinate(uncheckedLatitude: 10, longitude: 179.999)
          : random.coordinate()
      let radius = [1.0, 50, 1_000, 25_000, 400_000][round % 5]
      let maxCells = [1, 4, 16, 64][round % 4]
      let covering = try GeohashCovering(center: center, radius: radius, maxCells: maxCells)
      #expect(covering.cells.count <= max(2, maxCells))
      let ranges = covering.ranges(keyBits: 62)
      for _ in 0..<200 {
        let bearing = Double.random(in: -180..<180, using: &random)
        // Bias towards the rim, where misses would happen.
        let distance = radius * (1 - pow(Double.random(in: 0..<1, using: &random), 4))
        let spherical = center.sphericalDestination(bearing: bearing, distance: distance)
        let ellipsoidal = try center.destination(bearing: bearing, distance: distance)
        for point in [spherical, ellipsoidal] {
          #expect(covering.contains(point), "\(center) r=\(radius) missed \(point)")
          let key = try GeohashCell(point, bits: 62).value
          #expect(ranges.contains { $0.contains(key) }, "\(center) r=\(radius) ranges miss \(point)")
        }
      }
    }
  }

  @Test func boxCoveringAcrossTheAntimeridian() throws {
    let box = BoundingBox(south: -10, west: 170, north: 10, east: -170)
    let covering = try GeohashCovering(box: box, maxCells: 32)
    #expect(covering.cells.count <= 32)
    var random = SeededRandom(seed: 12)
    for _ in 0..<2000 {
      let point = Coordinate(
        uncheckedLatitude: Double.random(in: -10...10, using: &random),
        longitude: Coordinate.normalizedLongitude(Double.random(in: 170...190, using: &random)))
      #expect(covering.contains(point))
    }
  }

  /// A box whose west edge is +180 starts on the meridian where a geohash puts longitude 180 (its easternmost
  /// column), not on −180's: a point at longitude 180 is covered, as is the rest of the box.
  @Test func aWestEdgeAt180CoversLongitude180() throws {
    for east in [-170.0, 180] {
      let box = BoundingBox(south: -10, west: 180, north: 10, east: east)
      for maxCells in [1, 4, 64] {
        let covering = try GeohashCovering(box: box, maxCells: maxCells, maxBits: 30)
        #expect(covering.contains(Coordinate(uncheckedLatitude: 5, longitude: 180)), "east \(east), \(maxCells) cells")
        if east < 180 { #expect(covering.contains(Coordinate(uncheckedLatitude: 5, longitude: -175))) }
      }
    }
  }

  @Test func randomBoxCoveringsContainTheirCornersAndInsides() throws {
    var random = SeededRandom(seed: 13)
    for _ in 0..<500 {
      let south = Double.random(in: -90...89, using: &random)
      let north = min(90, south + pow(10, Double.random(in: -5...1.5, using: &random)))
      let west = Double.random(in: -180..<180, using: &random)
      let east = Coordinate.normalizedLongitude(west + pow(10, Double.random(in: -5...2, using: &random)))
      let box = BoundingBox(south: south, west: west, north: north, east: east)
      let maxCells = Int.random(in: 2...64, using: &random)
      let covering = try GeohashCovering(box: box, maxCells: maxCells)
      #expect(covering.cells.count <= maxCells)
      var samples = [(south, west), (south, east), (north, west), (north, east)]
      for _ in 0..<50 {
        let t = Double.random(in: 0...1, using: &random)
        let longitude = box.crossesAntimeridian ? west + t * (east + 360 - west) : west + t * (east - west)
        samples.append((Double.random(in: south...north, using: &random), longitude))
      }
      for (latitude, longitude) in samples {
        let point = Coordinate(uncheckedLatitude: latitude, longitude: Coordinate.normalizedLongitude(longitude))
        #expect(covering.contains(point), "\(box) missed \(point)")
      }
    }
  }

  @Test func rangesAreSortedAndMerged() throws {
    let center = try Coordinate(latitude: 48.8566, longitude: 2.3522)
    let covering = try GeohashCovering(center: center, radius: 1_000, maxCells: 16)
    let ranges = covering.ranges(keyBits: 52)
    #expect(!ranges.isEmpty && ranges.count <= covering.cells.count)
    for (a, b) in zip(ranges, ranges.dropFirst()) { #expect(a.upperBound + 1 < b.lowerBound) }
  }

  @Test func rejectsBadInput() throws {
    let center = try Coordinate(latitude: 0, longitude: 0)
    #expect(throws: CoveringError.invalidRadius(-1)) { try GeohashCovering(center: center, radius: -1) }
    #expect(throws: CoveringError.invalidCellLimit(0)) { try GeohashCovering(center: center, radius: 1, maxCells: 0) }
    #expect(throws: CoveringError.self) { try GeohashCovering(box: BoundingBox(south: 5, west: 0, north: 1, east: 1)) }
  }
}

extension Coordinate {
  /// The destination on the mean-radius sphere (for sampling points within a haversine radius).
  func sphericalDestination(bearing: Double, distance: Double) -> Coordinate {
    let delta = distance / meanEarthRadius
    let theta = bearing * .pi / 180
    let phi1 = latitude * .pi / 180
    let lambda1 = longitude * .pi / 180
    let phi2 = asin(sin(phi1) * cos(delta) + cos(phi1) * sin(delta) * cos(theta))
    let lambda2 = lambda1 + atan2(sin(theta) * sin(delta) * cos(phi1), cos(delta) - sin(phi1) * sin(phi2))
    return Coordinate(
      uncheckedLatitude: min(90, max(-90, phi2 * 180 / .pi)),
      longitude: Coordinate.normalizedLongitude(lambda2 * 180 / .pi))
  }
}
