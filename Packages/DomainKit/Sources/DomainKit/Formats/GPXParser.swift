internal import CLibXML2
import Foundation

/// The GPX reader behind ``GPX``: a libxml2 push parser (SAX2) fed chunks of bytes. libxml2 reports every
/// well-formedness error (bad UTF-8, a bad name, a truncated document, …) as an error value instead of trapping;
/// the first error, ours or libxml2's, stops the parse and is thrown as a ``FormatError`` naming the line. It only
/// ever sees UTF-8: ``XMLInputEncoding`` decides the encoding first.
///
/// The SAX handler sets only the element, text and error callbacks: without `getEntity` and `entityDecl`, entities
/// declared in a DTD are never expanded (a reference to one is an error) and no external resource is loaded.
final class GPXParser {
  private let state: GPXParserState
  private var context: xmlParserCtxtPtr?
  private var input = XMLInputEncoding(format: .gpx)
  private var finished = false

  private static let initialized: Void = xmlInitParser()

  /// Receives libxml2's errors: those of the parser context, and those raised without one (a failed encoding
  /// conversion), which would otherwise be printed on standard error.
  private static let errorHandler: xmlStructuredErrorFunc = { user, error in
    guard let user, let error else { return }
    GPXParserState.from(user).libraryError(
      level: error.pointee.level, line: Int(error.pointee.line), message: error.pointee.message)
  }

  init(
    deviceID: DeviceID?, kind: FixKind, skipped: @escaping (GPXSkippedPoint) -> Void,
    body: @escaping (GPXPoint) throws -> Void
  ) {
    _ = Self.initialized
    state = GPXParserState(deviceID: deviceID, kind: kind, skipped: skipped, body: body)
    var handler = xmlSAXHandler()
    handler.initialized = UInt32(XML_SAX2_MAGIC)
    handler.startElementNs = { user, localName, _, _, _, _, attributeCount, _, attributes in
      GPXParserState.from(user).startElement(localName, attributes, count: Int(attributeCount))
    }
    handler.endElementNs = { user, localName, _, _ in
      GPXParserState.from(user).endElement(localName)
    }
    handler.characters = { user, bytes, count in
      GPXParserState.from(user).characters(bytes, count: Int(count))
    }
    handler.cdataBlock = handler.characters
    handler.serror = Self.errorHandler
    context = xmlCreatePushParserCtxt(&handler, Unmanaged.passUnretained(state).toOpaque(), nil, 0, nil)
    if let context {
      let options = XML_PARSE_NONET.rawValue | XML_PARSE_NOERROR.rawValue | XML_PARSE_IGNORE_ENC.rawValue
      _ = xmlCtxtUseOptions(context, Int32(options))
      state.context = context
    }
  }

  deinit {
    if let context { xmlFreeParserCtxt(context) }
  }

  /// Parses the next chunk of the document.
  func feed(_ bytes: Data) throws {
    try bytes.withUnsafeBytes { bytes in
      try input.feed(bytes, final: false) { try parse($0, terminate: false) }
    }
  }

  /// Ends the document; throws when it is not a complete GPX document.
  func finish() throws {
    guard !finished else { return }
    finished = true
    let end = UnsafeRawBufferPointer(start: nil, count: 0)
    try input.feed(end, final: true) { try parse($0, terminate: false) }
    try parse(end, terminate: true)
    guard state.sawRoot else { throw FormatError(.gpx, "no <gpx> root element") }
    guard state.rootClosed else {
      throw FormatError(.gpx, line: state.line, "the document ends before </gpx> (truncated file?)")
    }
  }

  private func parse(_ bytes: UnsafeRawBufferPointer, terminate: Bool) throws {
    guard let context else { throw FormatError(.gpx, "cannot create an XML parser (out of memory?)") }
    if let error = state.error { throw error }
    // Errors raised without a parser context go to this thread's structured handler: ours while we parse.
    let previous = (handler: __xmlStructuredError().pointee, context: __xmlStructuredErrorContext().pointee)
    xmlSetStructuredErrorFunc(Unmanaged.passUnretained(state).toOpaque(), Self.errorHandler)
    defer { xmlSetStructuredErrorFunc(previous.context, previous.handler) }
    // xmlParseChunk takes an Int32 size: larger buffers go in slices.
    var offset = 0
    repeat {
      let size = min(bytes.count - offset, 1 << 24)
      let last = offset + size == bytes.count
      let start = bytes.baseAddress.map { ($0 + offset).assumingMemoryBound(to: CChar.self) }
      let status = xmlParseChunk(context, start, Int32(size), terminate && last ? 1 : 0)
      if let error = state.error { throw error }
      if status != 0 || context.pointee.wellFormed == 0 {
        throw FormatError(.gpx, line: state.line, "malformed XML (libxml2 error \(status))")
      }
      offset += size
    } while offset < bytes.count
  }
}

/// What the SAX callbacks see: the point being read and the first error.
private final class GPXParserState {
  let deviceID: DeviceID?
  let kind: FixKind
  let body: (GPXPoint) throws -> Void
  let skipped: (GPXSkippedPoint) -> Void
  var context: xmlParserCtxtPtr?
  /// The first error: libxml2's or ours as a ``FormatError``, or what the caller's `body` threw, as it is.
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

  static func from(_ pointer: UnsafeMutableRawPointer?) -> GPXParserState {
    // The pointer is the one the parser was created with; it never is nil.
    Unmanaged<GPXParserState>.fromOpaque(UnsafeRawPointer(pointer!)).takeUnretainedValue()
  }

