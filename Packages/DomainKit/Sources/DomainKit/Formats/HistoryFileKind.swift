import Foundation

/// The history files an import reads, told by their content: GPX, CSV, GeoJSON, or any of Google's location history
/// exports. One rule for every importer (the server's upload, `meridian-admin history import`, the tracker's), each
/// streaming the file through ``reader()`` in chunks so that memory stays bounded whatever the file's size.
public enum HistoryFileKind: String, Sendable, Hashable, CaseIterable, Codable {
  /// GPX 1.0 or 1.1.
  case gpx
  /// CSV with DomainKit's header.
  case csv
  /// A GeoJSON FeatureCollection of Point features.
  case geojson
  /// Takeout's `Records.json`, a Semantic Location History month, or the phone's Timeline export (Android or iOS).
  case google

  /// The kind of a file from its first bytes (up to 64 KiB are looked at): a Google export's shape, XML (GPX),
  /// another JSON object (GeoJSON), a first line with commas (CSV); nil when none of them.
  public init?(head: some Collection<UInt8>) {
    let head = Data(head.prefix(65_536))
    if GoogleExportShape.detect(head) != nil {
      self = .google
      return
    }
    let text = String(decoding: head.prefix(1024), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    if text.hasPrefix("<") {
      self = .gpx
    } else if text.hasPrefix("{") {
      self = .geojson
    } else if text.prefix(while: { $0 != "\n" && $0 != "\r" }).contains(",") {
      self = .csv
    } else {
      return nil
    }
  }

  /// A reader of this kind at the start of a file.
  public func reader() -> any StreamingFixReader {
    switch self {
    case .gpx: GPXReader()
    case .csv: CSVReader()
    case .geojson: GeoJSONReader()
    case .google: GoogleTimelineReader()
    }
  }

  /// Reads a file of this kind from its start, asking `chunk` for the bytes at each offset (an empty answer ends
  /// the file), and calls `body` with the fixes each chunk completes and the bytes read so far.
  /// - Returns: the points skipped for lack of a time and, for a Google export, what it held.
  /// - Throws: the reader's ``FormatError`` naming the line and field of the first bad record, or what `chunk` or
  ///   `body` throw.
  public func read(
    chunk: (_ offset: Int) async throws -> Data,
    _ body: (_ fixes: [LocationFix], _ bytesRead: Int) async throws -> Void
  ) async throws -> HistoryFileReading {
    var reader = reader()
    var offset = 0
    while true {
      let bytes = try await chunk(offset)
      if bytes.isEmpty { break }
      offset += bytes.count
      try await body(try reader.feed(bytes), offset)
    }
    try await body(try reader.finish(), offset)
    return HistoryFileReading(skipped: reader.skipped, google: (reader as? GoogleTimelineReader)?.summary)
  }

  /// ``read(chunk:_:)`` over the file at `url`, in 64 KiB chunks.
  public func read(
    contentsOf url: URL, _ body: (_ fixes: [LocationFix], _ bytesRead: Int) async throws -> Void
  ) async throws -> HistoryFileReading {
    let handle = try FileHandle(forReadingFrom: url)
    defer { try? handle.close() }
    return try await read(chunk: { _ in try handle.read(upToCount: 65_536) ?? Data() }, body)
  }
}

/// What reading a whole history file told besides its fixes.
public struct HistoryFileReading: Sendable, Hashable {
  /// The points skipped for lack of a time: how many, and the lines of the first few.
  public var skipped: SkippedRecords
  /// For a Google export: its shape and what it held.
  public var google: GoogleTimelineSummary?

  /// A reading's outcome.
  public init(skipped: SkippedRecords = SkippedRecords(), google: GoogleTimelineSummary? = nil) {
    self.skipped = skipped
    self.google = google
  }
}

/// How far a transfer of a file has got, for a progress bar: bytes of the file read, points handled, and the rate
/// and time left measured from the start.
public struct TransferRate: Sendable, Hashable, CustomStringConvertible {
  /// Bytes of the file read so far.
  public var bytesRead: Int
  /// The file's size, when known.
  public var bytesTotal: Int?
  /// Points read (or stored) so far.
  public var points: Int
  /// Seconds since the transfer began.
  public var elapsedSeconds: Double

  /// A report.
  public init(bytesRead: Int, bytesTotal: Int?, points: Int, elapsedSeconds: Double) {
    self.bytesRead = bytesRead
    self.bytesTotal = bytesTotal
    self.points = points
    self.elapsedSeconds = elapsedSeconds
  }

  /// A report `elapsed` after the transfer began.
  public init(bytesRead: Int, bytesTotal: Int?, points: Int, elapsed: Duration) {
    let parts = elapsed.components
    self.init(
      bytesRead: bytesRead, bytesTotal: bytesTotal, points: points,
      elapsedSeconds: Double(parts.seconds) + Double(parts.attoseconds) / 1e18)
  }

  /// The share of the file read, 0…1, when its size is known.
  public var fraction: Double? {
    bytesTotal.map { $0 > 0 ? min(1, Double(bytesRead) / Double($0)) : 1 }
  }

  /// Points a second so far; nil in the first tenth of a second.
  public var pointsPerSecond: Double? {
    elapsedSeconds >= 0.1 ? Double(points) / elapsedSeconds : nil
  }

  /// Seconds left at the rate so far (bytes read against the size); nil when unknown.
  public var secondsLeft: Double? {
    guard let bytesTotal, bytesRead > 0, elapsedSeconds >= 0.1 else { return nil }
    return max(0, Double(bytesTotal - bytesRead) * elapsedSeconds / Double(bytesRead))
  }

  /// `[#########...........] 45 % · 450.0 of 1,000.0 MB · 4,500,000 points · 210,000 points/s · 2 min 38 s left`;
  /// the parts that are unknown are left out.
  public var description: String {
    var parts: [String] = []
    if let fraction {
      let filled = Int((fraction * 20).rounded(.down))
      let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: 20 - filled)
      parts.append("[\(bar)] \(Int((fraction * 100).rounded(.down))) %")
    }
    let megabytes = { (bytes: Int) in (Double(bytes) / 1_048_576).formatted(.number.precision(.fractionLength(1))) }
    parts.append(bytesTotal.map { "\(megabytes(bytesRead)) of \(megabytes($0)) MB" } ?? "\(megabytes(bytesRead)) MB")
    parts.append("\(points.formatted(.number.grouping(.automatic))) points")
    if let rate = pointsPerSecond { parts.append("\(Int(rate).formatted(.number.grouping(.automatic))) points/s") }
    if let left = secondsLeft { parts.append("\(Self.duration(left)) left") }
    return parts.joined(separator: " · ")
  }

  /// `42 s`, `3 min 5 s`, `2 h 10 min`.
  static func duration(_ seconds: Double) -> String {
    let whole = Int(seconds.rounded(.up))
    if whole < 60 { return "\(whole) s" }
    if whole < 3600 { return "\(whole / 60) min \(whole % 60) s" }
    return "\(whole / 3600) h \(whole % 3600 / 60) min"
  }
}
