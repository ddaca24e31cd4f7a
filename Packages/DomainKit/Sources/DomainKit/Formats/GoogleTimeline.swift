import Foundation

/// Which of Google's location history exports a JSON document is.
public enum GoogleExportShape: String, Sendable, Hashable, Codable {
  /// Takeout's `Records.json`: `{"locations": [...]}` (read by ``TakeoutReader``).
  case records
  /// Takeout's monthly Semantic Location History files: `{"timelineObjects": [...]}`.
  case semanticHistory
  /// The phone's Timeline export, Android shape: `{"semanticSegments": [...], "rawSignals": [...], ...}`.
  case androidTimeline
  /// The phone's Timeline export, iOS shape: a bare array of segments with `geo:` coordinates.
  case iosTimeline

  /// The shape of a document from its first bytes (the first top-level key Google puts first, or a top-level
  /// array of objects); nil when it is none of them (GeoJSON, OwnTracks, not JSON).
  public static func detect(_ head: some Sequence<UInt8>) -> GoogleExportShape? {
    var tokenizer = JSONTokenizer()
    var depth = 0
    var found: GoogleExportShape?
    var topArray = false
    do {
      try tokenizer.feed(head) { event, _ in
        switch event {
        case .beginObject, .beginArray:
          if depth == 0, event == .beginArray { topArray = true }
          if depth == 1, topArray {
            found = event == .beginObject ? .iosTimeline : nil
            throw ShapeDecided()
          }
          depth += 1
        case .endObject, .endArray: depth -= 1
        case .key(let key) where depth == 1 && !topArray:
          switch key {
          case "locations": found = .records
          case "timelineObjects": found = .semanticHistory
          case "semanticSegments", "rawSignals", "userLocationProfile": found = .androidTimeline
          default: break
          }
          if found != nil { throw ShapeDecided() }
        default:
          if depth == 1, topArray { throw ShapeDecided() }
        }
      }
    } catch {}
    return found
  }
}

/// Stops ``GoogleExportShape/detect(_:)`` once it knows.
private struct ShapeDecided: Error {}

/// What a Google Timeline import read, for its summary.
public struct GoogleTimelineSummary: Sendable, Hashable, Codable, CustomStringConvertible {
  /// The export's shape.
  public var shape: GoogleExportShape?
  /// Visits (each gives a fix of kind `visit` at its start and at its end).
  public var visits = 0
  /// Activities (a fix at the start and at the end, unless raw positions cover them).
  public var activities = 0
  /// Raw positions (`rawSignals[].position`, Records.json locations).
  public var rawPositions = 0
  /// Path points taken (`timelinePath`, `simplifiedRawPath`).
  public var pathPoints = 0
  /// Path points and activity ends left out because raw positions cover their segment's period: two independently
  /// sampled streams are not merged into one track.
  public var replacedByRaw = 0
  /// Elements without a position (Wi-Fi scans, activity records, paths without times, places without a location).
  public var ignored = 0

  /// A summary.
  public init() {}

  /// One line for a person.
  public var description: String {
    var text = "\(shape?.rawValue ?? "unknown"): \(visits) visits, \(activities) activities, \(rawPositions) raw"
    text += " positions, \(pathPoints) path points"
    if replacedByRaw > 0 { text += " (\(replacedByRaw) path points left out where raw positions cover the period)" }
    if ignored > 0 { text += ", \(ignored) elements without a position ignored" }
    return text
  }
}

