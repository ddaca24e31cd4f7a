import ArgumentParser
import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import MeridianStore

/// A places-directory file: CSV (a header row; `id`, `parent`, `kind`, `title.<lang>`, `short_title.<lang>`,
/// `description.<lang>`, `city`, `address`, `site`, `phone`, `email`, `image` (an uploaded blob's URL),
/// `venue_type`, `lat`, `lon`, `keywords` separated by `;`, `attr.<name>` with the name's case kept; other column names
/// are case-insensitive) or JSON (an array of objects: `id`, `parentId`, `kind`, `title`, `shortTitle`, `description`, …,
/// `location` `{lat, lon}`, `attributes`). Parents are put before their children whatever the order of the file.
public enum PlaceFile {
  /// A record with where it came from (the CSV line or the JSON item, 1-based).
  public struct Entry: Sendable {
    /// The record.
    public var record: PlaceRecord
    /// "line 4" or "item 3".
    public var origin: String
  }

  /// One object of a JSON file.
  struct Item: Decodable {
    var id: String
    var parentId: String?
    var kind: String
    var title: LocalizedText
    var shortTitle: LocalizedText?
    var description: LocalizedText?
    var address, city, site, phone, email: String?
    var location: Coordinate?
    var keywords: [String]?
    var attributes: [String: PlaceAttribute]?
  }

  /// Reads a file by its extension (`.csv`, else JSON), parents first.
  /// - Throws: ``AdminError`` naming the line or item that is wrong.
  public static func read(_ data: Data, name: String) throws -> [Entry] {
    let entries = name.lowercased().hasSuffix(".csv") ? try readCSV(data) : try readJSON(data)
    return try parentsFirst(entries)
  }

  static func readJSON(_ data: Data) throws -> [Entry] {
    do {
      return try JSONDecoder().decode([Item].self, from: data).enumerated().map { index, item in
        let place = try Place(
          id: PlaceID(item.id), parentID: item.parentId.map { PlaceID($0) }, kind: PlaceKind(rawValue: item.kind),
          name: item.title, description: item.description ?? LocalizedText(), address: item.address,
          location: item.location, city: item.city, site: item.site, phone: item.phone, email: item.email,
          keywords: item.keywords ?? [])
        return Entry(
          record: PlaceRecord(
            place: place, shortTitle: item.shortTitle ?? LocalizedText(), attributes: item.attributes ?? [:]),
          origin: "item \(index + 1)")
      }
    } catch let error as DecodingError {
      var path: [any CodingKey] = []
      var detail = "\(error)"
      switch error {
      case .dataCorrupted(let context), .keyNotFound(_, let context), .typeMismatch(_, let context),
        .valueNotFound(_, let context):
        path = context.codingPath
        detail = context.debugDescription
      @unknown default: break
      }
      let item = path.first?.intValue.map { "item \($0 + 1)" } ?? "the file"
      let field = path.dropFirst().map(\.stringValue).joined(separator: ".")
      throw AdminError.failure("\(item)\(field.isEmpty ? "" : ", \(field)"): \(detail) Nothing was imported.")
    }
  }

  static func readCSV(_ data: Data) throws -> [Entry] {
    var parser = CSVRecordParser(format: .csv)
    var header: [String]?
    var entries: [Entry] = []
    let handle: ([String], Int) throws -> Void = { cells, line in
      guard let columns = header else {
        header = cells.enumerated().map { index, cell in
          var name = cell.trimmingCharacters(in: .whitespaces)
          if index == 0 && name.hasPrefix("\u{FEFF}") { name.removeFirst() }
          return columnName(name)
        }
        for required in ["id", "kind"] where !(header ?? []).contains(required) {
          throw AdminError.failure("line \(line): the header has no '\(required)' column. Nothing was imported.")
        }
        return
      }
      if cells.allSatisfy({ $0.trimmingCharacters(in: .whitespaces).isEmpty }) { return }
      var values: [String: String] = [:]
      for (index, cell) in cells.enumerated() where index < columns.count {
        let value = cell.trimmingCharacters(in: .whitespaces)
        if !value.isEmpty { values[columns[index]] = value }
      }
      do {
        entries.append(Entry(record: try record(values), origin: "line \(line)"))
      } catch let error as AdminError {
        throw AdminError.failure("line \(line): \(error.message) Nothing was imported.")
      }
    }
    try parser.feed(data, handle)
    try parser.finish(handle)
    return entries
  }

