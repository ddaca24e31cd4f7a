// domainkit-bench: reads generated files of N points (default 1,000,000) with each streaming reader and prints
// `<name> <value> points/s` (best of a few rounds), then the points read as a check; then the stay detector's
// precision and recall on the labelled corpus (`stays.precision`, `stays.recall`) and the stays it finds in the
// repository's real GPX tracks.
// Run with `swift run -c release --package-path Packages/DomainKit domainkit-bench [points] [rounds]`, or
// `… domainkit-bench stays` for the stay figures alone.
import DomainKit
import DomainKitTesting
import Foundation

/// The stay detector's figures: precision and recall on the labelled corpus, and the stays in the real GPX tracks.
func stayFigures() throws {
  let tracks = StayCorpus.tracks(count: 24, days: 7)
  let detector = VisitDetector()
  let start = ContinuousClock.now
  let score = StayCorpus.score(detector, on: tracks)
  let elapsed = ContinuousClock.now - start
  print("stays.precision \(String(format: "%.3f", score.precision)) ratio")
  print("stays.recall \(String(format: "%.3f", score.recall)) ratio")
  let fixes = tracks.reduce(0) { $0 + $1.fixes.count }
  FileHandle.standardError.write(
    Data("  stays: \(tracks.count) tracks, \(fixes) fixes, \(score); detection and scoring took \(elapsed)\n".utf8))
  // The repository's real tracks: the demo walk and the GPX fixtures of the tests.
  let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
  let fixtures = root.appendingPathComponent("Packages/DomainKit/Tests/DomainKitTests/Fixtures/gpx")
  let files =
    [root.appendingPathComponent("Tools/examples/kyiv-walk.gpx")]
    + ((try? FileManager.default.contentsOfDirectory(at: fixtures, includingPropertiesForKeys: nil)) ?? [])
    .filter { $0.pathExtension == "gpx" }.sorted { $0.path < $1.path }
  for file in files where FileManager.default.fileExists(atPath: file.path) {
    var fixes: [LocationFix] = []
    try GPX.read(contentsOf: file) { fixes.append($0.fix) }
    guard !fixes.isEmpty else { continue }  // a route without times
    fixes.sort { $0.timestamp < $1.timestamp }
    let name = file.deletingPathExtension().lastPathComponent.replacingOccurrences(of: "-", with: "_")
    print("stays.gpx.\(name).count \(detector.visits(in: fixes).count) stays")
    FileHandle.standardError.write(Data("  \(file.lastPathComponent): \(fixes.count) fixes\n".utf8))
  }
}

let arguments = CommandLine.arguments.dropFirst()
if arguments.first == "stays" {
  try stayFigures()
  exit(0)
}
let count = arguments.first.flatMap { Int($0) }.map { max($0, 1) } ?? 1_000_000
let rounds = arguments.dropFirst().first.flatMap { Int($0) }.map { max($0, 1) } ?? 3
let directory = FileManager.default.temporaryDirectory.appendingPathComponent("domainkit-bench-\(getpid())")
try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: directory) }

/// A walk of `count` fixes one second apart, 1 m apart.
func walkFix(_ index: Int) throws -> LocationFix {
  let timestamp: Int64 = 1_700_000_000_000 + Int64(index) * 1000
  let latitude: Double = 50 + Double(index % 100_000) * 1e-5
  let longitude: Double = 30 + Double(index / 100_000) * 1e-3
  return try LocationFix(timestamp: timestamp, latitude: latitude, longitude: longitude, altitude: Double(index % 7))
}
let fixes = try (0..<count).map(walkFix)

/// Writes `text` to a file named `name` and returns its URL.
func file(_ name: String, _ text: String) throws -> URL {
  let url = directory.appendingPathComponent(name)
  try Data(text.utf8).write(to: url)
  return url
}

/// Reads `url` `rounds` times with `read` (which returns the points read) and prints the best rate.
func measure(_ name: String, _ url: URL, _ read: (URL) throws -> Int) throws {
  var best = Double.infinity
  var points = 0
  for _ in 0..<rounds {
    let start = ContinuousClock.now
    points = try read(url)
    let elapsed = ContinuousClock.now - start
    best = min(best, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
  }
  let size = (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int) ?? 0
  print("\(name) \(Int((Double(points) / best).rounded())) points/s")
  FileHandle.standardError.write(Data("  \(name): \(points) points, \(size) bytes, best \(best) s\n".utf8))
}

/// Reads a file with a streaming reader, counting the fixes.
typealias Reader = (URL, (LocationFix) throws -> Void) throws -> Void

let benchmarks: [(name: String, file: String, document: String, read: Reader)] = [
  (
    "geojson.read.points_per_s", "line.geojson", GeoJSON.lineCollection([GPXTrack(segments: [fixes])]),
    { try GeoJSONReader.read(contentsOf: $0, $1) }
  ),
  (
    "geojson.read.features_per_s", "points.geojson", GeoJSON.pointCollection(fixes),
    { try GeoJSONReader.read(contentsOf: $0, $1) }
  ),
  (
    "gpx.read.points_per_s", "track.gpx", GPX.document(tracks: [GPXTrack(segments: [fixes])]),
    { url, body in try GPX.read(contentsOf: url) { try body($0.fix) } }
  ),
  ("csv.read.points_per_s", "fixes.csv", CSVFormat.document(fixes), { try CSVReader.read(contentsOf: $0, $1) }),
]
for benchmark in benchmarks {
  try measure(benchmark.name, try file(benchmark.file, benchmark.document)) { url in
    var read = 0
    try benchmark.read(url) { _ in read += 1 }
    return read
  }
}
try stayFigures()
