/// A validated point on the WGS84 ellipsoid: latitude in [-90, 90], longitude in [-180, 180).
///
/// ``validate(latitude:longitude:)`` is the rule for a coordinate that comes from outside (a request, a file, a
/// command line): both values finite, latitude in [-90, 90], longitude in [-180, 180]. A longitude outside that is
/// refused, never wrapped (181 is a mistake, not -179); 180 is kept as -180, the same meridian.
public struct Coordinate: Sendable, Hashable, Codable {
  /// Degrees north of the equator, in [-90, 90].
  public let latitude: Double
  /// Degrees east of Greenwich, in [-180, 180).
  public let longitude: Double

  /// The latitudes a coordinate may have, degrees.
  public static let latitudeRange: ClosedRange<Double> = -90...90
  /// The longitudes accepted from outside, degrees (180 is stored as -180).
  public static let longitudeRange: ClosedRange<Double> = -180...180

  /// Validates both values (``validate(latitude:longitude:)``); a longitude of 180 becomes -180.
  /// - Throws: ``CoordinateError`` when a value is not finite or out of its range.
  public init(latitude: Double, longitude: Double) throws(CoordinateError) {
    try Self.validate(latitude: latitude, longitude: longitude)
    self.latitude = latitude
    self.longitude = longitude == 180 ? -180 : longitude
  }

  /// The rule for a coordinate from outside: both values finite, latitude in ``latitudeRange``, longitude in
  /// ``longitudeRange`` (refused outside it, never wrapped).
  /// - Throws: ``CoordinateError`` naming the first value at fault.
  public static func validate(latitude: Double, longitude: Double) throws(CoordinateError) {
    guard latitude.isFinite else { throw .notFinite(name: "latitude", value: latitude) }
    guard longitude.isFinite else { throw .notFinite(name: "longitude", value: longitude) }
    guard latitudeRange.contains(latitude) else { throw .latitudeOutOfRange(latitude) }
    guard longitudeRange.contains(longitude) else { throw .longitudeOutOfRange(longitude) }
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
  /// - Throws: `DecodingError.dataCorrupted` at `lat` or `lon` for a value out of range, so that a caller's error
  ///   names the field.
  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    let latitude = try container.decode(Double.self, forKey: .latitude)
    let longitude = try container.decode(Double.self, forKey: .longitude)
    do {
      try self.init(latitude: latitude, longitude: longitude)
    } catch {
      throw DecodingError.dataCorruptedError(
        forKey: error.field == "latitude" ? .latitude : .longitude, in: container, debugDescription: error.description)
    }
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
  /// The longitude is outside [-180, 180].
  case longitudeOutOfRange(Double)
  /// A value is NaN or infinite.
  case notFinite(name: String, value: Double)

  /// The value at fault: `latitude` or `longitude`.
  public var field: String {
    switch self {
    case .latitudeOutOfRange: "latitude"
    case .longitudeOutOfRange: "longitude"
    case .notFinite(let name, _): name
    }
  }

  /// The rejected value.
  public var value: Double {
    switch self {
    case .latitudeOutOfRange(let value), .longitudeOutOfRange(let value), .notFinite(_, let value): value
    }
  }

  /// What was wrong with the value.
  public var description: String {
    switch self {
    case .latitudeOutOfRange(let value): "latitude \(value) is outside [-90, 90]"
    case .longitudeOutOfRange(let value): "longitude \(value) is outside [-180, 180]"
    case .notFinite(let name, let value): "\(name) \(value) is not a finite number"
    }
  }
}
