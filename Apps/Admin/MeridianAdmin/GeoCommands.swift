import ArgumentParser
import DomainKit
import Foundation
import MeridianStore

/// `meridian-admin geo`: the offline gazetteer (GeoNames) behind "Where I've been".
struct GeoCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "geo", abstract: "Load the offline gazetteer (GeoNames dump format) and look coordinates up in it.",
    subcommands: [Import.self, Status.self, Lookup.self])

  /// "Gazetteer: 4 countries, 129 regions, 124 districts, 2264 places."
  static func describe(_ counts: GazetteerCounts) -> String {
    "Gazetteer: \(counts.countries) countries, \(counts.admin1) regions, \(counts.admin2) districts, "
      + "\(counts.localities) places."
  }

  /// Shows an import's progress: `cities500.txt [#########...........] 45%`.
  @Sendable static func progressBar(_ file: String, _ done: Int64, _ total: Int64) {
    let percent = total > 0 ? Int(Double(done) / Double(total) * 100) : 100
    let bar = String(repeating: "#", count: percent / 5) + String(repeating: ".", count: 20 - percent / 5)
    Console.progress("\(file) [\(bar)] \(percent)%")
  }

  /// Checks that `directory` holds a GeoNames dump (before anything is changed).
  static func dumpFolder(_ directory: String) throws -> URL {
    let url = URL(fileURLWithPath: directory)
    do {
      _ = try GazetteerImporter.files(in: url)
    } catch {
      throw AdminError.notFound(error.description)
    }
    return url
  }

  /// Fills `language` (a data language just added) from the dump in `directory`: every file is imported again with
  /// that language alone, so only its name columns are written. Returns the rows written.
  static func fill(language: String, from directory: URL, store: any GazetteerStore) async throws -> Int {
    let importer = GazetteerImporter(store: store, languages: [language], progress: progressBar)
    do {
      let summary = try await importer.importDirectory(directory, now: Timestamp.milliseconds(Date()), restart: true)
      Console.endProgress()
      return summary.files.reduce(0) { $0 + $1.rows }
    } catch let error as GazetteerImportError {
      Console.endProgress()
      throw AdminError.failure(error.description)
    }
  }

  struct Import: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Import a GeoNames dump folder: streaming, resumable, all or nothing per file.",
      discussion: """
        Reads countryInfo.txt, admin1CodesASCII.txt, admin2Codes.txt (optional), citiesN.txt or allCountries.txt \
        (feature class P) and alternateNamesV2.txt (optional). A file imported before with the same content is \
        skipped; an interrupted import resumes where it stopped; a newer dump updates the gazetteer in place. \
        Names are filled for every data language of the database (Tools/geonames/README.md says from where).
        """)

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The folder holding the dump files.")
    var directory: String

    @Option(help: "Rows per staged batch.")
    var batchSize = 2000

    @Option(help: "At most this many rows a second, to leave the database room for a live server (default: no bound).")
    var rowsPerSecond: Int?

    func run() async throws {
      if let rowsPerSecond, !ImportPace.rates.contains(rowsPerSecond) {
        throw AdminError.usage("--rows-per-second must be 1…10000000.")
      }
      var isDirectory: ObjCBool = false
      guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
        throw AdminError.notFound("No folder '\(directory)'.")
      }
      let summary: GazetteerImportSummary
      do {
        summary = try await options.withDatabase { database in
          let importer = GazetteerImporter(
            store: database.store, languages: try await database.store.dataLanguages(), batchSize: batchSize,
            rowsPerSecond: rowsPerSecond, progress: GeoCommand.progressBar)
          let summary = try await importer.importDirectory(
            URL(fileURLWithPath: directory), now: Timestamp.milliseconds(Date()))
          try await database.store.refreshPlannerStatistics(after: .gazetteer)
          return summary
        }
        Console.endProgress()
      } catch let error as GazetteerImportError {
        Console.endProgress()
        if case .missingFile = error { throw AdminError.notFound(error.description) }
        throw AdminError.failure(error.description)
      }
      try options.emit(summary) {
        var table = TextTable(["file", "status", "lines", "skipped", "rows", "rows/s"])
        for file in summary.files {
          let rate = file.seconds > 0 ? String(Int(Double(file.rows) / file.seconds)) : "–"
          table.add([
            file.file, file.status.rawValue, String(file.lines), String(file.skipped), String(file.rows), rate,
          ])
        }
        return table.text + "\n" + GeoCommand.describe(summary.counts)
      }
    }
  }

  struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "The gazetteer's size and the files imported.")

    @OptionGroup var options: GlobalOptions

    struct Output: Encodable {
      var counts: GazetteerCounts
      var files: [File]
      struct File: Encodable {
        var file: String
        var digest: String
        var stagedThrough: Int
        var rows: Int
        var completedAt: Int64?
      }
    }

    func run() async throws {
      let output = try await options.withDatabase { database in
        Output(
          counts: try await database.store.gazetteerCounts(),
          files: try await database.store.gazetteerFiles().map {
            .init(
              file: $0.file, digest: $0.digest, stagedThrough: $0.stagedThrough, rows: $0.rows,
              completedAt: $0.completedAt)
          })
      }
      try options.emit(output) {
        var table = TextTable(["file", "rows", "staged through", "completed"])
        for file in output.files {
          table.add([
            file.file, String(file.rows), String(file.stagedThrough),
            file.completedAt.map { AdminFormat.time($0) } ?? "no (resumes)",
          ])
        }
        return table.text + "\n" + GeoCommand.describe(output.counts)
      }
    }
  }

  struct Lookup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Reverse-geocode a coordinate: locality, district, region and country in a language.")

    @OptionGroup var options: GlobalOptions

    @Option(help: ArgumentHelp("The coordinate, degrees (--at=-18.2,-178.9).", valueName: "lat,lon"))
    var at: String

    @Option(help: "The language of the names (falls back to English, then the GeoNames name).")
    var language = "en"

    func run() async throws {
      let parts = at.split(separator: ",").map { Double($0.trimmingCharacters(in: .whitespaces)) }
      guard parts.count == 2, let latitude = parts[0], let longitude = parts[1], (-90...90).contains(latitude),
        (-180...180).contains(longitude)
      else { throw AdminError.usage("--at must be a latitude (±90) and a longitude (±180): --at=56.5,84.97.") }
      let (label, towns) = try await options.withDatabase { database -> (GazetteerLabel?, Int) in
        let index = GazetteerIndex(try await database.store.gazetteerLocalities())
        let label = try await GazetteerLabeler(store: database.store, index: index)
          .label(latitude: latitude, longitude: longitude, languages: [language, "en"])
        return (label, index.count)
      }
      guard towns > 0 else { throw AdminError.notFound("The gazetteer is empty; run `meridian-admin geo import`.") }
      guard let label else {
        throw AdminError.notFound(
          "No town within \(Int(GazetteerLabeler.maximumDistance / 1000)) km of \(latitude),\(longitude).")
      }
      try options.emit(label) {
        [
          "locality  \(label.locality.name) (\(Int(label.distance / 1000)) km)",
          "district  \(label.admin2?.name ?? "–")",
          "region    \(label.admin1?.name ?? "–")",
          "country   \(label.country.name)",
        ].joined(separator: "\n")
      }
    }
  }
}
