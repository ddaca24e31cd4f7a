import ArgumentParser
import DomainKit
import Foundation
import MeridianAPI
import MeridianStore

/// History files: the formats `history export` writes (the server's export formats) and `history import` reads.
public typealias HistoryFileFormat = HistoryExportFormat

extension HistoryExportFormat: ExpressibleByArgument {
  /// The format of a file by its extension (`.json` is GeoJSON).
  public init?(fileExtension: String) {
    switch fileExtension.lowercased() {
    case "gpx": self = .gpx
    case "csv": self = .csv
    case "geojson", "json": self = .geojson
    default: return nil
    }
  }
}

/// What `history import` reads: the export formats, plus Google's location history exports (import only).
public enum HistoryImportFormat: String, Sendable, CaseIterable, ExpressibleByArgument {
  case gpx, csv, geojson, google

  /// The format of a file by its content (its first 64 KiB: a Google export's shape, GPX's XML, a JSON document),
  /// else by its extension; nil when neither tells.
  public static func detect(_ url: URL) -> HistoryImportFormat? {
    let head = (try? FileHandle(forReadingFrom: url)).flatMap { handle in
      defer { try? handle.close() }
      return try? handle.read(upToCount: 65_536)
    }
    if let head {
      if GoogleExportShape.detect(head) != nil { return .google }
      let text = String(decoding: head.prefix(1024), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
      if text.hasPrefix("<") { return .gpx }
      if text.hasPrefix("{") { return .geojson }
    }
    return HistoryFileFormat(fileExtension: url.pathExtension).flatMap { HistoryImportFormat(rawValue: $0.rawValue) }
  }
}

/// Reading and writing a user's history through the server's store.
public enum HistoryTransfer {
  /// Fixes inserted per transaction on import.
  public static let importBatch = 1000

  /// Every fix of `user` in `range`, oldest first.
  public static func fixes(of user: UserID, in range: TimeRange, store: any MeridianStore) async throws -> [LocationFix]
  {
    try await HistoryFiles.fixes(of: user, matching: HistoryFilter(range: range), store: store)
  }

  /// The fixes as a document: GPX with one track per device, CSV, or GeoJSON points (as the server's export).
  public static func document(_ fixes: [LocationFix], format: HistoryFileFormat) -> String {
    HistoryFiles.document(fixes, format: format, creator: "meridian-admin")
  }

  /// Reads a whole file; a bad record throws a `FormatError` naming its line, before anything is stored.
  public static func read(_ url: URL, format: HistoryFileFormat) throws -> [LocationFix] {
    try readReportingSkipped(url, format: format).fixes
  }

  /// Reads a whole file, and counts the points skipped for lack of a time (GPX makes `<time>` optional; a CSV row
  /// or GeoJSON feature may have none); a bad record throws a `FormatError` naming its line.
  public static func readReportingSkipped(
    _ url: URL, format: HistoryFileFormat
  ) throws -> (fixes: [LocationFix], skipped: SkippedRecords) {
    var fixes: [LocationFix] = []
    var skipped = SkippedRecords()
    switch format {
    case .gpx: try GPX.read(contentsOf: url, skipped: { skipped.append($0.record) }) { fixes.append($0.fix) }
    case .csv: skipped = try CSVReader.read(contentsOf: url) { fixes.append($0) }
    case .geojson: skipped = try GeoJSONReader.read(contentsOf: url) { fixes.append($0) }
    }
    return (fixes, skipped)
  }

