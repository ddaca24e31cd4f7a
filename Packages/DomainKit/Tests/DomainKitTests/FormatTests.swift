import Foundation
import Testing

@testable import DomainKit

@Suite struct CSVTests {
  @Test func writesDocumentedHeaderAndRoundTrips() throws {
    let fixes = [
      try LocationFix(
        deviceID: "d,1", timestamp: 1_700_000_000_123, latitude: 50.45, longitude: 30.52, horizontalAccuracy: 4.5,
        altitude: 100, speed: 1.5, course: 90, floor: -1, batteryLevel: 55, batteryState: .charging, kind: .photo,
        trigger: .manual),
      try LocationFix(timestamp: 1_700_000_001_000, latitude: -33.8688, longitude: 151.2093),
    ]
    let text = CSVFormat.document(fixes)
    #expect(
      text.hasPrefix(
        "timestamp,latitude,longitude,horizontalAccuracy,verticalAccuracy,altitude,speed,speedAccuracy,course,floor,"
          + "batteryLevel,batteryState,kind,trigger,deviceId\r\n"))
    #expect(text.contains("2023-11-14T22:13:20.123Z,50.45,30.52,4.5,,100,1.5,,90,-1,55,charging,photo,manual,\"d,1\""))
    #expect(
      try CSVReader.read(text)
        == fixes.enumerated().map { i, f in
          var f = f
          if i == 1 { f.kind = .movement }
          return f
        })
  }

  @Test func readsColumnsInAnyOrderWithQuotesAndAliases() throws {
    let text = "\u{FEFF}lon;x\nignored\n"
    #expect(throws: FormatError.self) { try CSVReader.read(text) }
    let csv = """
      note,lon,lat,time,accuracy
      "hello, ""world""
      second line",30.5,50.4,1700000000000,3
      ,10,20,2024-01-01T00:00:00+02:00,
      """
    let fixes = try CSVReader.read(csv, deviceID: "dev")
    #expect(fixes.count == 2)
    #expect(fixes[0].latitude == 50.4 && fixes[0].longitude == 30.5 && fixes[0].horizontalAccuracy == 3)
    #expect(fixes[0].timestamp == 1_700_000_000_000)
    #expect(fixes[1].timestamp == Timestamp.parseISO8601("2023-12-31T22:00:00Z"))
    #expect(fixes[1].deviceID == "dev" && fixes[1].kind == .imported)
  }

  @Test func streamsInTinyChunks() throws {
    let fixes = try (0..<300).map {
      try LocationFix(timestamp: Int64($0) * 1000, latitude: Double($0) / 10, longitude: 1, horizontalAccuracy: 2)
    }
    let bytes = Array(CSVFormat.document(fixes).utf8)
    var reader = CSVReader(kind: .movement)
    var read: [LocationFix] = []
    var index = 0
    while index < bytes.count {
      let end = min(index + 7, bytes.count)
      read += try reader.feed(bytes[index..<end])
      index = end
    }
    read += try reader.finish()
    #expect(read == fixes)
  }

  func error(_ csv: String) -> FormatError? {
    do {
      _ = try CSVReader.read(csv)
      return nil
    } catch { return error as? FormatError }
  }

  @Test func errorsNameLineAndColumn() {
    let header = "timestamp,latitude,longitude,course\n"
    #expect(error(header + "1,2,3,4\n5,abc,1,\n")?.line == 3)
    #expect(error(header + "1,2,3,4\n5,abc,1,\n")?.field == "latitude")
    #expect(error(header + "1,95,3,\n")?.field == "latitude")
    #expect(error(header + "1,5,3,400\n")?.field == "course")
    #expect(error(header + "yesterday,5,3,\n")?.field == "timestamp")
    #expect(error(header + "1,,3,\n")?.message == "missing value")
    #expect(error("lat,lon\n1,2\n")?.field == "timestamp")
    #expect(error(header + "1,2,3,\"unterminated\n")?.line == 2)
    #expect(error("")?.line == 1)
  }
}

