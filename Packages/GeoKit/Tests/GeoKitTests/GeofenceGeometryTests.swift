import Foundation
import Testing

@testable import GeoKit

@Suite struct GeofenceGeometryTests {
  func c(_ latitude: Double, _ longitude: Double) -> Coordinate {
    Coordinate(uncheckedLatitude: latitude, longitude: Coordinate.normalizedLongitude(longitude))
  }

  @Test func validPolygonsPass() throws {
    try Polygon([c(0, 0), c(0, 1), c(1, 1), c(1, 0)]).validate()
    // Closed explicitly, across the antimeridian, with a hole.
    try Polygon([c(0, 0), c(0, 1), c(1, 1), c(1, 0), c(0, 0)]).validate()
    try Polygon([c(-1, 179), c(-1, -179), c(1, -179), c(1, 179)]).validate()
    try Polygon(
      [c(0, 0), c(0, 4), c(4, 4), c(4, 0)], holes: [[c(1, 1), c(1, 2), c(2, 2), c(2, 1)]]
    ).validate()
  }

  @Test func invalidPolygonsNameTheProblem() {
    #expect(throws: PolygonError.tooFewVertices(ring: 0, count: 2)) { try Polygon([c(0, 0), c(1, 1)]).validate() }
    #expect(throws: PolygonError.repeatedVertex(ring: 0, index: 2)) {
      try Polygon([c(0, 0), c(0, 1), c(0, 1), c(1, 1)]).validate()
    }
    // A bow tie: edges 0 and 2 cross.
    #expect(throws: PolygonError.selfIntersecting(ring: 0, edge: 0, otherRing: 0, otherEdge: 2)) {
      try Polygon([c(0, 0), c(1, 1), c(1, 0), c(0, 1)]).validate()
    }
    // Vertices on one line: the closing edge runs back over the others.
    #expect(throws: PolygonError.self) { try Polygon([c(0, 0), c(0, 1), c(0, 2)]).validate() }
    #expect(throws: PolygonError.enclosesPole(ring: 0)) {
      try Polygon([c(80, 0), c(80, 120), c(80, -120)]).validate()
    }
    let many = (0..<1_001).map { index -> Coordinate in
      let angle = Double(index) / 1_001 * 2 * Double.pi
      return c(cos(angle), sin(angle))
    }
    #expect(throws: PolygonError.tooManyVertices(count: 1_001, limit: 1_000)) { try Polygon(many).validate() }
    #expect(throws: PolygonError.holeOutside(ring: 1)) {
      try Polygon([c(0, 0), c(0, 1), c(1, 1), c(1, 0)], holes: [[c(2, 2), c(2, 3), c(3, 3)]]).validate()
    }
    // A spike folding back along its own edge.
    #expect(throws: PolygonError.self) { try Polygon([c(0, 0), c(0, 2), c(0, 1), c(1, 1)]).validate() }
  }

  @Test func signedDistanceOfCircleAndPolygon() throws {
    let centre = c(48.8566, 2.3522)
    let circle = Geofence.circle(center: centre, radius: 100)
    let east150 = try centre.destination(bearing: 90, distance: 150)
    #expect(abs(circle.signedDistance(to: east150) - 50) < 0.5)
    #expect(abs(circle.signedDistance(to: centre) + 100) < 1e-9)
    #expect(circle.equivalentRadius == 100)

    // A 0.01° square on the equator: 1,113 m on a side.
    let square = Geofence.polygon(Polygon([c(0, 0), c(0, 0.01), c(0.01, 0.01), c(0.01, 0)]))
    let side = 0.01 * CheapRuler(latitude: 0).metresPerDegreeLatitude
    #expect(abs(square.signedDistance(to: c(0.005, 0.005)) + side / 2) < 1)
    #expect(
      abs(square.signedDistance(to: c(0.005, 0.011)) - 0.001 * CheapRuler(latitude: 0.005).metresPerDegreeLongitude) < 1
    )
    #expect(abs(square.equivalentRadius - (side * side / Double.pi).squareRoot()) < 5)

    // Across the antimeridian the nearest edge is found the short way round.
    let across = Geofence.polygon(Polygon([c(-0.01, 179.99), c(-0.01, -179.99), c(0.01, -179.99), c(0.01, 179.99)]))
    #expect(across.signedDistance(to: c(0, 180)) < -1_000)
    #expect(across.signedDistance(to: c(0, -179.98)) > 1_000)
  }
}
