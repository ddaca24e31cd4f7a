import ArgumentParser
import DomainKit
import Foundation
import MeridianAPI
import MeridianTrackerStore
import NetworkingKit

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

struct History: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "The history: list, clusters, visits, export and import of the local one (no server needed), and the "
      + "places of the server's (countries, regions, districts, towns).",
    subcommands: [
      HistoryList.self, HistoryClusters.self, HistoryVisits.self, HistoryExport.self, HistoryImport.self,
      HistoryPlacesCommand.self,
    ])
}

/// The filters every `history` command takes.
struct HistoryFilterOptions: ParsableArguments {
  @Option(help: "today, yesterday, last7Days, last30Days, thisMonth, lastMonth, thisYear, lastYear or allTime.")
  var preset: String?
  @Option(help: "From this time on: ISO 8601 (2026-11-24T08:00:00Z), epoch ms or a local date (2026-11-24).")
  var from: String?
  @Option(help: "Before this time (exclusive), written like --from.") var to: String?
  @Option(help: "Drop fixes whose accuracy is worse than this many metres.") var minAccuracy: Double?
  @Option(help: "Only fixes of this kind: movement, visit, imported or photo (repeatable).") var kind: [FixKind] = []

  func validate() throws {
    if let minAccuracy, !(minAccuracy >= 0 && minAccuracy.isFinite) {
      throw ValidationError("--min-accuracy must be a number of metres, 0 or more")
    }
    do {
      _ = try filter()
    } catch let error as TrackerError {
      throw ValidationError(error.description)
    }
  }

  func filter() throws -> HistoryFilter {
    HistoryFilter(
      range: try HistoryPeriod.range(preset: preset, from: from, to: to), minimumAccuracy: minAccuracy,
      kinds: Set(kind))
  }
}

extension StateOptions {
  /// The history database of the state directory (created when missing); no sign-in needed.
  func history() throws -> TrackerStore {
    try directory.prepare()
    return try directory.openHistory()
  }
}

/// Prints a value as one line of sorted-keys JSON.
func printJSON(_ value: some Encodable) throws {
  let encoder = JSONEncoder()
  encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
  Console.line(String(decoding: try encoder.encode(value), as: UTF8.self))
}

/// Prints `values` as JSON lines, or as one JSON array.
func printJSON<T: Encodable>(_ values: [T], array: Bool) throws {
  if array {
    try printJSON(values)
  } else {
    for value in values { try printJSON(value) }
  }
}

/// Progress of a long import or export on standard error: a line rewritten in place on a terminal, one line per
/// report otherwise (with `--progress`).
struct ProgressLine {
  let verb: String
  let enabled: Bool
  let terminal = isatty(STDERR_FILENO) != 0
  let started = ContinuousClock.now

  init(verb: String, forced: Bool) {
    self.verb = verb
    enabled = forced || isatty(STDERR_FILENO) != 0
  }

  func report(_ progress: TransferProgress) {
    guard enabled else { return }
    let text = "\(verb) \(progress.bar(elapsed: ContinuousClock.now - started))"
    Console.write(terminal ? "\r\u{1B}[K" + text : text + "\n", to: .standardError)
  }

  func finish() {
    if enabled && terminal { Console.error("") }
  }
}

struct HistoryList: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "list", abstract: "The recorded fixes that pass the filters, newest first.")

  @OptionGroup var options: StateOptions
  @OptionGroup var filters: HistoryFilterOptions
  @Option(help: "At most this many fixes.") var limit: Int?
  @Flag(help: "Print JSON: one fix per line.") var json = false
  @Flag(help: "With --json, print one JSON array instead of lines.") var array = false

  func validate() throws {
    if let limit, limit < 0 { throw ValidationError("--limit must be 0 or more") }
    if array && !json { throw ValidationError("--array goes with --json") }
  }

  func run() async throws {
    try await reportingErrors {
      let fixes = try options.history().fixes(matching: try filters.filter(), limit: limit)
      if json { return try printJSON(fixes, array: array) }
      for fix in fixes {
        let accuracy = fix.horizontalAccuracy.map { String(format: "±%.0f m", $0) } ?? "±? m"
        Console.line(
          String(
            format: "%@  %11.7f  %12.7f  %@  %@", Timestamp.formatISO8601(fix.timestamp), fix.latitude,
            fix.longitude, accuracy, fix.kind.rawValue))
      }
      if fixes.isEmpty { Console.line("No fixes match.") }
    }
  }
}

