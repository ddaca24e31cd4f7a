import Foundation

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

/// A `trkpt`, `wpt` or `rtept` that was skipped rather than read, because a ``LocationFix`` needs a time and GPX 1.1
/// makes `<time>` optional.
public struct GPXSkippedPoint: Sendable, Hashable {
  /// The waypoint (with its `name`) or route point.
  public var kind: GPXPointKind
  /// 1-based line of the point's start tag.
  public var line: Int
  /// Why it was skipped, for a person.
  public var reason: String

  /// The same, as a format-independent ``SkippedRecord``.
  public var record: SkippedRecord { SkippedRecord(line: line, reason: reason) }
}

/// Everything read from a GPX document: the points, and the points skipped for lack of a time.
public struct GPXReadResult: Sendable, Hashable {
  /// The points read, in document order.
  public var points: [GPXPoint]
  /// The points skipped, in document order (`skipped.count` is the number to report to the user).
  public var skipped: [GPXSkippedPoint]

  /// The skipped points as a count and the first few (for an import summary).
  public var skippedRecords: SkippedRecords {
    var records = SkippedRecords()
    for point in skipped { records.append(point.record) }
    return records
  }
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

/// GPX 1.1 reading (streaming, with libxml2's push parser) and writing.
///
/// Reads `trk/trkseg/trkpt`, `wpt` and `rte/rtept` with `lat`/`lon` attributes and `ele`, `time` children; speed
/// (m/s) and course (degrees) come from the Garmin `TrackPointExtension` (`gpxtpx:speed`, `gpxtpx:course`), from plain
/// `<speed>`/`<course>` children (GPX 1.0 style) or from any extension element with those local names. A fix is
/// identified by its time, and GPX makes `<time>` optional, so a point without one is skipped and reported as a
/// ``GPXSkippedPoint`` with its line. A document that is not well-formed XML (including bytes that are not UTF-8
/// in a UTF-8 document), a bad number or a coordinate out of range is refused with a ``FormatError`` naming the line.
/// Entities are never expanded beyond XML's five predefined ones and no DTD or other resource is loaded.
public enum GPX {
  /// The GPX 1.1 namespace.
  public static let namespace = "http://www.topografix.com/GPX/1/1"
  /// The Garmin TrackPointExtension v2 namespace (speed, course).
  public static let trackPointExtensionNamespace = "http://www.garmin.com/xmlschemas/TrackPointExtension/v2"

  /// Streams the GPX file at `url` in 64 KiB chunks, calling `body` for each point in document order and `skipped`
  /// for each point without a time.
  public static func read(
    contentsOf url: URL, deviceID: DeviceID? = nil, kind: FixKind = .imported,
    skipped: (GPXSkippedPoint) -> Void = { _ in }, _ body: (GPXPoint) throws -> Void
  ) throws {
    guard let handle = try? FileHandle(forReadingFrom: url) else {
      throw FormatError(.gpx, "cannot open \(url.path)")
    }
    defer { try? handle.close() }
    try withoutActuallyEscaping(skipped) { skipped in
      try withoutActuallyEscaping(body) { body in
        let parser = GPXParser(deviceID: deviceID, kind: kind, skipped: skipped, body: body)
        while let chunk = try handle.read(upToCount: 65_536), !chunk.isEmpty { try parser.feed(chunk) }
        try parser.finish()
      }
    }
  }

  /// Reads every point of an in-memory GPX document (points without a time are left out;
  /// ``readWithSkipped(data:deviceID:kind:)`` reports them).
  public static func read(data: Data, deviceID: DeviceID? = nil, kind: FixKind = .imported) throws -> [GPXPoint] {
    try readWithSkipped(data: data, deviceID: deviceID, kind: kind).points
  }

  /// Reads every point of an in-memory GPX document and lists the points skipped for lack of a `<time>`.
  public static func readWithSkipped(
    data: Data, deviceID: DeviceID? = nil, kind: FixKind = .imported
  ) throws -> GPXReadResult {
    var points: [GPXPoint] = []
    var skipped: [GPXSkippedPoint] = []
    let parser = GPXParser(deviceID: deviceID, kind: kind, skipped: { skipped.append($0) }) { points.append($0) }
    try parser.feed(data)
    try parser.finish()
    return GPXReadResult(points: points, skipped: skipped)
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

/// GPX as a ``StreamingFixReader``: libxml2's push parser fed chunk by chunk, each call answering the points
/// completed so far — for callers that hand fixes on in batches (an upload streamed to the server) rather than one by
/// one as ``GPX/read(contentsOf:deviceID:kind:skipped:_:)`` does. Points without a time are counted in ``skipped``.
public struct GPXReader: StreamingFixReader {
  /// What the parser's callbacks collect between two calls.
  private final class Collected {
    var fixes: [LocationFix] = []
    var skipped = SkippedRecords()
  }

  private let collected: Collected
  private let parser: GPXParser

  /// A reader of fixes of `kind`, under `deviceID` when given.
  public init(deviceID: DeviceID? = nil, kind: FixKind = .imported) {
    let collected = Collected()
    self.collected = collected
    parser = GPXParser(
      deviceID: deviceID, kind: kind, skipped: { collected.skipped.append($0.record) },
      body: { collected.fixes.append($0.fix) })
  }

  public mutating func feed(_ bytes: some Sequence<UInt8>) throws -> [LocationFix] {
    try parser.feed(Data(bytes))
    return take()
  }

  public mutating func finish() throws -> [LocationFix] {
    try parser.finish()
    return take()
  }

  public var skipped: SkippedRecords { collected.skipped }

  private func take() -> [LocationFix] {
    defer { collected.fixes.removeAll(keepingCapacity: true) }
    return collected.fixes
  }
}