  /// A header cell as a column name: lowercased but for what follows `attr.` (attribute names keep their case, as
  /// the filters name them: `attr.passingScore` is `passingScore`).
  static func columnName(_ cell: String) -> String {
    let prefix = "attr."
    guard cell.lowercased().hasPrefix(prefix) else { return cell.lowercased() }
    return prefix + cell.dropFirst(prefix.count)
  }

  static func record(_ values: [String: String]) throws -> PlaceRecord {
    func localized(_ prefix: String) -> LocalizedText {
      var text = LocalizedText()
      for (key, value) in values where key.hasPrefix(prefix + ".") {
        text.set(value, for: String(key.dropFirst(prefix.count + 1)))
      }
      return text
    }
    guard let id = values["id"], let kind = values["kind"] else {
      throw AdminError.failure("'id' and 'kind' are required.")
    }
    var location: Coordinate?
    if values["lat"] != nil || values["lon"] != nil {
      guard let lat = values["lat"].flatMap(Double.init), let lon = values["lon"].flatMap(Double.init),
        let coordinate = try? Coordinate(latitude: lat, longitude: lon)
      else { throw AdminError.failure("'lat' and 'lon' must both be degrees (±90, ±180).") }
      location = coordinate
    }
    var attributes: [String: PlaceAttribute] = [:]
    for (key, value) in values where key.hasPrefix("attr.") {
      let name = String(key.dropFirst(5))
      if let number = Double(value) {
        attributes[name] = .number(number)
      } else if value == "true" || value == "false" {
        attributes[name] = .flag(value == "true")
      } else {
        attributes[name] = .text(value)
      }
    }
    let place = try Place(
      id: PlaceID(id), parentID: values["parent"].map { PlaceID($0) }, kind: PlaceKind(rawValue: kind),
      name: localized("title"), description: localized("description"), address: values["address"],
      location: location, city: values["city"], site: values["site"], phone: values["phone"], email: values["email"],
      venueType: values["venue_type"], logoURL: values["image"],
      keywords: (values["keywords"] ?? "").split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) })
    return PlaceRecord(place: place, shortTitle: localized("short_title"), attributes: attributes)
  }

  /// The entries with every parent in the file before its children; duplicates and cycles name their lines.
  static func parentsFirst(_ entries: [Entry]) throws -> [Entry] {
    var byID: [PlaceID: Entry] = [:]
    for entry in entries {
      if let first = byID[entry.record.place.id] {
        throw AdminError.failure(
          "\(entry.origin): '\(entry.record.place.id)' is also \(first.origin). Nothing was imported.")
      }
      byID[entry.record.place.id] = entry
    }
    var ordered: [Entry] = []
    var done: Set<PlaceID> = []
    for entry in entries {
      var chain: [Entry] = []
      var current: Entry? = entry
      while let next = current, !done.contains(next.record.place.id) {
        if chain.contains(where: { $0.record.place.id == next.record.place.id }) {
          throw AdminError.failure(
            "\(next.origin): '\(next.record.place.id)' is its own ancestor. Nothing was imported.")
        }
        chain.append(next)
        current = next.record.place.parentID.flatMap { byID[$0] }
      }
      for item in chain.reversed() where done.insert(item.record.place.id).inserted { ordered.append(item) }
    }
    return ordered
  }
}

