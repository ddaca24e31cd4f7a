import Foundation
import Testing

@testable import DomainKit

@Suite struct GPXTests {
  /// The sample document of the GPX article (a GPX 1.1 track from MapSource), plus a waypoint.
  static let sample = """
    <?xml version="1.0" encoding="UTF-8" standalone="no" ?>
    <gpx xmlns="http://www.topografix.com/GPX/1/1" creator="MapSource 6.15.5" version="1.1"
      xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
      xsi:schemaLocation="http://www.topografix.com/GPX/1/1 http://www.topografix.com/GPX/1/1/gpx.xsd">
      <metadata><link href="http://www.garmin.com"><text>Garmin International</text></link>
        <time>2009-10-17T22:58:43Z</time></metadata>
      <wpt lat="47.644548" lon="-122.326897"><ele>4.46</ele><time>2009-10-17T18:37:00Z</time>
        <name>Start &amp; finish</name></wpt>
      <trk>
        <name>Example GPX Document</name>
        <trkseg>
          <trkpt lat="47.644548" lon="-122.326897">
            <ele>4.46</ele>
            <time>2009-10-17T18:37:26Z</time>
          </trkpt>
          <trkpt lat="47.644548" lon="-122.326897">
            <ele>4.94</ele>
            <time>2009-10-17T18:37:31Z</time>
          </trkpt>
          <trkpt lat="47.644548" lon="-122.326897">
            <ele>6.87</ele>
            <time>2009-10-17T18:37:34Z</time>
          </trkpt>
        </trkseg>
      </trk>
    </gpx>
    """

  @Test func readsTheSpecSample() throws {
    let points = try GPX.read(data: Data(Self.sample.utf8))
    #expect(points.count == 4)
    #expect(points[0].kind == .waypoint(name: "Start & finish"))
    #expect(points[1].kind == .track(track: 0, segment: 0))
    #expect(points[1].fix.latitude == 47.644548)
    #expect(points[1].fix.longitude == -122.326897)
    #expect(points[1].fix.altitude == 4.46)
    #expect(points[1].fix.timestamp == Timestamp.parseISO8601("2009-10-17T18:37:26Z"))
    #expect(points[3].fix.altitude == 6.87)
    #expect(points.allSatisfy { $0.fix.kind == .imported })
  }

  @Test func readsSpeedAndCourseExtensions() throws {
    let gpx = """
      <gpx version="1.1" creator="t" xmlns="http://www.topografix.com/GPX/1/1"
        xmlns:gpxtpx="http://www.garmin.com/xmlschemas/TrackPointExtension/v2">
      <trk><trkseg>
      <trkpt lat="50.1" lon="30.1"><time>2024-05-01T10:00:00.250Z</time>
        <extensions><gpxtpx:TrackPointExtension><gpxtpx:hr>120</gpxtpx:hr><gpxtpx:speed>3.5</gpxtpx:speed>
        <gpxtpx:course>181.5</gpxtpx:course></gpxtpx:TrackPointExtension></extensions></trkpt>
      <trkpt lat="50.2" lon="30.2"><time>2024-05-01T10:00:05Z</time><speed>1.25</speed><course>90</course></trkpt>
      </trkseg><trkseg><trkpt lat="50.3" lon="30.3"><time>2024-05-01T10:00:09Z</time></trkpt></trkseg></trk>
      </gpx>
      """
    let points = try GPX.read(data: Data(gpx.utf8))
    #expect(points.map(\.fix.speed) == [3.5, 1.25, nil])
    #expect(points.map(\.fix.course) == [181.5, 90, nil])
    #expect(points[0].fix.timestamp % 1000 == 250)
    #expect(points[2].kind == .track(track: 0, segment: 1))
  }

