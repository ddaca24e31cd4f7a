#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// A point with the sines and cosines of its half latitude and half longitude computed once, so that its haversine
/// distances to other such points (``distance(to:)``) need no sine but one `asin`: what a fix tested against
/// hundreds of circles takes.
public struct HaversinePoint: Sendable, Hashable {
  /// The point.
  public let coordinate: Coordinate
  let sinHalfLatitude: Double
  let cosHalfLatitude: Double
  let sinHalfLongitude: Double
  let cosHalfLongitude: Double
  /// cos φ = cos²(φ/2) − sin²(φ/2).
  let cosLatitude: Double

  /// `coordinate` with its half angles' sines and cosines.
  public init(_ coordinate: Coordinate) {
    self.coordinate = coordinate
    let halfToRadians = Double.pi / 360
    let halfLatitude = coordinate.latitude * halfToRadians
    let halfLongitude = coordinate.longitude * halfToRadians
    (sinHalfLatitude, cosHalfLatitude) = (sin(halfLatitude), cos(halfLatitude))
    (sinHalfLongitude, cosHalfLongitude) = (sin(halfLongitude), cos(halfLongitude))
    cosLatitude = cosHalfLatitude * cosHalfLatitude - sinHalfLatitude * sinHalfLatitude
  }

  /// The great-circle distance to `other` in metres (haversine, sphere of radius ``meanEarthRadius``): what
  /// ``Coordinate/haversineDistance(to:)`` gives, up to rounding (the half differences' sines come from the angle
  /// difference identity).
  public func distance(to other: HaversinePoint) -> Double {
    let sinHalfDeltaLatitude =
      other.sinHalfLatitude * cosHalfLatitude - other.cosHalfLatitude * sinHalfLatitude
    let sinHalfDeltaLongitude =
      other.sinHalfLongitude * cosHalfLongitude - other.cosHalfLongitude * sinHalfLongitude
    let a =
      sinHalfDeltaLatitude * sinHalfDeltaLatitude
      + cosLatitude * other.cosLatitude * sinHalfDeltaLongitude * sinHalfDeltaLongitude
    return (2 * meanEarthRadius) * Self.arcsine(min(1, a.squareRoot()))
  }

  /// `asin(x)` for `0 ≤ x ≤ 1`: below 0.01 (points up to 127 km apart, what a fence test sees) its Taylor series to
  /// x⁷, whose first term left out is under 10⁻¹⁷ of the sum: within an ulp of the library's `asin`, in three
  /// multiply-adds; beyond, the library's.
  @inline(__always) static func arcsine(_ x: Double) -> Double {
    guard x < 0.01 else { return asin(x) }
    let square = x * x
    return x + x * square * (1.0 / 6 + square * (3.0 / 40 + square * (5.0 / 112)))
  }
}

/// A geofence with what its distances need computed once (a circle's centre as a ``HaversinePoint``): the form in
/// which a fence tested against many fixes is kept.
public struct PreparedGeofence: Sendable, Hashable {
  /// The fence.
  public let shape: Geofence
  /// A circle's centre (nil for a polygon).
  private let center: HaversinePoint?
  /// A circle's radius in metres (0 for a polygon).
  private let radius: Double

  /// `shape`, prepared.
  public init(_ shape: Geofence) {
    self.shape = shape
    switch shape {
    case .circle(let center, let radius): (self.center, self.radius) = (HaversinePoint(center), radius)
    case .polygon: (center, radius) = (nil, 0)
    }
  }

  /// The signed distance in metres from `point` to the fence's edge, as ``Geofence/signedDistance(to:)`` gives it
  /// (up to rounding for a circle).
  public func signedDistance(to point: HaversinePoint) -> Double {
    guard let center else { return shape.signedDistance(to: point.coordinate) }
    return center.distance(to: point) - radius
  }
}
