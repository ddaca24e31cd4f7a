import Foundation

/// CSV of fixes (RFC 4180): a header line, then one row per fix.
///
/// The header DomainKit writes (the column order readers see first):
/// `timestamp,latitude,longitude,horizontalAccuracy,verticalAccuracy,altitude,speed,speedAccuracy,course,floor,`
/// `batteryLevel,batteryState,kind,trigger,deviceId`. `timestamp` is ISO 8601 UTC with milliseconds; empty cells are
/// absent values. The reader finds columns by header name in any order (also `time`, `lat`, `lon`/`lng`,
/// `accuracy`, `ele`/`elevation`), accepts `timestamp` as ISO 8601 or epoch milliseconds, ignores unknown columns,
/// handles quoted fields (with `""` escapes and line breaks) and CRLF, and names the line and column of every error.
public enum CSVFormat {
  /// The columns written, in order.
  public static let columns = [
    "timestamp", "latitude", "longitude", "horizontalAccuracy", "verticalAccuracy", "altitude", "speed",
    "speedAccuracy", "course", "floor", "batteryLevel", "batteryState", "kind", "trigger", "deviceId",
  ]

  /// The header line (without line break).
  public static var header: String { columns.joined(separator: ",") }

  /// One row for `fix` (without line break).
  public static func row(_ fix: LocationFix) -> String {
    func n(_ value: Double?, _ digits: Int) -> String { value.map { formatNumber($0, digits) } ?? "" }
    let cells = [
      Timestamp.formatISO8601(fix.timestamp), formatNumber(fix.latitude, 7), formatNumber(fix.longitude, 7),
      n(fix.horizontalAccuracy, 2), n(fix.verticalAccuracy, 2), n(fix.altitude, 2), n(fix.speed, 3),
      n(fix.speedAccuracy, 3), n(fix.course, 2), fix.floor.map(String.init) ?? "", n(fix.batteryLevel, 1),
      fix.batteryState?.rawValue ?? "", fix.kind.rawValue, fix.trigger?.rawValue ?? "", fix.deviceID?.rawValue ?? "",
    ]
    return cells.map(quote).joined(separator: ",")
  }

  /// Writes the header and one row per fix, each line ending with CRLF as RFC 4180 says.
  public static func write(_ fixes: some Sequence<LocationFix>, to output: inout some TextOutputStream) {
    output.write(header + "\r\n")
    for fix in fixes { output.write(row(fix) + "\r\n") }
  }

  /// The whole CSV document for `fixes`.
  public static func document(_ fixes: some Sequence<LocationFix>) -> String {
    var text = ""
    write(fixes, to: &text)
    return text
  }

  /// Quotes a cell when it contains a comma, quote or line break.
  public static func quote(_ cell: String) -> String {
    guard cell.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return cell }
    return "\"" + cell.replacingOccurrences(of: "\"", with: "\"\"") + "\""
  }
}

/// An incremental RFC 4180 record splitter: feed bytes, get records (arrays of cells) with their starting line.
public struct CSVRecordParser: Sendable {
  private enum State { case fieldStart, unquoted, quoted, quoteInQuoted }
  private var state: State = .fieldStart
  private var field: [UInt8] = []
  private var record: [String] = []
  private var line = 1
  private var recordLine = 1
  private var pendingCR = false
  private let format: FileFormat

  /// A parser; errors are reported as `format`.
  public init(format: FileFormat = .csv) { self.format = format }

  /// Consumes bytes, calling `emit(cells, line)` for every complete record.
  public mutating func feed(_ bytes: some Sequence<UInt8>, _ emit: ([String], Int) throws -> Void) throws {
    let handled: Void? = try bytes.withContiguousStorageIfAvailable { buffer in
      for byte in buffer { try step(byte, emit) }
    }
    if handled == nil {
      for byte in bytes { try step(byte, emit) }
    }
  }