@Suite struct GeoJSONTests {
  @Test func writesPointsInLonLatOrder() throws {
    let fix = try LocationFix(
      deviceID: "d", timestamp: 1_700_000_000_000, latitude: 0.5, longitude: 102, horizontalAccuracy: 5,
      altitude: 12.5)
    let text = GeoJSON.pointCollection([fix])
    #expect(text.contains("\"coordinates\":[102,0.5,12.5]"))
    #expect(text.contains("\"timestamp\":\"2023-11-14T22:13:20.000Z\""))
    let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    #expect(object["type"] as? String == "FeatureCollection")
    #expect(try GeoJSON.read(data: Data(text.utf8), kind: .movement) == [fix])
  }

  @Test func linesPerTrackRoundTrip() throws {
    let fixes = try (0..<3).map {
      try LocationFix(timestamp: Int64($0) * 1000, latitude: 10 + Double($0), longitude: 20, altitude: 5)
    }
    let text = GeoJSON.lineCollection([GPXTrack(name: "t", segments: [fixes])])
    #expect(text.contains("\"type\":\"LineString\",\"coordinates\":[[20,10,5],[20,11,5],[20,12,5]]"))
    #expect(try GeoJSON.read(data: Data(text.utf8), kind: .movement) == fixes)
  }

  /// The example of RFC 7946 §1.5 (with times added, since a fix needs one).
  @Test func readsRFC7946Example() throws {
    let rfc = """
      { "type": "FeatureCollection",
        "features": [
          { "type": "Feature",
            "geometry": {"type": "Point", "coordinates": [102.0, 0.5]},
            "properties": {"prop0": "value0", "time": "2024-01-01T00:00:00Z"}
          },
          { "type": "Feature",
            "geometry": {
              "type": "LineString",
              "coordinates": [[102.0, 0.0], [103.0, 1.0], [104.0, 0.0], [105.0, 1.0]]
            },
            "properties": {"prop0": "value0", "prop1": 0.0,
              "coordTimes": ["2024-01-01T00:00:01Z", "2024-01-01T00:00:02Z", 1704067203000, "2024-01-01T00:00:04Z"]}
          },
          { "type": "Feature",
            "geometry": {
              "type": "Polygon",
              "coordinates": [[[100.0, 0.0], [101.0, 0.0], [101.0, 1.0], [100.0, 1.0], [100.0, 0.0]]]
            },
            "properties": {"prop0": "value0", "prop1": {"this": "that"}}
          }
        ]
      }
      """
    let fixes = try GeoJSON.read(data: Data(rfc.utf8))
    #expect(fixes.count == 5)
    #expect(fixes[0].longitude == 102 && fixes[0].latitude == 0.5)
    #expect(fixes[3].timestamp == 1_704_067_203_000)
    #expect(fixes[4].longitude == 105 && fixes[4].latitude == 1)
  }

  func error(_ json: String) -> FormatError? {
    do {
      _ = try GeoJSON.read(data: Data(json.utf8))
      return nil
    } catch { return error as? FormatError }
  }

  @Test func errorsNamePaths() {
    let point =
      #"{"type":"FeatureCollection","features":[{"type":"Feature","geometry":{"type":"Point","coordinates":[1,2]},"properties":{"time":"2024-01-01T00:00:00Z"}},{"type":"Feature","geometry":{"type":"Point","coordinates":[1,95]},"properties":{"time":1}}]}"#
    #expect(error(point)?.field == "features[1].geometry.coordinates.latitude")
    #expect(
      error(#"{"type":"Feature","geometry":{"type":"Point","coordinates":[1,2]},"properties":{"time":true}}"#)?.field
        == "$.geometry~properties.timestamp")
    #expect(
      error(
        #"{"type":"Feature","geometry":{"type":"LineString","coordinates":[[1,2],[3,4]]},"properties":{"coordTimes":[1]}}"#
      )?.message == "has 1 times for 2 positions")
    #expect(
      error(
        #"{"type":"FeatureCollection","features":[{"type":"Feature","geometry":{"type":"Point","coordinates":["a",1]},"properties":{"time":1}}]}"#
      )?.field == "features[0].geometry.coordinates.longitude")
    #expect(error(#"{"type":"FeatureCollection","features":["#)?.message.contains("JSON") == true)
    #expect(error(#"{"type":"Circle"}"#)?.field == "$.type")
  }
}