struct HistoryClusters: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "clusters",
    abstract: "The fixes that pass the filters grouped by geohash cell: count and centroid, busiest cell first.")

  @OptionGroup var options: StateOptions
  @OptionGroup var filters: HistoryFilterOptions
  @Option(help: "Geohash length 2…6 (2: ~1,250 km cells … 6: ~1.2 km × 0.6 km).") var precision = 5
  @Option(help: "At most this many cells.") var limit: Int?
  @Flag(help: "Print JSON: one cell per line.") var json = false
  @Flag(help: "With --json, print one JSON array instead of lines.") var array = false

  func validate() throws {
    guard GeohashPrefixes.precisions.contains(precision) else { throw ValidationError("--precision must be 2…6") }
    if let limit, limit < 0 { throw ValidationError("--limit must be 0 or more") }
    if array && !json { throw ValidationError("--array goes with --json") }
  }

  func run() async throws {
    try await reportingErrors {
      var clusters = try options.history().clusters(precision: precision, matching: try filters.filter())
      if let limit { clusters = Array(clusters.prefix(limit)) }
      if json { return try printJSON(clusters, array: array) }
      for cluster in clusters {
        Console.line(
          String(
            format: "%@  %8d  %11.7f  %12.7f  %@ – %@",
            cluster.cell.padding(toLength: precision, withPad: " ", startingAt: 0),
            cluster.count, cluster.latitude, cluster.longitude, Timestamp.formatISO8601(cluster.first),
            Timestamp.formatISO8601(cluster.last)))
      }
      if clusters.isEmpty { Console.line("No fixes match.") }
    }
  }
}

struct HistoryVisits: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "visits", abstract: "Stays detected among the fixes that pass the filters, oldest first.")

  @OptionGroup var options: StateOptions
  @OptionGroup var filters: HistoryFilterOptions
  @Option(help: "A stay's radius, metres.") var radius: Double = 100
  @Option(help: "A stay's shortest duration, minutes.") var minMinutes: Double = 5
  @Flag(help: "Print JSON: one visit per line.") var json = false
  @Flag(help: "With --json, print one JSON array instead of lines.") var array = false

  func validate() throws {
    guard radius > 0, radius.isFinite else { throw ValidationError("--radius must be a positive number of metres") }
    guard minMinutes >= 0, minMinutes.isFinite else { throw ValidationError("--min-minutes must be 0 or more") }
    if array && !json { throw ValidationError("--array goes with --json") }
  }

  func run() async throws {
    try await reportingErrors {
      let detector = VisitDetector(
        radius: radius, minimumDuration: Int64(minMinutes * 60_000), maximumAccuracy: .greatestFiniteMagnitude)
      let visits = try options.history().visits(matching: try filters.filter(), detector: detector)
      if json { return try printJSON(visits, array: array) }
      for visit in visits {
        let minutes = Double(visit.duration) / 60_000
        Console.line(
          String(
            format: "%@ – %@  %6.0f min  %11.7f  %12.7f  %d fixes", Timestamp.formatISO8601(visit.arrival),
            Timestamp.formatISO8601(visit.departure), minutes, visit.location.latitude, visit.location.longitude,
            visit.fixCount))
      }
      if visits.isEmpty { Console.line("No visits found.") }
    }
  }
}

struct HistoryPlacesCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "places",
    abstract: "Where you've been: the stays of your history on the server by country, region, district or town, "
      + "most visited first, named in your language (the server's gazetteer: meridian-admin geo import).")

  @OptionGroup var options: StateOptions
  @OptionGroup var server: ServerOption
  @OptionGroup var filters: HistoryFilterOptions
  @Option(help: "country, admin1 (region), admin2 (district) or locality (town).") var level = "country"
  @Option(help: "The names' language (en, ru, uk, …); default: the server's choice from your locale.")
  var language: String?
  @Flag(help: "Print the server's answer as JSON.") var json = false

  func validate() throws {
    guard HistoryPlacesQuery.levels.contains(level) else {
      throw ValidationError("--level must be one of \(HistoryPlacesQuery.levels.joined(separator: ", "))")
    }
  }

  func run() async throws {
    try await reportingErrors {
      let session = try options.session()
      let filter = try filters.filter()
      let query = HistoryPlacesQuery(
        history: HistoryQuery(
          from: filter.range.start, to: filter.range.end, minAccuracy: filter.minimumAccuracy,
          kinds: filter.kinds.sorted { $0.rawValue < $1.rawValue }),
        level: level, language: language ?? Locale.current.language.languageCode?.identifier)
      let answer = try await TrackerConnection.with(servers: try server.servers(for: session)) { connection in
        try await connection.client(token: session.token).send(API.historyPlaces, parameters: query)
      }
      if json { return try printJSON(answer) }
      for place in answer.places {
        let path = (place.ancestors.map(\.name) + [place.area.name]).joined(separator: " › ")
        let hours = Double(place.timeSpent) / 3_600_000
        Console.line(String(format: "%5d stays  %8.1f h  %@", place.visits, hours, path))
      }
      if answer.places.isEmpty {
        Console.line(
          answer.visits == 0
            ? "No stays in this period." : "\(answer.visits) stays, but the server has no place names for them yet.")
      }
    }
  }
}

extension HistoryFormat: ExpressibleByArgument {}
extension FixKind: @retroactive ExpressibleByArgument {}

