import Foundation

#if canImport(FoundationXML)
  import FoundationXML
#endif

/// Where a point read from a GPX file came from.
public enum GPXPointKind: Sendable, Hashable {
  /// A `trkpt`: track index and segment index (0-based) within the file.
  case track(track: Int, segment: Int)
  /// A `wpt` with its optional `name`.
  case waypoint(name: String?)
  /// A `rtept` of route `route` (0-based).
  case route(route: Int)
}

/// One point read from a GPX file.
public struct GPXPoint: Sendable, Hashable {
  /// The fix (time, lat, lon, ele → altitude, speed, course).
  public var fix: LocationFix
  /// Track/segment, waypoint or route.
  public var kind: GPXPointKind
}

/// A `wpt` or `rtept` that was skipped rather than read, because a ``LocationFix`` needs a time and GPX makes
/// `<time>` optional there. (A `trkpt` without `<time>` is an error instead: a track is a timed sequence.)
public struct GPXSkippedPoint: Sendable, Hashable {
  /// The waypoint (with its `name`) or route point.
  public var kind: GPXPointKind
  /// 1-based line of the point's start tag.
  public var line: Int
  /// Why it was skipped, for a person.
  public var reason: String
}

/// Everything read from a GPX document: the points, and the waypoints/route points skipped for lack of a time.
public struct GPXReadResult: Sendable, Hashable {
  /// The points read, in document order.
  public var points: [GPXPoint]
  /// The points skipped, in document order (`skipped.count` is the number to report to the user).
  public var skipped: [GPXSkippedPoint]
}

/// A track to write: a name and its segments of fixes.
public struct GPXTrack: Sendable, Hashable {
  /// The track's `name`, if any.
  public var name: String?
  /// The segments (`trkseg`), each a list of fixes in time order.
  public var segments: [[LocationFix]]

  /// A track.
  public init(name: String? = nil, segments: [[LocationFix]]) {
    self.name = name
    self.segments = segments
  }
}

/// GPX 1.1 reading (streaming, via `XMLParser`) and writing.
///
/// Reads `trk/trkseg/trkpt`, `wpt` and `rte/rtept` with `lat`/`lon` attributes and `ele`, `time` children; speed
/// (m/s) and course (degrees) come from the Garmin `TrackPointExtension` (`gpxtpx:speed`, `gpxtpx:course`), from plain
/// `<speed>`/`<course>` children (GPX 1.0 style) or from any extension element with those local names. A fix is
/// identified by its time, so a `trkpt` without `<time>` is an error naming its line, while a `wpt` or `rtept`
/// without one (valid GPX) is skipped and reported as a ``GPXSkippedPoint``. Errors name the line.
public enum GPX {
  /// The GPX 1.1 namespace.
  public static let namespace = "http://www.topografix.com/GPX/1/1"
  /// The Garmin TrackPointExtension v2 namespace (speed, course).
  public static let trackPointExtensionNamespace = "http://www.garmin.com/xmlschemas/TrackPointExtension/v2"

  /// Streams the GPX file at `url`, calling `body` for each point in document order and `skipped` for each
  /// waypoint or route point without a time.
  public static func read(
    contentsOf url: URL, deviceID: DeviceID? = nil, kind: FixKind = .imported,
    skipped: (GPXSkippedPoint) -> Void = { _ in }, _ body: (GPXPoint) throws -> Void
  ) throws {
    guard let stream = InputStream(url: url) else {
      throw FormatError(.gpx, "cannot open \(url.path)")
    }
    try parse(XMLParser(stream: stream), deviceID: deviceID, kind: kind, skipped: skipped, body)
  }

  /// Reads every point of an in-memory GPX document (waypoints and route points without a time are left out;
  /// ``readWithSkipped(data:deviceID:kind:)`` reports them).
  public static func read(data: Data, deviceID: DeviceID? = nil, kind: FixKind = .imported) throws -> [GPXPoint] {
    try readWithSkipped(data: data, deviceID: deviceID, kind: kind).points
  }

  /// Reads every point of an in-memory GPX document and lists the waypoints and route points skipped for lack
  /// of a `<time>`.
  public static func readWithSkipped(
    data: Data, deviceID: DeviceID? = nil, kind: FixKind = .imported
  ) throws -> GPXReadResult {
    var result = GPXReadResult(points: [], skipped: [])
    try parse(XMLParser(data: data), deviceID: deviceID, kind: kind, skipped: { result.skipped.append($0) }) {
      result.points.append($0)
    }
    return result
  }

  private static func parse(
    _ parser: XMLParser, deviceID: DeviceID?, kind: FixKind, skipped: (GPXSkippedPoint) -> Void,
    _ body: (GPXPoint) throws -> Void
  ) throws {
    try withoutActuallyEscaping(skipped) { skipped in
      try withoutActuallyEscaping(body) { body in
        try run(parser, GPXParserDelegate(deviceID: deviceID, kind: kind, skipped: skipped, body: body))
      }
    }
  }