@Suite struct OwnTracksTests {
  /// The location example of the OwnTracks booklet poster.
  static let location = """
    {"_type":"location","batt":87,"bs":2,"cog":270,"lat":52.3702,"lon":4.8952,"acc":75,"t":"u","tid":"YY",
     "tst":1376715317,"alt":13,"vac":10,"vel":54,"conn":"w","topic":"owntracks/jane/phone","inregions":["home"],
     "created_at":1376715320}
    """

  @Test func decodesLocationAndConvertsUnitsExactly() throws {
    let messages = try OwnTracks.decode(Data(Self.location.utf8))
    guard case .location(let location) = try #require(messages.first) else {
      Issue.record("not a location")
      return
    }
    #expect(location.vel == 54 && location.tid == "YY" && location.createdAt == 1_376_715_320)
    let fix = try location.fix(deviceID: "phone")
    #expect(fix.timestamp == 1_376_715_317_000)
    #expect(fix.speed == 15)  // 54 km/h = 15 m/s exactly
    #expect(fix.course == 270 && fix.horizontalAccuracy == 75 && fix.verticalAccuracy == 10 && fix.altitude == 13)
    #expect(fix.batteryLevel == 87 && fix.batteryState == .charging && fix.trigger == .manual)
    let back = OwnTracks.Location(fix, tid: "YY")
    #expect(back.vel == 54 && back.tst == 1_376_715_317 && back.bs == 2 && back.t == "u" && back.acc == 75)
  }

  @Test func decodesTransitionWaypointCardLwtAndUnknown() throws {
    let transition = """
      {"_type":"transition","wtst":1425042603,"lat":12.34,"lon":44.5,"tst":1427634603,"acc":130,"tid":"JP",
       "event":"enter","desc":"my Indian restaurant","t":"b"}
      """
    let batch =
      "[\(transition),{\"_type\":\"waypoint\",\"tst\":1,\"lat\":1,\"lon\":2,\"rad\":50,\"desc\":\"Home\"},"
      + "{\"_type\":\"card\",\"name\":\"Jane\",\"tid\":\"JJ\"},{\"_type\":\"lwt\",\"tst\":5},{\"_type\":\"cmd\",\"action\":\"dump\"}]"
    let messages = try OwnTracks.decode(Data(batch.utf8))
    #expect(messages.count == 5)
    #expect(
      messages[0]
        == .transition(
          .init(
            wtst: 1_425_042_603, lat: 12.34, lon: 44.5, tst: 1_427_634_603, acc: 130, tid: "JP", event: "enter",
            desc: "my Indian restaurant", t: "b")))
    #expect(messages[1] == .waypoint(.init(tst: 1, lat: 1, lon: 2, rad: 50, desc: "Home")))
    #expect(messages[2] == .card(.init(name: "Jane", tid: "JJ")))
    #expect(messages[3] == .lwt(.init(tst: 5)))
    #expect(messages[4] == .other(type: "cmd"))
    let encoded = try OwnTracks.encode(messages)
    // A device's list of regions: valid entries kept, a bad one left out, the list encoded again as it came.
    let list = try OwnTracks.decode(
      Data(
        #"{"_type":"waypoints","waypoints":[{"_type":"waypoint","tst":1,"lat":1,"lon":2,"rad":50,"desc":"Home"},{"tst":"x"}]}"#
          .utf8))
    #expect(list == [.waypoints([.init(tst: 1, lat: 1, lon: 2, rad: 50, desc: "Home")])])
    #expect(try OwnTracks.decode(OwnTracks.encode(list)) == list)
    #expect(String(decoding: encoded, as: UTF8.self).contains("\"_type\":\"transition\""))
    #expect(try OwnTracks.decode(encoded) == messages)
  }

  /// A region or transition whose position breaks GeoKit's coordinate rule is refused naming the field (a latitude
  /// of 91, a longitude of 181 — never wrapped); in a device's list of regions it is left out like any bad entry.
  @Test func waypointsAndTransitionsOutOfRangeAreRefused() throws {
    let cases = [
      (#"{"_type":"waypoint","tst":1,"lat":91,"lon":2,"desc":"Pole"}"#, "lat"),
      (#"{"_type":"waypoint","tst":1,"lat":1,"lon":181,"desc":"East"}"#, "lon"),
      (#"{"_type":"transition","wtst":1,"lat":-91,"lon":2,"tst":2,"event":"enter"}"#, "lat"),
    ]
    for (json, field) in cases {
      #expect(throws: FormatError.self) { try OwnTracks.decode(Data(json.utf8)) }
      do {
        _ = try OwnTracks.decode(Data(json.utf8))
      } catch let error as FormatError {
        #expect(error.field == field, "\(json)")
      }
    }
    let list = try OwnTracks.decode(
      Data(
        #"{"_type":"waypoints","waypoints":[{"tst":1,"lat":1,"lon":2,"desc":"A"},{"tst":2,"lat":1,"lon":-181,"desc":"B"}]}"#
          .utf8))
    #expect(list == [.waypoints([.init(tst: 1, lat: 1, lon: 2, desc: "A")])])
  }

  @Test func floatsAreAccepted() throws {
    let json = #"{"_type":"location","lat":1,"lon":2,"tst":1700000000.0,"acc":4.6,"vel":3.6}"#
    guard case .location(let l) = try OwnTracks.decode(Data(json.utf8))[0] else { return }
    #expect(l.acc == 5 && l.vel == 4 && l.tst == 1_700_000_000)
  }

  @Test func errorsNameFields() {
    func field(_ json: String) -> String? {
      do {
        _ = try OwnTracks.decode(Data(json.utf8))
        return nil
      } catch { return (error as? FormatError)?.field }
    }
    #expect(field(#"{"_type":"location","lat":1,"tst":5}"#) == "lon")
    #expect(field(#"{"_type":"location","lat":"x","lon":1,"tst":5}"#) == "lat")
    #expect(field(#"{"lat":1}"#) == "_type")
    #expect(throws: FormatError.self) { try OwnTracks.decode(Data(#"{"_type":"loc"#.utf8)) }
    let outOfRange = #"{"_type":"location","lat":91,"lon":1,"tst":5}"#
    #expect(throws: FormatError.self) {
      if case .location(let l) = try OwnTracks.decode(Data(outOfRange.utf8))[0] { _ = try l.fix() }
    }
  }
}

@Suite struct TakeoutTests {
  /// Shaped like Google's Records.json (new `timestamp` and legacy `timestampMs` records, nested activity).
  static let records = """
    {
      "locations" : [ {
        "latitudeE7" : 414216106,
        "longitudeE7" : 21684775,
        "accuracy" : 20,
        "activity" : [ {
          "activity" : [ { "type" : "STILL", "confidence" : 100 } ],
          "timestamp" : "2022-01-12T17:18:24.190Z"
        } ],
        "source" : "WIFI",
        "deviceTag" : 1978796627,
        "timestamp" : "2022-01-12T17:18:24.190Z"
      }, {
        "timestampMs" : "1438327200000",
        "latitudeE7" : -338688000,
        "longitudeE7" : 4294967296,
        "accuracy" : 5,
        "velocity" : 3,
        "heading" : 270,
        "altitude" : 58,
        "verticalAccuracy" : 2,
        "batteryCharging" : true,
        "placeId" : "ChIJ\\u00e9 \\"q\\""
      } ]
    }
    """

  @Test func readsRecordsIncludingLegacyAndWrappedE7() throws {
    var reader = TakeoutReader(deviceID: "pixel")
    let fixes = try reader.feed(Array(Self.records.utf8)) + reader.finish()
    #expect(fixes.count == 2)
    #expect(fixes[0].latitude == 41.4216106 && fixes[0].longitude == 2.1684775)
    #expect(
      fixes[0].timestamp == 1_642_008_304_190 - 400_000
        || fixes[0].timestamp == Timestamp.parseISO8601("2022-01-12T17:18:24.190Z"))
    #expect(fixes[0].horizontalAccuracy == 20 && fixes[0].kind == .imported && fixes[0].deviceID == "pixel")
    #expect(fixes[1].timestamp == 1_438_327_200_000)
    #expect(fixes[1].latitude == -33.8688)
    #expect(fixes[1].longitude == 0)  // 4294967296 wraps to 0
    #expect(fixes[1].batteryState == .charging && fixes[0].batteryState == nil)
    #expect(fixes[1].speed == 3 && fixes[1].course == 270 && fixes[1].altitude == 58 && fixes[1].verticalAccuracy == 2)
  }

  /// A nested value's members never stand for the record's own (an `activity`'s `timestamp` is not the record's
  /// time), a repeated member's last value counts, and both readers of Records.json read every record alike.
  @Test func nestedMembersAreNotTheRecordsAndBothReadersAgree() throws {
    let json = """
      {"locations": [
        {"latitudeE7": 1, "longitudeE7": 2, "extra": {"timestampMs": "7"},
         "activity": [{"timestamp": "2022-01-12T17:18:24.190Z", "latitudeE7": 5}]},
        {"latitudeE7": 3, "longitudeE7": 4, "timestampMs": "9", "timestampMs": "10", "altitude": null,
         "batteryCharging": false, "placeId": "x"}
      ]}
      """
    var takeout = TakeoutReader()
    let fixes = try takeout.feed(Array(json.utf8)) + takeout.finish()
    #expect(fixes.map(\.timestamp) == [10])
    #expect(takeout.skipped.count == 1)
    #expect(fixes.first?.latitude == 3e-7 && fixes.first?.altitude == nil && fixes.first?.batteryState == .unplugged)
    for text in [json, Self.records] {
      var (records, google) = (TakeoutReader(), GoogleTimelineReader())
      let expected = try records.feed(Array(text.utf8)) + records.finish()
      #expect(try google.feed(Array(text.utf8)) + google.finish() == expected)
      #expect(google.skipped == records.skipped)
    }
  }

  @Test func e7OverflowQuirk() throws {
    // 4 294 967 296 − 3 000 000 000 → longitude −129.4967296 was stored as 3 000 000 000 by 32-bit overflow.
    let json = #"{"locations":[{"latitudeE7":4000000000,"longitudeE7":3000000000,"timestampMs":"0"}]}"#
    var reader = TakeoutReader()
    let fixes = try reader.feed(Array(json.utf8)) + reader.finish()
    #expect(abs(fixes[0].latitude - (-29.4967296)) < 1e-9)
    #expect(abs(fixes[0].longitude - (-129.4967296)) < 1e-9)
  }

  @Test func byteByByteEqualsWhole() throws {
    var whole = TakeoutReader()
    let expected = try whole.feed(Array(Self.records.utf8)) + whole.finish()
    var reader = TakeoutReader()
    var fixes: [LocationFix] = []
    for byte in Self.records.utf8 { fixes += try reader.feed(CollectionOfOne(byte)) }
    fixes += try reader.finish()
    #expect(fixes == expected)
  }

  @Test func streamsALargeFileFromDisk() throws {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("dk-\(UUID().uuidString).json")
    defer { try? FileManager.default.removeItem(at: url) }
    _ = FileManager.default.createFile(atPath: url.path, contents: nil)
    let handle = try FileHandle(forWritingTo: url)
    try handle.write(contentsOf: Data("{\"locations\":[".utf8))
    let count = 20_000
    for i in 0..<count {
      let record =
        (i > 0 ? "," : "")
        + "{\"latitudeE7\":\(500_000_000 + i),\"longitudeE7\":\(300_000_000 - i),\"accuracy\":\(i % 50),"
        + "\"activity\":[{\"activity\":[{\"type\":\"WALKING\",\"confidence\":80}]}],\"timestampMs\":\"\(1_600_000_000_000 + Int64(i) * 1000)\"}"
      try handle.write(contentsOf: Data(record.utf8))
    }
    try handle.write(contentsOf: Data("]}".utf8))
    try handle.close()
    var seen = 0
    var last: LocationFix?
    try TakeoutReader.read(contentsOf: url) { fix in
      seen += 1
      last = fix
    }
    #expect(seen == count)
    #expect(last?.timestamp == 1_600_000_000_000 + Int64(count - 1) * 1000)
  }

  func error(_ json: String) -> FormatError? {
    var reader = TakeoutReader()
    do {
      _ = try reader.feed(Array(json.utf8))
      _ = try reader.finish()
      return nil
    } catch { return error as? FormatError }
  }

  @Test func errorsNameLineAndField() {
    #expect(error(String(Self.records.prefix(300)))?.message.contains("truncated") == true)
    let badNumber =
      "{\"locations\":[\n{\"latitudeE7\":1,\"longitudeE7\":2,\"timestampMs\":\"0\"},\n{\"latitudeE7\":1.2.3}]}"
    #expect(error(badNumber)?.line == 3)
    let missing =
      "{\"locations\":[\n{\"latitudeE7\":1,\"longitudeE7\":2,\"timestampMs\":\"0\"},\n{\"latitudeE7\":1,\"timestampMs\":\"0\"}]}"
    #expect(error(missing)?.field == "locations[1].longitudeE7")
    #expect(error(missing)?.line == 3)
    let badTime = #"{"locations":[{"latitudeE7":1,"longitudeE7":2,"timestamp":"yesterday"}]}"#
    #expect(error(badTime)?.field == "locations[0].timestamp")
    let badAccuracy = #"{"locations":[{"latitudeE7":1,"longitudeE7":2,"timestampMs":"0","accuracy":-4}]}"#
    #expect(error(badAccuracy)?.field == "locations[0].horizontalAccuracy")
    #expect(error(#"{"timelineObjects":[]}"#)?.field == "locations")
    #expect(error(#"{"locations":[]} x"#) != nil)
  }
}

