import Foundation

/// GeoJSON (RFC 7946) export and import of fixes. Positions are `[longitude, latitude(, altitude)]`.
///
/// Writing: a `FeatureCollection` of `Point` features whose `properties` carry the fix fields (wire names of
/// ``LocationFix``, `timestamp` as ISO 8601 UTC), or one `LineString` feature per track with the times in
/// `properties.coordTimes` (the convention of togeojson/Strava exports).
/// Reading: `FeatureCollection`, `Feature` or bare geometry; `Point` features take their time from
/// `properties.timestamp` or `properties.time` (ISO 8601 or epoch ms); `MultiPoint`/`LineString`/`MultiLineString`
/// from `properties.coordTimes` (or `coordinateProperties.times`) with one time per position. A position without a
/// time (no property, or `null`) is checked and then skipped, counted in ``GeoJSONReader/skipped``; a bad time,
/// number or coordinate is an error naming the line and JSON path.
public enum GeoJSON {
  /// A FeatureCollection of Point features, one per fix.
  public static func pointCollection(_ fixes: some Sequence<LocationFix>) -> String {
    var out = "{\"type\":\"FeatureCollection\",\"features\":["
    var first = true
    for fix in fixes {
      if !first { out += "," }
      first = false
      out += "{\"type\":\"Feature\",\"geometry\":{\"type\":\"Point\",\"coordinates\":\(position(fix))},"
      out += "\"properties\":\(properties(fix))}"
    }
    return out + "]}"
  }

  /// A FeatureCollection with one LineString feature per track (tracks with fewer than 2 fixes become Points).
  public static func lineCollection(_ tracks: [GPXTrack]) -> String {
    var features: [String] = []
    for track in tracks {
      let fixes = track.segments.flatMap { $0 }
      guard fixes.count >= 2 else {
        if let fix = fixes.first {
          features.append(
            "{\"type\":\"Feature\",\"geometry\":{\"type\":\"Point\",\"coordinates\":\(position(fix))},"
              + "\"properties\":\(properties(fix))}")
        }
        continue
      }
      let coordinates = fixes.map(position).joined(separator: ",")
      let times = fixes.map { "\"\(Timestamp.formatISO8601($0.timestamp))\"" }.joined(separator: ",")
      var props = "\"coordTimes\":[\(times)]"
      if let name = track.name { props = "\"name\":\(jsonString(name))," + props }
      features.append(
        "{\"type\":\"Feature\",\"geometry\":{\"type\":\"LineString\",\"coordinates\":[\(coordinates)]},"
          + "\"properties\":{\(props)}}")
    }
    return "{\"type\":\"FeatureCollection\",\"features\":[" + features.joined(separator: ",") + "]}"
  }

  private static func position(_ fix: LocationFix) -> String {
    var text = "[\(formatNumber(fix.longitude, 7)),\(formatNumber(fix.latitude, 7))"
    if let altitude = fix.altitude { text += ",\(formatNumber(altitude, 2))" }
    return text + "]"
  }

  private static func properties(_ fix: LocationFix) -> String {
    var parts = ["\"timestamp\":\"\(Timestamp.formatISO8601(fix.timestamp))\""]
    func add(_ key: String, _ value: Double?, _ digits: Int) {
      if let value { parts.append("\"\(key)\":\(formatNumber(value, digits))") }
    }
    add("horizontalAccuracy", fix.horizontalAccuracy, 2)
    add("verticalAccuracy", fix.verticalAccuracy, 2)
    add("speed", fix.speed, 3)
    add("speedAccuracy", fix.speedAccuracy, 3)
    add("course", fix.course, 2)
    add("batteryLevel", fix.batteryLevel, 1)
    if let floor = fix.floor { parts.append("\"floor\":\(floor)") }
    if let state = fix.batteryState { parts.append("\"batteryState\":\"\(state.rawValue)\"") }
    parts.append("\"kind\":\"\(fix.kind.rawValue)\"")
    if let trigger = fix.trigger { parts.append("\"trigger\":\"\(trigger.rawValue)\"") }
    if let device = fix.deviceID { parts.append("\"deviceId\":\(jsonString(device.rawValue))") }
    return "{" + parts.joined(separator: ",") + "}"
  }