struct PlacesCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "places", abstract: "Import, list, show, move and delete places of the directory.",
    subcommands: [Import.self, List.self, Show.self, Move.self, Delete.self])

  static func table(_ items: [PlaceItem]) -> String {
    var table = TextTable(["id", "kind", "title", "parent", "city", "rating", "reviews", "children"])
    for item in items {
      table.add([
        item.place.id.rawValue, item.place.kind.rawValue,
        String((item.place.name.resolved(for: [PollStrings.language]) ?? "").prefix(50)),
        item.place.parentID?.rawValue ?? "", item.place.city ?? "",
        item.rating.average.map { String(format: "%.2f", $0) } ?? "–", String(item.rating.count),
        String(item.children),
      ])
    }
    return table.text
  }

  struct Import: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Import places from CSV or JSON (the hierarchy by parent ids), all or nothing.")

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The .csv or .json file.")
    var file: String

    func run() async throws {
      guard let data = FileManager.default.contents(atPath: file) else {
        throw AdminError.notFound("No file '\(file)'.")
      }
      let entries = try PlaceFile.read(data, name: file)
      let origins = Dictionary(entries.map { ($0.record.place.id, $0.origin) }, uniquingKeysWith: { a, _ in a })
      do {
        try await options.withDatabase { database in
          try await database.store.upsertPlaces(entries.map(\.record), now: Timestamp.milliseconds(Date()))
          try await database.store.refreshPlannerStatistics(after: .places)
        }
      } catch let error as PlaceStoreError {
        var origin = ""
        switch error {
        case .unknownParent(let id, _), .cycle(let id), .invalidPlace(let id, _):
          origin = origins[id].map { "\($0): " } ?? ""
        default: break
        }
        throw AdminError.failure("\(origin)\(error.description) Nothing was imported.")
      }
      try options.emit(["imported": entries.count]) { "Imported \(entries.count) places." }
    }
  }

  struct List: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List places: top level, children, or found.")

    @OptionGroup var options: GlobalOptions

    @Option(help: "Only the children of this place.")
    var parent: String?

    @Option(help: "Keywords (every word a prefix, any language).")
    var query: String?

    @Option(help: "Only this kind.")
    var kind: String?

    @Option(help: "Only this city.")
    var city: String?

    @Option(help: "At most this many places (1…100).")
    var limit = 50

    func run() async throws {
      guard (1...100).contains(limit) else { throw AdminError.usage("--limit must be between 1 and 100.") }
      let scope: PlaceQuery.Scope =
        parent.map { .children(of: PlaceID($0)) } ?? (query == nil && kind == nil && city == nil ? .roots : .all)
      let page = try await options.withDatabase { database in
        try await database.store.places(
          PlaceQuery(
            scope: scope, kinds: kind.map { [PlaceKind(rawValue: $0)] } ?? [], city: city, text: query, limit: limit))
      }
      let items = page.items.map(\.item)
      try options.emit(items) { items.isEmpty ? "No places." : PlacesCommand.table(items) }
    }
  }

  struct Show: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show one place with its ancestors and ratings.")

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The place's id.")
    var id: String

    func run() async throws {
      let details = try await options.withDatabase { database in
        guard let details = try await database.store.place(PlaceID(id)) else {
          throw AdminError.notFound("No place '\(id)'.")
        }
        return details
      }
      let detail = PlaceDetail(item: details.listing.item, ancestors: details.ancestors)
      try options.emit(detail) {
        let trail = details.ancestors.map { $0.title.resolved(for: [PollStrings.language]) ?? $0.id.rawValue }
        var lines = [PlacesCommand.table([detail.item])]
        if !trail.isEmpty { lines.append("in: " + trail.joined(separator: " › ")) }
        let attributes = detail.item.attributes.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        if !attributes.isEmpty { lines.append("attributes: " + attributes.joined(separator: ", ")) }
        lines.append(
          "own rating: \(detail.item.ownRating.sum)/\(detail.item.ownRating.count), favourites: \(detail.item.favourites)"
        )
        return lines.joined(separator: "\n")
      }
    }
  }

  struct Move: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Move a place (with its subtree and its ratings) under another, or to the top level.")

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The place's id.")
    var id: String

    @Option(help: "The new parent's id; omit for the top level.")
    var to: String?

    func run() async throws {
      do {
        try await options.withDatabase { database in
          try await database.store.movePlace(
            PlaceID(id), to: to.map { PlaceID($0) }, now: Timestamp.milliseconds(Date()))
        }
      } catch let error as PlaceStoreError {
        if case .placeNotFound = error { throw AdminError.notFound(error.description) }
        throw AdminError.failure(error.description)
      }
      try options.emit(["id": id, "parent": to ?? ""]) { "Moved \(id) under \(to ?? "the top level")." }
    }
  }

  struct Delete: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Delete a place without children, with its reviews, favourites and news.")

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The place's id.")
    var id: String

    func run() async throws {
      let deleted: Bool
      do {
        deleted = try await options.withDatabase { try await $0.store.deletePlace(PlaceID(id)) }
      } catch let error as PlaceStoreError {
        throw AdminError.failure(error.description)
      }
      guard deleted else { throw AdminError.notFound("No place '\(id)'.") }
      try options.emit(["id": id, "deleted": "true"]) { "Deleted \(id)." }
    }
  }
}

