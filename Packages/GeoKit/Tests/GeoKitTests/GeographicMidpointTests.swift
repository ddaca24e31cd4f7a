import Foundation
import Testing

@testable import GeoKit

/// The weighted geographic midpoint: exact cases by hand, and two points' midpoint against the great-circle midpoint
/// formula of Movable Type Scripts ("Calculate distance, bearing and more between Latitude/Longitude points"), a
/// different computation of the same point.
@Suite struct GeographicMidpointTests {
  static func point(_ latitude: Double, _ longitude: Double) -> Coordinate {
    Coordinate(uncheckedLatitude: latitude, longitude: longitude)
  }

  static func expect(
    _ found: Coordinate?, _ latitude: Double, _ longitude: Double, sourceLocation: SourceLocation = #_sourceLocation
  ) {
    guard let found else {
      Issue.record("no midpoint", sourceLocation: sourceLocation)
      return
    }
    #expect(abs(found.latitude - latitude) < 1e-9, "\(found)", sourceLocation: sourceLocation)
    #expect(abs(found.longitude - longitude) < 1e-9, "\(found)", sourceLocation: sourceLocation)
  }

  @Test func exactCases() {
    Self.expect(Coordinate.midpoint(of: [(Self.point(0, 0), 1), (Self.point(0, 90), 1)]), 0, 45)
    Self.expect(Coordinate.midpoint(of: [(Self.point(10, 0), 1), (Self.point(-10, 0), 1)]), 0, 0)
    // Three times the weight on the prime meridian: atan(1/3) east.
    Self.expect(Coordinate.midpoint(of: [(Self.point(0, 0), 3), (Self.point(0, 90), 1)]), 0, atan(1.0 / 3) * 180 / .pi)
    // Across the antimeridian, not through Greenwich; stored as -180.
    Self.expect(Coordinate.midpoint(of: [(Self.point(0, 179), 1), (Self.point(0, -179), 1)]), 0, -180)
    // Over the pole.
    Self.expect(Coordinate.midpoint(of: [(Self.point(89, 0), 1), (Self.point(89, 180), 1)]), 90, 0)
    Self.expect(Coordinate.midpoint(of: [(Self.point(48.85, 2.35), 5)]), 48.85, 2.35)
  }

  @Test func noMidpointForNothingOrAntipodes() {
    #expect(Coordinate.midpoint(of: []) == nil)
    #expect(Coordinate.midpoint(of: [(Self.point(0, 0), 0), (Self.point(1, 1), -2)]) == nil)
    #expect(Coordinate.midpoint(of: [(Self.point(0, 0), 1), (Self.point(0, 180), 1)]) == nil)
  }

  @Test func twoPointsAgreeWithTheGreatCircleMidpointFormula() {
    // Tomsk and Seversk; Anadyr and Provideniya (Chukotka, across the antimeridian).
    Self.expect(
      Coordinate.midpoint(of: [(Self.point(56.4977, 84.9744), 1), (Self.point(56.6031, 84.8809), 1)]),
      56.55040877163908, 84.9277150904471)
    Self.expect(
      Coordinate.midpoint(of: [(Self.point(64.7, 177.5), 1), (Self.point(66.3, -171.0), 1)]),
      65.60877635984015, -176.92677441858086)
  }
}