  private static func run(_ parser: XMLParser, _ delegate: GPXParserDelegate) throws {
    do {
      parser.delegate = delegate
      defer { parser.delegate = nil }
      let ok = parser.parse()
      if let error = delegate.error { throw error }
      if !ok {
        let message = parser.parserError.map { "malformed XML (\($0.localizedDescription))" } ?? "malformed XML"
        throw FormatError(.gpx, line: parser.lineNumber, message)
      }
      guard delegate.sawRoot else { throw FormatError(.gpx, "no <gpx> root element") }
      guard delegate.rootClosed else {
        throw FormatError(.gpx, line: parser.lineNumber, "the document ends before </gpx> (truncated file?)")
      }
    }
  }

  /// Writes a GPX 1.1 document with `version="1.1"`, `creator`, the waypoints and the tracks.
  public static func write(
    tracks: [GPXTrack], waypoints: [(fix: LocationFix, name: String?)] = [], creator: String = "Meridian",
    to output: inout some TextOutputStream
  ) {
    output.write("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n")
    output.write(
      "<gpx version=\"1.1\" creator=\"\(escape(creator))\" xmlns=\"\(namespace)\" "
        + "xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" "
        + "xmlns:gpxtpx=\"\(trackPointExtensionNamespace)\" "
        + "xsi:schemaLocation=\"\(namespace) http://www.topografix.com/GPX/1/1/gpx.xsd\">\n")
    for waypoint in waypoints {
      writePoint("wpt", waypoint.fix, name: waypoint.name, indent: "  ", to: &output)
    }
    for track in tracks {
      output.write("  <trk>\n")
      if let name = track.name { output.write("    <name>\(escape(name))</name>\n") }
      for segment in track.segments {
        output.write("    <trkseg>\n")
        for fix in segment { writePoint("trkpt", fix, name: nil, indent: "      ", to: &output) }
        output.write("    </trkseg>\n")
      }
      output.write("  </trk>\n")
    }
    output.write("</gpx>\n")
  }

  /// A GPX document as a string (see ``write(tracks:waypoints:creator:to:)``).
  public static func document(
    tracks: [GPXTrack], waypoints: [(fix: LocationFix, name: String?)] = [], creator: String = "Meridian"
  ) -> String {
    var text = ""
    write(tracks: tracks, waypoints: waypoints, creator: creator, to: &text)
    return text
  }

  private static func writePoint(
    _ element: String, _ fix: LocationFix, name: String?, indent: String, to output: inout some TextOutputStream
  ) {
    output.write(
      "\(indent)<\(element) lat=\"\(formatNumber(fix.latitude, 7))\" lon=\"\(formatNumber(fix.longitude, 7))\">\n")
    if let altitude = fix.altitude { output.write("\(indent)  <ele>\(formatNumber(altitude, 2))</ele>\n") }
    output.write("\(indent)  <time>\(Timestamp.formatISO8601(fix.timestamp))</time>\n")
    if let name { output.write("\(indent)  <name>\(escape(name))</name>\n") }
    if fix.speed != nil || fix.course != nil {
      output.write("\(indent)  <extensions>\n\(indent)    <gpxtpx:TrackPointExtension>\n")
      if let speed = fix.speed {
        output.write("\(indent)      <gpxtpx:speed>\(formatNumber(speed, 3))</gpxtpx:speed>\n")
      }
      if let course = fix.course {
        output.write("\(indent)      <gpxtpx:course>\(formatNumber(course, 2))</gpxtpx:course>\n")
      }
      output.write("\(indent)    </gpxtpx:TrackPointExtension>\n\(indent)  </extensions>\n")
    }
    output.write("\(indent)</\(element)>\n")
  }

  /// Escapes `&`, `<`, `>`, `"` and `'` for XML text and attributes.
  public static func escape(_ text: String) -> String {
    var out = ""
    out.reserveCapacity(text.count)
    for character in text {
      switch character {
      case "&": out += "&amp;"
      case "<": out += "&lt;"
      case ">": out += "&gt;"
      case "\"": out += "&quot;"
      case "'": out += "&apos;"
      default: out.append(character)
      }
    }
    return out
  }
}

/// `value` with at most `digits` fraction digits, trailing zeros removed, never in exponent notation.
func formatNumber(_ value: Double, _ digits: Int) -> String {
  var text = String(format: "%.\(digits)f", value)
  if text.contains(".") {
    while text.hasSuffix("0") { text.removeLast() }
    if text.hasSuffix(".") { text.removeLast() }
  }
  if text == "-0" { text = "0" }
  return text
}

private final class GPXParserDelegate: NSObject, XMLParserDelegate {
  let deviceID: DeviceID?
  let kind: FixKind
  let body: (GPXPoint) throws -> Void
  let skipped: (GPXSkippedPoint) -> Void
  var error: (any Error)?
  var sawRoot = false
  var rootClosed = false

  private var text = ""
  private var point: (lat: Double, lon: Double, line: Int, kind: GPXPointKind)?
  private var values: [String: String] = [:]
  private var trackIndex = -1
  private var segmentIndex = -1
  private var routeIndex = -1
  private var depthInPoint = 0

