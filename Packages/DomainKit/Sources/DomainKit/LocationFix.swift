import Foundation
import GeoKit

/// What produced a fix: live movement, a detected visit, an import from a file, or a photo's location.
public enum FixKind: String, Sendable, Hashable, Codable, CaseIterable {
  /// Recorded while moving (the default).
  case movement
  /// Recorded for a detected visit/stay.
  case visit
  /// Imported from a file (GPX, CSV, GeoJSON, Takeout).
  case imported
  /// Taken from a photo's metadata.
  case photo
}

/// Why the device recorded a fix (OwnTracks `t` values map onto these).
public enum FixTrigger: String, Sendable, Hashable, Codable, CaseIterable {
  /// Regular automatic location update.
  case automatic
  /// Published by the user by hand.
  case manual
  /// Timer-based publish while in move mode.
  case timer
  /// Entering or leaving a circular region.
  case region
  /// Entering or leaving a beacon region.
  case beacon
  /// Answer to a remote "report location" request.
  case request
  /// Periodic ping from a background task.
  case ping
  /// Significant-location-change service.
  case significantChange
  /// Visit monitoring (iOS frequent locations).
  case visit
}

/// The charging state of the reporting device's battery (OwnTracks `bs`).
public enum BatteryState: String, Sendable, Hashable, Codable, CaseIterable {
  /// Not known.
  case unknown
  /// Running on battery.
  case unplugged
  /// Plugged in and charging.
  case charging
  /// Plugged in and full.
  case full
}

/// The identity of a fix: the device that recorded it and its UTC time in milliseconds.
/// The server stores a fix once per identity.
public struct FixID: Sendable, Hashable, Codable {
  /// The recording device; nil for fixes not yet attributed (e.g. freshly read from a file).
  public var deviceID: DeviceID?
  /// UTC milliseconds since 1970.
  public var timestamp: Int64

  /// An identity from its parts.
  public init(deviceID: DeviceID?, timestamp: Int64) {
    self.deviceID = deviceID
    self.timestamp = timestamp
  }

  private enum CodingKeys: String, CodingKey {
    case deviceID = "deviceId"
    case timestamp
  }
}

/// A field of a ``LocationFix`` that failed validation, and why.
public struct FixValidationError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The wire name of the offending field (`latitude`, `course`, `batteryLevel`, …).
  public var field: String
  /// The rejected value.
  public var value: Double
  /// The accepted range, as text (e.g. `0…360`).
  public var allowed: String

  /// An error for `field`.
  public init(field: String, value: Double, allowed: String) {
    self.field = field
    self.value = value
    self.allowed = allowed
  }

  /// A sentence naming the field, the value and the allowed range.
  public var description: String {
    value.isFinite
      ? "\(field) \(value) is outside the allowed range \(allowed)"
      : "\(field) must be a finite number (allowed: \(allowed))"
  }
}

/// One recorded position of a device: the unit of location history, live sharing and every file format.
///
/// Wire names (JSON) are the property names, except `deviceID` → `deviceId` and `refinedBy` (a ``FixID``).
/// Times are UTC milliseconds since 1970; distances metres; speed m/s; course degrees clockwise from true north.
public struct LocationFix: Sendable, Hashable, Codable {
  /// The device that recorded the fix, when known.
  public var deviceID: DeviceID?
  /// UTC milliseconds since 1970.
  public var timestamp: Int64
  /// Degrees, −90…90.
  public var latitude: Double
  /// Degrees, −180…180.
  public var longitude: Double
  /// Radius of 68 % confidence in metres, ≥ 0.
  public var horizontalAccuracy: Double?
  /// Vertical accuracy in metres, ≥ 0.
  public var verticalAccuracy: Double?
  /// Metres above sea level (WGS84 for GPS sources).
  public var altitude: Double?
  /// Ground speed in m/s, ≥ 0.
  public var speed: Double?
  /// Accuracy of `speed` in m/s, ≥ 0.
  public var speedAccuracy: Double?
  /// Direction of travel in degrees, 0…360.
  public var course: Double?
  /// Building floor (0 = ground floor), when indoors.
  public var floor: Int?
  /// Battery level in percent, 0…100.
  public var batteryLevel: Double?
  /// Charging state of the battery.
  public var batteryState: BatteryState?
  /// Movement, visit, imported or photo.
  public var kind: FixKind
  /// What made the device record it.
  public var trigger: FixTrigger?
  /// The later, more precise fix that refines this poor-accuracy one (stored as its own row).
  public var refinedBy: FixID?

  /// A fix from its fields, validated.
  /// - Throws: ``FixValidationError`` naming the first field out of range.
  public init(
    deviceID: DeviceID? = nil, timestamp: Int64, latitude: Double, longitude: Double,
    horizontalAccuracy: Double? = nil, verticalAccuracy: Double? = nil, altitude: Double? = nil,
    speed: Double? = nil, speedAccuracy: Double? = nil, course: Double? = nil, floor: Int? = nil,
    batteryLevel: Double? = nil, batteryState: BatteryState? = nil, kind: FixKind = .movement,
    trigger: FixTrigger? = nil, refinedBy: FixID? = nil
  ) throws(FixValidationError) {
    self.deviceID = deviceID
    self.timestamp = timestamp
    self.latitude = latitude
    self.longitude = longitude
    self.horizontalAccuracy = horizontalAccuracy
    self.verticalAccuracy = verticalAccuracy
    self.altitude = altitude
    self.speed = speed
    self.speedAccuracy = speedAccuracy
    self.course = course
    self.floor = floor
    self.batteryLevel = batteryLevel
    self.batteryState = batteryState
    self.kind = kind
    self.trigger = trigger
    self.refinedBy = refinedBy
    try validate()
  }

