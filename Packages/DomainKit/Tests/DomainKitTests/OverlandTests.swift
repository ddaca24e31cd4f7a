import DomainKit
import Foundation
import Testing

@Suite struct OverlandTests {
  /// The request body of Overland's README ("API"), with the tracking statistics it documents.
  static let documentedBatch = """
    {
      "locations": [
        {
          "type": "Feature",
          "geometry": { "type": "Point", "coordinates": [-122.030581, 37.331800] },
          "properties": {
            "timestamp": "2015-10-01T08:00:00-0700",
            "altitude": 0, "speed": 4, "horizontal_accuracy": 30, "vertical_accuracy": -1,
            "motion": ["driving", "stationary"], "pauses": false, "activity": "other_navigation",
            "desired_accuracy": 100, "deferred": 1000, "significant_change": "disabled",
            "locations_in_payload": 1, "battery_state": "charging", "battery_level": 0.89,
            "device_id": "", "wifi": ""
          }
        }
      ],
      "current": { "type": "Feature", "geometry": { "type": "Point", "coordinates": [0, 0] }, "properties": {} },
      "trip": { "distance": 12, "mode": "car" }
    }
    """

  @Test func parsesTheDocumentedBatch() throws {
    let fixes = try Overland.parse(Data(Self.documentedBatch.utf8))
    #expect(fixes.count == 1)
    let fix = try #require(fixes.first)
    // 08:00 at −07:00 is 15:00 UTC.
    #expect(fix.timestamp == 1_443_711_600_000)
    #expect(fix.latitude == 37.3318 && fix.longitude == -122.030581)
    #expect(fix.altitude == 0 && fix.speed == 4 && fix.horizontalAccuracy == 30)
    #expect(fix.verticalAccuracy == nil)
    #expect(fix.batteryLevel == 89 && fix.batteryState == .charging)
  }

  @Test func readsUnknownValuesAsAbsentAndAnEmptyBatchAsNoFixes() throws {
    let unknown = """
      {"locations":[{"type":"Feature","geometry":{"type":"Point","coordinates":[30.5,50.4,170]},
      "properties":{"timestamp":"2026-11-29T07:00:00Z","speed":-1,"course":-1,"horizontal_accuracy":-1,
      "battery_level":-1,"battery_state":"unknown"}}]}
      """
    let fix = try #require(try Overland.parse(Data(unknown.utf8)).first)
    #expect(fix.speed == nil && fix.course == nil && fix.horizontalAccuracy == nil && fix.batteryLevel == nil)
    #expect(fix.batteryState == .unknown && fix.altitude == nil)
    #expect(try Overland.parse(Data(#"{"locations":[]}"#.utf8)).isEmpty)
  }

  @Test func namesTheBadMember() throws {
    func field(_ json: String) -> String?? {
      do {
        _ = try Overland.parse(Data(json.utf8))
        return .none
      } catch {
        return .some((error as? FormatError)?.field)
      }
    }
    func feature(_ coordinates: String, _ timestamp: String = "2026-11-29T07:00:00Z") -> String {
      #"{"locations":[{"type":"Feature","geometry":{"type":"Point","coordinates":[30,50]},"#
        + #""properties":{"timestamp":"2026-11-29T07:00:00Z"}},"#
        + #"{"type":"Feature","geometry":{"type":"Point","coordinates":\#(coordinates)},"#
        + #""properties":{"timestamp":"\#(timestamp)"}}]}"#
    }
    #expect(field(feature("[30,91]")) == .some("locations[1].geometry.coordinates[1]"))
    #expect(field(feature("[181,50]")) == .some("locations[1].geometry.coordinates[0]"))
    #expect(field(feature("[30]")) == .some("locations[1].geometry"))
    #expect(field(feature("[30,50]", "yesterday")) == .some("locations[1].properties.timestamp"))
    #expect(field(feature(#"["east",50]"#)) == .some("locations[1].geometry.coordinates[0]"))
    #expect(
      field(#"{"locations":[{"geometry":{"type":"Point","coordinates":[1,2]}}]}"#) == .some("locations[0].properties"))
    #expect(field(#"{"points":[]}"#) == .some("locations"))
    // Not JSON at all: no member to name.
    #expect(field(#"{"locations":["#) == .some(nil))
    #expect(field(feature("[30,50]")) == .none)
  }
}

@Suite struct GPSLoggerParametersTests {
  /// GPSLogger's custom URL with its placeholders filled as the app fills them (`%TIME` ISO 8601 UTC, `%SPD` m/s,
  /// `%BATT` a percentage with a fraction).
  @Test func readsSpeedInMetresPerSecond() throws {
    let query =
      "id=secret&lat=50.4501&lon=30.5234&timestamp=2026-11-29T07:00:00.000Z&accuracy=8.5&altitude=170.0"
      + "&speed=2.5&bearing=90.0&batt=85.0"
    let report = try OsmAnd.parse(query: query, receivedAt: 0, speed: .metresPerSecond)
    #expect(report.fix.speed == 2.5 && report.fix.course == 90 && report.fix.batteryLevel == 85)
    #expect(report.fix.timestamp == 1_795_935_600_000)
    let knots = try OsmAnd.parse(query: query, receivedAt: 0)
    #expect(knots.fix.speed == 2.5 * OsmAnd.metresPerSecondPerKnot)
  }
}