  /// The line the parser is on (1-based).
  var line: Int {
    guard let input = context?.pointee.input else { return 1 }
    return max(Int(input.pointee.line), 1)
  }

  private func fail(_ error: any Error) {
    if self.error == nil { self.error = error }
    if let context { xmlStopParser(context) }
  }

  func libraryError(level: xmlErrorLevel, line: Int, message: UnsafeMutablePointer<CChar>?) {
    // Namespace errors (an undeclared prefix, a relative namespace URI) are errors, not fatal ones: libxml2 goes
    // on, and so do we, as exporters that forget an xmlns declaration are common.
    guard level == XML_ERR_FATAL, error == nil else { return }
    var text = message.map { String(cString: $0) } ?? "libxml2 error"
    text = String(text.prefix { $0 != "\n" }).trimmingCharacters(in: .whitespaces)
    fail(FormatError(.gpx, line: line > 0 ? line : self.line, "malformed XML (\(text))"))
  }

  private static func string(_ bytes: UnsafePointer<xmlChar>?) -> String {
    guard let bytes else { return "" }
    return String(cString: bytes)
  }

  private static func localName(_ bytes: UnsafePointer<xmlChar>?) -> String {
    let name = string(bytes)
    if let colon = name.lastIndex(of: ":") { return String(name[name.index(after: colon)...]) }
    return name
  }

  func startElement(
    _ localName: UnsafePointer<xmlChar>?, _ attributes: UnsafeMutablePointer<UnsafePointer<xmlChar>?>?, count: Int
  ) {
    guard error == nil else { return }
    let name = Self.localName(localName)
    text = ""
    if !sawRoot {
      guard name == "gpx" else {
        fail(FormatError(.gpx, line: line, field: name, "the root element must be <gpx>"))
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
      startPoint(name, attributes: Self.attributes(attributes, count: count))
    default: break
    }
  }

  /// The attributes libxml2 passes: five pointers each (local name, prefix, URI, value start, value end).
  private static func attributes(
    _ pointers: UnsafeMutablePointer<UnsafePointer<xmlChar>?>?, count: Int
  ) -> [String: String] {
    guard let pointers, count > 0 else { return [:] }
    var result: [String: String] = [:]
    for index in 0..<count {
      let base = pointers + index * 5
      guard let start = base[3], let end = base[4], end >= start else { continue }
      let value = String(decoding: UnsafeBufferPointer(start: start, count: end - start), as: UTF8.self)
      let name = localName(base[0])
      if result[name] == nil { result[name] = value }
    }
    return result
  }

  private func startPoint(_ name: String, attributes: [String: String]) {
    let line = self.line
    guard let latText = attributes["lat"] else {
      return fail(FormatError(.gpx, line: line, field: "lat", "<\(name)> has no lat attribute"))
    }
    guard let lonText = attributes["lon"] else {
      return fail(FormatError(.gpx, line: line, field: "lon", "<\(name)> has no lon attribute"))
    }
    guard let lat = NumberText.double(latText) else {
      return fail(FormatError(.gpx, line: line, field: "lat", "'\(latText)' is not a number"))
    }
    guard let lon = NumberText.double(lonText) else {
      return fail(FormatError(.gpx, line: line, field: "lon", "'\(lonText)' is not a number"))
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
  }

  func characters(_ bytes: UnsafePointer<xmlChar>?, count: Int) {
    guard error == nil, point != nil, let bytes, count > 0 else { return }
    text += String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
  }

  func endElement(_ localName: UnsafePointer<xmlChar>?) {
    guard error == nil else { return }
    let name = Self.localName(localName)
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
      try emit(current)
    } catch {
      fail(error)
    }
  }

  private func emit(_ p: (lat: Double, lon: Double, line: Int, kind: GPXPointKind)) throws {
    func number(_ key: String) throws -> Double? {
      guard let text = values[key] else { return nil }
      guard let value = NumberText.double(text) else {
        throw FormatError(.gpx, line: p.line, field: key, "'\(text)' is not a number")
      }
      return value
    }
    var kind = p.kind
    if case .waypoint = kind { kind = .waypoint(name: values["name"]) }
    var timestamp: Int64?
    if let timeText = values["time"], !timeText.isEmpty {
      guard let parsed = Timestamp.parseISO8601(timeText) else {
        throw FormatError(.gpx, line: p.line, field: "time", "'\(timeText)' is not an ISO 8601 time")
      }
      timestamp = parsed
    }
    var course = try number("course")
    if course == 360 { course = 0 }
    let fix: LocationFix
    do {
      // A point without a time is checked like any other before it is skipped: a bad one still refuses the file.
      fix = try LocationFix(
        deviceID: deviceID, timestamp: timestamp ?? 0, latitude: p.lat, longitude: p.lon, altitude: number("ele"),
        speed: number("speed"), course: course, kind: self.kind)
    } catch let error as FixValidationError {
      let field = ["latitude": "lat", "longitude": "lon", "altitude": "ele"][error.field] ?? error.field
      throw FormatError(.gpx, line: p.line, field: field, error.description)
    }
    guard timestamp != nil else {
      let element =
        switch kind {
        case .track: "trkpt"
        case .waypoint: "wpt"
        case .route: "rtept"
        }
      skipped(GPXSkippedPoint(kind: kind, line: p.line, reason: "the <\(element)> on line \(p.line) has no <time>"))
      return
    }
    try body(GPXPoint(fix: fix, kind: kind))
  }
}