@Suite struct JSONTokenizerTests {
  func events(_ text: String) throws -> [JSONEvent] {
    var tokenizer = JSONTokenizer()
    var events: [JSONEvent] = []
    try tokenizer.feed(Array(text.utf8)) { event, _ in events.append(event) }
    try tokenizer.finish { event, _ in events.append(event) }
    return events
  }

  @Test func tokenizes() throws {
    #expect(
      try events(#"{"a":[1,-2.5e3,true,null,"x\n\u00e9\ud83d\ude00"],"b":{}}"#) == [
        .beginObject, .key("a"), .beginArray, .number("1"), .number("-2.5e3"), .bool(true), .null,
        .string("x\né😀"), .endArray, .key("b"), .beginObject, .endObject, .endObject,
      ])
    #expect(try events("42") == [.number("42")])
  }

  @Test(arguments: ["{", "[1,]", "{\"a\" 1}", "[01]", "[1.]", "[tru]", "{\"a\":1,}", "[\"x]", "[1 2]", "{1:2}"])
  func rejectsMalformed(_ text: String) {
    #expect(throws: JSONSyntaxError.self) { try events(text) }
  }
}

@Suite struct OsmAndTests {
  @Test func parsesTraccarClientQuery() throws {
    let report = try OsmAnd.parse(
      query: "id=123456&lat=50.4501&lon=30.5234&timestamp=1700000000&speed=10&bearing=90.5&altitude=150"
        + "&accuracy=12&batt=76.5&charge=true&hdop=1",
      receivedAt: 0)
    #expect(report.deviceID == "123456")
    #expect(report.fix.timestamp == 1_700_000_000_000)
    #expect(abs(report.fix.speed! - 10 * 1852.0 / 3600.0) < 1e-12)
    #expect(report.fix.course == 90.5 && report.fix.altitude == 150 && report.fix.horizontalAccuracy == 12)
    #expect(report.fix.batteryLevel == 76.5 && report.fix.batteryState == .charging)
  }

