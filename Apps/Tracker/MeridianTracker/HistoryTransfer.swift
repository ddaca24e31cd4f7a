import DomainKit
import Foundation
import MeridianTrackerStore

/// The file formats `history export` writes and `history import` reads (Google Takeout is read only).
public enum HistoryFormat: String, Sendable, Hashable, CaseIterable {
  /// GPX 1.1: one track of one segment.
  case gpx
  /// CSV with DomainKit's header.
  case csv
  /// A GeoJSON FeatureCollection of Point features.
  case geojson
  /// Google Takeout location history (`Records.json`), import only.
  case takeout
  /// Google's other location history exports (Semantic Location History, the phone's Timeline export in its
  /// Android and iOS shapes), import only.
  case google

  /// Whether the tracker can write this format (`history export`).
  public var isExportable: Bool { self != .takeout && self != .google }

  /// The format of a file by its content (its first 64 KiB: a Google export's shape, GPX's XML, a JSON document),
  /// else by its name (``guess(for:)``); nil when neither tells.
  public static func detect(_ url: URL) -> HistoryFormat? {
    let head = (try? FileHandle(forReadingFrom: url)).flatMap { handle in
      defer { try? handle.close() }
      return try? handle.read(upToCount: 65_536)
    }
    if let head {
      switch GoogleExportShape.detect(head) {
      case .records: return .takeout
      case .some: return .google
      case nil: break
      }
      let text = String(decoding: head.prefix(1024), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
      if text.hasPrefix("<") { return .gpx }
      if text.hasPrefix("{") { return .geojson }
    }
    return guess(for: url)
  }

  /// The format a file's name (and, for `.json`, its first bytes) suggests: `.gpx`, `.csv`, `.geojson`, and `.json`
  /// holding a `"locations"` array (Takeout) or anything else (GeoJSON).
  public static func guess(for url: URL) -> HistoryFormat? {
    switch url.pathExtension.lowercased() {
    case "gpx": return .gpx
    case "csv": return .csv
    case "geojson": return .geojson
    case "json":
      let head = (try? FileHandle(forReadingFrom: url)).flatMap { handle in
        defer { try? handle.close() }
        return try? handle.read(upToCount: 4_096)
      }
      return head.map { String(decoding: $0, as: UTF8.self).contains("\"locations\"") } == true ? .takeout : .geojson
    default: return nil
    }
  }
}

/// How far an import or export has got, for a progress line.
public struct TransferProgress: Sendable, Hashable {
  /// Fixes read (import) or written (export) so far.
  public var fixes: Int
  /// The share done, 0…1, when it is known (bytes of the file read, or fixes of the total written).
  public var fraction: Double?
  /// Bytes of the file read so far (import), and the file's size, when known.
  public var bytesRead: Int?
  public var bytesTotal: Int?

  /// A progress report.
  public init(fixes: Int, fraction: Double?, bytesRead: Int? = nil, bytesTotal: Int? = nil) {
    self.fixes = fixes
    self.fraction = fraction
    self.bytesRead = bytesRead
    self.bytesTotal = bytesTotal
  }

  /// The report as a progress bar `elapsed` after the transfer began: bytes, points, rate and time left for an
  /// import (``TransferRate``), else ``description``.
  public func bar(elapsed: Duration) -> String {
    guard let bytesRead else { return description }
    return TransferRate(bytesRead: bytesRead, bytesTotal: bytesTotal, points: fixes, elapsed: elapsed).description
  }

  /// `12,345 fixes (42 %)`.
  public var description: String {
    let count = fixes.formatted(.number.grouping(.automatic))
    guard let fraction else { return "\(count) fixes" }
    return "\(count) fixes (\(Int((min(max(fraction, 0), 1) * 100).rounded(.down))) %)"
  }
}

/// What an import did: the merge counts, and the points skipped because they have no time.
public struct HistoryImportResult: Sendable, Hashable {
  /// New fixes, duplicates and those queued for upload.
  public var merged: MergeResult
  /// The points without a time (GPX makes `<time>` optional): how many, and the first few with their lines.
  public var skipped: SkippedRecords
  /// For a Google export (``HistoryFormat/google``): its shape and what was read.
  public var google: GoogleTimelineSummary?

  /// A result.
  public init(merged: MergeResult, skipped: SkippedRecords = SkippedRecords(), google: GoogleTimelineSummary? = nil) {
    self.merged = merged
    self.skipped = skipped
    self.google = google
  }
}

/// Reads a track file into the history in batches, merging without duplicates (the history is unique by
/// timestamp). Imported fixes are recorded; they are queued for upload only when `upload` is true.
public struct HistoryImporter: Sendable {
  /// The history.
  public var store: TrackerStore
  /// Whether new fixes are queued for upload.
  public var upload: Bool
  /// Fixes per transaction.
  public var batchSize: Int
  /// Progress is reported every this many fixes (and once at the end).
  public var progressInterval: Int