  @Test func writerRoundTripsAndEscapes() throws {
    let fixes = [
      try LocationFix(
        timestamp: 1_700_000_000_000, latitude: 50.4501, longitude: 30.5234, altitude: 179.5, speed: 1.2, course: 45),
      try LocationFix(timestamp: 1_700_000_005_500, latitude: 50.4502, longitude: 30.5235),
    ]
    let waypoint = try LocationFix(timestamp: 1_700_000_000_000, latitude: 1, longitude: 2)
    let text = GPX.document(
      tracks: [GPXTrack(name: "Walk <Kyiv> & \"more\"", segments: [fixes])], waypoints: [(waypoint, "Café 'A'")],
      creator: "Meridian & co")
    #expect(
      text.hasPrefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<gpx version=\"1.1\" creator=\"Meridian &amp; co\""))
    #expect(text.contains("<name>Walk &lt;Kyiv&gt; &amp; &quot;more&quot;</name>"))
    #expect(text.contains("<gpxtpx:speed>1.2</gpxtpx:speed>"))
    let back = try GPX.read(data: Data(text.utf8), kind: .movement)
    #expect(back.count == 3)
    #expect(back[0].kind == .waypoint(name: "Café 'A'"))
    #expect(back.dropFirst().map(\.fix) == fixes)
  }

  @Test func streamsFromAFile() throws {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("dk-\(UUID().uuidString).gpx")
    defer { try? FileManager.default.removeItem(at: url) }
    let fixes = try (0..<2000).map {
      try LocationFix(timestamp: 1_700_000_000_000 + Int64($0) * 1000, latitude: 50 + Double($0) * 1e-5, longitude: 30)
    }
    try GPX.document(tracks: [GPXTrack(segments: [fixes])]).write(to: url, atomically: true, encoding: .utf8)
    var count = 0
    try GPX.read(contentsOf: url, kind: .movement) { point in
      #expect(point.fix == fixes[count])
      count += 1
    }
    #expect(count == 2000)
  }

  @Test func theStreamingReaderAnswersEachChunksPointsWhereverTheInputIsCut() throws {
    let untimed = Self.sample.replacingOccurrences(
      of: "<trk>", with: "<wpt lat=\"1\" lon=\"2\"><name>No time</name></wpt>\n  <trk>")
    let data = Data(untimed.utf8)
    let whole = try GPX.readWithSkipped(data: data)
    #expect(whole.points.count == 4 && whole.skipped.count == 1)
    for size in [1, 7, 64, 300, data.count] {
      var reader = GPXReader()
      var fixes: [LocationFix] = []
      var chunksWithPoints = 0
      for start in stride(from: 0, to: data.count, by: size) {
        let points = try reader.feed(data[start..<min(start + size, data.count)])
        if !points.isEmpty { chunksWithPoints += 1 }
        fixes += points
      }
      fixes += try reader.finish()
      #expect(fixes == whole.points.map(\.fix), "chunks of \(size) bytes")
      #expect(reader.skipped.count == 1 && reader.skipped.lines == [whole.skipped[0].line])
      // Cut small, the points come out as their chunks complete them, not all at the end.
      if size <= 64 { #expect(chunksWithPoints >= 3, "chunks of \(size) bytes") }
    }
    var truncated = GPXReader()
    _ = try truncated.feed(data.prefix(700))
    #expect(throws: FormatError.self) { try truncated.finish() }
  }

  @Test func errorsNameLineAndField() {
    func error(_ gpx: String) -> FormatError? {
      do {
        _ = try GPX.read(data: Data(gpx.utf8))
        return nil
      } catch { return error as? FormatError }
    }
    let badLat = "<gpx version=\"1.1\">\n<wpt lat=\"95\" lon=\"1\"><time>2024-01-01T00:00:00Z</time></wpt>\n</gpx>"
    #expect(error(badLat)?.line == 2)
    #expect(error(badLat)?.field == "lat")
    let nan = "<gpx>\n\n<trk><trkseg><trkpt lat=\"abc\" lon=\"1\"/></trkseg></trk></gpx>"
    #expect(error(nan)?.field == "lat")
    #expect(error(nan)?.line == 3)
    let badTime = "<gpx><trk><trkseg><trkpt lat=\"1\" lon=\"1\"><time>yesterday</time></trkpt></trkseg></trk></gpx>"
    #expect(error(badTime)?.field == "time")
    let badEle = "<gpx><wpt lat=\"1\" lon=\"1\"><ele>high</ele><time>2024-01-01T00:00:00Z</time></wpt></gpx>"
    #expect(error(badEle)?.field == "ele")
    let truncated = String(Self.sample.prefix(700))
    #expect(error(truncated) != nil)
    #expect(error("<kml></kml>")?.message.contains("<gpx>") == true)
  }

  @Test func waypointsAndRoutePointsWithoutTimeAreSkippedAndReported() throws {
    let text = """
      <?xml version="1.0"?>
      <gpx version="1.1" creator="t" xmlns="http://www.topografix.com/GPX/1/1">
        <wpt lat="50.1" lon="30.1"><name>Home</name></wpt>
        <wpt lat="50.2" lon="30.2"><time>2024-05-01T10:00:00Z</time></wpt>
        <rte><rtept lat="50.3" lon="30.3"/><rtept lat="50.4" lon="30.4"><time>2024-05-01T10:01:00Z</time></rtept></rte>
      </gpx>
      """
    let result = try GPX.readWithSkipped(data: Data(text.utf8))
    #expect(result.points.map(\.fix.latitude) == [50.2, 50.4])
    #expect(result.skipped.count == 2)
    #expect(result.skipped.map(\.line) == [3, 5])
    #expect(result.skipped[0].kind == .waypoint(name: "Home"))
    #expect(result.skipped[1].kind == .route(route: 0))
    #expect(result.skipped[0].reason.contains("line 3"))
    #expect(try GPX.read(data: Data(text.utf8)).count == 2)
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("skip-\(UUID().uuidString).gpx")
    try Data(text.utf8).write(to: url)
    defer { try? FileManager.default.removeItem(at: url) }
    var skipped = 0
    var read = 0
    try GPX.read(contentsOf: url, skipped: { _ in skipped += 1 }) { _ in read += 1 }
    #expect(skipped == 2 && read == 2)
  }

  @Test func trackPointWithoutTimeIsSkippedWithItsLine() throws {
    let text = """
      <?xml version="1.0"?>
      <gpx version="1.1" creator="t" xmlns="http://www.topografix.com/GPX/1/1">
        <trk><trkseg>
          <trkpt lat="50.1" lon="30.1"><time>2024-05-01T10:00:00Z</time></trkpt>
          <trkpt lat="50.2" lon="30.2"><ele>3</ele></trkpt>
          <trkpt lat="50.3" lon="30.3"><time></time></trkpt>
        </trkseg></trk>
      </gpx>
      """
    let result = try GPX.readWithSkipped(data: Data(text.utf8))
    #expect(result.points.map(\.fix.latitude) == [50.1])
    #expect(result.skipped.map(\.line) == [5, 6])
    #expect(result.skipped[0].kind == .track(track: 0, segment: 0))
    #expect(result.skipped[0].reason == "the <trkpt> on line 5 has no <time>")
    #expect(result.skippedRecords.count == 2 && result.skippedRecords.lines == [5, 6])
  }

  @Test func untimedPointsAreStillChecked() {
    let text = """
      <gpx version="1.1">
      <trk><trkseg><trkpt lat="50.1" lon="30.1"><time>2024-05-01T10:00:00Z</time></trkpt>
      <trkpt lat="95" lon="30.2"/></trkseg></trk></gpx>
      """
    let error = #expect(throws: FormatError.self) { try GPX.read(data: Data(text.utf8)) }
    #expect(error?.line == 3 && error?.field == "lat")
    let badElevation = "<gpx><wpt lat=\"1\" lon=\"1\"><ele>high</ele></wpt></gpx>"
    #expect(throws: FormatError.self) { try GPX.read(data: Data(badElevation.utf8)) }
  }

  @Test func readsLatin1AndWindows1252AndRefusesOtherEncodings() throws {
    func document(_ encoding: String, name: [UInt8]) -> Data {
      Data(
        Array("<?xml version=\"1.0\" encoding=\"\(encoding)\"?>\n<gpx><wpt lat=\"1\" lon=\"2\"><name>".utf8) + name
          + Array("</name><time>2024-01-01T00:00:00Z</time></wpt></gpx>".utf8))
    }
    let latin1 = try GPX.read(data: document("ISO-8859-1", name: [0x4B, 0xF6, 0x6C, 0x6E]))  // Köln
    #expect(latin1.first?.kind == .waypoint(name: "Köln"))
    let windows = try GPX.read(data: document("windows-1252", name: [0x80, 0x20, 0x93, 0x41, 0x94]))
    #expect(windows.first?.kind == .waypoint(name: "€ “A”"))
    let utf8 = try GPX.read(data: Data([0xEF, 0xBB, 0xBF]) + document("UTF-8", name: Array("Київ".utf8)))
    #expect(utf8.first?.kind == .waypoint(name: "Київ"))
    let error = #expect(throws: FormatError.self) { try GPX.read(data: document("KOI8-R", name: [0xEB])) }
    #expect(error?.field == "encoding" && error?.line == 1)
    let utf16 = Data([0xFF, 0xFE]) + Data("<gpx/>".utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] })
    #expect(throws: FormatError.self) { try GPX.read(data: utf16) }
  }

  /// Any chunking of the input gives the same points, skips and errors as the whole document at once.
  @Test(arguments: [1, 2, 3, 7, 64, 1000])
  func chunksDoNotMatter(size: Int) throws {
    let bytes = Array(Self.sample.utf8) + Array("<!-- after the root -->\n".utf8)
    func read(_ bytes: [UInt8], chunk: Int) -> Result<GPXReadResult, FormatError> {
      var points: [GPXPoint] = []
      var skipped: [GPXSkippedPoint] = []
      let parser = GPXParser(deviceID: nil, kind: .imported, skipped: { skipped.append($0) }) { points.append($0) }
      do {
        var index = 0
        while index < bytes.count {
          try parser.feed(Data(bytes[index..<min(index + chunk, bytes.count)]))
          index += chunk
        }
        try parser.finish()
        return .success(GPXReadResult(points: points, skipped: skipped))
      } catch {
        return .failure(error as! FormatError)
      }
    }
    let whole = read(bytes, chunk: bytes.count)
    #expect(try whole.get().points.count == 4)
    #expect(read(bytes, chunk: size) == whole)
    let broken = Array(bytes[..<600]) + [0xFF] + Array(bytes[600...])
    #expect(read(broken, chunk: size).isFailure)
  }
}

extension Result {
  var isFailure: Bool {
    if case .failure = self { return true }
    return false
  }
}
