import Foundation
import Testing

@testable import DomainKit

/// The one rule every importer uses to tell a history file's kind and stream it, and the progress bar's figures.
@Suite("History file kinds and transfer rates")
struct HistoryFileKindTests {
  static func fixture(_ path: String) throws -> Data {
    try Data(contentsOf: try #require(Bundle.module.url(forResource: "Fixtures/" + path, withExtension: nil)))
  }

  @Test(arguments: [
    ("gpx/garmin-connect-hike.gpx", HistoryFileKind.gpx), ("gpx/gpslogger-gpx10.gpx", .gpx),
    ("csv/fixes-with-untimed-rows.csv", .csv), ("geojson/togeojson-line.geojson", .geojson),
    ("takeout/Records.json", .google), ("google/2024_MARCH.json", .google), ("google/Timeline.json", .google),
    ("google/location-history.json", .google),
  ])
  func everyFixtureIsToldByItsContent(_ path: String, _ kind: HistoryFileKind) throws {
    #expect(HistoryFileKind(head: try Self.fixture(path)) == kind)
  }

  @Test func contentThatIsNoHistoryFileIsNoKind() {
    #expect(HistoryFileKind(head: Data()) == nil)
    #expect(HistoryFileKind(head: Data("just words\nand more".utf8)) == nil)
    #expect(HistoryFileKind(head: Data([0x1F, 0x8B, 0x08, 0x00])) == nil)
  }

  /// Read in chunks of 7 bytes through ``HistoryFileKind/read(chunk:_:)``, every file gives what its own reader
  /// gives over the whole file, and the bytes reported end at the file's size.
  @Test(arguments: [
    "gpx/osmand-track.gpx", "csv/fixes-with-untimed-rows.csv", "geojson/togeojson-line.geojson",
    "takeout/Records.json", "google/Timeline.json",
  ])
  func readingInChunksGivesTheWholeFilesFixes(_ path: String) async throws {
    let data = try Self.fixture(path)
    let kind = try #require(HistoryFileKind(head: data))
    var whole = kind.reader()
    let expected = try whole.feed(data) + whole.finish()
    var fixes: [LocationFix] = []
    var reported: [Int] = []
    let reading = try await kind.read(chunk: { offset in data.subdata(in: offset..<min(offset + 7, data.count)) }) {
      fixes += $0
      reported.append($1)
    }
    #expect(fixes == expected && !fixes.isEmpty)
    #expect(reported.last == data.count && reported == reported.sorted())
    #expect(reading.skipped == whole.skipped)
    #expect((reading.google != nil) == (kind == .google))
  }

  @Test func aBrokenFileThrowsTheReadersError() async throws {
    let data = Data("{\"locations\": [{\"latitudeE7\": 1, \"longitudeE7\": 2, \"timestamp\": \"2024".utf8)
    await #expect(throws: FormatError.self) {
      _ = try await HistoryFileKind.google.read(chunk: { $0 == 0 ? data : Data() }) { _, _ in }
    }
  }

  @Test func theBarSaysBytesPointsRateAndTimeLeft() {
    let rate = TransferRate(bytesRead: 471_859_200, bytesTotal: 1_048_576_000, points: 4_500_000, elapsedSeconds: 20)
    #expect(rate.fraction == 0.45)
    #expect(rate.pointsPerSecond == 225_000)
    #expect(rate.secondsLeft.map { abs($0 - 24.444) < 0.01 } == true)
    #expect(
      rate.description
        == "[#########...........] 45 % · 450.0 of 1,000.0 MB · 4,500,000 points · 225,000 points/s · 25 s left")
    let unknownSize = TransferRate(bytesRead: 1_048_576, bytesTotal: nil, points: 10, elapsedSeconds: 0.05)
    #expect(unknownSize.description == "1.0 MB · 10 points")
    #expect(TransferRate.duration(185) == "3 min 5 s" && TransferRate.duration(7_800) == "2 h 10 min")
    #expect(TransferRate(bytesRead: 0, bytesTotal: 0, points: 0, elapsedSeconds: 1).fraction == 1)
  }
}
