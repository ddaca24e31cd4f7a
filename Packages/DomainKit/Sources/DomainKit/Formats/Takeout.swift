import Foundation

/// A streaming reader of Google Takeout location history (`Records.json`).
///
/// The file is `{"locations": [ {record}, … ]}`; each record has `latitudeE7`, `longitudeE7`, `timestamp`
/// (ISO 8601) or the legacy `timestampMs` (a string of milliseconds), and optionally `accuracy` (m), `altitude` (m),
/// `verticalAccuracy` (m), `velocity` (m/s), `heading` (degrees), `batteryCharging`. Nested values (`activity`, …) are
/// skipped. A record without a time is checked like any other, then skipped and counted in ``skipped`` (a fix needs a
/// time), never a reason to refuse the file.
/// E7 values above 900000000 (latitude) or 1800000000 (longitude) are wrapped 32-bit overflows, as Google's
/// documentation says, and are corrected by subtracting 2^32.
///
/// Feed chunks of any size with ``feed(_:)``; memory stays bounded by one record, so a file of hundreds of MB is
/// never loaded whole. ``read(contentsOf:deviceID:_:)`` does this from a file.
public struct TakeoutReader: StreamingFixReader, JSONDrivenFixReader, Sendable {
  var tokenizer = JSONTokenizer()
  private var depth = 0
  private var inLocations = false
  private var locationsDepth = -1
  private var pendingKey: String?
  private var records = TakeoutRecordBuilder()
  private var recordLine = 0
  private var recordIndex = -1
  private var skipDepth = 0
  private var sawLocations = false
  var output: [LocationFix] = []
  /// The records skipped so far because they have no `timestamp` or `timestampMs`.
  public private(set) var skipped = SkippedRecords()
  /// The device the fixes are attributed to.
  public var deviceID: DeviceID?
  /// The kind given to every fix (default ``FixKind/imported``).
  public var kind: FixKind

  /// A reader at the start of a file.
  public init(deviceID: DeviceID? = nil, kind: FixKind = .imported) {
    self.deviceID = deviceID
    self.kind = kind
  }

  /// Consumes a chunk and returns the fixes completed in it.
  /// - Throws: ``FormatError`` naming the line (and field) at fault.
  public mutating func feed(_ bytes: some Sequence<UInt8>) throws -> [LocationFix] {
    try drive { try $0.feed(bytes, as: .takeout, $1) }
  }

  /// Ends the input; throws when the file is truncated or has no `locations` array.
  public mutating func finish() throws -> [LocationFix] {
    let fixes = try drive { try $0.finish(as: .takeout, $1) }
    guard sawLocations else {
      throw FormatError(.takeout, field: "locations", "no 'locations' array: not a Records.json file")
    }
    return fixes
  }

  /// Streams the file at `url` in 64 KiB chunks and calls `body` for every fix, in file order.
  public static func read(
    contentsOf url: URL, deviceID: DeviceID? = nil, _ body: (LocationFix) throws -> Void
  ) throws {
    var reader = TakeoutReader(deviceID: deviceID)
    try reader.readAll(contentsOf: url, body)
  }

  mutating func handle(_ event: JSONEvent, line: Int) throws {
    if records.isBuilding {
      if let record = records.add(event), let fix = try makeFix(record) { output.append(fix) }
      return
    }
    if skipDepth > 0 {
      skipDepth += event.nesting
      return
    }
    switch event {
    case .beginObject, .beginArray:
      depth += 1
      if depth == 1 {
        guard event == .beginObject else { throw FormatError(.takeout, line: line, "expected a top-level object") }
      } else if depth == 2, pendingKey == "locations" {
        guard event == .beginArray else {
          throw FormatError(.takeout, line: line, field: "locations", "expected an array")
        }
        inLocations = true
        sawLocations = true
      } else if inLocations, depth == 3, event == .beginObject {
        depth -= 1  // the record's events, to its closing brace, are the builder's
        recordLine = line
        recordIndex += 1
        _ = records.add(event)
      } else {
        depth -= 1
        skipDepth = 1
      }
      pendingKey = nil
    case .endObject, .endArray:
      if inLocations, depth == 2 { inLocations = false }
      depth -= 1
      pendingKey = nil
    case .key(let key):
      pendingKey = key
    case .string, .number, .bool, .null:
      pendingKey = nil
    }
  }

  private mutating func makeFix(_ record: TakeoutRecord) throws -> LocationFix? {
    try Self.fix(
      record, line: recordLine, index: recordIndex, deviceID: deviceID, kind: kind, format: .takeout,
      skipped: &skipped)
  }

