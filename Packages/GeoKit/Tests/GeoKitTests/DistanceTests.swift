import Foundation
import Testing

@testable import GeoKit

@Suite struct DistanceTests {
  @Test func haversineMatchesReference() throws {
    for row in try Fixture.numbers("haversine.txt") {
      let a = try Coordinate(latitude: row[0], longitude: row[1])
      let b = try Coordinate(latitude: row[2], longitude: row[3])
      #expect(abs(a.haversineDistance(to: b) - row[4]) < 1e-6, "\(row)")
    }
    // Published value: one degree of arc on the mean-radius sphere.
    let origin = try Coordinate(latitude: 0, longitude: 0)
    #expect(try abs(origin.haversineDistance(to: Coordinate(latitude: 0, longitude: 1)) - 111_195.080_233_532_9) < 1e-6)
  }

  @Test func preparedPointsGiveTheReferenceHaversineDistances() throws {
    for row in try Fixture.numbers("haversine.txt") {
      let a = HaversinePoint(try Coordinate(latitude: row[0], longitude: row[1]))
      let b = HaversinePoint(try Coordinate(latitude: row[2], longitude: row[3]))
      #expect(abs(a.distance(to: b) - row[4]) < 1e-6, "\(row)")
      #expect(abs(b.distance(to: a) - row[4]) < 1e-6, "\(row)")
    }
    // Near points, where the angle difference identity cancels most: centimetres apart, across the antimeridian.
    let east = try Coordinate(latitude: -16.5, longitude: 179.999_999_9)
    let west = try Coordinate(latitude: -16.5, longitude: -179.999_999_9)
    #expect(abs(HaversinePoint(east).distance(to: HaversinePoint(west)) - east.haversineDistance(to: west)) < 1e-6)
    // Either side of where the arcsine's series gives way to the library's (x = 0.01, about 127 km), and far below:
    // points on one meridian, whose haversine x is sin(Δφ / 2) exactly as chosen.
    let origin = try Coordinate(latitude: 48.2, longitude: 16.37)
    for x in [1e-9, 1e-7, 1e-4, 0.005, 0.01 - 1e-6, 0.01 + 1e-6, 0.02, 0.3] {
      let point = try Coordinate(latitude: origin.latitude + 2 * asin(x) * 180 / .pi, longitude: origin.longitude)
      let reference = origin.haversineDistance(to: point)
      #expect(abs(HaversinePoint(origin).distance(to: HaversinePoint(point)) - reference) <= 1e-12 * reference + 5e-9)
    }
    // The series itself (a wrong coefficient fails here: the distances above hide the x⁷ term).
    for x in stride(from: 0.0, through: 0.0099, by: 0.00033) {
      #expect(abs(HaversinePoint.arcsine(x) - asin(x)) <= 2 * asin(x).ulp, "\(x)")
    }
    // A prepared fence: a circle's signed distance up to rounding, a polygon's exactly.
    let center = try Coordinate(latitude: 50.45, longitude: 30.52)
    let circle = Geofence.circle(center: center, radius: 250)
    let polygon = Geofence.polygon(
      Polygon([
        center, try center.destination(bearing: 90, distance: 500), try center.destination(bearing: 45, distance: 500),
      ]))
    for distance in stride(from: 0.0, through: 1_000, by: 50) {
      let point = try center.destination(bearing: distance, distance: distance)
      let prepared = HaversinePoint(point)
      #expect(abs(PreparedGeofence(circle).signedDistance(to: prepared) - circle.signedDistance(to: point)) < 1e-7)
      #expect(PreparedGeofence(polygon).signedDistance(to: prepared) == polygon.signedDistance(to: point))
    }
  }

  @Test func bearingsAndDestinationMatchGeographicLib() throws {
    for row in try Fixture.numbers("geodesic-inverse.txt").prefix(1500) {
      let a = try Coordinate(latitude: row[0], longitude: row[1])
      let b = try Coordinate(latitude: row[2], longitude: row[3])
      #expect(angleDifference(a.initialBearing(to: b), row[4]) < 1e-9)
      #expect(angleDifference(a.finalBearing(to: b), row[5]) < 1e-9)
      #expect(abs(a.geodesicDistance(to: b) - row[6]) < 1e-6)
    }
    for row in try Fixture.numbers("geodesic-direct.txt").prefix(500) {
      let end = try Coordinate(latitude: row[0], longitude: row[1]).destination(bearing: row[2], distance: row[3])
      #expect(abs(end.latitude - row[4]) < 1e-11 && angleDifference(end.longitude, row[5]) < 1e-9)
    }
  }