  /// An importer.
  public init(store: TrackerStore, upload: Bool = false, batchSize: Int = 2_000, progressInterval: Int = 10_000) {
    self.store = store
    self.upload = upload
    self.batchSize = max(1, batchSize)
    self.progressInterval = max(1, progressInterval)
  }

  /// Imports the file at `url` (see ``importFileReportingSkipped(_:format:now:progress:)``) and returns the merge
  /// counts.
  public func importFile(
    _ url: URL, format: HistoryFormat, now: Int64 = Timestamp.milliseconds(Date()),
    progress: (TransferProgress) -> Void = { _ in }
  ) throws -> MergeResult {
    try importFileReportingSkipped(url, format: format, now: now, progress: progress).merged
  }

  /// Imports the file at `url`, streaming it twice: first every record is checked, then the fixes are merged in
  /// batches (memory stays bounded by one batch). Points without a time are skipped and counted.
  /// - Throws: ``TrackerError/badSource(_:)`` naming the file, line and field when the file is unreadable or wrong,
  ///   or has points but none with a time; nothing is stored then.
  public func importFileReportingSkipped(
    _ url: URL, format: HistoryFormat, now: Int64 = Timestamp.milliseconds(Date()),
    progress: (TransferProgress) -> Void = { _ in }
  ) throws -> HistoryImportResult {
    guard FileManager.default.isReadableFile(atPath: url.path) else {
      throw TrackerError.badSource("cannot read \(url.path)")
    }
    let size = (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int) ?? nil
    var batch = Batch(importer: self, now: now, size: size)
    let skipped: SkippedRecords
    let google: GoogleTimelineSummary?
    do {
      var timed = 0
      (skipped, google) = try Self.read(url, format: format) { fixes, _ in timed += fixes.count }
      if timed == 0 && !skipped.isEmpty {
        throw TrackerError.badSource(
          "\(url.lastPathComponent) has no point with a time: \(skipped); nothing was imported")
      }
      _ = try Self.read(url, format: format) { fixes, bytesRead in
        try batch.add(fixes, bytesRead: bytesRead, progress)
      }
      try batch.flush(progress)
    } catch let error as FormatError {
      throw TrackerError.badSource("\(url.lastPathComponent): \(error); nothing was imported")
    }
    batch.report(
      TransferProgress(fixes: batch.read, fraction: 1, bytesRead: size ?? batch.bytesRead, bytesTotal: size), progress)
    return HistoryImportResult(merged: batch.result, skipped: skipped, google: google)
  }

  /// Streams the file through the reader of `format`, calling `body` with the fixes of each chunk and the bytes
  /// read so far; returns the points skipped for lack of a time and, for a Google export, its summary.
  private static func read(
    _ url: URL, format: HistoryFormat, _ body: ([LocationFix], Int?) throws -> Void
  ) throws -> (SkippedRecords, GoogleTimelineSummary?) {
    func stream(_ reader: inout some StreamingFixReader) throws -> SkippedRecords {
      var bytes = 0
      try forEachChunk(of: url) { chunk in
        bytes += chunk.count
        try body(try reader.feed(chunk), bytes)
      }
      try body(try reader.finish(), bytes)
      return reader.skipped
    }
    switch format {
    case .gpx:
      var reader = GPXReader()
      return (try stream(&reader), nil)
    case .csv:
      var reader = CSVReader()
      return (try stream(&reader), nil)
    case .geojson:
      var reader = GeoJSONReader()
      return (try stream(&reader), nil)
    case .takeout:
      var reader = TakeoutReader()
      return (try stream(&reader), nil)
    case .google:
      var reader = GoogleTimelineReader()
      return (try stream(&reader), reader.summary)
    }
  }

  /// The fixes read but not yet merged, and the counts.
  private struct Batch {
    let importer: HistoryImporter
    let now: Int64
    let size: Int?
    var pending: [LocationFix] = []
    var result = MergeResult()
    var read = 0
    var bytesRead: Int?
    var last: TransferProgress?

    mutating func report(_ report: TransferProgress, _ progress: (TransferProgress) -> Void) {
      guard report != last else { return }
      progress(report)
      last = report
    }

    mutating func add(_ fixes: [LocationFix], bytesRead: Int?, _ progress: (TransferProgress) -> Void) throws {
      pending += fixes
      if let bytesRead { self.bytesRead = bytesRead }
      if pending.count >= importer.batchSize { try flush(progress) }
    }

