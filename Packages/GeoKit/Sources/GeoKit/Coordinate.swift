/// A validated point on the WGS84 ellipsoid: latitude in [-90, 90], longitude normalized to [-180, 180).
public struct Coordinate: Sendable, Hashable, Codable {
  /// Degrees north of the equator, in [-90, 90].
  public let latitude: Double
  /// Degrees east of Greenwich, in [-180, 180).
  public let longitude: Double

  /// Validates `latitude` and normalizes `longitude` into [-180, 180).
  /// - Throws: ``CoordinateError`` when a value is not finite or the latitude is outside [-90, 90].
  public init(latitude: Double, longitude: Double) throws(CoordinateError) {
    guard latitude.isFinite else { throw .notFinite(name: "latitude", value: latitude) }
    guard longitude.isFinite else { throw .notFinite(name: "longitude", value: longitude) }
    guard (-90.0...90.0).contains(latitude) else { throw .latitudeOutOfRange(latitude) }
    self.latitude = latitude
    self.longitude = Coordinate.normalizedLongitude(longitude)
  }

  /// Creates a coordinate from values the caller already knows are valid and normalized (no checks).
  @inlinable
  public init(uncheckedLatitude latitude: Double, longitude: Double) {
    self.latitude = latitude
    self.longitude = longitude
  }

  /// `longitude` brought into [-180, 180), exactly: the result differs from `longitude` by a multiple of 360.
  @inlinable
  public static func normalizedLongitude(_ longitude: Double) -> Double {
    if longitude >= -180, longitude < 180 { return longitude }
    // The remainder is exact, and so is one more step of 360 (the operands are within a factor of 2).
    let wrapped = longitude.truncatingRemainder(dividingBy: 360)
    if wrapped >= 180 { return wrapped - 360 }
    if wrapped < -180 { return wrapped + 360 }
    return wrapped
  }

  private enum CodingKeys: String, CodingKey {
    case latitude = "lat"
    case longitude = "lon"
  }

  /// Decodes `{"lat": …, "lon": …}`, validating like ``init(latitude:longitude:)``.
  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    try self.init(
      latitude: container.decode(Double.self, forKey: .latitude),
      longitude: container.decode(Double.self, forKey: .longitude))
  }

  /// Encodes as `{"lat": …, "lon": …}`.
  public func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(latitude, forKey: .latitude)
    try container.encode(longitude, forKey: .longitude)
  }
}

/// Why a coordinate was rejected.
public enum CoordinateError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The latitude is outside [-90, 90].
  case latitudeOutOfRange(Double)
  /// A value is NaN or infinite.
  case notFinite(name: String, value: Double)

  /// What was wrong with the value.
  public var description: String {
    switch self {
    case .latitudeOutOfRange(let value): "latitude \(value) is outside [-90, 90]"
    case .notFinite(let name, let value): "\(name) \(value) is not a finite number"
    }
  }
}
