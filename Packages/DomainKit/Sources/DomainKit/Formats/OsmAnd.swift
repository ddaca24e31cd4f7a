import Foundation

/// A fix reported with the OsmAnd / Traccar client HTTP protocol, and the device it names.
public struct OsmAndReport: Sendable, Hashable {
  /// The device id from `id` or `deviceid`.
  public var deviceID: DeviceID
  /// The fix.
  public var fix: LocationFix
}

/// The OsmAnd / Traccar client protocol: a fix as query parameters or an `application/x-www-form-urlencoded` body.
///
/// Parameters (names case-sensitive, as Traccar reads them):
/// `id` or `deviceid` (required); `lat` and `lon`, or `location=lat,lon` (required); `timestamp` as epoch seconds,
/// epoch milliseconds (values ≥ 10^11) or ISO 8601 (absent: the receive time); `speed` in **knots** (× 1852/3600 →
/// m/s); `bearing` or `heading` (degrees); `altitude` (m); `accuracy` (m); `batt` (percent); `charge`
/// (`true`/`false`); `valid=false` rejects the fix. Unknown parameters are ignored.
public enum OsmAnd {
  /// Metres per second in one knot.
  public static let metresPerSecondPerKnot = 1852.0 / 3600.0

  /// The unit of the `speed` parameter: knots in the OsmAnd / Traccar protocol; metres per second where a client
  /// fills the same parameters from a template of its own (GPSLogger's `%SPD`).
  public enum SpeedUnit: Sendable, Hashable {
    /// Knots (the protocol's unit).
    case knots
    /// Metres per second.
    case metresPerSecond
  }

  /// Parses a query string or form body (`id=abc&lat=1&lon=2`), percent-decoding and treating `+` as space.
  public static func parse(query: String, receivedAt: Int64, speed unit: SpeedUnit = .knots) throws -> OsmAndReport {
    var pairs: [(String, String)] = []
    for part in query.split(separator: "&", omittingEmptySubsequences: true) {
      let pieces = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
      func decode(_ text: Substring) -> String {
        let spaced = text.replacingOccurrences(of: "+", with: " ")
        return spaced.removingPercentEncoding ?? spaced
      }
      pairs.append((decode(pieces[0]), pieces.count > 1 ? decode(pieces[1]) : ""))
    }
    return try parse(parameters: pairs, receivedAt: receivedAt, speed: unit)
  }

  /// Parses `URLQueryItem`s (e.g. from `URLComponents`).
  public static func parse(queryItems: [URLQueryItem], receivedAt: Int64) throws -> OsmAndReport {
    try parse(parameters: queryItems.map { ($0.name, $0.value ?? "") }, receivedAt: receivedAt)
  }

  /// Parses name/value pairs; the first occurrence of a name wins.
  /// - Throws: ``FormatError`` naming the parameter that is missing or malformed.
  public static func parse(
    parameters: [(String, String)], receivedAt: Int64, speed unit: SpeedUnit = .knots
  ) throws -> OsmAndReport {
    var values: [String: String] = [:]
    for (name, value) in parameters where values[name] == nil { values[name] = value }
    func number(_ name: String) throws -> Double? {
      guard let text = values[name], !text.isEmpty else { return nil }
      guard let value = NumberText.double(text) else {
        throw FormatError(.osmand, field: name, "'\(text)' is not a number")
      }
      return value
    }
    guard let id = values["id"] ?? values["deviceid"], !id.isEmpty else {
      throw FormatError(.osmand, field: "id", "missing device id ('id' or 'deviceid')")
    }
    if let valid = values["valid"], valid == "false" || valid == "0" {
      throw FormatError(.osmand, field: "valid", "the client marked this fix as invalid")
    }
    let lat: Double
    let lon: Double
    if let location = values["location"], values["lat"] == nil {
      let parts = location.split(separator: ",")
      guard parts.count == 2, let a = NumberText.double(parts[0]), let b = NumberText.double(parts[1]) else {
        throw FormatError(.osmand, field: "location", "'\(location)' is not 'lat,lon'")
      }
      (lat, lon) = (a, b)
    } else {
      guard let a = try number("lat") else { throw FormatError(.osmand, field: "lat", "missing") }
      guard let b = try number("lon") else { throw FormatError(.osmand, field: "lon", "missing") }
      (lat, lon) = (a, b)
    }
    let timestamp: Int64
    if let text = values["timestamp"], !text.isEmpty {
      guard let parsed = parseTime(text) else {
        throw FormatError(
          .osmand, field: "timestamp", "'\(text)' is not epoch seconds, milliseconds or ISO 8601 between 1970 and 2200")
      }
      timestamp = parsed
    } else {
      timestamp = receivedAt
    }
    var course = try number("bearing") ?? number("heading")
    if course == 360 { course = 0 }
    var charging: BatteryState?
    if let charge = values["charge"] {
      switch charge.lowercased() {
      case "true", "1": charging = .charging
      case "false", "0": charging = .unplugged
      default: throw FormatError(.osmand, field: "charge", "'\(charge)' is not true or false")
      }
    }
    do {
      let fix = try LocationFix(
        deviceID: DeviceID(id), timestamp: timestamp, latitude: lat, longitude: lon,
        horizontalAccuracy: number("accuracy"), altitude: number("altitude"),
        speed: number("speed").map { unit == .knots ? $0 * metresPerSecondPerKnot : $0 }, course: course,
        batteryLevel: number("batt"),
        batteryState: charging, kind: .movement)
      return OsmAndReport(deviceID: DeviceID(id), fix: fix)
    } catch let error as FixValidationError {
      let names = [
        "latitude": "lat", "longitude": "lon", "horizontalAccuracy": "accuracy", "course": "bearing",
        "batteryLevel": "batt",
      ]
      throw FormatError(.osmand, field: names[error.field] ?? error.field, error.description)
    }
  }