struct ReviewsCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "reviews", abstract: "Hide reviews of places.", subcommands: [Hide.self])

  struct Hide: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Hide a review (left out of lists and every level's rating), or show it again.")

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The review's id.")
    var id: String

    @Flag(help: "Show the review again.")
    var show = false

    func run() async throws {
      let changed = try await options.withDatabase { try await $0.store.setReviewHidden(ReviewID(id), hidden: !show) }
      guard changed else { throw AdminError.notFound("No review '\(id)'.") }
      try options.emit(["id": id, "hidden": show ? "false" : "true"]) {
        show ? "Review \(id) is shown again." : "Review \(id) is hidden."
      }
    }
  }
}

struct NewsCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "news", abstract: "Add, list and delete news of places.",
    subcommands: [Add.self, List.self, Delete.self])

  struct Add: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Publish a news item of a place (or of the directory).")

    @OptionGroup var options: GlobalOptions

    @Option(help: "The place; omit for directory-wide news.")
    var place: String?

    @Option(help: "The title, as LANG=TEXT (repeat for each language).")
    var title: [String]

    @Option(help: "The body, as LANG=TEXT (repeat for each language).")
    var body: [String] = []

    @Option(help: "The image's URL (upload it first: POST /v1/blobs).")
    var image: String?

    static func localized(_ values: [String], _ name: String) throws -> LocalizedText {
      var text = LocalizedText()
      for value in values {
        guard let equals = value.firstIndex(of: "="), equals != value.startIndex else {
          throw AdminError.usage("--\(name) takes LANG=TEXT (en=Open day), not '\(value)'.")
        }
        text.set(String(value[value.index(after: equals)...]), for: String(value[..<equals]))
      }
      return text
    }

    func run() async throws {
      let item = NewsItem(
        id: NewsID(UUID().uuidString.lowercased()), placeID: place.map { PlaceID($0) },
        title: try Self.localized(title, "title"), body: try Self.localized(body, "body"), imageURL: image,
        publishedAt: Timestamp.milliseconds(Date()))
      guard !item.title.values.isEmpty else { throw AdminError.usage("Give a --title.") }
      do {
        try await options.withDatabase { try await $0.store.saveNews(item) }
      } catch let error as PlaceStoreError {
        throw AdminError.notFound(error.description)
      }
      try options.emit(item) { "Published \(item.id)." }
    }
  }

  struct List: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List news, newest first.")

    @OptionGroup var options: GlobalOptions

    @Option(help: "Only this place's subtree (and directory-wide news).")
    var place: String?

    @Option(help: "At most this many items (1…100).")
    var limit = 50

    func run() async throws {
      guard (1...100).contains(limit) else { throw AdminError.usage("--limit must be between 1 and 100.") }
      let page = try await options.withDatabase { database in
        try await database.store.news(
          NewsQuery(scope: place.map { .subtree(of: PlaceID($0)) } ?? .all, limit: limit))
      }
      try options.emit(page.items) {
        var table = TextTable(["id", "published (UTC)", "place", "title"])
        for item in page.items {
          table.add([
            item.id.rawValue, AdminFormat.time(item.publishedAt), item.placeID?.rawValue ?? "(all)",
            String((item.title.resolved(for: [PollStrings.language]) ?? "").prefix(60)),
          ])
        }
        return page.items.isEmpty ? "No news." : table.text
      }
    }
  }

  struct Delete: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Delete a news item.")

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The item's id.")
    var id: String

    func run() async throws {
      guard try await options.withDatabase({ try await $0.store.deleteNews(NewsID(id)) }) else {
        throw AdminError.notFound("No news item '\(id)'.")
      }
      try options.emit(["id": id, "deleted": "true"]) { "Deleted \(id)." }
    }
  }
}