  static func jsonString(_ text: String) -> String {
    var out = "\""
    for scalar in text.unicodeScalars {
      switch scalar {
      case "\"": out += "\\\""
      case "\\": out += "\\\\"
      case "\n": out += "\\n"
      case "\r": out += "\\r"
      case "\t": out += "\\t"
      case let s where s.value < 0x20: out += String(format: "\\u%04x", s.value)
      default: out.unicodeScalars.append(scalar)
      }
    }
    return out + "\""
  }

  /// Reads every fix of an in-memory GeoJSON document, in document order.
  /// - Throws: ``FormatError`` naming the line and JSON path (e.g. `features[3].properties.timestamp`).
  public static func read(data: Data, deviceID: DeviceID? = nil, kind: FixKind = .imported) throws -> [LocationFix] {
    var reader = GeoJSONReader(deviceID: deviceID, kind: kind)
    var fixes = try reader.feed(data)
    let last = try reader.finish()  // a document read at once usually ends in one of the two: don't copy it
    if fixes.isEmpty { return last }
    fixes += last
    return fixes
  }
}

/// A streaming GeoJSON reader: the members of a top-level `features` array are parsed and converted one at a
/// time, so large FeatureCollections never sit in memory whole. See ``GeoJSON`` for what is accepted.
public struct GeoJSONReader: StreamingFixReader, JSONDrivenFixReader, Sendable {
  var tokenizer = JSONTokenizer()
  private var depth = 0
  private var pendingKey: String?
  private var inFeatures = false
  private var featureIndex = -1
  private var featureLine = 0
  private var builder = JSONValueBuilder()
  private var rootMembers: [(String, JSONValue)] = []
  private var sawFeatures = false
  var output: [LocationFix] = []
  /// The positions skipped so far because they have no time (a fix needs one).
  public private(set) var skipped = SkippedRecords()
  /// The device the fixes are attributed to when a feature has no `deviceId` property.
  public var deviceID: DeviceID?
  /// The kind for features without a `kind` property.
  public var kind: FixKind

  /// A reader at the start of a document.
  public init(deviceID: DeviceID? = nil, kind: FixKind = .imported) {
    self.deviceID = deviceID
    self.kind = kind
  }

  /// Consumes a chunk and returns the fixes of the features completed in it.
  public mutating func feed(_ bytes: some Sequence<UInt8>) throws -> [LocationFix] {
    try drive { try $0.feed(bytes, as: .geojson, $1) }
  }

  /// Ends the document and returns the remaining fixes.
  public mutating func finish() throws -> [LocationFix] {
    var fixes = try drive { try $0.finish(as: .geojson, $1) }
    if !sawFeatures {
      let context = Context(deviceID: deviceID, kind: kind, line: nil)
      try context.readObject(.object(rootMembers), path: "$", properties: nil, into: &fixes, skipped: &skipped)
    }
    return fixes
  }

  /// Streams the file at `url`, calling `body` for every fix; returns the positions skipped for lack of a time.
  @discardableResult
  public static func read(
    contentsOf url: URL, deviceID: DeviceID? = nil, kind: FixKind = .imported, _ body: (LocationFix) throws -> Void
  ) throws -> SkippedRecords {
    var reader = GeoJSONReader(deviceID: deviceID, kind: kind)
    try reader.readAll(contentsOf: url, body)
    return reader.skipped
  }

  mutating func handle(_ event: JSONEvent, line: Int) throws {
    if builder.isBuilding {
      if let value = builder.add(event) { try complete(value, line: line) }
      return
    }
    switch event {
    case .beginObject where depth == 0:
      depth = 1
    case .beginArray where depth == 1 && pendingKey == "features":
      depth = 2
      inFeatures = true
      sawFeatures = true
    case .endArray where depth == 2 && inFeatures:
      depth = 1
      inFeatures = false
    case .endObject where depth == 1:
      depth = 0
    case .key(let key) where depth == 1:
      pendingKey = key
    default:
      if depth == 0 { throw FormatError(.geojson, line: line, "expected a GeoJSON object") }
      if inFeatures {
        featureIndex += 1
        featureLine = line
      }
      if let value = builder.add(event) { try complete(value, line: line) }
    }
  }

