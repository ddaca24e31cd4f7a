import Foundation
import MeridianTestSupport
import Testing

@testable import GeoTool

/// meridian-geo against the GeodSolve and python-geohash fixtures committed with GeoKit.
@Suite struct GeoToolTests {
  static let fixtures = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Packages/GeoKit/Tests/GeoKitTests/Fixtures")

  func rows(_ name: String) throws -> [[Substring]] {
    let text = try String(contentsOf: Self.fixtures.appendingPathComponent(name), encoding: .utf8)
    return text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { $0.split(separator: " ") }
  }

  func numbers(_ line: String) -> [Double] { line.split(separator: " ").map { Double($0) ?? .nan } }

  func angleDifference(_ a: Double, _ b: Double) -> Double {
    let d = abs(a - b).truncatingRemainder(dividingBy: 360)
    return min(d, 360 - d)
  }

  /// Runs `processor` over `lines` like the executable does, collecting output and errors.
  func run(_ processor: GeoLineProcessor, _ lines: [String]) -> (output: [String], errors: [String], failures: Int) {
    var output: [String] = []
    var errors: [String] = []
    let failures = processor.run(input: lines, output: { output.append($0) }, errors: { errors.append($0) })
    return (output, errors, failures)
  }

  @Test func inverseMatchesGeodSolve() throws {
    let rows = try rows("geodesic-inverse.txt")
    let result = run(GeoLineProcessor(command: .inverse), rows.map { $0[0..<4].joined(separator: " ") })
    #expect(result.failures == 0 && result.output.count == rows.count)
    for (row, line) in zip(rows, result.output) {
      let got = numbers(line)
      let expected = row[4...].map { Double($0) ?? .nan }
      #expect(abs(got[2] - expected[2]) < 1e-3, "\(row) → \(line)")
      // The azimuth is undefined for coincident points and at a pole.
      guard expected[2] > 0, let lat1 = Double(row[0]), let lat2 = Double(row[2]), abs(lat1) < 90, abs(lat2) < 90
      else { continue }
      #expect(angleDifference(got[0], expected[0]) < 1e-6 && angleDifference(got[1], expected[1]) < 1e-6, "\(row)")
    }
  }

  @Test func directMatchesGeodSolve() throws {
    let rows = try rows("geodesic-direct.txt")
    let result = run(GeoLineProcessor(command: .direct), rows.map { $0[0..<4].joined(separator: " ") })
    #expect(result.failures == 0 && result.output.count == rows.count)
    for (row, line) in zip(rows, result.output) {
      let got = numbers(line)
      let expected = row[4...].map { Double($0) ?? .nan }
      // 1e-8° is about 1 mm.
      #expect(abs(got[0] - expected[0]) < 1e-8 && angleDifference(got[1], expected[1]) < 1e-8, "\(row) → \(line)")
      if abs(expected[0]) < 89.999 { #expect(angleDifference(got[2], expected[2]) < 1e-6, "\(row) → \(line)") }
    }
  }

  @Test func geohashMatchesPythonGeohash() throws {
    let encode = try rows("geohash-encode.txt")
    let encoded = run(GeoLineProcessor(command: .geohashEncode), encode.map { $0[0..<3].joined(separator: " ") })
    #expect(encoded.failures == 0)
    #expect(encoded.output == encode.map { String($0[3]) })

    let decode = try rows("geohash-decode.txt")
    let decoded = run(GeoLineProcessor(command: .geohashDecode), decode.map { String($0[0]) })
    for (row, line) in zip(decode, decoded.output) {
      #expect(numbers(line) == row[1...].map { Double($0) ?? .nan }, "\(row) → \(line)")
    }

    let neighbors = try rows("geohash-neighbors.txt")
    let found = run(GeoLineProcessor(command: .geohashNeighbors), neighbors.map { String($0[0]) })
    #expect(found.output == neighbors.map { $0[1...].joined(separator: " ") })
  }

  @Test func badLinesAreReportedWithTheirNumberAndProcessingContinues() {
    let lines = ["0 0 1 1", "", "foo", "0 0 91 0", "1 1 2 2", "0 0 nan 0"]
    let result = run(GeoLineProcessor(command: .inverse), lines)
    #expect(result.failures == 4)
    #expect(result.output.count == 2)
    #expect(result.errors[0].contains("line 2"))
    #expect(result.errors[1].contains("line 3") && result.errors[1].contains("foo"))
    #expect(result.errors[2].contains("line 4") && result.errors[2].contains("latitude 91"))
    #expect(result.errors[3].contains("line 6"))

    let geohash = run(GeoLineProcessor(command: .geohashDecode), ["ezs42", "ezs4a", "0123456789bcd"])
    #expect(geohash.failures == 2 && geohash.errors[0].contains("line 2") && geohash.errors[1].contains("line 3"))
    let encode = run(GeoLineProcessor(command: .geohashEncode), ["1 2 13", "1 2"])
    #expect(encode.failures == 2)
  }

  @Test func precisionFlagFormatsLikeGeodSolve() throws {
    let processor = GeoLineProcessor(command: .inverse, precision: 3)
    #expect(try processor.process("0 0 0.5 179.7") == "15.55688279 164.44251389 19944127.421")
    let degree = try GeoLineProcessor(command: .haversine).process("0 0 0 1")
    #expect(abs((Double(degree) ?? 0) - 111_195.080_233_532_9) < 1e-6)
    #expect(try GeoLineProcessor(command: .geohashNeighbors).process("zzzz") == "- - bpbp bpbn zzzy zzzw zzzx -")
  }

  /// The executable itself (built next to the test bundle): results on stdout, numbered errors on stderr, exit 1.
  @Test func executableReportsBadLinesAndExitsNonZero() async throws {
    let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    let binary = directory.appendingPathComponent("meridian-geo")
    // `swift test` builds every target of the package, the executable included.
    try #require(FileManager.default.isExecutableFile(atPath: binary.path), "meridian-geo not built at \(binary.path)")
    let process = try ChildProcess(
      binary, ["inverse", "-p", "3"], input: "0 0 0.5 179.7\n0 0 91 0\n40.6413 -73.7781 51.47 -0.4543\n")
    let status = await process.wait()
    #expect(status != 0)
    #expect(
      process.standardOutput.value == "15.55688279 164.44251389 19944127.421\n51.38164786 107.98282906 5554908.791\n")
    let stderr = process.standardError.value
    #expect(stderr.contains("line 2") && stderr.contains("latitude 91"))

    let clean = try await ChildProcess.run(binary, ["geohash", "encode"], input: "42.6 -5.6 5\n")
    #expect(clean.status == 0)
  }
}
