// domainkit-bench: reads generated files of N points (default 1,000,000) with each streaming reader and prints
// `<name> <value> points/s` (best of a few rounds), then the points read as a check.
// Run with `swift run -c release --package-path Packages/DomainKit domainkit-bench [points] [rounds]`.
import DomainKit
import Foundation

let arguments = CommandLine.arguments.dropFirst()
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