  private mutating func complete(_ value: JSONValue, line: Int) throws {
    if inFeatures {
      let context = Context(deviceID: deviceID, kind: kind, line: featureLine)
      try context.readObject(
        value, path: "features[\(featureIndex)]", properties: nil, into: &output, skipped: &skipped)
    } else {
      rootMembers.append((pendingKey ?? "", value))
    }
    pendingKey = nil
  }

  private struct Context {
    let deviceID: DeviceID?
    let kind: FixKind
    let line: Int?

    func fail(_ field: String, _ message: String) -> FormatError {
      FormatError(.geojson, line: line, field: field, message)
    }

    func skip(_ path: String, points: Int = 1, _ reason: String) -> SkippedRecord {
      SkippedRecord(line: line, path: path, points: points, reason: reason)
    }

    func readObject(
      _ value: JSONValue, path: String, properties: JSONValue?, into fixes: inout [LocationFix],
      skipped: inout SkippedRecords
    ) throws {
      guard case .object = value else { throw fail(path, "expected a GeoJSON object") }
      guard let type = value["type"]?.string else { throw fail("\(path).type", "missing 'type'") }
      switch type {
      case "FeatureCollection":
        guard let features = value["features"]?.array else { throw fail("\(path).features", "expected an array") }
        for (index, feature) in features.enumerated() {
          try readObject(feature, path: "features[\(index)]", properties: nil, into: &fixes, skipped: &skipped)
        }
      case "Feature":
        guard let geometry = value["geometry"], geometry != .null else { return }
        try readObject(
          geometry, path: "\(path).geometry", properties: value["properties"] ?? .object([]), into: &fixes,
          skipped: &skipped)
      case "GeometryCollection":
        guard let geometries = value["geometries"]?.array else {
          throw fail("\(path).geometries", "expected an array")
        }
        for (index, geometry) in geometries.enumerated() {
          try readObject(
            geometry, path: "\(path).geometries[\(index)]", properties: properties, into: &fixes, skipped: &skipped)
        }
      case "Point":
        let props = properties ?? .object([])
        let time = try timestamp(props["timestamp"] ?? props["time"], path: "\(path)~properties.timestamp")
        let fix = try makeFix(value["coordinates"], time: time, props: props) { "\(path).coordinates" }
        guard time != nil else {
          return skipped.append(skip(path, "the Point at \(path) has no properties.timestamp"))
        }
        fixes.append(fix)
      case "MultiPoint", "LineString":
        let positions = try array(value["coordinates"], path: "\(path).coordinates")
        try readPositions(
          positions, type: type, path: path, properties: properties, into: &fixes, skipped: &skipped
        ) { "\(path).coordinates[\($0)]" }
      case "MultiLineString":
        let lines = try array(value["coordinates"], path: "\(path).coordinates")
        var positions: [JSONValue] = []
        var places: [(line: Int, index: Int)] = []
        for (l, line) in lines.enumerated() {
          for (i, p) in try array(line, path: "\(path).coordinates[\(l)]").enumerated() {
            positions.append(p)
            places.append((l, i))
          }
        }
        try readPositions(
          positions, type: type, path: path, properties: properties, into: &fixes, skipped: &skipped
        ) { "\(path).coordinates[\(places[$0].line)][\(places[$0].index)]" }
      case "Polygon", "MultiPolygon":
        return
      default:
        throw fail("\(path).type", "unknown GeoJSON type '\(type)'")
      }
    }

    /// The fixes of a line's (or multi-point's) positions, timed by `properties.coordTimes`; `place(i)` is the path
    /// of position `i` (made only for an error or a skipped position).
    func readPositions(
      _ positions: [JSONValue], type: String, path: String, properties: JSONValue?, into fixes: inout [LocationFix],
      skipped: inout SkippedRecords, place: (Int) -> String
    ) throws {
      let times = try timeList(properties, count: positions.count, path: path)
      fixes.reserveCapacity(fixes.count + positions.count)
      for (index, position) in positions.enumerated() {
        let fix = try makeFix(position, time: times?[index], props: .object([])) { place(index) }
        guard let times else { continue }
        guard times[index] != nil else {
          skipped.append(skip(place(index), "the position at \(place(index)) has a null time"))
          continue
        }
        fixes.append(fix)
      }
      if times == nil, !positions.isEmpty {
        skipped.append(skip(path, points: positions.count, "the \(type) at \(path) has no properties.coordTimes"))
      }
    }