  /// The fix of one `locations[index]` record, errors reported as `format`; nil, counted in `skipped`, for a record
  /// without a time (checked like any other first: a bad one still refuses the file).
  static func fix(
    _ record: TakeoutRecord, line recordLine: Int, index recordIndex: Int, deviceID: DeviceID?, kind: FixKind,
    format: FileFormat, skipped: inout SkippedRecords
  ) throws -> LocationFix? {
    let where_ = "locations[\(recordIndex)]"
    func number(_ text: String?, _ key: String) throws -> Double? {
      guard let text else { return nil }
      guard let value = NumberText.double(text) else {
        throw FormatError(format, line: recordLine, field: "\(where_).\(key)", "'\(text)' is not a number")
      }
      return value
    }
    func e7(_ text: String?, _ key: String, limit: Double) throws -> Double {
      guard var value = try number(text, key) else {
        throw FormatError(format, line: recordLine, field: "\(where_).\(key)", "missing")
      }
      if value > limit { value -= 4_294_967_296 }
      return value / 1e7
    }
    let latitude = try e7(record.latitudeE7, "latitudeE7", limit: 900_000_000)
    let longitude = try e7(record.longitudeE7, "longitudeE7", limit: 1_800_000_000)
    let timestamp: Int64?
    if let text = record.timestamp {
      guard let ms = Timestamp.parseISO8601(text) else {
        throw FormatError(format, line: recordLine, field: "\(where_).timestamp", "'\(text)' is not ISO 8601")
      }
      timestamp = ms
    } else if let text = record.timestampMs {
      guard let ms = Int64(text) else {
        throw FormatError(
          format, line: recordLine, field: "\(where_).timestampMs", "'\(text)' is not a number of milliseconds")
      }
      timestamp = ms
    } else {
      timestamp = nil
    }
    var heading = try number(record.heading, "heading")
    if let h = heading, h < 0 { heading = nil }  // -1 is "unknown" in some exports
    let fix: LocationFix
    do {
      fix = try LocationFix(
        deviceID: deviceID, timestamp: timestamp ?? 0, latitude: latitude, longitude: longitude,
        horizontalAccuracy: number(record.accuracy, "accuracy"),
        verticalAccuracy: number(record.verticalAccuracy, "verticalAccuracy"),
        altitude: number(record.altitude, "altitude"), speed: number(record.velocity, "velocity"),
        course: heading.map { $0 == 360 ? 0 : $0 },
        batteryState: record.batteryCharging.map { $0 == "true" ? .charging : .unplugged },
        kind: kind)
    } catch let error as FixValidationError {
      throw FormatError(format, line: recordLine, field: "\(where_).\(error.field)", error.description)
    }
    guard timestamp != nil else {
      skipped.append(
        SkippedRecord(line: recordLine, path: where_, reason: "\(where_) on line \(recordLine) has no timestamp"))
      return nil
    }
    return fix
  }
}

/// The members of one `Records.json` record that its fix is made of, each as its JSON text (a string's, a number's,
/// or `true` / `false`); the record's other members are not kept.
struct TakeoutRecord {
  var latitudeE7: String?
  var longitudeE7: String?
  var timestamp: String?
  var timestampMs: String?
  var accuracy: String?
  var verticalAccuracy: String?
  var altitude: String?
  var velocity: String?
  var heading: String?
  var batteryCharging: String?

  /// Keeps `text` as the member `key`, if it is one of them (a repeated member's last text wins; a `null` or nested
  /// value is never given, so it leaves an earlier text as it is).
  mutating func set(_ key: String, _ text: String) {
    switch key {
    case "latitudeE7": latitudeE7 = text
    case "longitudeE7": longitudeE7 = text
    case "timestamp": timestamp = text
    case "timestampMs": timestampMs = text
    case "accuracy": accuracy = text
    case "verticalAccuracy": verticalAccuracy = text
    case "altitude": altitude = text
    case "velocity": velocity = text
    case "heading": heading = text
    case "batteryCharging": batteryCharging = text
    default: break
    }
  }
}

/// Reads one `Records.json` record from its events, its own `{` first, into a ``TakeoutRecord`` (nested values,
/// `activity` and the like, skipped): what both ``TakeoutReader`` and ``GoogleTimelineReader`` read records with,
/// a record's members set directly instead of building its JSON value and looking them up.
struct TakeoutRecordBuilder {
  /// The nesting inside the record: 0 when no record is being read, 1 among its members.
  private var depth = 0
  private var pendingKey: String?
  private var record = TakeoutRecord()

  /// Whether a record is being read.
  var isBuilding: Bool { depth > 0 }

  /// Adds an event; returns the record when its closing brace comes.
  mutating func add(_ event: JSONEvent) -> TakeoutRecord? {
    switch event {
    case .beginObject, .beginArray:
      if depth == 0 { record = TakeoutRecord() }
      depth += 1
    case .endObject, .endArray:
      depth -= 1
      if depth == 0 { return record }
    case .key(let key):
      if depth == 1 {
        pendingKey = key
        return nil
      }
    case .string(let text), .number(let text):
      if depth == 1, let key = pendingKey { record.set(key, text) }
    case .bool(let flag):
      if depth == 1, let key = pendingKey { record.set(key, flag ? "true" : "false") }
    case .null:
      break
    }
    pendingKey = nil
    return nil
  }
}

extension JSONEvent {
  /// +1 for an opening brace or bracket, -1 for a closing one, else 0: how a reader skipping a value counts depth.
  var nesting: Int {
    switch self {
    case .beginObject, .beginArray: 1
    case .endObject, .endArray: -1
    default: 0
    }
  }
}