    mutating func flush(_ progress: (TransferProgress) -> Void) throws {
      guard !pending.isEmpty else { return }
      result = result + (try importer.store.merge(pending, upload: importer.upload, now: now))
      let before = read
      read += pending.count
      pending.removeAll(keepingCapacity: true)
      if read / importer.progressInterval > before / importer.progressInterval {
        let fraction = bytesRead.flatMap { bytes in size.map { Double(bytes) / Double(max($0, 1)) } }
        report(TransferProgress(fixes: read, fraction: fraction, bytesRead: bytesRead, bytesTotal: size), progress)
      }
    }
  }
}

/// Writes the fixes of the history that pass a filter, oldest first, as GPX, CSV or GeoJSON (DomainKit's writers),
/// a page at a time so that memory stays bounded.
public struct HistoryExporter: Sendable {
  /// The history.
  public var store: TrackerStore
  /// Fixes read per page.
  public var pageSize: Int
  /// Progress is reported every this many fixes (and once at the end).
  public var progressInterval: Int

  /// An exporter.
  public init(store: TrackerStore, pageSize: Int = 5_000, progressInterval: Int = 10_000) {
    self.store = store
    self.pageSize = max(1, pageSize)
    self.progressInterval = max(1, progressInterval)
  }

  /// Writes the document and returns the number of fixes written.
  @discardableResult
  public func export(
    matching filter: HistoryFilter, format: HistoryFormat, to output: inout some TextOutputStream,
    progress: (TransferProgress) -> Void = { _ in }
  ) throws -> Int {
    let total = try store.count(matching: filter)
    var written = 0
    var last: TransferProgress?
    func emit(_ report: TransferProgress) {
      guard report != last else { return }
      progress(report)
      last = report
    }
    func report(_ count: Int) {
      let before = written
      written += count
      if written / progressInterval > before / progressInterval {
        emit(TransferProgress(fixes: written, fraction: total > 0 ? Double(written) / Double(total) : nil))
      }
    }
    switch format {
    case .csv:
      output.write(CSVFormat.header + "\r\n")
      try store.forEachPage(matching: filter, pageSize: pageSize) { page in
        for fix in page { output.write(CSVFormat.row(fix) + "\r\n") }
        report(page.count)
      }
    case .gpx:
      // DomainKit writes a whole document; each page's document is cut to its track points and the pieces are
      // joined inside the first page's `<trkseg>`.
      let closing = "    </trkseg>\n"
      var tail: String?
      try store.forEachPage(matching: filter, pageSize: pageSize) { page in
        let document = GPX.document(tracks: [GPXTrack(name: "Meridian history", segments: [page])])
        guard let open = document.range(of: "<trkseg>\n"),
          let close = document.range(of: closing, options: .backwards)
        else { throw TrackerError.badArgument("unexpected GPX writer output") }
        if tail == nil {
          output.write(String(document[..<open.upperBound]))
          tail = String(document[close.lowerBound...])
        }
        output.write(String(document[open.upperBound..<close.lowerBound]))
        report(page.count)
      }
      output.write(tail ?? GPX.document(tracks: []))
    case .geojson:
      // The same for GeoJSON: each page's FeatureCollection is cut to its features, joined with commas.
      let empty = GeoJSON.pointCollection([LocationFix]())
      let prefix = String(empty.dropLast(2))
      output.write(prefix)
      var first = true
      try store.forEachPage(matching: filter, pageSize: pageSize) { page in
        let document = GeoJSON.pointCollection(page)
        guard document.hasPrefix(prefix), document.hasSuffix("]}") else {
          throw TrackerError.badArgument("unexpected GeoJSON writer output")
        }
        if !first { output.write(",") }
        first = false
        output.write(String(document.dropFirst(prefix.count).dropLast(2)))
        report(page.count)
      }
      output.write("]}\n")
    case .takeout, .google:
      throw TrackerError.badArgument("Google's exports are import formats; export to gpx, csv or geojson")
    }
    emit(TransferProgress(fixes: written, fraction: 1))
    return written
  }
}

/// A buffered text stream into a file handle (standard output or a file), flushed every 64 KiB and at the end.
public final class FileOutputStream: TextOutputStream {
  private let handle: FileHandle
  private var buffer = Data()
  /// The first write error (e.g. a full disk); later writes are dropped.
  public private(set) var error: (any Error)?

  /// A stream writing to `handle`.
  public init(_ handle: FileHandle) { self.handle = handle }

  /// Appends `string`.
  public func write(_ string: String) {
    buffer.append(contentsOf: string.utf8)
    if buffer.count >= 65_536 { flush() }
  }

  /// Writes out what is buffered.
  public func flush() {
    guard !buffer.isEmpty else { return }
    if error == nil {
      do { try handle.write(contentsOf: buffer) } catch { self.error = error }
    }
    buffer.removeAll(keepingCapacity: true)
  }

  deinit { flush() }
}