  @Test func timestampForms() throws {
    #expect(OsmAnd.parseTime("1700000000") == 1_700_000_000_000)
    #expect(OsmAnd.parseTime("1700000000123") == 1_700_000_000_123)
    #expect(OsmAnd.parseTime("2023-11-14T22:13:20.5Z") == 1_700_000_000_500)
    #expect(OsmAnd.parseTime("1700000000.25") == 1_700_000_000_250)
    #expect(OsmAnd.parseTime("soon") == nil)
    let iso = try OsmAnd.parse(
      query: "deviceid=abc&location=50.1%2C30.2&timestamp=2023-11-14T22%3A13%3A20Z", receivedAt: 0)
    #expect(iso.deviceID == "abc" && iso.fix.latitude == 50.1 && iso.fix.longitude == 30.2)
    #expect(iso.fix.timestamp == 1_700_000_000_000)
    let noTime = try OsmAnd.parse(
      queryItems: [.init(name: "id", value: "x"), .init(name: "lat", value: "1"), .init(name: "lon", value: "2")],
      receivedAt: 99)
    #expect(noTime.fix.timestamp == 99)
  }

  @Test func roundTripsQuery() throws {
    let fix = try LocationFix(
      timestamp: 1_700_000_000_000, latitude: 1.5, longitude: -2.25, horizontalAccuracy: 3, speed: 1852.0 / 3600.0 * 4,
      course: 10)
    let report = try OsmAnd.parse(query: OsmAnd.query(deviceID: "d 1", fix: fix), receivedAt: 0)
    #expect(report.deviceID == "d 1")
    #expect(abs(report.fix.speed! - fix.speed!) < 1e-9)
    #expect(report.fix.latitude == 1.5 && report.fix.course == 10)
  }

