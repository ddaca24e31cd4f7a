import ArgumentParser
import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import MeridianStore
import PersistenceKit

/// Reads venue files for `venues import`: CSV with one column per language, or GeoJSON points.
///
/// CSV columns (header names, any order): `id`, `latitude`, `longitude` (required), `name` (English) and/or
/// `name_<lang>` (at least one name per row), `description`/`description_<lang>`, `type`, `address`, `city`, `site`,
/// `phone`, `email`, `logo_url`, `time_zone`, `keywords` (separated by `;`), `rating_sum`, `rating_count`.
/// GeoJSON: a `FeatureCollection` of `Point` features whose `properties` hold the same fields (`id` may be the
/// feature's `id`; `name`/`description` may be an object `{"en": …, "uk": …}`; `venueType`, `logoUrl`, `timeZone`
/// are accepted too).
public enum VenueFile {
  /// A bad record: where it is and what was wrong.
  public struct Problem: Error, Sendable, Hashable, CustomStringConvertible {
    /// `line 4` (CSV) or `feature 3` (GeoJSON).
    public var location: String
    /// The field at fault, if one.
    public var field: String?
    /// What was wrong.
    public var message: String

    /// `line 4, field 'latitude': …`.
    public var description: String { location + (field.map { ", field '\($0)'" } ?? "") + ": " + message }
  }

  /// Reads every venue of `data` (`.csv` or `.geojson`/`.json` by `fileExtension`); the first bad record throws.
  public static func read(_ data: Data, fileExtension: String) throws -> [VenueRecord] {
    switch fileExtension.lowercased() {
    case "csv": return try readCSV(data)
    case "geojson", "json": return try readGeoJSON(data)
    default:
      throw Problem(location: "file", field: nil, message: "use a .csv, .geojson or .json file")
    }
  }

  static let plainColumns: Set<String> = [
    "id", "latitude", "longitude", "name", "description", "type", "address", "city", "site", "phone", "email",
    "logo_url", "time_zone", "keywords", "rating_sum", "rating_count",
  ]
  static let aliases = ["lat": "latitude", "lon": "longitude", "lng": "longitude", "venue_type": "type"]

  /// Reads CSV; errors name the 1-based line.
  public static func readCSV(_ data: Data) throws -> [VenueRecord] {
    var parser = CSVRecordParser(format: .csv)
    var header: [String]?
    var records: [VenueRecord] = []
    var seen: [String: Int] = [:]
    let handle: ([String], Int) throws -> Void = { cells, line in
      guard let columns = header else {
        var names: [String] = []
        for (index, raw) in cells.enumerated() {
          var name = raw.trimmingCharacters(in: .whitespaces).lowercased()
          if index == 0, name.hasPrefix("\u{FEFF}") { name.removeFirst() }
          name = aliases[name] ?? name
          if !plainColumns.contains(name) && localizedColumn(name) == nil {
            throw Problem(
              location: "line \(line)", field: name,
              message: "unknown column; use id, latitude, longitude, name_<lang>, description_<lang>, type, …")
          }
          if names.contains(name) { throw Problem(location: "line \(line)", field: name, message: "duplicate column") }
          names.append(name)
        }
        for required in ["id", "latitude", "longitude"] where !names.contains(required) {
          throw Problem(location: "line \(line)", field: required, message: "the header has no '\(required)' column")
        }
        header = names
        return
      }
      if cells.allSatisfy({ $0.trimmingCharacters(in: .whitespaces).isEmpty }) { return }
      var fields: [String: String] = [:]
      for (index, name) in columns.enumerated() where index < cells.count {
        let value = cells[index].trimmingCharacters(in: .whitespaces)
        if !value.isEmpty { fields[name] = value }
      }
      if cells.count > columns.count {
        throw Problem(
          location: "line \(line)", field: nil,
          message: "\(cells.count) cells but the header has \(columns.count) columns")
      }
      let record = try venue(fields, location: "line \(line)")
      if let first = seen[record.place.id.rawValue] {
        throw Problem(
          location: "line \(line)", field: "id", message: "'\(record.place.id)' is already on line \(first)")
      }
      seen[record.place.id.rawValue] = line
      records.append(record)
    }
    do {
      try parser.feed(data, handle)
      try parser.finish(handle)
    } catch let error as FormatError {
      throw Problem(location: "line \(error.line ?? 0)", field: error.field, message: error.message)
    }
    if header == nil { throw Problem(location: "line 1", field: nil, message: "empty file: expected a header line") }
    return records
  }