/// A streaming reader of every Google location history export: Takeout's `Records.json` and monthly Semantic
/// Location History files, and the phone's Timeline export in its Android (`semanticSegments`, `rawSignals`) and iOS
/// (a bare array of segments) shapes, recognised by content.
///
/// Visits become fixes of kind ``FixKind/visit`` at their start and end at the place's location (so stay detection
/// finds them); activities give their start and end; paths their points; raw signals their positions with accuracy,
/// altitude and speed. Where an Android file holds raw positions for a segment's period, that segment's path points
/// and activity ends are left out (they are kept until the end of the file to decide, the only buffered part);
/// ``summary`` says how many. Memory otherwise stays bounded by one element.
///
/// E7 coordinates above 900000000 (latitude) or 1800000000 (longitude) are wrapped 32-bit overflows and corrected by
/// subtracting 2^32; what is out of range after that is an error naming the element.
public struct GoogleTimelineReader: StreamingFixReader, JSONDrivenFixReader, Sendable {
  var tokenizer = JSONTokenizer()
  var output: [LocationFix] = []
  private var depth = 0
  private var section: String?
  private var pendingKey: String?
  private var skipDepth = 0
  private var builder = JSONValueBuilder()
  private var records = TakeoutRecordBuilder()
  private var elementLine = 0
  private var elementIndex = -1
  private var rawTimes: [Int64] = []
  private var buffered: [(fix: LocationFix, start: Int64, end: Int64)] = []
  /// What was read so far.
  public private(set) var summary = GoogleTimelineSummary()
  /// The `Records.json` records skipped so far because they have no time (counted, never a reason to refuse the file).
  public private(set) var skipped = SkippedRecords()
  /// The device the fixes are attributed to.
  public var deviceID: DeviceID?

  /// A reader at the start of a file.
  public init(deviceID: DeviceID? = nil) { self.deviceID = deviceID }

  /// Consumes a chunk and returns the fixes completed in it.
  /// - Throws: ``FormatError`` naming the line and element at fault.
  public mutating func feed(_ bytes: some Sequence<UInt8>) throws -> [LocationFix] {
    try drive { try $0.feed(bytes, as: .googleTimeline, $1) }
  }

  /// Ends the input and returns the path points no raw position covers; throws when the file is truncated or is
  /// no Google export.
  public mutating func finish() throws -> [LocationFix] {
    var fixes = try drive { try $0.finish(as: .googleTimeline, $1) }
    guard summary.shape != nil else {
      throw FormatError(
        .googleTimeline,
        "not a Google location history export (no locations, timelineObjects, semanticSegments"
          + " or rawSignals, nor an array of segments)")
    }
    rawTimes.sort()
    for item in buffered {
      let first = rawTimes.partitioningIndex { $0 >= item.start }
      if first < rawTimes.count, rawTimes[first] <= item.end {
        summary.replacedByRaw += 1
      } else {
        if item.fix.kind == .imported { summary.pathPoints += 1 }
        fixes.append(item.fix)
      }
    }
    buffered.removeAll()
    return fixes
  }

  /// Streams the file at `url` in 64 KiB chunks and calls `body` for every fix; returns the summary.
  public static func read(
    contentsOf url: URL, deviceID: DeviceID? = nil, _ body: (LocationFix) throws -> Void
  ) throws -> GoogleTimelineSummary {
    var reader = GoogleTimelineReader(deviceID: deviceID)
    try reader.readAll(contentsOf: url, body)
    return reader.summary
  }

  mutating func handle(_ event: JSONEvent, line: Int) throws {
    if records.isBuilding {
      if let record = records.add(event),
        let fix = try TakeoutReader.fix(
          record, line: elementLine, index: elementIndex, deviceID: deviceID, kind: .imported, format: .googleTimeline,
          skipped: &skipped)
      {
        output.append(fix)
        summary.rawPositions += 1
      }
      return
    }
    if builder.isBuilding {
      if let value = builder.add(event) { try take(value) }
      return
    }
    if skipDepth > 0 {
      skipDepth += event.nesting
      return
    }
    switch event {
    case .beginObject, .beginArray:
      if depth == 0 {
        if event == .beginArray {
          summary.shape = .iosTimeline
          section = "segments"
        }
      } else if depth == 1, summary.shape == .iosTimeline {
        guard event == .beginObject else {
          throw FormatError(.googleTimeline, line: line, field: "[\(elementIndex + 1)]", "expected a segment object")
        }
        start(line: line)
        _ = builder.add(event)
        return
      } else if depth == 1, let key = pendingKey, Self.sections[key] != nil {
        guard event == .beginArray else {
          throw FormatError(.googleTimeline, line: line, field: key, "expected an array")
        }
        if summary.shape == nil { summary.shape = Self.sections[key] }
        section = key
        elementIndex = -1
      } else if depth == 2, section != nil, event == .beginObject {
        start(line: line)
        // Records.json's records, a million or more, are read member by member, not built as JSON values.
        if section == "locations" { _ = records.add(event) } else { _ = builder.add(event) }
        return
      } else if depth == 2, section != nil {
        throw FormatError(
          .googleTimeline, line: line, field: "\(section ?? "")[\(elementIndex + 1)]", "expected an object")
      } else {
        skipDepth = 1
        pendingKey = nil
        return
      }
      depth += 1
      pendingKey = nil
    case .endObject, .endArray:
      depth -= 1
      if depth == 1, summary.shape != .iosTimeline { section = nil }
      pendingKey = nil
    case .key(let key):
      pendingKey = key
    default:
      if depth == 1, summary.shape == .iosTimeline {
        throw FormatError(.googleTimeline, line: line, field: "[\(elementIndex + 1)]", "expected a segment object")
      }
      if depth == 2, let section {
        throw FormatError(.googleTimeline, line: line, field: "\(section)[\(elementIndex + 1)]", "expected an object")
      }
      if depth == 1, let key = pendingKey, Self.sections[key] != nil {
        throw FormatError(.googleTimeline, line: line, field: key, "expected an array")
      }
      pendingKey = nil
    }
  }