  @Test func errorsNameParameters() {
    func field(_ query: String) -> String? {
      do {
        _ = try OsmAnd.parse(query: query, receivedAt: 0)
        return nil
      } catch { return (error as? FormatError)?.field }
    }
    #expect(field("lat=1&lon=2") == "id")
    #expect(field("id=1&lon=2") == "lat")
    #expect(field("id=1&lat=x&lon=2") == "lat")
    #expect(field("id=1&lat=91&lon=2") == "lat")
    #expect(field("id=1&lat=1&lon=2&timestamp=soon") == "timestamp")
    #expect(field("id=1&lat=1&lon=2&bearing=400") == "bearing")
    #expect(field("id=1&lat=1&lon=2&batt=120") == "batt")
    #expect(field("id=1&location=1") == "location")
    #expect(field("id=1&lat=1&lon=2&valid=false") == "valid")
    #expect(field("id=1&lat=1&lon=2&speed=-1") == "speed")
  }
}

@Suite struct TraccarJSONTests {
  /// The JSON body documented for Traccar Client 9 (OsmAnd protocol, JSON variant).
  static let body = """
    { "location": { "timestamp": "2000-01-01T00:00:00.000Z",
        "coords": { "latitude": 0.0, "longitude": 0.0, "accuracy": 0, "speed": 0, "heading": 0, "altitude": 0 },
        "is_moving": false, "odometer": 0, "event": "motionchange",
        "battery": { "level": 1, "is_charging": false }, "activity": { "type": "still" }, "extras": {} },
      "device_id": "48241179" }
    """