  /// Reads a GeoJSON FeatureCollection of points; errors name the feature (1-based) and its id.
  public static func readGeoJSON(_ data: Data) throws -> [VenueRecord] {
    let root: Any
    do {
      root = try JSONSerialization.jsonObject(with: data)
    } catch {
      throw Problem(location: "file", field: nil, message: "not valid JSON")
    }
    guard let object = root as? [String: Any], object["type"] as? String == "FeatureCollection",
      let features = object["features"] as? [Any]
    else { throw Problem(location: "file", field: "type", message: "expected a GeoJSON FeatureCollection") }
    var records: [VenueRecord] = []
    var seen: [String: Int] = [:]
    for (index, item) in features.enumerated() {
      var location = "feature \(index + 1)"
      guard let feature = item as? [String: Any] else {
        throw Problem(location: location, field: nil, message: "not an object")
      }
      let properties = feature["properties"] as? [String: Any] ?? [:]
      var fields: [String: String] = [:]
      if let id = feature["id"].flatMap(text) { fields["id"] = id }
      for (key, value) in properties {
        let name = ["venueType": "type", "logoUrl": "logo_url", "timeZone": "time_zone"][key] ?? key
        if name == "name" || name == "description", let translations = value as? [String: Any] {
          for (language, text) in translations {
            guard let text = text as? String else {
              throw Problem(location: location, field: "\(name).\(language)", message: "expected a string")
            }
            fields["\(name)_\(language.lowercased().replacingOccurrences(of: "-", with: "_"))"] = text
          }
        } else if name == "keywords", let list = value as? [Any] {
          fields["keywords"] = list.compactMap(text).joined(separator: ";")
        } else if name == "rating", let rating = value as? [String: Any] {
          fields["rating_sum"] = rating["sum"].flatMap(text)
          fields["rating_count"] = rating["count"].flatMap(text)
        } else if let value = text(value) {
          fields[name] = value
        }
      }
      if let id = fields["id"] { location += " (id '\(id)')" }
      guard let geometry = feature["geometry"] as? [String: Any], geometry["type"] as? String == "Point",
        let position = geometry["coordinates"] as? [Any], position.count >= 2,
        let longitude = (position[0] as? NSNumber)?.doubleValue, let latitude = (position[1] as? NSNumber)?.doubleValue
      else {
        throw Problem(location: location, field: "geometry", message: "expected a Point with [longitude, latitude]")
      }
      fields["latitude"] = String(latitude)
      fields["longitude"] = String(longitude)
      let record = try venue(fields, location: location)
      if let first = seen[record.place.id.rawValue] {
        throw Problem(location: location, field: "id", message: "'\(record.place.id)' is already feature \(first)")
      }
      seen[record.place.id.rawValue] = index + 1
      records.append(record)
    }
    return records
  }

  private static func text(_ value: Any) -> String? {
    if let string = value as? String { return string.trimmingCharacters(in: .whitespaces) }
    if let number = value as? NSNumber { return number.stringValue }
    return nil
  }

  /// `name_uk` → (`name`, `uk`); nil for other columns or a bad language code.
  static func localizedColumn(_ column: String) -> (field: String, language: String)? {
    for field in ["name", "description"] where column.hasPrefix(field + "_") {
      let code = String(column.dropFirst(field.count + 1))
      guard let language = try? LocalizationRegistry.normalizedLanguage(code) else { return nil }
      return (field, language)
    }
    return nil
  }