  /// The top-level arrays read, and the shape each says the file is.
  static let sections: [String: GoogleExportShape] = [
    "locations": .records, "timelineObjects": .semanticHistory, "semanticSegments": .androidTimeline,
    "rawSignals": .androidTimeline,
  ]

  private mutating func start(line: Int) {
    elementLine = line
    elementIndex += 1
  }

  private mutating func take(_ value: JSONValue) throws {
    let element = Element(
      value: value, line: elementLine, path: "\(section == "segments" ? "" : section ?? "")[\(elementIndex)]")
    switch section {
    case "timelineObjects": try semanticObject(element)
    case "rawSignals": try rawSignal(element)
    default: try segment(element)
    }
  }

  // MARK: Semantic Location History

  private mutating func semanticObject(_ element: Element) throws {
    if let visit = element.value["placeVisit"] {
      let (start, end) = try element.duration(visit["duration"], at: "placeVisit.duration")
      let location = visit["location"]
      let coordinate =
        try (location.map { try element.e7($0, "latitudeE7", "longitudeE7", at: "placeVisit.location") } ?? nil)
        ?? element.e7(visit, "centerLatE7", "centerLngE7", at: "placeVisit")
      guard let coordinate else {
        summary.ignored += 1
        return
      }
      summary.visits += 1
      try emitVisit(element, coordinate, start: start, end: end)
    } else if let activity = element.value["activitySegment"] {
      let (start, end) = try element.duration(activity["duration"], at: "activitySegment.duration")
      summary.activities += 1
      if let from = activity["startLocation"],
        let coordinate = try element.e7(from, "latitudeE7", "longitudeE7", at: "activitySegment.startLocation")
      {
        output.append(try element.fix(coordinate, at: start, deviceID: deviceID, kind: .imported))
      }
      for (index, point) in (try element.array(activity["simplifiedRawPath"]?["points"], "simplifiedRawPath.points"))
        .enumerated()
      {
        let at = "activitySegment.simplifiedRawPath.points[\(index)]"
        guard let coordinate = try element.e7(point, "latE7", "lngE7", at: at) else { continue }
        let time =
          try element.time(point["timestamp"], at: at + ".timestamp")
          ?? element.milliseconds(point["timestampMs"], at: at + ".timestampMs")
        guard let time else {
          summary.ignored += 1
          continue
        }
        output.append(
          try element.fix(coordinate, at: time, accuracy: point["accuracyMeters"]?.double, deviceID: deviceID))
        summary.pathPoints += 1
      }
      if let to = activity["endLocation"],
        let coordinate = try element.e7(to, "latitudeE7", "longitudeE7", at: "activitySegment.endLocation")
      {
        output.append(try element.fix(coordinate, at: end, deviceID: deviceID, kind: .imported))
      }
    } else {
      summary.ignored += 1
    }
  }

  // MARK: The phone's Timeline export

