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
public typealias HistoryImportFormat = HistoryFileKind

extension HistoryFileKind: ExpressibleByArgument {
  /// The format of a file by its content (its first 64 KiB, ``HistoryFileKind/init(head:)``), else by its extension;
  /// nil when neither tells.
  public static func detect(_ url: URL) -> HistoryFileKind? {
    let head = (try? FileHandle(forReadingFrom: url)).flatMap { handle in
      defer { try? handle.close() }
      return try? handle.read(upToCount: 65_536)
    }
    if let head, let kind = HistoryFileKind(head: head) { return kind }
    return HistoryFileFormat(fileExtension: url.pathExtension).flatMap { HistoryFileKind(rawValue: $0.rawValue) }
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
    /// Fixes left out because they lie in one of the user's privacy zones that store nothing.
    var withheld: Int
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
        The file is streamed twice in 64 KiB chunks, so memory stays small whatever its size: first every record is
        checked (a bad record names its line and nothing is stored; a point dated before 2000 or more than 5 minutes
        ahead of the clock is refused, as the server refuses it), then the fixes are stored in batches with a
        progress bar (bytes, points, rate, time left) on a terminal. Points without a time (valid in GPX, where
        <time> is optional) can't be history: they are skipped, counted and their first lines named; a file with no
        timed point stores nothing. Fixes are identified by device and timestamp, so importing the same file twice
        — or again after an import was killed part way — stores each point once. As for every fix that arrives,
        those inside one of the user's privacy zones that store nothing are not stored (counted as withheld).
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
        let chosen = device.map { DeviceID($0) }
        let deviceOf: @Sendable (LocationFix) -> DeviceID = { chosen ?? $0.deviceID ?? fallback }
        let size = (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int) ?? nil
        // First reading: every record checked (its time as the server checks an upload's), the devices named;
        // nothing stored.
        let now = Timestamp.milliseconds(Date())
        var read = 0
        var devices = Set<DeviceID>()
        let reading: HistoryFileReading
        do {
          reading = try await format.read(contentsOf: url) { fixes, _ in
            let first = read
            read += fixes.count
            try FixTimes.check(fixes, now: now, futureSeconds: FixTimes.defaultFutureSeconds) {
              "point \(first + $0 + 1)"
            }
            for fix in fixes { devices.insert(deviceOf(fix)) }
          }
        } catch let error as FormatError {
          throw AdminError.failure("\(file): \(error.description). Nothing was imported.")
        } catch let error as APIError {
          throw AdminError.failure("\(file): \(error.message) Nothing was imported.")
        }
        if read == 0 && !reading.skipped.isEmpty {
          throw AdminError.failure("\(file) has no point with a time: \(reading.skipped). Nothing was imported.")
        }
        for deviceID in devices.sorted() {
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
        for deviceID in devices.sorted() {
          guard try await database.store.claimDevice(deviceID, owner: id, now: now) else {
            throw AdminError.failure("Device '\(deviceID)' was just claimed by another user.")
          }
        }
        // Second reading: stored in batches as read, with a progress bar.
        var writer = HistoryBatchWriter(
          store: database.store, user: id, now: now, batchSize: HistoryTransfer.importBatch,
          rowsPerSecond: rowsPerSecond, device: deviceOf)
        let started = ContinuousClock.now
        var shown = started
        var handled = 0
        _ = try await format.read(contentsOf: url) { fixes, bytesRead in
          try await writer.add(fixes)
          handled += fixes.count
          let now = ContinuousClock.now
          guard now - shown >= .milliseconds(200) else { return }
          shown = now
          let rate = TransferRate(bytesRead: bytesRead, bytesTotal: size, points: handled, elapsed: now - started)
          Console.progress("imported \(rate)")
        }
        try await writer.flush()
        Console.endProgress()
        let accepted = writer.stored
        let duplicates = writer.duplicates
        let withheld = writer.withheld
        let skipped = reading.skipped
        let google = reading.google
        let output = ImportOutput(
          user: id.rawValue, file: file, read: read, accepted: accepted, duplicates: duplicates, withheld: withheld,
          devices: devices.sorted().map(\.rawValue), skipped: skipped.count, skippedLines: skipped.lines, google: google
        )
        try options.emit(output) {
          var summary =
            "Imported \(accepted) new fixes of \(read) into \(id)'s history (\(duplicates) already stored)."
          if withheld > 0 { summary += " \(withheld) in privacy zones that store nothing were not stored." }
          if let google { summary += " Google \(google)." }
          return skipped.isEmpty ? summary : summary + " \(skipped)."
        }
      }
    }
  }
}