  static func venue(_ fields: [String: String], location: String) throws -> VenueRecord {
    func problem(_ field: String?, _ message: String) -> Problem {
      Problem(location: location, field: field, message: message)
    }
    guard let id = fields["id"] else { throw problem("id", "every venue needs an id") }
    func number(_ field: String) throws -> Double? {
      guard let text = fields[field] else { return nil }
      guard let value = Double(text), value.isFinite else { throw problem(field, "'\(text)' is not a number") }
      return value
    }
    func integer(_ field: String) throws -> Int {
      guard let text = fields[field] else { return 0 }
      guard let value = Int(text), value >= 0 else { throw problem(field, "'\(text)' is not a whole number ≥ 0") }
      return value
    }
    guard let latitude = try number("latitude") else { throw problem("latitude", "missing") }
    guard let longitude = try number("longitude") else { throw problem("longitude", "missing") }
    let coordinate: Coordinate
    do {
      coordinate = try Coordinate(latitude: latitude, longitude: longitude)
    } catch {
      throw problem("latitude", "(\(latitude), \(longitude)) is not a position: \(error)")
    }
    var name = LocalizedText()
    var description = LocalizedText()
    for (column, value) in fields.sorted(by: { $0.key < $1.key }) {
      if column == "name" {
        name.set(value, for: "en")
      } else if column == "description" {
        description.set(value, for: "en")
      } else if let localized = localizedColumn(column) {
        if localized.field == "name" {
          name.set(value, for: localized.language)
        } else {
          description.set(value, for: localized.language)
        }
      }
    }
    guard !name.values.isEmpty else { throw problem("name", "every venue needs a name (name or name_<lang>)") }
    let place: Place
    do {
      place = try Place(
        id: PlaceID(id), kind: "venue", name: name, description: description, address: fields["address"],
        location: coordinate, city: fields["city"], site: fields["site"], phone: fields["phone"],
        email: fields["email"], venueType: fields["type"], logoURL: fields["logo_url"], timeZone: fields["time_zone"],
        keywords: fields["keywords"]?.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
          .filter { !$0.isEmpty } ?? [])
    } catch {
      throw problem("time_zone", error.description)
    }
    let rating = RatingAggregate(sum: try integer("rating_sum"), count: try integer("rating_count"))
    return try VenueRecord(place: place, rating: rating)
  }

  /// The languages used by `records` that the database has no columns for.
  static func missingLanguages(_ records: [VenueRecord], available: [String]) -> [String] {
    var used = Set<String>()
    for record in records {
      for key in record.place.name.values.keys { used.insert(key) }
      for key in record.place.description.values.keys { used.insert(key) }
    }
    return used.compactMap { try? LocalizationRegistry.normalizedLanguage($0) }.filter { !available.contains($0) }
      .sorted()
  }
}

