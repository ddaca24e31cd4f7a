import DomainKit
import Foundation
import GeoKit

/// SplitMix64: a tiny, fast, seeded random source so property tests and fixtures are reproducible.
public struct SplitMix64: RandomNumberGenerator, Sendable {
  private var state: UInt64

  /// A generator starting from `seed`.
  public init(seed: UInt64) { state = seed }

  /// The next 64 random bits.
  public mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}

/// Synthetic tracks for tests and simulations.
public enum SyntheticTrack {
  /// The point `distance` metres from `start` along the initial `bearing` (degrees) on GeoKit's sphere.
  public static func destination(from start: Coordinate, bearing: Double, distance: Double) -> Coordinate {
    let toRadians = Double.pi / 180
    let delta = distance / meanEarthRadius
    let theta = bearing * toRadians
    let phi1 = start.latitude * toRadians
    let lambda1 = start.longitude * toRadians
    let phi2 = asin(sin(phi1) * cos(delta) + cos(phi1) * sin(delta) * cos(theta))
    let lambda2 = lambda1 + atan2(sin(theta) * sin(delta) * cos(phi1), cos(delta) - sin(phi1) * sin(phi2))
    return Coordinate(
      uncheckedLatitude: phi2 / toRadians, longitude: Coordinate.normalizedLongitude(lambda2 / toRadians))
  }

  /// `count` fixes moving from `start` along `bearing` at `speed` m/s, one every `interval` ms from `startTime`,
  /// with the given accuracy, speed and course filled in.
  public static func straightLine(
    deviceID: DeviceID? = nil, from start: Coordinate, bearing: Double = 0, speed: Double, interval: Int64 = 1000,
    count: Int, startTime: Int64 = 1_700_000_000_000, accuracy: Double = 5
  ) -> [LocationFix] {
    (0..<count).compactMap { index in
      let point = destination(from: start, bearing: bearing, distance: speed * Double(interval) / 1000 * Double(index))
      return try? LocationFix(
        deviceID: deviceID, timestamp: startTime + Int64(index) * interval, latitude: point.latitude,
        longitude: point.longitude, horizontalAccuracy: accuracy, speed: speed, course: bearing)
    }
  }
}