  @Test func destinationRejectsNonFiniteInput() throws {
    let origin = try Coordinate(latitude: 10, longitude: 20)
    #expect(throws: CoordinateError.notFinite(name: "bearing", value: .infinity)) {
      try origin.destination(bearing: .infinity, distance: 1)
    }
    #expect(throws: CoordinateError.self) { try origin.destination(bearing: 0, distance: .nan) }
  }

  @Test func cheapRulerErrorIsAsDocumented() throws {
    var random = SeededRandom(seed: 3)
    // (latitude limit, distance limit, documented relative error), ruler built at the area's mean latitude.
    let bands: [(Double, Double, Double)] = [(60, 10_000, 1e-5), (60, 100_000, 1e-4), (80, 10_000, 1e-5)]
    for (latitudeLimit, distanceLimit, tolerance) in bands {
      var worst = 0.0
      for _ in 0..<2000 {
        let a = random.coordinate(latitudes: -latitudeLimit...latitudeLimit)
        let distance = Double.random(in: 1...distanceLimit, using: &random)
        let b = try a.destination(bearing: Double.random(in: -180..<180, using: &random), distance: distance)
        let ruler = CheapRuler(latitude: (a.latitude + b.latitude) / 2)
        worst = max(worst, abs(ruler.distance(a, b) - distance) / distance)
      }
      print("cheap ruler, |lat| <= \(latitudeLimit), d <= \(distanceLimit): worst relative error \(worst)")
      #expect(worst < tolerance)
    }
  }

  @Test func boundingBoxOfARadiusContainsTheCircle() throws {
    var random = SeededRandom(seed: 4)
    for _ in 0..<500 {
      let center = random.coordinate()
      let radius = Double.random(in: 1...2_000_000, using: &random)
      let box = BoundingBox(around: center, radius: radius)
      for _ in 0..<50 {
        let point = center.sphericalDestination(
          bearing: Double.random(in: -180..<180, using: &random), distance: radius * 0.999_999)
        #expect(box.contains(point), "\(center) \(radius) \(box) \(point)")
      }
    }
    let box = BoundingBox(around: try Coordinate(latitude: 0, longitude: 179.99), radius: 10_000)
    #expect(box.crossesAntimeridian && box.antimeridianSplit.count == 2)
  }

  @Test func crossTrackDistance() throws {
    let a = try Coordinate(latitude: 0, longitude: 0)
    let b = try Coordinate(latitude: 0, longitude: 1)
    let above = try Coordinate(latitude: 0.01, longitude: 0.5)
    // 0.01° of arc on the mean-radius sphere.
    #expect(abs(above.distance(toSegmentFrom: a, to: b) - 1_111.950_797) < 1e-3)
    let behind = try Coordinate(latitude: 0, longitude: -0.5)
    #expect(abs(behind.distance(toSegmentFrom: a, to: b) - behind.haversineDistance(to: a)) < 1e-6)
    let beyond = try Coordinate(latitude: 0.3, longitude: 1.5)
    #expect(abs(beyond.distance(toSegmentFrom: a, to: b) - beyond.haversineDistance(to: b)) < 1e-6)
  }

  @Test func polygonAndGeofences() throws {
    let square = Polygon(
      [(0.0, 0.0), (0, 10), (10, 10), (10, 0)].map { Coordinate(uncheckedLatitude: $0.0, longitude: $0.1) },
      holes: [[(4.0, 4.0), (4, 6), (6, 6), (6, 4)].map { Coordinate(uncheckedLatitude: $0.0, longitude: $0.1) }])
    #expect(square.contains(try Coordinate(latitude: 1, longitude: 1)))
    #expect(!square.contains(try Coordinate(latitude: 5, longitude: 5)))
    #expect(!square.contains(try Coordinate(latitude: 11, longitude: 5)))
    #expect(!square.contains(try Coordinate(latitude: 5, longitude: -170)))
    let acrossAntimeridian = Polygon(
      [(-5.0, 175.0), (-5, -175), (5, -175), (5, 175)].map { Coordinate(uncheckedLatitude: $0.0, longitude: $0.1) })
    #expect(acrossAntimeridian.contains(try Coordinate(latitude: 0, longitude: 179.5)))
    #expect(acrossAntimeridian.contains(try Coordinate(latitude: 0, longitude: -178)))
    #expect(!acrossAntimeridian.contains(try Coordinate(latitude: 0, longitude: 0)))
    let fence = Geofence.polygon(acrossAntimeridian)
    #expect(fence.boundingBox.crossesAntimeridian)

    let cafe = try Coordinate(latitude: 50.45, longitude: 30.52)
    let circle = Geofence.circle(center: cafe, radius: 100)
    #expect(try circle.contains(cafe.destination(bearing: 30, distance: 99)))
    #expect(try !circle.contains(cafe.destination(bearing: 30, distance: 101)))
  }
}