struct VenuesCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "venues", abstract: "Import and find venues.", subcommands: [Import.self, List.self])

  struct ImportOutput: Codable {
    var file: String
    var imported: Int
    var created: Int
    var updated: Int
  }

  struct Import: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Insert or update venues (places of kind venue) from CSV or GeoJSON, all in one transaction.",
      discussion: """
        CSV header: id, latitude, longitude, name_en, name_ru, name_uk, description_en, …, type, address, city, site,
        phone, email, logo_url, time_zone, keywords (a;b), rating_sum, rating_count. GeoJSON: a FeatureCollection of
        Points with the same properties (name may be {"en": …, "uk": …}). A bad record names its line (CSV) or
        feature (GeoJSON), and then nothing is imported.
        """)

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The .csv, .geojson or .json file.")
    var file: String

    func run() async throws {
      let url = URL(fileURLWithPath: file)
      guard let data = FileManager.default.contents(atPath: url.path) else {
        throw AdminError.notFound("There is no readable file \(file).")
      }
      let records: [VenueRecord]
      do {
        records = try VenueFile.read(data, fileExtension: url.pathExtension)
      } catch let problem as VenueFile.Problem {
        throw AdminError.failure("\(file) \(problem.description). Nothing was imported.")
      } catch let error as VenueRecordError {
        throw AdminError.failure("\(file): \(error.description) Nothing was imported.")
      }
      try await options.withDatabase { database in
        let languages = try await database.store.dataLanguages()
        let missing = VenueFile.missingLanguages(records, available: languages)
        if !missing.isEmpty {
          throw AdminError.failure(
            "\(file) has names in \(missing.joined(separator: ", ")), which the database has no columns for; run "
              + "`meridian-admin i18n add-language CODE` first. Nothing was imported.")
        }
        let ids = records.map(\.place.id.rawValue)
        let existing = try await database.store.existingVenueCount(ids: ids)
        do {
          try await database.store.upsertVenues(records)
        } catch let error as PlaceStoreError {
          throw AdminError.failure("\(file): \(error.description) Nothing was imported.")
        }
        // The planner's statistics at the new size: right after a bulk load PostgreSQL filtered ST_DWithin row by
        // row through another index.
        try await database.store.refreshPlannerStatistics(after: .places)
        let output = ImportOutput(
          file: file, imported: records.count, created: records.count - existing, updated: existing)
        try options.emit(output) {
          "Imported \(records.count) venues from \(file) (\(output.created) new, \(output.updated) updated)."
        }
      }
    }
  }

  struct List: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "List the venues within a radius of a point, nearest first.",
      discussion: "Write a negative latitude as --near=-33.86,151.21.")

    @OptionGroup var options: GlobalOptions

    @Option(help: "The centre, LAT,LON.")
    var near: String

    @Option(help: "Metres around the centre (at most 50000).")
    var radius = VenueQuery.defaultRadius

    @Option(help: "Only venues of this type.")
    var type: String?

    @Option(help: "Language of names (falls back to English).")
    var language: String?

    @Option(help: "distance, rating or reviews.")
    var sort = "distance"

    @Option(help: "At most this many venues (1…100).")
    var limit = 20

    @Option(help: "Where to continue: the cursor printed under the previous page.")
    var cursor: String?

    func run() async throws {
      let parts = near.split(separator: ",").map { Double($0.trimmingCharacters(in: .whitespaces)) }
      guard parts.count == 2, let latitude = parts[0], let longitude = parts[1],
        let center = try? Coordinate(latitude: latitude, longitude: longitude)
      else { throw AdminError.usage("--near '\(near)' is not LAT,LON (e.g. 50.4501,30.5234).") }
      guard radius > 0, radius <= VenueQuery.maximumRadius else {
        throw AdminError.usage("--radius must be more than 0 and at most \(Int(VenueQuery.maximumRadius)) metres.")
      }
      guard let order = PlaceDirectory.SortOrder(rawValue: sort) else {
        throw AdminError.usage("--sort must be distance, rating or reviews.")
      }
      guard (1...PageRequest.maximumPageSize).contains(limit) else {
        throw AdminError.usage("--limit must be 1…\(PageRequest.maximumPageSize).")
      }
      try await options.withDatabase { database in
        let page: VenueList
        do {
          page = try await database.store.nearbyVenues(
            VenueQuery(
              center: center, radius: radius, type: type, sort: order, cursor: cursor, pageSize: limit,
              language: language))
        } catch let error as PlaceStoreError {
          throw AdminError.usage("--cursor: \(error)")
        }
        try options.emit(page) {
          var table = TextTable(["id", "name", "type", "distance", "rating", "address"])
          for venue in page.items {
            table.add([
              venue.id.rawValue, venue.name, venue.type ?? "-", venue.distance.map { "\(Int($0.rounded())) m" } ?? "-",
              venue.rating.count == 0
                ? "-"
                : String(format: "%.1f", Double(venue.rating.sum) / Double(venue.rating.count))
                  + " (\(venue.rating.count))",
              venue.address ?? "-",
            ])
          }
          guard !page.items.isEmpty else { return "No venues within \(Int(radius)) m." }
          let more = page.nextCursor.map { "; more with --cursor \($0)" } ?? ""
          return table.text + "\n\(page.items.count) venues within \(Int(radius)) m\(more)."
        }
      }
    }
  }
}

