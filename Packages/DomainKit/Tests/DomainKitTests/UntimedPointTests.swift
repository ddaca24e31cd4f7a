import Foundation
import Testing

@testable import DomainKit

/// Points without a time are valid in GPX 1.1 (and can be in CSV and GeoJSON) but can't be history: the readers
/// skip them and say how many and where, and read every timed point. Files are shaped like the exports of common
/// devices and apps (`Fixtures/`).
@Suite struct UntimedPointTests {
  static func fixture(_ path: String) throws -> URL {
    try #require(Bundle.module.url(forResource: "Fixtures/" + path, withExtension: nil))
  }

  @Test func garminConnectHikeWithUntimedPointsImportsTheRest() throws {
    var points: [GPXPoint] = []
    var skipped: [GPXSkippedPoint] = []
    try GPX.read(contentsOf: Self.fixture("gpx/garmin-connect-hike.gpx"), skipped: { skipped.append($0) }) {
      points.append($0)
    }
    #expect(points.count == 37)
    #expect(skipped.map(\.line) == [13, 22, 181])
    #expect(skipped.allSatisfy { $0.kind == .track(track: 0, segment: 0) })
    #expect(points.first?.fix.timestamp == Timestamp.parseISO8601("2024-06-01T06:12:13Z"))
    #expect(points.first?.fix.altitude == 1304.6)
    let timestamps = points.map(\.fix.timestamp)
    #expect(timestamps == timestamps.sorted())
  }

  /// A 2,000-point hike in which one point in a hundred lost its time: 1,980 points are read.
  @Test func longHikeLosesOnlyItsUntimedPoints() throws {
    var text = """
      <?xml version="1.0" encoding="UTF-8"?>
      <gpx creator="Garmin Connect" version="1.1" xmlns="http://www.topografix.com/GPX/1/1"
        xmlns:ns3="http://www.garmin.com/xmlschemas/TrackPointExtension/v1">
        <trk><name>Long hike</name><type>hiking</type><trkseg>

      """
    for index in 0..<2000 {
      text += "      <trkpt lat=\"\(48 + Double(index) * 1e-4)\" lon=\"24.5\"><ele>1300</ele>"
      if index % 100 != 42 {
        text += "<time>\(Timestamp.formatISO8601(1_717_222_323_000 + Int64(index) * 1000))</time>"
      }
      text += "<extensions><ns3:TrackPointExtension><ns3:hr>120</ns3:hr></ns3:TrackPointExtension></extensions>"
      text += "</trkpt>\n"
    }
    text += "    </trkseg></trk>\n</gpx>\n"
    let result = try GPX.readWithSkipped(data: Data(text.utf8))
    #expect(result.points.count == 1980)
    let records = result.skippedRecords
    #expect(records.count == 20)
    #expect(records.lines == [47, 147, 247, 347, 447])
    #expect(records.description == "20 points without a time skipped (first lines 47, 147, 247, 347, 447)")
  }

  @Test func plannedRouteWithoutAnyTimeReadsNothingAndSaysWhy() throws {
    let result = try GPX.readWithSkipped(data: Data(contentsOf: Self.fixture("gpx/route-planner-untimed.gpx")))
    #expect(result.points.isEmpty)
    #expect(result.skipped.count == 12)
    #expect(result.skippedRecords.description == ("12 points without a time skipped (first lines 15, 18, 21, 24, 27)"))
  }

  @Test func osmandAndGPSLoggerTracksReadWhole() throws {
    let osmand = try GPX.readWithSkipped(data: Data(contentsOf: Self.fixture("gpx/osmand-track.gpx")))
    #expect(osmand.points.count == 20)
    #expect(osmand.skipped.map(\.kind) == [.waypoint(name: "Parking")])
    #expect(osmand.points.last?.fix.speed == 2.15)
    let logger = try GPX.readWithSkipped(data: Data(contentsOf: Self.fixture("gpx/gpslogger-gpx10.gpx")))
    #expect(logger.points.count == 10 && logger.skipped.isEmpty)
    #expect(logger.points[3].fix.course == 203 && logger.points[3].fix.speed == 1.4)
  }

  @Test func csvRowsWithoutATimestampAreSkipped() throws {
    var read: [LocationFix] = []
    let skipped = try CSVReader.read(contentsOf: Self.fixture("csv/fixes-with-untimed-rows.csv")) { read.append($0) }
    #expect(read.map(\.latitude) == [50.4501, 50.4503, 50.4504, 50.4506])
    #expect(skipped.count == 2 && skipped.lines == [3, 6])
    #expect(skipped.examples[0].reason == "the row on line 3 has no timestamp")
    // An untimed row is checked all the same.
    let bad = "timestamp,latitude,longitude\n2024-01-01T00:00:00Z,1,2\n,91,2\n"
    let error = #expect(throws: FormatError.self) { try CSVReader.read(bad) }
    #expect(error?.line == 3 && error?.field == "latitude")
    // Every row untimed: nothing read, every row counted.
    var reader = CSVReader()
    let fixes = try reader.feed(Array("time,lat,lon\n,1,2\n,3,4\n".utf8)) + reader.finish()
    #expect(fixes.isEmpty && reader.skipped.count == 2)
  }

  @Test func geoJSONFeaturesAndPositionsWithoutATimeAreSkipped() throws {
    var read: [LocationFix] = []
    let skipped = try GeoJSONReader.read(contentsOf: Self.fixture("geojson/togeojson-line.geojson")) {
      read.append($0)
    }
    #expect(read.map(\.latitude) == [50.4501, 50.4505, 50.4513, 50.4520])
    #expect(skipped.count == 5)
    #expect(
      skipped.examples.map(\.path) == [
        "features[0].geometry.coordinates[2]", "features[2].geometry", "features[3].geometry",
      ])
    #expect(skipped.examples.map(\.points) == [1, 1, 3])
    #expect(skipped.lines == [2, 6, 7])
    let bad = #"{"type":"Feature","geometry":{"type":"Point","coordinates":[200,1]},"properties":{}}"#
    #expect(throws: FormatError.self) { try GeoJSON.read(data: Data(bad.utf8)) }
  }

  @Test func skippedRecordsKeepTheFirstFewAndCountAll() {
    var records = SkippedRecords()
    #expect(records.isEmpty && records.description == "")
    records.append(SkippedRecord(line: 7, reason: "x"))
    #expect(records.description == "1 point without a time skipped (line 7)")
    for line in 8..<1000 { records.append(SkippedRecord(line: line, reason: "x")) }
    #expect(records.count == 993 && records.examples.count == SkippedRecords.examplesKept)
    var total = SkippedRecords()
    total.append(contentsOf: records)
    total.append(contentsOf: records)
    #expect(total.count == 1986 && total.lines == [7, 8, 9, 10, 11])
  }
}
