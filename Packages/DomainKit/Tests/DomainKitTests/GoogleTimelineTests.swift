import Foundation
import Testing

@testable import DomainKit

/// Google's location history exports other than Records.json, on small files written by hand from the formats'
/// published descriptions (Fixtures/google): a Semantic Location History month, the phone's Timeline export in
/// its Android and iOS shapes; and what bad input gets.
@Suite("Google Timeline exports")
struct GoogleTimelineTests {
  static func fixture(_ name: String) throws -> Data {
    try Data(contentsOf: try #require(Bundle.module.url(forResource: "Fixtures/google/" + name, withExtension: nil)))
  }

  /// Reads `data` in chunks of `chunk` bytes.
  static func read(_ data: Data, chunk: Int = 65_536) throws -> (fixes: [LocationFix], summary: GoogleTimelineSummary) {
    var reader = GoogleTimelineReader(deviceID: "pixel")
    var fixes: [LocationFix] = []
    var start = data.startIndex
    while start < data.endIndex {
      let end = min(start + chunk, data.endIndex)
      fixes += try reader.feed(data[start..<end])
      start = end
    }
    fixes += try reader.finish()
    return (fixes, reader.summary)
  }

  static func error(_ text: String) -> FormatError? {
    do {
      _ = try read(Data(text.utf8))
      return nil
    } catch {
      return error as? FormatError
    }
  }

  @Test func shapesAreRecognisedByContent() throws {
    #expect(GoogleExportShape.detect(try Self.fixture("2024_MARCH.json")) == .semanticHistory)
    #expect(GoogleExportShape.detect(try Self.fixture("Timeline.json")) == .androidTimeline)
    #expect(GoogleExportShape.detect(try Self.fixture("location-history.json")) == .iosTimeline)
    #expect(GoogleExportShape.detect(Data(#"{"locations": []}"#.utf8)) == .records)
    // The first bytes only are enough.
    #expect(GoogleExportShape.detect(try Self.fixture("Timeline.json").prefix(40)) == .androidTimeline)
    for other in [
      #"{"type": "FeatureCollection", "features": []}"#, "[1, 2]", "[]", "lat,lon", #"{"_type":"location"}"#,
    ] {
      #expect(GoogleExportShape.detect(Data(other.utf8)) == nil, "\(other)")
    }
  }

  @Test func aSemanticLocationHistoryMonthGivesVisitsAndTheActivityBetween() throws {
    let (fixes, summary) = try Self.read(try Self.fixture("2024_MARCH.json"))
    #expect(summary.shape == .semanticHistory && summary.visits == 2 && summary.activities == 1)
    #expect(summary.pathPoints == 1 && summary.ignored == 0)
    let start = Int64(1_709_272_800_000)  // 2024-03-01T06:00Z
    let minute = Int64(60_000)
    #expect(fixes.map(\.timestamp) == [0, 120, 120, 130, 140, 140, 180].map { start + $0 * minute })
    #expect(fixes.map(\.kind) == [.visit, .visit, .imported, .imported, .imported, .visit, .visit])
    #expect(fixes.first?.latitude == 50.45 && fixes.first?.longitude == 30.52)
    #expect(fixes[3].latitude == 50.455 && fixes[3].horizontalAccuracy == 12)
    #expect(fixes.last?.latitude == 50.46 && fixes.last?.longitude == 30.53)
    #expect(fixes.allSatisfy { $0.deviceID == "pixel" })
    // The stays are found again from the fixes: two visits.
    #expect(VisitDetector().visits(in: fixes).count == 2)
  }

  @Test func anAndroidTimelineKeepsRawPositionsOverThePathOfTheSamePeriod() throws {
    let data = try Self.fixture("Timeline.json")
    let (fixes, summary) = try Self.read(data)
    #expect(summary.shape == .androidTimeline)
    #expect(summary.rawPositions == 2 && summary.visits == 1 && summary.activities == 1)
    // The first path is kept; the second path's two points give way to the two raw positions of its period.
    #expect(summary.pathPoints == 2 && summary.replacedByRaw == 2 && summary.ignored == 2)
    #expect(fixes.count == 8)
    let raw = try #require(fixes.first { $0.timestamp == 1_714_634_100_000 })  // 10:15+03:00
    #expect(raw.latitude == 50.461 && raw.longitude == 30.531 && raw.horizontalAccuracy == 8)
    #expect(raw.altitude == 170.5 && raw.speed == 1.2)
    let sorted = fixes.sorted { $0.timestamp < $1.timestamp }
    // 09:00 and 09:30 path, 10:15 and 10:45 raw, 12:00 and 14:00 visit, 14:00 and 14:30 activity (UTC+3).
    let nine = Int64(1_714_629_600_000)
    #expect(sorted.map { ($0.timestamp - nine) / 60_000 } == [0, 30, 75, 105, 180, 300, 300, 330])
    #expect(sorted.filter { $0.kind == .visit }.map(\.latitude) == [50.47, 50.47])
    #expect(!sorted.contains { $0.latitude == 50.46 || $0.latitude == 50.47 && $0.kind == .imported })
    #expect(summary.description.contains("2 path points left out where raw positions cover the period"))
    // Chunking doesn't matter.
    let bytewise = try Self.read(data, chunk: 7)
    #expect(bytewise.fixes == fixes && bytewise.summary == summary)
  }

  @Test func anIOSTimelineReadsGeoStringsAndMinuteOffsets() throws {
    let (fixes, summary) = try Self.read(try Self.fixture("location-history.json"))
    #expect(summary.shape == .iosTimeline && summary.visits == 1 && summary.activities == 1 && summary.pathPoints == 3)
    let five = Int64(1_717_995_600_000)  // 2024-06-10T05:00Z
    #expect(fixes.map { ($0.timestamp - five) / 60_000 } == [0, 120, 120, 160, 120, 140, 160])
    #expect(fixes.map(\.kind) == [.visit, .visit, .movement, .movement, .imported, .imported, .imported])
    #expect(fixes[5].latitude == 48.865 && fixes[5].longitude == 2.32)
  }

  @Test func recordsJSONReadsAsTheTakeoutReaderReadsIt() throws {
    let url = try #require(Bundle.module.url(forResource: "Fixtures/takeout/Records.json", withExtension: nil))
    var takeout: [LocationFix] = []
    try TakeoutReader.read(contentsOf: url, deviceID: "pixel") { takeout.append($0) }
    let (fixes, summary) = try Self.read(try Data(contentsOf: url))
    #expect(!takeout.isEmpty && fixes == takeout)
    #expect(summary.shape == .records && summary.rawPositions == takeout.count)
  }

  /// Records.json entries without a time are skipped and counted, with their lines, as the docs say (they refused
  /// the whole file), by the Takeout reader and by the reader of every Google export alike.
  @Test func recordsWithoutATimeAreSkippedAndCounted() throws {
    let json = """
      {"locations": [
        {"latitudeE7": 504500000, "longitudeE7": 305200000, "timestamp": "2024-05-02T10:15:00Z"},
        {"latitudeE7": 504510000, "longitudeE7": 305210000, "activity": [{"type": "STILL"}]},
        {"latitudeE7": 504520000, "longitudeE7": 305220000, "timestampMs": "1714645000000"},
        {"latitudeE7": 504530000, "longitudeE7": 305230000}
      ]}
      """
    for chunk in [7, 65_536] {
      var google = GoogleTimelineReader()
      var takeout = TakeoutReader()
      var fromGoogle: [LocationFix] = []
      var fromTakeout: [LocationFix] = []
      let data = Data(json.utf8)
      var start = data.startIndex
      while start < data.endIndex {
        let end = min(start + chunk, data.endIndex)
        fromGoogle += try google.feed(data[start..<end])
        fromTakeout += try takeout.feed(data[start..<end])
        start = end
      }
      fromGoogle += try google.finish()
      fromTakeout += try takeout.finish()
      #expect(fromGoogle.map(\.timestamp) == [1_714_644_900_000, 1_714_645_000_000])
      #expect(fromTakeout == fromGoogle)
      for skipped in [google.skipped, takeout.skipped] {
        #expect(skipped.count == 2 && skipped.lines == [3, 5], "\(skipped)")
        #expect(skipped.description == "2 points without a time skipped (lines 3, 5)")
      }
      #expect(google.summary.rawPositions == 2)
    }
  }

  @Test func badInputIsRefusedNamingWhereAndWhat() throws {
    let timeline = try Self.fixture("Timeline.json")
    let truncated = Self.error(String(decoding: timeline.prefix(timeline.count / 2), as: UTF8.self))
    #expect(truncated?.format == .googleTimeline && truncated?.message.contains("not valid JSON") == true)

    let cases: [(String, String, String)] = [
      (#"{"semanticSegments": {}}"#, "semanticSegments", "expected an array"),
      (#"{"semanticSegments": [3]}"#, "semanticSegments[0]", "expected an object"),
      (#"[{"startTime": 5}]"#, "[0].startTime", "expected an ISO 8601 time"),
      (#"[{"startTime": "yesterday"}]"#, "[0].startTime", "'yesterday' is not ISO 8601"),
      (
        #"[{"startTime": "2024-06-10T07:00:00Z", "visit": {"topCandidate": {"placeLocation": "geo:91.5,2"}}}]"#,
        "[0].latitude", "latitude"
      ),
      (
        #"[{"startTime": "2024-06-10T07:00:00Z", "timelinePath": [{"point": "somewhere"}]}]"#,
        "[0].timelinePath[0].point", "is not a"
      ),
      (
        #"{"rawSignals": [{"position": {"LatLng": "50.1°, 30.2°", "timestamp": "2024-05-02T10:15:00Z", "accuracyMeters": "near"}}]}"#,
        "rawSignals[0].position.accuracyMeters", "'near' is not a number"
      ),
      (
        #"{"timelineObjects": [{"placeVisit": {"location": {"latitudeE7": 2000000000, "longitudeE7": 1}, "duration": {"startTimestamp": "2024-03-01T06:00:00Z"}}}]}"#,
        "timelineObjects[0].latitude", "latitude"
      ),
      (
        #"{"timelineObjects": [{"placeVisit": {"location": {"latitudeE7": "north", "longitudeE7": 1}, "duration": {"startTimestamp": "2024-03-01T06:00:00Z"}}}]}"#,
        "timelineObjects[0].placeVisit.location.latitudeE7", "'north' is not a number"
      ),
      (
        #"{"timelineObjects": [{"activitySegment": {"duration": {"startTimestamp": "2024-03-01T09:00:00Z", "endTimestamp": "2024-03-01T08:00:00Z"}}}]}"#,
        "timelineObjects[0].activitySegment.duration.endTimestamp", "before"
      ),
      (#"{"locations": [{"latitudeE7": 1, "longitudeE7": 1, "timestamp": "soon"}]}"#, "locations[0].timestamp", "ISO"),
      // A record without a time is checked before it is skipped: a bad one still refuses the file.
      (
        #"{"locations": [{"latitudeE7": 1, "longitudeE7": 1, "accuracy": -3}]}"#, "locations[0].horizontalAccuracy",
        "≥ 0"
      ),
      (#"{"type": "FeatureCollection", "features": []}"#, "", "not a Google location history export"),
    ]
    for (text, field, message) in cases {
      let failure = Self.error(text)
      #expect(failure?.format == .googleTimeline, "\(text)")
      #expect((failure?.field ?? "") == field, "\(text): \(String(describing: failure))")
      #expect(failure?.message.contains(message) == true, "\(text): \(String(describing: failure))")
    }
  }
}
