#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// The mean Earth radius (IUGG R1) used by the spherical formulas, in metres.
public let meanEarthRadius = 6_371_008.8

extension Coordinate {
  /// Great-circle distance to `other` in metres on a sphere of radius ``meanEarthRadius`` (haversine).
  /// Within 0.56 % of the WGS84 geodesic distance; use ``Geodesic`` when that matters.
  @inlinable
  public func haversineDistance(to other: Coordinate) -> Double {
    let halfToRadians = Double.pi / 360
    let sinHalfDeltaLat = sin((other.latitude - latitude) * halfToRadians)
    let sinHalfSumLat = sin((other.latitude + latitude) * halfToRadians)
    let sinHalfDeltaLon = sin((other.longitude - longitude) * halfToRadians)
    let deltaLatTerm = sinHalfDeltaLat * sinHalfDeltaLat
    // cos φ1 cos φ2 = 1 − sin²((φ1 − φ2)/2) − sin²((φ1 + φ2)/2): three sines instead of two sines and two cosines.
    let cosProduct = 1 - deltaLatTerm - sinHalfSumLat * sinHalfSumLat
    let a = deltaLatTerm + cosProduct * sinHalfDeltaLon * sinHalfDeltaLon
    return (2 * meanEarthRadius) * asin(min(1, a.squareRoot()))
  }

  /// The WGS84 geodesic distance to `other` in metres (Karney's method, sub-millimetre accurate).
  @inlinable
  public func geodesicDistance(to other: Coordinate) -> Double {
    Geodesic.wgs84.inverse(from: self, to: other).distance
  }

  /// The initial bearing (forward azimuth) of the WGS84 geodesic to `other`, degrees clockwise from north in
  /// (-180, 180]. Undefined (0) for coincident points.
  public func initialBearing(to other: Coordinate) -> Double {
    Geodesic.wgs84.inverse(from: self, to: other).initialAzimuth
  }

  /// The final bearing of the WGS84 geodesic to `other`: the direction of travel on arrival, in (-180, 180].
  public func finalBearing(to other: Coordinate) -> Double {
    Geodesic.wgs84.inverse(from: self, to: other).finalAzimuth
  }

  /// The point reached by travelling `distance` metres along the WGS84 geodesic that starts with `bearing`
  /// (degrees clockwise from north).
  /// - Throws: ``CoordinateError/notFinite(name:value:)`` when `bearing` or `distance` is NaN or infinite.
  public func destination(bearing: Double, distance: Double) throws(CoordinateError) -> Coordinate {
    guard bearing.isFinite else { throw .notFinite(name: "bearing", value: bearing) }
    guard distance.isFinite else { throw .notFinite(name: "distance", value: distance) }
    return Geodesic.wgs84.direct(from: self, azimuth: bearing, distance: distance).destination
  }

  /// The shortest distance in metres from this point to the great-circle segment `start`–`end` (spherical
  /// cross-track distance where the perpendicular foot falls on the segment, else the distance to the nearer end).
  public func distance(toSegmentFrom start: Coordinate, to end: Coordinate) -> Double {
    let d13 = start.haversineDistance(to: self) / meanEarthRadius
    let d12 = start.haversineDistance(to: end) / meanEarthRadius
    guard d12 > 0 else { return d13 * meanEarthRadius }
    let theta13 = start.sphericalBearing(to: self)
    let theta12 = start.sphericalBearing(to: end)
    let crossTrack = asin(max(-1, min(1, sin(d13) * sin(theta13 - theta12))))
    // Along-track distance, signed: negative when the foot lies behind `start`.
    let alongTrack = atan2(sin(d13) * cos(theta13 - theta12), cos(d13))
    if alongTrack <= 0 { return d13 * meanEarthRadius }
    if alongTrack >= d12 { return haversineDistance(to: end) }
    return abs(crossTrack) * meanEarthRadius
  }

  /// Initial great-circle bearing on the sphere, in radians.
  @usableFromInline
  func sphericalBearing(to other: Coordinate) -> Double {
    let toRadians = Double.pi / 180
    let lat1 = latitude * toRadians
    let lat2 = other.latitude * toRadians
    let dLon = (other.longitude - longitude) * toRadians
    return atan2(sin(dLon) * cos(lat2), cos(lat1) * sin(lat2) - sin(lat1) * cos(lat2) * cos(dLon))
  }
}

/// A fast local approximation of WGS84 distances near a reference latitude (Mapbox "cheap ruler" style): the
/// ellipsoid's radii of curvature at that latitude turn degrees into metres, then distances are planar.
///
/// Measured against Karney's geodesics (GeoKitTests, ruler built at the pair's mean latitude): relative error
/// below 0.001 % (worst seen 3.4e-7) up to 10 km at |latitude| ≤ 60°, below 0.001 % (3.2e-6) up to 10 km at
/// |latitude| ≤ 80°, and below 0.01 % (2.6e-5) up to 100 km at |latitude| ≤ 60°. The error grows with the distance
/// from the reference latitude — by about tan φ · Δφ (Δφ in radians) for east–west distances, i.e. 0.1 % when the
/// ruler is 0.05° off at 50° — and near the poles; it is not meant for hundreds of kilometres. About 20× faster
/// than haversine; build one ruler per area (at the area's own latitude) and reuse it.
///
/// ```swift
/// let ruler = CheapRuler(latitude: 48.85)
/// ruler.distance(a, b)        // metres
/// ```
public struct CheapRuler: Sendable, Hashable {
  /// Metres per degree of longitude at the reference latitude.
  public let metresPerDegreeLongitude: Double
  /// Metres per degree of latitude at the reference latitude.
  public let metresPerDegreeLatitude: Double

  /// A ruler for distances around `latitude` (degrees).
  public init(latitude: Double) {
    let a = Geodesic.wgs84.equatorialRadius
    let f = Geodesic.wgs84.flattening
    let e2 = f * (2 - f)
    let metresPerRadian = a * Double.pi / 180
    let cosine = cos(latitude * Double.pi / 180)
    let w2 = 1 / (1 - e2 * (1 - cosine * cosine))
    let w = w2.squareRoot()
    metresPerDegreeLongitude = metresPerRadian * w * cosine
    metresPerDegreeLatitude = metresPerRadian * w * w2 * (1 - e2)
  }

  /// The approximate distance in metres between two nearby points.
  @inlinable
  public func distance(_ a: Coordinate, _ b: Coordinate) -> Double {
    var dLon = b.longitude - a.longitude
    if dLon > 180 { dLon -= 360 } else if dLon < -180 { dLon += 360 }
    let dx = dLon * metresPerDegreeLongitude
    let dy = (b.latitude - a.latitude) * metresPerDegreeLatitude
    return (dx * dx + dy * dy).squareRoot()
  }

  /// The planar offset in metres (east, north) of `point` from `origin`.
  @inlinable
  public func offset(of point: Coordinate, from origin: Coordinate) -> (east: Double, north: Double) {
    var dLon = point.longitude - origin.longitude
    if dLon > 180 { dLon -= 360 } else if dLon < -180 { dLon += 360 }
    return (dLon * metresPerDegreeLongitude, (point.latitude - origin.latitude) * metresPerDegreeLatitude)
  }
}