  /// Checks every field's range: latitude −90…90 and longitude −180…180 (GeoKit's rule,
  /// ``Coordinate/validate(latitude:longitude:)``), accuracies, speed and its accuracy ≥ 0,
  /// course 0…360, battery 0…100, altitude finite.
  /// - Throws: ``FixValidationError`` naming the first offending field.
  public func validate() throws(FixValidationError) {
    do {
      try Coordinate.validate(latitude: latitude, longitude: longitude)
    } catch {
      throw FixValidationError(
        field: error.field, value: error.value, allowed: error.field == "latitude" ? "−90…90" : "−180…180")
    }
    try Self.check("horizontalAccuracy", horizontalAccuracy, 0...Double.greatestFiniteMagnitude, "≥ 0")
    try Self.check("verticalAccuracy", verticalAccuracy, 0...Double.greatestFiniteMagnitude, "≥ 0")
    try Self.check("altitude", altitude, -Double.greatestFiniteMagnitude...Double.greatestFiniteMagnitude, "finite")
    try Self.check("speed", speed, 0...Double.greatestFiniteMagnitude, "≥ 0")
    try Self.check("speedAccuracy", speedAccuracy, 0...Double.greatestFiniteMagnitude, "≥ 0")
    try Self.check("course", course, 0...360, "0…360")
    try Self.check("batteryLevel", batteryLevel, 0...100, "0…100")
  }

  private static func check(
    _ field: String, _ value: Double?, _ range: ClosedRange<Double>, _ allowed: String
  ) throws(FixValidationError) {
    guard let value else { return }
    guard value.isFinite, range.contains(value) else {
      throw FixValidationError(field: field, value: value, allowed: allowed)
    }
  }

  /// The identity the server deduplicates on: device + timestamp.
  public var id: FixID { FixID(deviceID: deviceID, timestamp: timestamp) }

  /// The position as a GeoKit coordinate.
  public var coordinate: Coordinate { Coordinate(uncheckedLatitude: latitude, longitude: longitude) }

  /// The time as a `Date`.
  public var date: Date { Timestamp.date(timestamp) }

  /// The geohash cells of lengths 2…6 containing this fix (for clustering by zoom level).
  public var geohashes: GeohashPrefixes { GeohashPrefixes(coordinate) }

  /// Great-circle distance to `other` in metres.
  public func distance(to other: LocationFix) -> Double { coordinate.haversineDistance(to: other.coordinate) }

  private enum CodingKeys: String, CodingKey {
    case deviceID = "deviceId"
    case timestamp, latitude, longitude, horizontalAccuracy, verticalAccuracy, altitude, speed, speedAccuracy
    case course, floor, batteryLevel, batteryState, kind, trigger, refinedBy
  }

  /// Decodes the documented wire names and validates like ``init(deviceID:timestamp:latitude:longitude:horizontalAccuracy:verticalAccuracy:altitude:speed:speedAccuracy:course:floor:batteryLevel:batteryState:kind:trigger:refinedBy:)``.
  public init(from decoder: any Decoder) throws {
    let c = try decoder.container(keyedBy: CodingKeys.self)
    try self.init(
      deviceID: c.decodeIfPresent(DeviceID.self, forKey: .deviceID),
      timestamp: c.decode(Int64.self, forKey: .timestamp),
      latitude: c.decode(Double.self, forKey: .latitude),
      longitude: c.decode(Double.self, forKey: .longitude),
      horizontalAccuracy: c.decodeIfPresent(Double.self, forKey: .horizontalAccuracy),
      verticalAccuracy: c.decodeIfPresent(Double.self, forKey: .verticalAccuracy),
      altitude: c.decodeIfPresent(Double.self, forKey: .altitude),
      speed: c.decodeIfPresent(Double.self, forKey: .speed),
      speedAccuracy: c.decodeIfPresent(Double.self, forKey: .speedAccuracy),
      course: c.decodeIfPresent(Double.self, forKey: .course),
      floor: c.decodeIfPresent(Int.self, forKey: .floor),
      batteryLevel: c.decodeIfPresent(Double.self, forKey: .batteryLevel),
      batteryState: c.decodeIfPresent(BatteryState.self, forKey: .batteryState),
      kind: c.decodeIfPresent(FixKind.self, forKey: .kind) ?? .movement,
      trigger: c.decodeIfPresent(FixTrigger.self, forKey: .trigger),
      refinedBy: c.decodeIfPresent(FixID.self, forKey: .refinedBy))
  }
}

/// The geohash cells of lengths 2…6 that contain a point, precomputed for `GROUP BY` clustering.
public struct GeohashPrefixes: Sendable, Hashable, Codable {
  /// The length-6 cell; the shorter cells are its prefixes.
  public let cell6: String

  /// The supported lengths, 2…6.
  public static let precisions = 2...6

  /// The cells containing `coordinate`.
  public init(_ coordinate: Coordinate) {
    // Precision 6 is always valid, so encode cannot fail.
    cell6 = (try? Geohash.encode(coordinate, precision: 6)) ?? ""
  }

  /// The cell of `precision` characters (clamped to 2…6).
  public func cell(precision: Int) -> String {
    String(cell6.prefix(min(max(precision, 2), 6)))
  }

  /// The cells of lengths 2, 3, 4, 5 and 6, in that order.
  public var all: [String] { Self.precisions.map { cell(precision: $0) } }
}