  @Test func parsesDocumentedBody() throws {
    let report = try OsmAnd.parse(json: Data(Self.body.utf8))
    #expect(report.deviceID == "48241179")
    #expect(report.fix.timestamp == 946_684_800_000)
    #expect(report.fix.batteryLevel == 100 && report.fix.batteryState == .unplugged)
    #expect(report.fix.speed == 0 && report.fix.course == 0)
  }

  @Test func namesMissingMembers() throws {
    let missing = #"{"location":{"timestamp":"2000-01-01T00:00:00Z","coords":{"latitude":1}},"device_id":"x"}"#
    #expect(throws: FormatError.self) { try OsmAnd.parse(json: Data(missing.utf8)) }
    do {
      _ = try OsmAnd.parse(json: Data(missing.utf8))
    } catch {
      #expect((error as? FormatError)?.field == "location.coords.longitude")
    }
    let unknownSpeed =
      #"{"location":{"timestamp":"2000-01-01T00:00:00Z","coords":{"latitude":1,"longitude":2,"speed":-1,"heading":-1}},"device_id":"x"}"#
    #expect(try OsmAnd.parse(json: Data(unknownSpeed.utf8)).fix.speed == nil)
  }
}

@Suite struct FixMergerTests {
  @Test func skipsKnownAndRepeatedIdentities() throws {
    let a = try LocationFix(deviceID: "d", timestamp: 1, latitude: 1, longitude: 1)
    let b = try LocationFix(deviceID: "d", timestamp: 2, latitude: 1, longitude: 1)
    var moved = b
    moved.latitude = 5
    var merger = FixMerger(existing: [a.id])
    #expect(merger.merge([a, b, moved]) == [b])
    #expect(merger.accepted == 1 && merger.duplicates == 2)
  }
}
