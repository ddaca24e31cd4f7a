import AsyncHTTPClient
import DomainKit
import Foundation
import MeridianAPI
import NIOCore

/// `POST /v1/history/import` of a generated Takeout `Records.json` of `BENCH_IMPORT_MB` megabytes (1,024 by default,
/// the size issue 38 names; 0 leaves the phase out), streamed from disk over HTTP into the running server: the
/// server spools it, checks every record, then stores it in batches of 1,000. Prints the points and the file's size,
/// `import.records_json.points_per_s` (points stored over the whole request, upload included) and
/// `import.peak_rss_mb`: the process's peak resident memory from the phase's start (reset through
/// `/proc/self/clear_refs`, so it starts at `import.rss_before_mb`, what earlier phases left resident).
func historyImportFigures(port: Int, httpClient: HTTPClient, token: String, directory: URL) async throws {
  let megabytes = Int(ProcessInfo.processInfo.environment["BENCH_IMPORT_MB"] ?? "") ?? 1024
  guard megabytes > 0 else { return }
  let file = directory.appendingPathComponent("Records.json")
  let writeStart = ContinuousClock.now
  let points = try writeRecordsJSON(to: file, bytes: megabytes * 1_048_576)
  defer { try? FileManager.default.removeItem(at: file) }
  let size = (try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int) ?? 0
  emit("import.records_json.points", Double(points), "points")
  emit("import.records_json.file_mb", Double(size) / 1_048_576, "MiB")
  emit("import.records_json.generate_s", seconds(ContinuousClock.now - writeStart), "s")

  emit("import.rss_before_mb", Double(currentResidentBytes()) / 1_048_576, "MiB")
  resetPeakResident()
  var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(API.importHistory.pathTemplate)")
  request.method = .POST
  request.headers.add(name: "Authorization", value: "Bearer \(token)")
  request.headers.add(name: "Content-Type", value: "application/json")
  request.body = .stream(FileChunks(url: file), length: .known(Int64(size)))
  let begin = ContinuousClock.now
  let response = try await httpClient.execute(request, timeout: .hours(2))
  let body = try await response.body.collect(upTo: 1 << 20)
  let elapsed = seconds(ContinuousClock.now - begin)
  guard response.status == .ok else {
    throw BenchmarkFailure(
      description: "the import answered \(response.status.code): \(String(buffer: body).prefix(500))")
  }
  let summary = try JSONDecoder().decode(HistoryImportSummary.self, from: Data(buffer: body))
  // The account's privacy zone that stores nothing (usePrivacySettings) lies where the walk may pass.
  let withheld = summary.withheld ?? 0
  guard summary.stored + withheld == points else {
    throw BenchmarkFailure(
      description: "the import stored \(summary.stored) of \(points) points and withheld \(withheld) in privacy zones")
  }
  emit("import.records_json.withheld", Double(withheld), "points")
  emit("import.records_json.seconds", elapsed, "s")
  emit("import.records_json.points_per_s", Double(points) / elapsed, "points/s")
  emit("import.peak_rss_mb", Double(peakResidentBytes()) / 1_048_576, "MiB")
}

/// Writes a Takeout `Records.json` of about `bytes` bytes in Google's own layout (two-space indents, one location
/// every 10 s wandering around Kyiv, accuracy, source, device tag and an ISO 8601 timestamp); returns the points.
func writeRecordsJSON(to url: URL, bytes: Int) throws -> Int {
  _ = FileManager.default.createFile(atPath: url.path, contents: nil)
  let handle = try FileHandle(forWritingTo: url)
  defer { try? handle.close() }
  var buffer = "{\n  \"locations\": ["
  var written = 0
  var points = 0
  var (latitude, longitude, heading) = (50.45, 30.52, 0.0)
  var random = SystemRandomNumberGenerator()
  let start: Int64 = 1_451_606_400_000  // 2016-01-01
  while written + buffer.utf8.count < bytes {
    heading += Double.random(in: -0.3...0.3, using: &random)
    latitude = min(51.5, max(49.5, latitude + 0.00009 * cos(heading)))
    longitude = min(32.5, max(29.5, longitude + 0.00014 * sin(heading)))
    buffer += points == 0 ? "{\n" : ", {\n"
    buffer += "    \"latitudeE7\": \(Int((latitude * 1e7).rounded())),\n"
    buffer += "    \"longitudeE7\": \(Int((longitude * 1e7).rounded())),\n"
    buffer += "    \"accuracy\": \(5 + points % 20),\n    \"source\": \"WIFI\",\n    \"deviceTag\": 1234567,\n"
    buffer += "    \"timestamp\": \"\(Timestamp.formatISO8601(start + Int64(points) * 10_000))\"\n  }"
    points += 1
    if buffer.utf8.count >= 4 << 20 {
      written += buffer.utf8.count
      try handle.write(contentsOf: Data(buffer.utf8))
      buffer = ""
    }
  }
  buffer += "]\n}\n"
  try handle.write(contentsOf: Data(buffer.utf8))
  return points
}

/// A file's bytes in 1 MiB buffers, read as the HTTP client asks for them.
struct FileChunks: AsyncSequence, Sendable {
  typealias Element = ByteBuffer
  let url: URL

  struct AsyncIterator: AsyncIteratorProtocol {
    let handle: FileHandle?

    mutating func next() async throws -> ByteBuffer? {
      guard let handle, let data = try handle.read(upToCount: 1 << 20), !data.isEmpty else {
        try handle?.close()
        return nil
      }
      return ByteBuffer(bytes: data)
    }
  }

  func makeAsyncIterator() -> AsyncIterator { AsyncIterator(handle: try? FileHandle(forReadingFrom: url)) }
}
