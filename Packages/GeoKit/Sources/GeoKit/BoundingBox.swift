#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// A latitude/longitude rectangle; when `west > east` it crosses the antimeridian.
public struct BoundingBox: Sendable, Hashable, Codable {
  /// The southern edge in degrees.
  public var south: Double
  /// The western edge in degrees.
  public var west: Double
  /// The northern edge in degrees.
  public var north: Double
  /// The eastern edge in degrees; less than `west` when the box crosses the antimeridian.
  public var east: Double

  /// A box from its edges; `west > east` means the box crosses the antimeridian.
  public init(south: Double, west: Double, north: Double, east: Double) {
    self.south = south
    self.west = west
    self.north = north
    self.east = east
  }

  /// Whether `coordinate` lies inside (edges included), handling antimeridian crossing.
  @inlinable
  public func contains(_ coordinate: Coordinate) -> Bool {
    guard coordinate.latitude >= south, coordinate.latitude <= north else { return false }
    if west <= east { return coordinate.longitude >= west && coordinate.longitude <= east }
    return coordinate.longitude >= west || coordinate.longitude <= east
  }

  /// Whether the box crosses the antimeridian (`west > east`).
  public var crossesAntimeridian: Bool { west > east }

  /// The box split at the antimeridian into one or two boxes with `west <= east`.
  public var antimeridianSplit: [BoundingBox] {
    guard crossesAntimeridian else { return [self] }
    return [
      BoundingBox(south: south, west: west, north: north, east: 180),
      BoundingBox(south: south, west: -180, north: north, east: east),
    ]
  }

  /// The smallest box that contains every point within `radius` metres of `center` on the sphere of radius
  /// ``meanEarthRadius``. Reaching a pole widens it to all longitudes; crossing ±180° gives `west > east`.
  public init(around center: Coordinate, radius: Double) {
    let angular = max(0, radius) / meanEarthRadius
    let toDegrees = 180 / Double.pi
    let latitude = center.latitude / toDegrees
    let south = latitude - angular
    let north = latitude + angular
    if south <= -Double.pi / 2 || north >= Double.pi / 2 || angular >= Double.pi / 2 {
      self.init(south: max(-90, south * toDegrees), west: -180, north: min(90, north * toDegrees), east: 180)
      return
    }
    // The largest longitude offset of the circle (where the meridians are tangent to it).
    let deltaLongitude = asin(min(1, sin(angular) / cos(latitude))) * toDegrees
    if deltaLongitude >= 180 {
      self.init(south: south * toDegrees, west: -180, north: north * toDegrees, east: 180)
      return
    }
    self.init(
      south: south * toDegrees,
      west: Coordinate.normalizedLongitude(center.longitude - deltaLongitude),
      north: north * toDegrees,
      east: Coordinate.normalizedLongitude(center.longitude + deltaLongitude))
  }
}
