import Foundation
import Testing

@testable import GeoKit

@Suite struct NearestPointIndexTests {
  /// Deterministic points spread over the sphere (uniform in area), from a fixed linear congruential sequence.
  static func points(_ count: Int, seed: UInt64) -> [Coordinate] {
    var state = seed
    func next() -> Double {
      state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
      return Double(state >> 11) / Double(1 << 53)
    }
    return (0..<count).map { _ in
      Coordinate(uncheckedLatitude: asin(2 * next() - 1) * 180 / .pi, longitude: next() * 360 - 180)
    }
  }

  /// The tree finds what measuring every point with the haversine formula finds: the same points at the same
  /// distances, for 300 queries (k = 1 and 5) over 3,000 points.
  @Test func agreesWithABruteForceScan() {
    let index = NearestPointIndex(Self.points(3_000, seed: 1))
    #expect(index.count == 3_000)
    for query in Self.points(300, seed: 2) {
      for k in [1, 5] {
        let found = index.nearest(to: query, k: k)
        let scanned = index.scan(to: query, k: k)
        #expect(found.count == k)
        #expect(found.map(\.index) == scanned.map(\.index), "\(query)")
        for (a, b) in zip(found, scanned) { #expect(abs(a.distance - b.distance) < 1e-6) }
      }
    }
  }

  /// No seam at the antimeridian and none at the poles: the nearest point across ±180° or over a pole is found, at
  /// its great-circle distance.
  @Test func findsNeighboursAcrossTheAntimeridianAndThePoles() throws {
    let points = try [
      Coordinate(latitude: 10, longitude: 179.99),  // 0
      Coordinate(latitude: 10, longitude: 170),  // 1
      Coordinate(latitude: 89.9, longitude: 0),  // 2
      Coordinate(latitude: 80, longitude: 180),  // 3
      Coordinate(latitude: -89.99, longitude: 90),  // 4
    ]
    let index = NearestPointIndex(points)
    let east = try Coordinate(latitude: 10, longitude: -179.99)
    let nearest = try #require(index.nearest(to: east).first)
    #expect(nearest.index == 0)
    #expect(abs(nearest.distance - east.haversineDistance(to: points[0])) < 1e-6)
    // Over the north pole: 89.9° N at 180° is 0.2° of arc from point 2 (0°) and 9.9° from point 3.
    #expect(index.nearest(to: try Coordinate(latitude: 89.9, longitude: 180)).first?.index == 2)
    #expect(index.nearest(to: try Coordinate(latitude: -89.99, longitude: -90)).first?.index == 4)
  }

  /// Equal distances come in input order; nothing comes from an empty index or for k = 0.
  @Test func tiesEmptyIndexAndZeroK() throws {
    let point = try Coordinate(latitude: 50, longitude: 30)
    let index = NearestPointIndex([point, point, point])
    #expect(index.nearest(to: point, k: 3).map(\.index) == [0, 1, 2])
    #expect(index.nearest(to: point, k: 0).isEmpty)
    #expect(NearestPointIndex([]).nearest(to: point).isEmpty)
    #expect(index.nearest(to: point, k: 10).count == 3)
  }
}