  @inline(__always)
  private mutating func step(_ byte: UInt8, _ emit: ([String], Int) throws -> Void) throws {
    if pendingCR {
      pendingCR = false
      if byte == 10 { return }
    }
    switch state {
    case .quoted:
      if byte == 34 {
        state = .quoteInQuoted
      } else {
        if byte == 10 { line += 1 }
        field.append(byte)
      }
    case .quoteInQuoted:
      if byte == 34 {
        field.append(34)
        state = .quoted
      } else if byte == 44 {
        endField()
      } else if byte == 10 || byte == 13 {
        try endRecord(byte, emit)
      } else {
        throw FormatError(format, line: line, "unexpected character after a closing quote")
      }
    case .fieldStart, .unquoted:
      switch byte {
      case 44: endField()
      case 10, 13: try endRecord(byte, emit)
      case 34 where state == .fieldStart: state = .quoted
      case 34: throw FormatError(format, line: line, "a quote inside an unquoted field; quote the whole field")
      default:
        field.append(byte)
        state = .unquoted
      }
    }
  }

  /// Ends the input, emitting a last record without a line break; throws for an unterminated quoted field.
  public mutating func finish(_ emit: ([String], Int) throws -> Void) throws {
    if state == .quoted {
      throw FormatError(format, line: recordLine, "unterminated quoted field (truncated file?)")
    }
    if state != .fieldStart || !record.isEmpty || !field.isEmpty {
      endField()
      try emit(record, recordLine)
      record = []
    }
  }

  private mutating func endField() {
    record.append(String(decoding: field, as: UTF8.self))
    field.removeAll(keepingCapacity: true)
    state = .fieldStart
  }

  private mutating func endRecord(_ byte: UInt8, _ emit: ([String], Int) throws -> Void) throws {
    endField()
    let cells = record
    record = []
    if !(cells.count == 1 && cells[0].isEmpty) { try emit(cells, recordLine) }
    if byte == 13 { pendingCR = true }
    line += 1
    recordLine = line
  }
}

/// A streaming reader of fix CSV (see ``CSVFormat``).
public struct CSVReader: StreamingFixReader, Sendable {
  private var parser = CSVRecordParser(format: .csv)
  /// The cell index of each of ``CSVFormat/columns`` (nil: no such column), once the header is read.
  private var slots: [Int?]?
  private var output: [LocationFix] = []
  /// The rows skipped so far because their `timestamp` cell is empty (a fix needs a time).
  public private(set) var skipped = SkippedRecords()
  /// The device the fixes are attributed to when the file has no `deviceId` column.
  public var deviceID: DeviceID?
  /// The kind for rows without a `kind` cell.
  public var kind: FixKind

  /// The columns the reader looks for, in the order of ``CSVFormat/columns``.
  private enum Column: Int, CaseIterable {
    case timestamp, latitude, longitude, horizontalAccuracy, verticalAccuracy, altitude, speed, speedAccuracy, course
    case floor, batteryLevel, batteryState, kind, trigger, deviceId

    var name: String { CSVFormat.columns[rawValue] }
  }

  private static let aliases: [String: String] = [
    "time": "timestamp", "lat": "latitude", "lon": "longitude", "lng": "longitude", "accuracy": "horizontalAccuracy",
    "ele": "altitude", "elevation": "altitude", "bearing": "course", "heading": "course", "battery": "batteryLevel",
    "device": "deviceId", "deviceid": "deviceId",
  ]

  /// A reader at the start of a file.
  public init(deviceID: DeviceID? = nil, kind: FixKind = .imported) {
    self.deviceID = deviceID
    self.kind = kind
  }

  /// Consumes a chunk and returns the fixes completed in it.
  public mutating func feed(_ bytes: some Sequence<UInt8>) throws -> [LocationFix] {
    var parser = self.parser
    defer { self.parser = parser }
    try parser.feed(bytes) { cells, line in try self.handle(cells, line: line) }
    defer { output.removeAll(keepingCapacity: true) }
    return output
  }

  /// Ends the input and returns the last fixes.
  public mutating func finish() throws -> [LocationFix] {
    var parser = self.parser
    defer { self.parser = parser }
    try parser.finish { cells, line in try self.handle(cells, line: line) }
    guard slots != nil else { throw FormatError(.csv, line: 1, "empty file: expected a header line") }
    defer { output.removeAll() }
    return output
  }

  /// Reads a whole in-memory CSV document.
  public static func read(_ text: String, deviceID: DeviceID? = nil) throws -> [LocationFix] {
    var reader = CSVReader(deviceID: deviceID)
    var fixes = try reader.feed(Array(text.utf8))
    let last = try reader.finish()  // a document read at once usually ends in one of the two: don't copy it
    if fixes.isEmpty { return last }
    fixes += last
    return fixes
  }

