import DomainKitTesting
import Foundation
import Testing

@testable import DomainKit

/// Random fixes (values on each format's precision grid) survive every writer → reader round trip.
@Suite struct RoundTripTests {
  static func randomFixes(_ count: Int, seed: UInt64) -> [LocationFix] {
    var rng = SplitMix64(seed: seed)
    var time: Int64 = 1_600_000_000_000
    return (0..<count).map { _ in
      time += Int64.random(in: 1...120_000, using: &rng)
      func grid(_ range: ClosedRange<Int>, _ scale: Double) -> Double {
        Double(Int.random(in: range, using: &rng)) / scale
      }
      func maybe(_ value: @autoclosure () -> Double) -> Double? { Bool.random(using: &rng) ? value() : nil }
      return try! LocationFix(
        timestamp: time, latitude: grid(-900_000_000...900_000_000, 1e7),
        longitude: grid(-1_800_000_000...1_799_999_999, 1e7), horizontalAccuracy: maybe(grid(0...500_000, 100)),
        verticalAccuracy: maybe(grid(0...10_000, 100)), altitude: maybe(grid(-50_000...900_000, 100)),
        speed: maybe(grid(0...100_000, 1000)), course: maybe(grid(0...35_999, 100)),
        floor: Bool.random(using: &rng) ? Int.random(in: -3...80, using: &rng) : nil,
        batteryLevel: maybe(grid(0...1000, 10)), kind: FixKind.allCases.randomElement(using: &rng)!)
    }
  }

  @Test func csv() throws {
    let fixes = Self.randomFixes(500, seed: 1)
    #expect(try CSVReader.read(CSVFormat.document(fixes)) == fixes)
  }

  @Test func geoJSONPoints() throws {
    let fixes = Self.randomFixes(500, seed: 2)
    #expect(try GeoJSON.read(data: Data(GeoJSON.pointCollection(fixes).utf8)) == fixes)
  }

  @Test func gpxKeepsPositionTimeElevationSpeedAndCourse() throws {
    let fixes = Self.randomFixes(500, seed: 3).map { fix in
      var kept = fix
      kept.horizontalAccuracy = nil
      kept.verticalAccuracy = nil
      kept.floor = nil
      kept.batteryLevel = nil
      kept.kind = .imported
      return kept
    }
    let text = GPX.document(tracks: [GPXTrack(segments: [fixes])])
    #expect(try GPX.read(data: Data(text.utf8)).map(\.fix) == fixes)
  }
}