struct HistoryExport: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "export", abstract: "Write the fixes that pass the filters as GPX, CSV or GeoJSON, oldest first.")

  @OptionGroup var options: StateOptions
  @OptionGroup var filters: HistoryFilterOptions
  @Option(help: "gpx, csv or geojson (default: from the --output file's extension).") var format: HistoryFormat?
  @Option(help: "Write to this file (replaced atomically) instead of standard output.") var output: String?
  @Flag(help: "Report progress on standard error even when it is not a terminal.") var progress = false

  var resolvedFormat: HistoryFormat? {
    format ?? output.flatMap { HistoryFormat.guess(for: URL(fileURLWithPath: $0)) }
  }

  func validate() throws {
    guard let format = resolvedFormat else {
      throw ValidationError("give --format gpx, csv or geojson (or an --output file ending in one of them)")
    }
    if !format.isExportable { throw ValidationError("Google's exports are import only; export to gpx, csv or geojson") }
  }

  func run() async throws {
    try await reportingErrors {
      guard let format = resolvedFormat else { return }
      let exporter = HistoryExporter(store: try options.history())
      let filter = try filters.filter()
      let line = ProgressLine(verb: "exported", forced: progress)
      guard let output else {
        var stream = FileOutputStream(FileHandle.standardOutput)
        try exporter.export(matching: filter, format: format, to: &stream, progress: line.report)
        stream.flush()
        line.finish()
        if let error = stream.error { throw TrackerError.badArgument("cannot write to standard output: \(error)") }
        return
      }
      let target = URL(fileURLWithPath: output)
      let temporary = target.deletingLastPathComponent().appendingPathComponent(
        ".\(target.lastPathComponent).\(getpid()).partial")
      guard FileManager.default.createFile(atPath: temporary.path, contents: nil),
        let handle = try? FileHandle(forWritingTo: temporary)
      else { throw TrackerError.badArgument("cannot create \(temporary.path)") }
      do {
        var stream = FileOutputStream(handle)
        let count = try exporter.export(matching: filter, format: format, to: &stream, progress: line.report)
        stream.flush()
        if let error = stream.error { throw TrackerError.badArgument("cannot write \(output): \(error)") }
        try handle.close()
        guard rename(temporary.path, target.path) == 0 else {
          throw TrackerError.badArgument("cannot write \(output): \(String(cString: strerror(errno)))")
        }
        line.finish()
        Console.error("wrote \(count) fixes to \(output)")
      } catch {
        try? handle.close()
        try? FileManager.default.removeItem(at: temporary)
        throw error
      }
    }
  }
}

/// What `history import --json` prints: the merge counts, and the points skipped for lack of a time with the lines
/// of the first few.
struct ImportSummary: Codable {
  var new: Int
  var duplicates: Int
  var queued: Int
  var skipped: Int
  var skippedLines: [Int]
  var google: GoogleTimelineSummary?
}

struct HistoryImport: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "import",
    abstract: "Merge a GPX, CSV, GeoJSON or Google Takeout file into the history, skipping fixes already there.",
    discussion: """
      The history holds one fix per timestamp, so importing a file twice, or a file that overlaps the history, adds \
      only what is new. Points without a time (GPX makes <time> optional) are skipped and counted; a bad record \
      names its line and nothing is stored. Imported fixes are not uploaded unless --upload is given (they are then \
      queued and sent by the next `run`).
      """)

  @OptionGroup var options: StateOptions
  @Argument(help: "The file to import.") var file: String
  @Option(help: "gpx, csv, geojson, takeout or google (default: from the file's content, else its extension).")
  var format: HistoryFormat?
  @Flag(help: "Queue the new fixes for upload to the server.") var upload = false
  @Flag(help: "Report progress on standard error even when it is not a terminal.") var progress = false
  @Flag(help: "Print the counts as JSON.") var json = false

  func run() async throws {
    try await reportingErrors {
      let url = URL(fileURLWithPath: file)
      guard FileManager.default.isReadableFile(atPath: url.path) else {
        throw TrackerError.badSource("cannot read \(file)")
      }
      guard let format = format ?? HistoryFormat.detect(url) else {
        throw TrackerError.badArgument(
          "cannot tell the format of \(url.lastPathComponent); give --format gpx, csv, geojson, takeout or google")
      }
      let line = ProgressLine(verb: "imported", forced: progress)
      let result = try HistoryImporter(store: try options.history(), upload: upload)
        .importFileReportingSkipped(url, format: format, progress: line.report)
      line.finish()
      let merged = result.merged
      if json {
        return try printJSON(
          ImportSummary(
            new: merged.new, duplicates: merged.duplicates, queued: merged.queued, skipped: result.skipped.count,
            skippedLines: result.skipped.lines, google: result.google))
      }
      let queued = upload ? ", \(merged.queued) queued for upload" : " (not uploaded; --upload queues them)"
      Console.line("\(merged.new) new fixes, \(merged.duplicates) duplicates skipped\(queued).")
      if !result.skipped.isEmpty { Console.line("\(result.skipped).") }
      if let google = result.google { Console.line("\(google).") }
    }
  }
}