  private mutating func rawSignal(_ element: Element) throws {
    guard let position = element.value["position"] else {
      summary.ignored += 1
      return
    }
    let coordinate = try element.latLng(position["LatLng"] ?? position["latLng"], at: "position.LatLng")
    guard let time = try element.time(position["timestamp"], at: "position.timestamp") else {
      throw element.error("position.timestamp", "missing")
    }
    output.append(
      try element.fix(
        coordinate, at: time, accuracy: element.number(position["accuracyMeters"], at: "position.accuracyMeters"),
        altitude: element.number(position["altitudeMeters"], at: "position.altitudeMeters"),
        speed: element.number(position["speedMetersPerSecond"], at: "position.speedMetersPerSecond"),
        deviceID: deviceID))
    rawTimes.append(time)
    summary.rawPositions += 1
  }

  private mutating func segment(_ element: Element) throws {
    guard let start = try element.time(element.value["startTime"], at: "startTime") else {
      throw element.error("startTime", "missing")
    }
    let end = try element.time(element.value["endTime"], at: "endTime") ?? start
    guard end >= start else { throw element.error("endTime", "is before startTime") }
    // Path points and activity ends yield to raw positions in an Android file (decided at the end).
    let deferred = summary.shape == .androidTimeline
    func derived(_ fix: LocationFix, path: Bool) {
      if deferred {
        buffered.append((fix, start, end))
      } else if path {
        summary.pathPoints += 1
        output.append(fix)
      } else {
        output.append(fix)
      }
    }
    if let visit = element.value["visit"] {
      let location = visit["topCandidate"]?["placeLocation"]
      guard let location else {
        summary.ignored += 1
        return
      }
      let coordinate = try element.latLng(location["latLng"] ?? location, at: "visit.topCandidate.placeLocation")
      summary.visits += 1
      try emitVisit(element, coordinate, start: start, end: end)
    } else if let activity = element.value["activity"] {
      summary.activities += 1
      for (key, time) in [("start", start), ("end", end)] {
        guard let place = activity[key] else { continue }
        let coordinate = try element.latLng(place["latLng"] ?? place, at: "activity.\(key)")
        derived(try element.fix(coordinate, at: time, deviceID: deviceID, kind: .movement), path: false)
      }
    } else if let path = element.value["timelinePath"] {
      for (index, point) in try element.array(path, "timelinePath").enumerated() {
        let at = "timelinePath[\(index)]"
        let coordinate = try element.latLng(point["point"], at: at + ".point")
        var time = try element.time(point["time"], at: at + ".time")
        if time == nil, let minutes = try element.number(point["durationMinutesOffsetFromStartTime"], at: at) {
          time = start + Int64(minutes * 60_000)
        }
        guard let time else { throw element.error(at + ".time", "missing") }
        derived(try element.fix(coordinate, at: time, deviceID: deviceID), path: true)
      }
    } else {
      summary.ignored += 1
    }
  }

  private mutating func emitVisit(_ element: Element, _ coordinate: (Double, Double), start: Int64, end: Int64) throws {
    output.append(try element.fix(coordinate, at: start, deviceID: deviceID, kind: .visit))
    if end > start { output.append(try element.fix(coordinate, at: end, deviceID: deviceID, kind: .visit)) }
  }

  /// One element being read, for typed access with errors that name it.
  private struct Element {
    var value: JSONValue
    var line: Int
    var path: String

    func error(_ field: String, _ message: String) -> FormatError {
      FormatError(.googleTimeline, line: line, field: "\(path).\(field)", message)
    }

    func number(_ value: JSONValue?, at field: String) throws -> Double? {
      switch value {
      case nil, .null?: return nil
      case .number(let text)?, .string(let text)?:
        guard let number = NumberText.double(text) else { throw error(field, "'\(text)' is not a number") }
        return number
      default: throw error(field, "expected a number")
      }
    }

    func array(_ value: JSONValue?, _ field: String) throws -> [JSONValue] {
      switch value {
      case nil, .null?: return []
      case .array(let elements)?: return elements
      default: throw error(field, "expected an array")
      }
    }

