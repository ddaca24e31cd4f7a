import DomainKit
import Foundation
import GeoKit

/// A simulated trip: a walk or a drive along a polyline at a constant speed, one fix every `interval` seconds,
/// positioned with GeoKit's WGS84 geodesics (inverse for the legs, direct for the points along them).
public struct SimulatedRoute: Sendable, Hashable {
  /// A walk or a drive, which sets the default speed.
  public enum Mode: String, Sendable, Hashable, CaseIterable {
    /// 5 km/h.
    case walk
    /// 50 km/h.
    case drive

    /// The speed used when none is given, km/h.
    public var defaultSpeedKmh: Double {
      switch self {
      case .walk: 5
      case .drive: 50
      }
    }
  }

  /// A loop through central Kyiv (Khreshchatyk, Maidan, St Michael's, St Sophia, the Golden Gate), 3.6 km.
  public static let defaultWaypoints: [Coordinate] = [
    Coordinate(uncheckedLatitude: 50.441_900, longitude: 30.521_600),
    Coordinate(uncheckedLatitude: 50.450_100, longitude: 30.523_400),
    Coordinate(uncheckedLatitude: 50.455_600, longitude: 30.522_700),
    Coordinate(uncheckedLatitude: 50.452_900, longitude: 30.514_300),
    Coordinate(uncheckedLatitude: 50.448_900, longitude: 30.513_300),
    Coordinate(uncheckedLatitude: 50.441_900, longitude: 30.521_600),
  ]

  /// The polyline, at least two points.
  public let waypoints: [Coordinate]
  /// Speed, m/s (> 0).
  public let speed: Double
  /// Seconds between fixes (> 0).
  public let interval: Double
  /// The horizontal accuracy given to every fix, metres.
  public let horizontalAccuracy: Double

  /// A route.
  /// - Throws: ``TrackerError/badArgument(_:)`` for fewer than two waypoints, a route of length zero, or a speed or
  ///   interval that is not a positive number.
  public init(
    waypoints: [Coordinate] = Self.defaultWaypoints, speed: Double, interval: Double = 1,
    horizontalAccuracy: Double = 5
  ) throws {
    guard waypoints.count >= 2 else { throw TrackerError.badArgument("a route needs at least two points") }
    guard speed > 0, speed.isFinite else { throw TrackerError.badArgument("the speed must be a positive number") }
    guard interval > 0, interval.isFinite else {
      throw TrackerError.badArgument("the interval must be a positive number of seconds")
    }
    self.waypoints = waypoints
    self.speed = speed
    self.interval = interval
    self.horizontalAccuracy = horizontalAccuracy
    guard length > 0 else { throw TrackerError.badArgument("the route's points are all the same place") }
  }

  /// Parses `lat,lon;lat,lon;…` (decimal degrees).
  /// - Throws: ``TrackerError/badArgument(_:)`` naming the point that is wrong.
  public static func waypoints(parsing text: String) throws -> [Coordinate] {
    try text.split(separator: ";").enumerated().map { index, pair in
      let parts = pair.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
      guard parts.count == 2, let latitude = Double(parts[0]), let longitude = Double(parts[1]) else {
        throw TrackerError.badArgument("route point \(index + 1) '\(pair)' is not 'latitude,longitude'")
      }
      do {
        return try Coordinate(latitude: latitude, longitude: longitude)
      } catch {
        throw TrackerError.badArgument("route point \(index + 1): \(error)")
      }
    }
  }

  /// The route's length along the geodesics, metres.
  public var length: Double {
    zip(waypoints, waypoints.dropFirst()).reduce(0) { $0 + Geodesic.wgs84.distance(from: $1.0, to: $1.1) }
  }

  /// How long the trip takes, seconds.
  public var duration: Double { length / speed }

  /// The fixes of the trip starting at `start` (UTC ms): one every `interval` seconds at `speed × interval` metres
  /// further along the route, and a last one at the route's end. Each carries the speed and the course.
  public func fixes(start: Int64) -> [LocationFix] {
    let legs = zip(waypoints, waypoints.dropFirst()).map { from, to in
      (from: from, inverse: Geodesic.wgs84.inverse(from: from, to: to))
    }.filter { $0.inverse.distance > 0 }
    let total = legs.reduce(0) { $0 + $1.inverse.distance }
    var fixes: [LocationFix] = []
    var leg = 0
    var legStart = 0.0  // distance along the route where `leg` starts
    var step = 0
    while true {
      let elapsed = Double(step) * interval
      let along = min(elapsed * speed, total)
      while leg < legs.count - 1, along >= legStart + legs[leg].inverse.distance {
        legStart += legs[leg].inverse.distance
        leg += 1
      }
      let point = Geodesic.wgs84.direct(
        from: legs[leg].from, azimuth: legs[leg].inverse.initialAzimuth, distance: along - legStart)
      let seconds = along >= total ? total / speed : elapsed
      var course = point.finalAzimuth.truncatingRemainder(dividingBy: 360)
      if course < 0 { course += 360 }
      if let fix = try? LocationFix(
        timestamp: start + Int64((seconds * 1000).rounded()), latitude: point.latitude,
        longitude: Coordinate.normalizedLongitude(point.longitude), horizontalAccuracy: horizontalAccuracy,
        speed: speed, course: course, kind: .movement)
      {
        fixes.append(fix)
      }
      if along >= total { return fixes }
      step += 1
    }
  }
}