  init(
    deviceID: DeviceID?, kind: FixKind, skipped: @escaping (GPXSkippedPoint) -> Void,
    body: @escaping (GPXPoint) throws -> Void
  ) {
    self.deviceID = deviceID
    self.kind = kind
    self.skipped = skipped
    self.body = body
  }

  private func fail(_ parser: XMLParser, _ error: FormatError) {
    if self.error == nil { self.error = error }
    parser.abortParsing()
  }

  private static func localName(_ name: String) -> String {
    if let colon = name.lastIndex(of: ":") { return String(name[name.index(after: colon)...]) }
    return name
  }

  func parser(
    _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName qName: String?,
    attributes attributeDict: [String: String] = [:]
  ) {
    let name = Self.localName(elementName)
    text = ""
    if !sawRoot {
      guard name == "gpx" else {
        fail(parser, FormatError(.gpx, line: parser.lineNumber, field: name, "the root element must be <gpx>"))
        return
      }
      sawRoot = true
      return
    }
    if point != nil {
      depthInPoint += 1
      return
    }
    switch name {
    case "trk":
      trackIndex += 1
      segmentIndex = -1
    case "trkseg": segmentIndex += 1
    case "rte": routeIndex += 1
    case "trkpt", "wpt", "rtept":
      let line = parser.lineNumber
      guard let latText = attributeDict["lat"] else {
        fail(parser, FormatError(.gpx, line: line, field: "lat", "<\(name)> has no lat attribute"))
        return
      }
      guard let lonText = attributeDict["lon"] else {
        fail(parser, FormatError(.gpx, line: line, field: "lon", "<\(name)> has no lon attribute"))
        return
      }
      guard let lat = NumberText.double(latText) else {
        fail(parser, FormatError(.gpx, line: line, field: "lat", "'\(latText)' is not a number"))
        return
      }
      guard let lon = NumberText.double(lonText) else {
        fail(parser, FormatError(.gpx, line: line, field: "lon", "'\(lonText)' is not a number"))
        return
      }
      let kind: GPXPointKind =
        switch name {
        case "trkpt": .track(track: max(trackIndex, 0), segment: max(segmentIndex, 0))
        case "rtept": .route(route: max(routeIndex, 0))
        default: .waypoint(name: nil)
        }
      point = (lat, lon, line, kind)
      values = [:]
      depthInPoint = 0
    default: break
    }
  }

  func parser(_ parser: XMLParser, foundCharacters string: String) {
    if point != nil { text += string }
  }

  func parser(
    _ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?
  ) {
    let name = Self.localName(elementName)
    guard let current = point else {
      if name == "gpx" { rootClosed = true }
      return
    }
    if depthInPoint > 0 {
      depthInPoint -= 1
      switch name {
      case "ele", "time", "speed", "course", "name":
        values[name] = text.trimmingCharacters(in: .whitespacesAndNewlines)
      default: break
      }
      text = ""
      return
    }
    point = nil
    do {
      try emit(current, parser: parser)
    } catch {
      if self.error == nil { self.error = error }
      parser.abortParsing()
    }
  }

  private func emit(_ p: (lat: Double, lon: Double, line: Int, kind: GPXPointKind), parser: XMLParser) throws {
    func number(_ key: String) throws -> Double? {
      guard let text = values[key] else { return nil }
      guard let value = NumberText.double(text) else {
        throw FormatError(.gpx, line: p.line, field: key, "'\(text)' is not a number")
      }
      return value
    }
    var kind = p.kind
    if case .waypoint = kind { kind = .waypoint(name: values["name"]) }
    guard let timeText = values["time"] else {
      switch kind {
      case .track:
        throw FormatError(
          .gpx, line: p.line, field: "time", "the <trkpt> on line \(p.line) has no <time> (a track point needs one)")
      case .waypoint:
        skipped(GPXSkippedPoint(kind: kind, line: p.line, reason: "the <wpt> on line \(p.line) has no <time>"))
      case .route:
        skipped(GPXSkippedPoint(kind: kind, line: p.line, reason: "the <rtept> on line \(p.line) has no <time>"))
      }
      return
    }
    guard let timestamp = Timestamp.parseISO8601(timeText) else {
      throw FormatError(.gpx, line: p.line, field: "time", "'\(timeText)' is not an ISO 8601 time")
    }
    var course = try number("course")
    if course == 360 { course = 0 }
    do {
      let fix = try LocationFix(
        deviceID: deviceID, timestamp: timestamp, latitude: p.lat, longitude: p.lon, altitude: number("ele"),
        speed: number("speed"), course: course, kind: self.kind)
      try body(GPXPoint(fix: fix, kind: kind))
    } catch let error as FixValidationError {
      let field = ["latitude": "lat", "longitude": "lon", "altitude": "ele"][error.field] ?? error.field
      throw FormatError(.gpx, line: p.line, field: field, error.description)
    }
  }
}