  /// Reads a whole file to import, in any ``HistoryImportFormat``; a Google export also gives its summary (what
  /// was read, and the path points left out where raw positions cover the period).
  public static func readForImport(
    _ url: URL, format: HistoryImportFormat
  ) throws -> (fixes: [LocationFix], skipped: SkippedRecords, google: GoogleTimelineSummary?) {
    guard let exportFormat = HistoryFileFormat(rawValue: format.rawValue) else {
      var fixes: [LocationFix] = []
      var reader = GoogleTimelineReader()
      try reader.readAll(contentsOf: url) { fixes.append($0) }
      return (fixes, reader.skipped, reader.summary)
    }
    let (fixes, skipped) = try readReportingSkipped(url, format: exportFormat)
    return (fixes, skipped, nil)
  }
}

struct HistoryCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "history", abstract: "Export and import a user's location history.",
    subcommands: [Export.self, Import.self])

  struct ExportOutput: Codable {
    var user: String
    var format: String
    var file: String
    var fixes: Int
  }

  struct Export: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Write a user's history as GPX, CSV or GeoJSON (to standard output, or --output FILE).")

    @OptionGroup var options: GlobalOptions

    @Option(help: "User id, email address or phone number.")
    var user: String

    @Option(help: "gpx, csv or geojson.")
    var format: HistoryFileFormat

    @Option(help: "From this time on (2026-11-01, 2026-11-01T08:00:00Z or epoch ms).")
    var from: String?

    @Option(help: "Before this time (exclusive).")
    var to: String?

    @Option(name: .shortAndLong, help: "Write to this file instead of standard output.")
    var output: String?

    func run() async throws {
      if options.json && output == nil {
        throw AdminError.usage("--json prints a summary, so it needs --output FILE for the document.")
      }
      let range = TimeRange(
        start: try from.map { try AdminFormat.parseTime($0, option: "--from") },
        end: try to.map { try AdminFormat.parseTime($0, option: "--to") })
      if let start = range.start, let end = range.end, start >= end {
        throw AdminError.usage("--from must be before --to.")
      }
      try await options.withDatabase { database in
        let id = try await database.resolveUser(user)
        let fixes = try await HistoryTransfer.fixes(of: id, in: range, store: database.store)
        let document = HistoryTransfer.document(fixes, format: format)
        guard let output else {
          FileHandle.standardOutput.write(Data(document.utf8))
          return
        }
        try Data(document.utf8).write(to: URL(fileURLWithPath: output), options: .atomic)
        let summary = ExportOutput(user: id.rawValue, format: format.rawValue, file: output, fixes: fixes.count)
        try options.emit(summary) { "Wrote \(fixes.count) fixes of \(id) to \(output)." }
      }
    }
  }

  struct ImportOutput: Codable {
    var user: String
    var file: String
    var read: Int
    var accepted: Int
    var duplicates: Int
    var devices: [String]
    /// Points skipped because they have no time, and the lines of the first few.
    var skipped: Int
    var skippedLines: [Int]
    /// For a Google export: its shape and what it held.
    var google: GoogleTimelineSummary?
  }

  struct Import: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Merge a GPX, CSV, GeoJSON or Google export into a user's history; fixes already stored are skipped.",
      discussion: """
        The whole file is read and checked first: a bad record names its line and nothing is stored. Points without
        a time (valid in GPX, where <time> is optional) can't be history: they are skipped, counted and their first
        lines named; a file with no timed point stores nothing. Fixes are identified by device and timestamp, so
        importing the same file twice stores nothing the second time.
        """)

    @OptionGroup var options: GlobalOptions

    @Option(help: "User id, email address or phone number.")
    var user: String

    @Argument(
      help:
        "The file: GPX, CSV, GeoJSON, or a Google export (Records.json, a Semantic Location History month, the phone's Timeline.json or location-history.json)."
    )
    var file: String

    @Option(help: "gpx, csv, geojson or google (default: by the file's content, then its extension).")
    var format: HistoryImportFormat?

    @Option(
      help: "Store every fix under this device (default: the file's device ids, else import-<user id>).")
    var device: String?

    @Option(help: "At most this many fixes a second, to leave the database room for a live server (default: no bound).")
    var rowsPerSecond: Int?

    func run() async throws {
      if let rowsPerSecond, !ImportPace.rates.contains(rowsPerSecond) {
        throw AdminError.usage("--rows-per-second must be 1…10000000.")
      }
      let url = URL(fileURLWithPath: file)
      guard FileManager.default.fileExists(atPath: url.path) else {
        throw AdminError.notFound("There is no file \(file).")
      }
      guard let format = format ?? HistoryImportFormat.detect(url) else {
        throw AdminError.usage(
          "Can't tell the format of \(file) from its content or extension; pass --format gpx|csv|geojson|google.")
      }
      try await options.withDatabase { database in
        let id = try await database.resolveUser(user)
        if try await database.store.isLiveOnly(id) {
          throw AdminError.failure("User \(id): \(APIError.liveOnlyRefusesImport.message)")
        }
        let fallback = DeviceID("import-\(id.rawValue)")
        let read: [LocationFix]
        let skipped: SkippedRecords
        let google: GoogleTimelineSummary?
        do {
          (read, skipped, google) = try HistoryTransfer.readForImport(url, format: format)
        } catch let error as FormatError {
          throw AdminError.failure("\(file): \(error.description). Nothing was imported.")
        }
        if read.isEmpty && !skipped.isEmpty {
          throw AdminError.failure("\(file) has no point with a time: \(skipped). Nothing was imported.")
        }
        var byDevice: [DeviceID: [LocationFix]] = [:]
        for var fix in read {
          let deviceID = device.map { DeviceID($0) } ?? fix.deviceID ?? fallback
          fix.deviceID = deviceID
          byDevice[deviceID, default: []].append(fix)
        }
        let devices = byDevice.keys.sorted()
        for deviceID in devices {
          // The rule of the REST routes' device ids: 1…128 characters, no control characters.
          do throws(APIError) {
            try Identifier.check(deviceID.rawValue, name: "deviceId")
          } catch {
            throw AdminError.failure(
              "\(file): device '\(echo(deviceID.rawValue))': \(error.message) Nothing was imported.")
          }
          if let owner = try await database.store.deviceOwner(deviceID), owner != id {
            throw AdminError.failure(
              "Device '\(deviceID)' belongs to another user; pass --device to import under another device. "
                + "Nothing was imported.")
          }
        }
        let now = Timestamp.milliseconds(Date())
        var accepted = 0
        var duplicates = 0
        var pace = ImportPace(rowsPerSecond: rowsPerSecond)
        for deviceID in devices {
          guard try await database.store.claimDevice(deviceID, owner: id, now: now) else {
            throw AdminError.failure("Device '\(deviceID)' was just claimed by another user.")
          }
          let fixes = byDevice[deviceID] ?? []
          for start in stride(from: 0, to: fixes.count, by: HistoryTransfer.importBatch) {
            let batch = Array(fixes[start..<min(start + HistoryTransfer.importBatch, fixes.count)])
            let receipts = try await database.store.insertFixes(
              [FixInsertBatch(userID: id, deviceID: deviceID, fixes: batch)], now: now)
            accepted += receipts.reduce(0) { $0 + $1.accepted }
            duplicates += receipts.reduce(0) { $0 + $1.duplicates }
            try await pace.spend(batch.count)
            Console.progress("imported \(accepted + duplicates) of \(read.count) fixes…")
          }
        }
        Console.endProgress()
        let output = ImportOutput(
          user: id.rawValue, file: file, read: read.count, accepted: accepted, duplicates: duplicates,
          devices: devices.map(\.rawValue), skipped: skipped.count, skippedLines: skipped.lines, google: google)
        try options.emit(output) {
          var summary =
            "Imported \(accepted) new fixes of \(read.count) into \(id)'s history (\(duplicates) already stored)."
          if let google { summary += " Google \(google)." }
          return skipped.isEmpty ? summary : summary + " \(skipped)."
        }
      }
    }
  }
}