struct I18nCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "i18n",
    abstract: "Languages of the localized data (venue names and descriptions) and the product's string catalog.",
    subcommands: [Languages.self, AddLanguage.self, ImportCatalog.self, Check.self])

  struct LanguageOutput: Codable {
    struct Field: Codable {
      var table: String
      var field: String
      var translated: Int
      var total: Int
    }
    var language: String
    /// Whether the database has columns for the language (false: it is only in the string catalog).
    var hasColumns: Bool
    var translated: Int
    var total: Int
    var percent: Double
    var fields: [Field]
    /// The imported string catalog's completeness in the language; nil without a catalog or not in it.
    var catalog: StoredStringCatalog.Completeness?
  }

  static func completeness(_ database: AdminDatabase) async throws -> [LanguageOutput] {
    var languages = try await database.store.dataLanguageCompleteness().map { entry in
      LanguageOutput(
        language: entry.language, hasColumns: true, translated: entry.translated, total: entry.total,
        percent: (entry.fraction * 1000).rounded() / 10,
        fields: entry.fields.map {
          .init(table: $0.table, field: $0.field, translated: $0.translated, total: $0.total)
        })
    }
    for entry in try await storedCatalog(database)?.languages ?? [] {
      if let index = languages.firstIndex(where: { $0.language == entry.language }) {
        languages[index].catalog = entry
      } else {
        let total = languages.first?.total ?? 0
        languages.append(
          LanguageOutput(
            language: entry.language, hasColumns: false, translated: 0, total: total, percent: total == 0 ? 100 : 0,
            fields: [], catalog: entry))
      }
    }
    return languages
  }

  static func table(_ languages: [LanguageOutput]) -> String {
    var table = TextTable(["language", "data", "complete", "catalog", "complete"])
    for language in languages {
      let catalog = language.catalog.map { ["\($0.translated) of \($0.total)", "\($0.percent) %"] } ?? ["-", "-"]
      table.add(
        [
          language.language, language.hasColumns ? "\(language.translated) of \(language.total)" : "no columns",
          language.hasColumns ? "\(language.percent) %" : "-",
        ] + catalog)
    }
    return table.text
  }

  struct Languages: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "List the languages of the database and how much of the localized data each has.")

    @OptionGroup var options: GlobalOptions

    func run() async throws {
      let languages = try await options.withDatabase { try await I18nCommand.completeness($0) }
      try options.emit(languages) { I18nCommand.table(languages) }
    }
  }

  struct AddLanguageOutput: Codable {
    var language: String
    var added: Bool
    /// Gazetteer rows written by the fill from `--gazetteer` (nil without it, or when the language was there).
    var gazetteerRows: Int?
  }

  struct AddLanguage: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "add-language",
      abstract: "Add a language: one column per localized field; every existing translation is kept.",
      discussion: """
        With --gazetteer DIR, the new language's place and area names are filled from that GeoNames dump (its
        alternateNamesV2 names in the language; for ru and uk, names picked by script from the places' alternate
        names), as `geo import` fills the database's languages. Only the new language's columns are written: every
        other language's names, including ones corrected by a later import, stay as they are. A language the
        database has already is not filled again.
        """)

    @OptionGroup var options: GlobalOptions

    @Argument(help: "A language code such as de or pt-BR.")
    var code: String

    @Option(help: "A GeoNames dump folder (as for geo import) to fill the new language's gazetteer names from.")
    var gazetteer: String?

    func run() async throws {
      let normalized: String
      do {
        normalized = try LocalizationRegistry.normalizedLanguage(code)
      } catch let error as LocalizationError {
        throw AdminError.usage(error.description)
      }
      let dump = try gazetteer.map(GeoCommand.dumpFolder)
      try await options.withDatabase { database in
        let added: Bool
        do {
          added = try await database.store.addDataLanguage(code)
        } catch let error as LocalizationError {
          throw AdminError.usage(error.description)
        }
        var output = AddLanguageOutput(language: normalized, added: added)
        if added, let dump {
          output.gazetteerRows = try await GeoCommand.fill(language: normalized, from: dump, store: database.store)
        }
        try options.emit(output) {
          guard output.added else {
            return "The database already has language \(normalized)"
              + (gazetteer == nil ? "." : "; its gazetteer names were not filled again (geo import updates them).")
          }
          return "Added language \(normalized)."
            + (output.gazetteerRows.map { " Filled \($0) gazetteer rows in \(normalized) from \(gazetteer ?? "")." }
              ?? "")
        }
      }
    }
  }

  /// The stored string catalog's validation.
  struct CatalogCheck: Codable {
    var file: String
    var importedAt: String
    var errors: [String]
    var warnings: [String]
  }

  struct CheckOutput: Codable {
    var ok: Bool
    var missing: [MissingTranslation]
    /// Nil before a catalog is imported.
    var catalog: CatalogCheck?
    /// The validator's issues with the CLI's own catalog (the counts in its tables) in en, ru and uk.
    var builtIn: [String]
  }

  struct Check: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      abstract:
        "List values without a text in some language and the string catalog's problems; exit 1 when there are any.")

    @OptionGroup var options: GlobalOptions

    func run() async throws {
      try await options.withDatabase { database in
        let missing = try await database.store.missingTranslations()
        let catalog = try await I18nCommand.storedCatalog(database).map { stored in
          CatalogCheck(
            file: stored.file, importedAt: AdminFormat.time(stored.importedAt),
            errors: stored.issues.filter(StoredStringCatalog.isError).map(\.description),
            warnings: stored.issues.filter { !StoredStringCatalog.isError($0) }.map(\.description))
        }
        let builtIn = PollStrings.issues()
        let catalogOK = (catalog.map { $0.errors.isEmpty && $0.warnings.isEmpty } ?? true) && builtIn.isEmpty
        let output = CheckOutput(
          ok: missing.isEmpty && catalogOK, missing: missing, catalog: catalog, builtIn: builtIn)
        try options.emit(output) {
          var text: String
          if missing.isEmpty {
            text = "Every localized value has a text in every language."
          } else {
            var table = TextTable(["language", "field", "missing", "e.g."])
            for entry in missing {
              table.add([
                entry.language, "\(entry.table).\(entry.field)", "\(entry.rows)",
                entry.examples.joined(separator: ", "),
              ])
            }
            text = table.text
          }
          if let catalog {
            let problems = catalog.errors.map { "error: \($0)" } + catalog.warnings.map { "warning: \($0)" }
            text +=
              "\nString catalog \(catalog.file) (imported \(catalog.importedAt))"
              + (problems.isEmpty ? ": no problems." : ":\n" + problems.joined(separator: "\n"))
          } else {
            text += "\nNo string catalog imported."
          }
          let languages = PollStrings.requiredLanguages.joined(separator: ", ")
          text +=
            "\nThe CLI's \(PollStrings.fileName) (\(languages))"
            + (builtIn.isEmpty ? ": no problems." : ":\n" + builtIn.joined(separator: "\n"))
          return text
        }
        if !missing.isEmpty || !catalogOK { throw ExitCode(ExitStatus.failure) }
      }
    }
  }
}
