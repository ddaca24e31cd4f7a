import Foundation

/// A file or wire format DomainKit reads or writes.
public enum FileFormat: String, Sendable, Hashable, Codable, CaseIterable {
  /// GPX 1.1.
  case gpx
  /// CSV with DomainKit's documented header.
  case csv
  /// GeoJSON (RFC 7946).
  case geojson
  /// OwnTracks JSON.
  case owntracks
  /// Google Takeout `Records.json`.
  case takeout
  /// Google's other location history exports: Semantic Location History and the phone's Timeline export.
  case googleTimeline
  /// OsmAnd / Traccar client HTTP parameters.
  case osmand
}

/// Why input in some format was rejected: the format, where (line, field) and what was wrong.
public struct FormatError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The format being read.
  public var format: FileFormat
  /// 1-based line number, when the format has lines.
  public var line: Int?
  /// The field, column, element or parameter at fault.
  public var field: String?
  /// What was wrong, for a person.
  public var message: String

  /// An error.
  public init(_ format: FileFormat, line: Int? = nil, field: String? = nil, _ message: String) {
    self.format = format
    self.line = line
    self.field = field
    self.message = message
  }

  /// `FORMAT line N, field 'f': message`, for logs and import reports.
  public var description: String {
    var text = format.rawValue.uppercased()
    if let line { text += " line \(line)" }
    if let field { text += ", field '\(field)'" }
    return text + ": " + message
  }
}

extension FormatError {
  /// Wraps a fix validation failure, naming the field.
  init(_ format: FileFormat, line: Int?, _ error: FixValidationError) {
    self.init(format, line: line, field: error.field, error.description)
  }
}

/// Reads a file in chunks (64 KiB by default) and passes each chunk to `body`: the way every streaming reader
/// here is fed from disk without loading the whole file.
public func forEachChunk(
  of url: URL, chunkSize: Int = 65_536, _ body: (Data) throws -> Void
) throws {
  let handle = try FileHandle(forReadingFrom: url)
  defer { try? handle.close() }
  while true {
    let chunk = try handle.read(upToCount: chunkSize) ?? Data()
    if chunk.isEmpty { break }
    try body(chunk)
  }
}

enum NumberText {
  /// A finite Double from text, or nil.
  static func double(_ text: String) -> Double? {
    let trimmed = trimmingSpaces(text)
    guard !trimmed.isEmpty, let value = Double(trimmed), value.isFinite else { return nil }
    return value
  }

  /// A finite Double from text, or nil.
  static func double(_ text: Substring) -> Double? { double(String(text)) }

  /// `text` without the spaces and tabs (Unicode `Zs` and tab, Foundation's `.whitespaces`) at its ends. Most
  /// cells and attributes have none, and ASCII ends that are neither space nor tab are checked without Foundation.
  static func trimmingSpaces(_ text: String) -> String {
    guard let first = text.utf8.first, let last = text.utf8.last else { return text }
    if first < 0x80, last < 0x80, first != 0x20, first != 0x09, last != 0x20, last != 0x09 { return text }
    return text.trimmingCharacters(in: .whitespaces)
  }
}

/// A push reader of fixes: feed it chunks of bytes, then finish. ``CSVReader``, ``GeoJSONReader`` and
/// ``TakeoutReader`` are streaming readers.
public protocol StreamingFixReader {
  /// Consumes a chunk and returns the fixes completed in it.
  mutating func feed(_ bytes: some Sequence<UInt8>) throws -> [LocationFix]
  /// Ends the input and returns the remaining fixes; throws when the input is truncated.
  mutating func finish() throws -> [LocationFix]
  /// The points skipped so far for lack of a time (none for formats where a record always has one).
  var skipped: SkippedRecords { get }
}

extension StreamingFixReader {
  /// No points skipped: the default for readers of formats where a missing time is an error.
  public var skipped: SkippedRecords { SkippedRecords() }

  /// Streams the file at `url` through the reader in 64 KiB chunks, calling `body` for every fix in file order.
  public mutating func readAll(contentsOf url: URL, _ body: (LocationFix) throws -> Void) throws {
    try forEachChunk(of: url) { chunk in
      for fix in try feed(chunk) { try body(fix) }
    }
    for fix in try finish() { try body(fix) }
  }
}

extension JSONTokenizer {
  /// ``feed(_:_:)`` with syntax errors reported as a ``FormatError`` of `format`.
  mutating func feed(_ bytes: some Sequence<UInt8>, as format: FileFormat, _ emit: Emit) throws {
    do {
      try feed(bytes, emit)
    } catch let error as JSONSyntaxError {
      throw FormatError(format, line: error.line, "not valid JSON: \(error.message)")
    }
  }

  /// ``finish(_:)`` with syntax errors reported as a ``FormatError`` of `format`.
  mutating func finish(as format: FileFormat, _ emit: Emit) throws {
    do {
      try finish(emit)
    } catch let error as JSONSyntaxError {
      throw FormatError(format, line: error.line, "not valid JSON: \(error.message)")
    }
  }
}

/// The glue shared by the readers built on ``JSONTokenizer``: they keep a tokenizer and a buffer of finished fixes,
/// and handle one event at a time.
protocol JSONDrivenFixReader {
  var tokenizer: JSONTokenizer { get set }
  var output: [LocationFix] { get set }
  mutating func handle(_ event: JSONEvent, line: Int) throws
}

extension JSONDrivenFixReader {
  /// Runs `step` (a feed or finish of the tokenizer) with events going to ``handle(_:line:)``, and returns the
  /// fixes finished so far.
  mutating func drive(_ step: (inout JSONTokenizer, JSONTokenizer.Emit) throws -> Void) throws -> [LocationFix] {
    var tokenizer = self.tokenizer
    defer { self.tokenizer = tokenizer }
    try step(&tokenizer) { event, line in try self.handle(event, line: line) }
    defer { output.removeAll(keepingCapacity: true) }
    return output
  }
}