  /// Parses the JSON body Traccar Client 9+ sends to the same endpoint:
  /// `{"location": {"timestamp": ISO 8601, "coords": {"latitude", "longitude", "accuracy", "speed" (m/s),
  /// "heading", "altitude"}, "battery": {"level": 0…1, "is_charging"}, "is_moving", "event", …},
  /// "device_id": "…"}`. Unknown members are ignored.
  /// - Throws: ``FormatError`` naming the missing or malformed member.
  public static func parse(json data: Data) throws -> OsmAndReport {
    struct Body: Decodable {
      struct Location: Decodable {
        struct Coords: Decodable {
          var latitude: Double
          var longitude: Double
          var accuracy: Double?
          var speed: Double?
          var heading: Double?
          var altitude: Double?
        }
        struct Battery: Decodable {
          var level: Double?
          var isCharging: Bool?
          enum CodingKeys: String, CodingKey {
            case level
            case isCharging = "is_charging"
          }
        }
        var timestamp: String
        var coords: Coords
        var battery: Battery?
      }
      var location: Location
      var deviceID: String
      enum CodingKeys: String, CodingKey {
        case location
        case deviceID = "device_id"
      }
    }
    let body: Body
    do {
      body = try JSONDecoder().decode(Body.self, from: data)
    } catch let error as DecodingError {
      throw FormatError(.osmand, field: OwnTracks.field(of: error), OwnTracks.message(of: error))
    }
    guard let timestamp = Timestamp.parseISO8601(body.location.timestamp),
      Timestamp.plausibleRange.contains(timestamp)
    else {
      throw FormatError(
        .osmand, field: "location.timestamp", "'\(body.location.timestamp)' is not ISO 8601 between 1970 and 2200")
    }
    let coords = body.location.coords
    // Location SDKs report unknown speed/heading as -1.
    let speed = coords.speed.flatMap { $0 < 0 ? nil : $0 }
    let heading = coords.heading.flatMap { $0 < 0 ? nil : ($0 == 360 ? 0 : $0) }
    let battery = body.location.battery
    do {
      let fix = try LocationFix(
        deviceID: DeviceID(body.deviceID), timestamp: timestamp, latitude: coords.latitude,
        longitude: coords.longitude, horizontalAccuracy: coords.accuracy, altitude: coords.altitude, speed: speed,
        course: heading, batteryLevel: battery?.level.flatMap { $0 < 0 ? nil : $0 * 100 },
        batteryState: battery?.isCharging.map { $0 ? .charging : .unplugged }, kind: .movement)
      return OsmAndReport(deviceID: DeviceID(body.deviceID), fix: fix)
    } catch {
      throw FormatError(.osmand, field: "location.\(error.field)", error.description)
    }
  }

  /// Epoch seconds, epoch milliseconds (≥ 10^11, i.e. after 1973 in ms) or ISO 8601, as UTC milliseconds.
  /// Returns nil for anything else, and for times outside ``Timestamp/plausibleRange`` (1970…2200).
  public static func parseTime(_ text: String) -> Int64? {
    if let integer = Int64(text) {
      guard integer >= 100_000_000_000 else { return Timestamp.milliseconds(epochSeconds: integer) }
      return Timestamp.plausibleRange.contains(integer) ? integer : nil
    }
    if let seconds = Double(text) { return Timestamp.milliseconds(epochSeconds: seconds) }
    return Timestamp.parseISO8601(text).flatMap { Timestamp.plausibleRange.contains($0) ? $0 : nil }
  }

  /// The query string a client sends for `fix` (speed in knots, timestamp in seconds).
  public static func query(deviceID: DeviceID, fix: LocationFix) -> String {
    var items = [
      URLQueryItem(name: "id", value: deviceID.rawValue),
      URLQueryItem(name: "timestamp", value: String(fix.timestamp.floorDivided(by: 1000))),
      URLQueryItem(name: "lat", value: formatNumber(fix.latitude, 7)),
      URLQueryItem(name: "lon", value: formatNumber(fix.longitude, 7)),
    ]
    if let speed = fix.speed {
      items.append(.init(name: "speed", value: formatNumber(speed / metresPerSecondPerKnot, 3)))
    }
    if let course = fix.course { items.append(.init(name: "bearing", value: formatNumber(course, 2))) }
    if let altitude = fix.altitude { items.append(.init(name: "altitude", value: formatNumber(altitude, 2))) }
    if let accuracy = fix.horizontalAccuracy { items.append(.init(name: "accuracy", value: formatNumber(accuracy, 2))) }
    if let batt = fix.batteryLevel { items.append(.init(name: "batt", value: formatNumber(batt, 1))) }
    var components = URLComponents()
    components.queryItems = items
    return components.percentEncodedQuery ?? ""
  }
}