  /// Streams the CSV file at `url` in chunks, calling `body` for every fix; returns the rows skipped for lack of a
  /// time.
  @discardableResult
  public static func read(
    contentsOf url: URL, deviceID: DeviceID? = nil, _ body: (LocationFix) throws -> Void
  ) throws -> SkippedRecords {
    var reader = CSVReader(deviceID: deviceID)
    try reader.readAll(contentsOf: url, body)
    return reader.skipped
  }

  private mutating func handle(_ cells: [String], line: Int) throws {
    guard let slots else {
      var map: [String: Int] = [:]
      for (index, raw) in cells.enumerated() {
        var name = raw.trimmingCharacters(in: .whitespaces)
        if index == 0, name.hasPrefix("\u{FEFF}") { name.removeFirst() }
        name = Self.aliases[name] ?? Self.aliases[name.lowercased()] ?? name
        if map[name] != nil { throw FormatError(.csv, line: line, field: name, "duplicate column") }
        map[name] = index
      }
      for required in ["timestamp", "latitude", "longitude"] where map[required] == nil {
        throw FormatError(.csv, line: line, field: required, "the header has no '\(required)' column")
      }
      self.slots = Column.allCases.map { map[$0.name] }
      return
    }
    func cell(_ column: Column) -> String? {
      guard let index = slots[column.rawValue], index < cells.count else { return nil }
      let value = NumberText.trimmingSpaces(cells[index])
      return value.isEmpty ? nil : value
    }
    func number(_ column: Column) throws -> Double? {
      guard let text = cell(column) else { return nil }
      guard let value = NumberText.double(text) else {
        throw FormatError(.csv, line: line, field: column.name, "'\(text)' is not a number")
      }
      return value
    }
    func required(_ column: Column) throws -> String {
      guard let text = cell(column) else {
        throw FormatError(.csv, line: line, field: column.name, "missing value")
      }
      return text
    }
    func enumValue<E: RawRepresentable>(_ column: Column, _: E.Type) throws -> E? where E.RawValue == String {
      guard let text = cell(column) else { return nil }
      guard let value = E(rawValue: text) else {
        throw FormatError(.csv, line: line, field: column.name, "unknown value '\(text)'")
      }
      return value
    }
    var timestamp: Int64?
    if let timeText = cell(.timestamp) {
      guard let parsed = Timestamp.parseISO8601(timeText) ?? Int64(timeText) else {
        throw FormatError(.csv, line: line, field: "timestamp", "'\(timeText)' is neither ISO 8601 nor epoch ms")
      }
      timestamp = parsed
    }
    let latText = try required(.latitude)
    let lonText = try required(.longitude)
    guard let lat = NumberText.double(latText) else {
      throw FormatError(.csv, line: line, field: "latitude", "'\(latText)' is not a number")
    }
    guard let lon = NumberText.double(lonText) else {
      throw FormatError(.csv, line: line, field: "longitude", "'\(lonText)' is not a number")
    }
    var floor: Int?
    if let text = cell(.floor) {
      guard let value = Int(text) else {
        throw FormatError(.csv, line: line, field: "floor", "'\(text)' is not an integer")
      }
      floor = value
    }
    let fix: LocationFix
    do {
      // A row without a time is checked like any other before it is skipped: a bad one still refuses the file.
      fix = try LocationFix(
        deviceID: cell(.deviceId).map { DeviceID($0) } ?? deviceID, timestamp: timestamp ?? 0, latitude: lat,
        longitude: lon, horizontalAccuracy: number(.horizontalAccuracy), verticalAccuracy: number(.verticalAccuracy),
        altitude: number(.altitude), speed: number(.speed), speedAccuracy: number(.speedAccuracy),
        course: number(.course), floor: floor, batteryLevel: number(.batteryLevel),
        batteryState: enumValue(.batteryState, BatteryState.self), kind: enumValue(.kind, FixKind.self) ?? kind,
        trigger: enumValue(.trigger, FixTrigger.self))
    } catch let error as FixValidationError {
      throw FormatError(.csv, line: line, error)
    }
    guard timestamp != nil else {
      skipped.append(SkippedRecord(line: line, reason: "the row on line \(line) has no timestamp"))
      return
    }
    output.append(fix)
  }
}