    func time(_ value: JSONValue?, at field: String) throws -> Int64? {
      switch value {
      case nil, .null?: return nil
      case .string(let text)?:
        guard let time = Timestamp.parseISO8601(text) else { throw error(field, "'\(text)' is not ISO 8601") }
        return time
      default: throw error(field, "expected an ISO 8601 time")
      }
    }

    func milliseconds(_ value: JSONValue?, at field: String) throws -> Int64? {
      guard let number = try number(value, at: field) else { return nil }
      guard abs(number) < 1e15 else { throw error(field, "'\(number)' is not a time in milliseconds") }
      return Int64(number)
    }

    func duration(_ value: JSONValue?, at field: String) throws -> (Int64, Int64) {
      guard let value else { throw error(field, "missing") }
      let start =
        try time(value["startTimestamp"], at: field + ".startTimestamp")
        ?? milliseconds(value["startTimestampMs"], at: field + ".startTimestampMs")
      guard let start else { throw error(field + ".startTimestamp", "missing") }
      let end =
        try time(value["endTimestamp"], at: field + ".endTimestamp")
        ?? milliseconds(value["endTimestampMs"], at: field + ".endTimestampMs") ?? start
      guard end >= start else { throw error(field + ".endTimestamp", "is before the start") }
      return (start, end)
    }

    /// Degrees from E7 members; nil when both are absent.
    func e7(_ value: JSONValue, _ latitude: String, _ longitude: String, at field: String) throws -> (Double, Double)? {
      let lat = try number(value[latitude], at: "\(field).\(latitude)")
      let lon = try number(value[longitude], at: "\(field).\(longitude)")
      guard let lat, let lon else {
        if lat == nil, lon == nil { return nil }
        throw error("\(field).\(lat == nil ? latitude : longitude)", "missing")
      }
      return (
        (lat > 900_000_000 ? lat - 4_294_967_296 : lat) / 1e7, (lon > 1_800_000_000 ? lon - 4_294_967_296 : lon) / 1e7
      )
    }

    /// `"48.8566°, 2.3522°"` (Android) or `"geo:48.8566,2.3522"` (iOS).
    func latLng(_ value: JSONValue?, at field: String) throws -> (Double, Double) {
      guard case .string(let text)? = value else {
        throw error(field, value == nil ? "missing" : "expected a \"lat°, lng°\" or \"geo:lat,lng\" string")
      }
      var body = Substring(text)
      if body.hasPrefix("geo:") { body = body.dropFirst(4) }
      // Each number without the spaces around it and its degree sign (Foundation's string search per coordinate
      // made a 1 MiB export take over a second in the fuzzer).
      let parts = body.split(separator: ",", omittingEmptySubsequences: false).map { part -> Substring in
        var number = part.drop { $0 == " " || $0 == "\t" }
        while let last = number.last, last == " " || last == "\t" || last == "°" { number = number.dropLast() }
        return number
      }
      guard parts.count == 2, let lat = NumberText.double(parts[0]), let lon = NumberText.double(parts[1]) else {
        throw error(field, "'\(text)' is not a \"lat°, lng°\" or \"geo:lat,lng\" coordinate")
      }
      return (lat, lon)
    }

    func fix(
      _ coordinate: (Double, Double), at time: Int64, accuracy: Double? = nil, altitude: Double? = nil,
      speed: Double? = nil, deviceID: DeviceID?, kind: FixKind = .imported
    ) throws -> LocationFix {
      do {
        return try LocationFix(
          deviceID: deviceID, timestamp: time, latitude: coordinate.0, longitude: coordinate.1,
          horizontalAccuracy: accuracy, altitude: altitude, speed: speed, kind: kind)
      } catch let failure {
        throw error(failure.field, failure.description)
      }
    }
  }
}

extension Array where Element == Int64 {
  /// The first index whose element satisfies `belongs`, for a sorted array where it holds from some index on.
  fileprivate func partitioningIndex(where belongs: (Int64) -> Bool) -> Int {
    var low = 0
    var high = count
    while low < high {
      let middle = (low + high) / 2
      if belongs(self[middle]) { high = middle } else { low = middle + 1 }
    }
    return low
  }
}