    func array(_ value: JSONValue?, path: String) throws -> [JSONValue] {
      guard let array = value?.array else { throw fail(path, "expected an array") }
      return array
    }

    /// One time (or nil for `null`) per position, or nil when the feature has no times at all.
    func timeList(_ properties: JSONValue?, count: Int, path: String) throws -> [Int64?]? {
      let props = properties ?? .object([])
      let raw = props["coordTimes"] ?? props["coordinateProperties"]?["times"] ?? props["times"]
      guard let raw, raw != .null else { return nil }
      guard let list = raw.array else {
        throw fail("\(path)~properties.coordTimes", "expected an array with one time per position")
      }
      var flat: [JSONValue] = []
      flat.reserveCapacity(count)
      for entry in list {
        if let times = entry.array { flat += times } else { flat.append(entry) }
      }
      guard flat.count == count else {
        throw fail("\(path)~properties.coordTimes", "has \(flat.count) times for \(count) positions")
      }
      return try flat.enumerated().map { try timestamp($1, path: "\(path)~properties.coordTimes[\($0)]") }
    }

    /// The time in `value`, or nil when there is none (absent or `null`).
    func timestamp(_ value: JSONValue?, path: String) throws -> Int64? {
      switch value {
      case nil, .null?:
        return nil
      case .string(let text)?:
        if let ms = Timestamp.parseISO8601(text) ?? Int64(text) { return ms }
        throw fail(path, "'\(text)' is not an ISO 8601 time")
      case .number(let text)?:
        if let ms = Int64(text) { return ms }
        if let ms = Double(text), ms.isFinite, abs(ms) < 1e17 { return Int64(ms.rounded()) }
        throw fail(path, "'\(text)' is not a time in epoch milliseconds")
      default:
        throw fail(path, "expected a time (ISO 8601 or epoch ms)")
      }
    }

    /// The fix at `position`, checked; a position without a time gets time 0 (it is checked, then skipped).
    func makeFix(
      _ position: JSONValue?, time: Int64?, props: JSONValue, path: () -> String
    ) throws -> LocationFix {
      guard let numbers = position?.array, numbers.count >= 2 else {
        throw fail(path(), "a position needs [longitude, latitude]")
      }
      func double(_ value: JSONValue, _ name: String) throws -> Double {
        guard let number = value.double else { throw fail("\(path()).\(name)", "not a number") }
        return number
      }
      let lon = try double(numbers[0], "longitude")
      let lat = try double(numbers[1], "latitude")
      let alt = numbers.count > 2 ? try double(numbers[2], "altitude") : nil
      func prop(_ key: String) -> Double? { props[key]?.double }
      var floor: Int?
      if let value = prop("floor") {
        guard value.rounded() == value, abs(value) <= 1000 else {
          throw fail("\(path()).floor", "\(value) is not a floor number (a whole number −1000…1000)")
        }
        floor = Int(value)
      }
      do {
        return try LocationFix(
          deviceID: props["deviceId"]?.string.map { DeviceID($0) } ?? deviceID, timestamp: time ?? 0, latitude: lat,
          longitude: lon, horizontalAccuracy: prop("horizontalAccuracy") ?? prop("accuracy"),
          verticalAccuracy: prop("verticalAccuracy"), altitude: alt, speed: prop("speed"),
          speedAccuracy: prop("speedAccuracy"), course: prop("course"), floor: floor,
          batteryLevel: prop("batteryLevel"),
          batteryState: props["batteryState"]?.string.flatMap(BatteryState.init(rawValue:)),
          kind: props["kind"]?.string.flatMap(FixKind.init(rawValue:)) ?? kind,
          trigger: props["trigger"]?.string.flatMap(FixTrigger.init(rawValue:)))
      } catch {
        throw fail("\(path()).\(error.field)", error.description)
      }
    }
  }
}
