import Foundation

/// The batch the Overland GPS tracker (iOS) posts to its receiver endpoint:
/// `{"locations": [GeoJSON Feature…], "current": …, "trip": …}`.
///
/// Each feature is a `Point` whose `geometry.coordinates` are `[longitude, latitude]` (an optional third number is
/// ignored; `properties.altitude` is the altitude) and whose `properties` carry `timestamp` (ISO 8601, with `Z` or
/// an offset such as `-0700`), `horizontal_accuracy`, `vertical_accuracy`, `altitude` (m), `speed` (m/s),
/// `course` (degrees), `battery_level` (0…1) and `battery_state` (`unknown`, `charging`, `full`, `unplugged`).
/// Core Location's "unknown" (−1) for accuracy, speed, course and battery is read as absent. `motion`,
/// `device_id`, `wifi`, the tracking statistics and the batch's `current` and `trip` are ignored.
public enum Overland {
  /// The fixes of a batch, in the batch's order.
  /// - Throws: ``FormatError`` with a nil `field` when the body is not JSON or not an object with `locations`,
  ///   else naming the first bad member (`locations[3].properties.timestamp`).
  public static func parse(_ data: Data) throws -> [LocationFix] {
    struct Batch: Decodable {
      var locations: [Feature]
    }
    struct Feature: Decodable {
      struct Geometry: Decodable {
        var type: String
        var coordinates: [Double]
      }
      struct Properties: Decodable {
        var timestamp: String
        var altitude: Double?
        var speed: Double?
        var course: Double?
        var horizontalAccuracy: Double?
        var verticalAccuracy: Double?
        var batteryLevel: Double?
        var batteryState: String?
        enum CodingKeys: String, CodingKey {
          case timestamp, altitude, speed, course
          case horizontalAccuracy = "horizontal_accuracy"
          case verticalAccuracy = "vertical_accuracy"
          case batteryLevel = "battery_level"
          case batteryState = "battery_state"
        }
      }
      var geometry: Geometry
      var properties: Properties
    }
    let batch: Batch
    do {
      batch = try JSONDecoder().decode(Batch.self, from: data)
    } catch let error as DecodingError {
      guard case .dataCorrupted(let context) = error, context.codingPath.isEmpty else {
        throw FormatError(.geojson, field: path(of: error), OwnTracks.message(of: error))
      }
      throw FormatError(.geojson, "the body is not JSON: \(context.debugDescription)")
    }
    return try batch.locations.enumerated().map { index, feature in
      let name = "locations[\(index)]"
      guard feature.geometry.type == "Point", feature.geometry.coordinates.count >= 2 else {
        throw FormatError(.geojson, field: "\(name).geometry", "expected a Point with [longitude, latitude]")
      }
      let properties = feature.properties
      guard let timestamp = Timestamp.parseISO8601(properties.timestamp),
        Timestamp.plausibleRange.contains(timestamp)
      else {
        throw FormatError(
          .geojson, field: "\(name).properties.timestamp",
          "'\(properties.timestamp)' is not ISO 8601 between 1970 and 2200")
      }
      // Core Location reports what it does not know as a negative number.
      func known(_ value: Double?) -> Double? { value.flatMap { $0 < 0 ? nil : $0 } }
      var course = known(properties.course)
      if course == 360 { course = 0 }
      do {
        return try LocationFix(
          timestamp: timestamp, latitude: feature.geometry.coordinates[1],
          longitude: feature.geometry.coordinates[0], horizontalAccuracy: known(properties.horizontalAccuracy),
          verticalAccuracy: known(properties.verticalAccuracy), altitude: properties.altitude,
          speed: known(properties.speed), course: course,
          batteryLevel: known(properties.batteryLevel).map { $0 * 100 },
          batteryState: properties.batteryState.flatMap(BatteryState.init(rawValue:)), kind: .movement)
      } catch let error as FixValidationError {
        let names = [
          "latitude": "geometry.coordinates[1]", "longitude": "geometry.coordinates[0]",
          "horizontalAccuracy": "properties.horizontal_accuracy", "verticalAccuracy": "properties.vertical_accuracy",
          "batteryLevel": "properties.battery_level",
        ]
        throw FormatError(
          .geojson, field: "\(name).\(names[error.field] ?? "properties.\(error.field)")", error.description)
      }
    }
  }

  /// `locations[3].properties.timestamp` for a decoding error inside the batch.
  static func path(of error: DecodingError) -> String {
    let codingPath: [any CodingKey]
    var key: (any CodingKey)? = nil
    switch error {
    case .keyNotFound(let missing, let context):
      codingPath = context.codingPath
      key = missing
    case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
      codingPath = context.codingPath
    @unknown default:
      codingPath = []
    }
    var text = ""
    for part in codingPath + (key.map { [$0] } ?? []) {
      if let index = part.intValue {
        text += "[\(index)]"
      } else {
        text += (text.isEmpty ? "" : ".") + part.stringValue
      }
    }
    return text
  }
}
