import Foundation
import Testing

@testable import GeoKit

@Suite struct GeodesicTests {
  @Test func inverseMatchesGeographicLib() throws {
    let rows = try Fixture.numbers("geodesic-inverse.txt")
    #expect(rows.count > 3000)
    var worstDistance = 0.0
    var worstAzimuth = 0.0
    for row in rows {
      let result = Geodesic.wgs84.inverse(latitude1: row[0], longitude1: row[1], latitude2: row[2], longitude2: row[3])
      worstDistance = max(worstDistance, abs(result.distance - row[6]))
      // Azimuths are undefined for coincident points and ill-conditioned at the poles.
      guard row[6] > 1e-3, abs(row[0]) < 90, abs(row[2]) < 90 else { continue }
      let azimuthError = max(
        angleDifference(result.initialAzimuth, row[4]), angleDifference(result.finalAzimuth, row[5]))
      if azimuthError > 1e-6 { Issue.record("azimuths \(row): \(result)") }
      worstAzimuth = max(worstAzimuth, azimuthError)
    }
    #expect(worstDistance < 1e-6, "worst distance error \(worstDistance) m")
    #expect(worstAzimuth < 1e-9, "worst azimuth error \(worstAzimuth)°")
  }

  @Test func directMatchesGeographicLib() throws {
    let rows = try Fixture.numbers("geodesic-direct.txt")
    #expect(rows.count > 1500)
    for row in rows {
      let result = Geodesic.wgs84.direct(latitude: row[0], longitude: row[1], azimuth: row[2], distance: row[3])
      let error = max(
        abs(result.latitude - row[4]), angleDifference(result.longitude, row[5]) * cos(row[4] * .pi / 180))
      if error > 1e-11 { Issue.record("position \(row): \(result)") }
      if abs(row[4]) < 89.99, angleDifference(result.finalAzimuth, row[6]) > 1e-9 {
        Issue.record("azimuth \(row): \(result)")
      }
    }
  }

  @Test func antipodalPairsConverge() {
    for lat in stride(from: -90.0, through: 90, by: 0.5) {
      for dlon in [179.0, 179.5, 179.9, 179.99, 179.999999, 180] {
        let result = Geodesic.wgs84.inverse(latitude1: lat, longitude1: 0, latitude2: -lat, longitude2: dlon)
        #expect(result.distance.isFinite && result.distance > 19_900_000 && result.distance < 20_004_000)
      }
    }
  }

  /// Inverse then direct returns to the second point, for random and nearly antipodal pairs (convergence everywhere).
  @Test func inverseAndDirectAreConsistent() {
    var random = SeededRandom(seed: 21)
    for index in 0..<20_000 {
      let p1 = random.coordinate()
      let p2 =
        index % 2 == 0
        ? random.coordinate()
        : Coordinate(
          uncheckedLatitude: max(-90, min(90, -p1.latitude + Double.random(in: -1e-3...1e-3, using: &random))),
          longitude: Coordinate.normalizedLongitude(p1.longitude + 180 + Double.random(in: -1...1, using: &random)))
      let line = Geodesic.wgs84.inverse(from: p1, to: p2)
      #expect(line.distance.isFinite && line.distance <= 20_003_931.46)
      let end = Geodesic.wgs84.direct(from: p1, azimuth: line.initialAzimuth, distance: line.distance)
      let miss = Geodesic.wgs84.inverse(from: end.destination, to: p2).distance
      #expect(miss < 1e-6, "\(p1) → \(p2): \(line), lands \(miss) m away")
    }
  }
}
