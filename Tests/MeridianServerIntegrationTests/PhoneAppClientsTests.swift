import DomainKit
import Foundation
import HTTPTypes
import MeridianAPI
import MeridianServer
import MeridianStoreTesting
import NetworkingKit
import Testing

/// Overland, GPSLogger's custom URL and Traccar Client 9's JSON, each driven with the payloads the apps' own
/// documentation and sources show, through the device's OsmAnd identifier, on both engines.
@Suite("Overland, GPSLogger and Traccar Client ingest", .inProcess)
struct PhoneAppClientsTests {
  /// Signs Anna up with one stored fix on `device` and returns her client and the device's OsmAnd identifier.
  static func annaWithIdentifier(_ server: TestServer, device: String = "iphone") async throws
    -> (client: NetworkClient, identifier: String)
  {
    let (_, anna) = try await server.signUp("anna")
    _ = try await anna.send(
      API.postFixes,
      body: FixBatch(deviceId: DeviceID(device), fixes: try makeFixes(count: 1, start: 1_600_000_000_000)))
    let identifier = try await anna.send(API.enableOsmAnd, parameters: DeviceRef(id: DeviceID(device))).identifier
    return (anna, identifier)
  }

  /// An Overland feature as the app writes it (README "API"; `timestamp` with a numeric offset).
  static func overlandFeature(lon: Double, lat: Double, timestamp: String, speed: Double = 4) -> String {
    """
    {"type":"Feature","geometry":{"type":"Point","coordinates":[\(lon),\(lat)]},
     "properties":{"timestamp":"\(timestamp)","altitude":0,"speed":\(speed),"horizontal_accuracy":30,
     "vertical_accuracy":-1,"motion":["driving","stationary"],"battery_state":"charging","battery_level":0.89,
     "device_id":"","wifi":""}}
    """
  }

  static func overlandBatch(_ features: [String]) -> Data {
    Data(#"{"locations":[\#(features.joined(separator: ","))],"trip":{"distance":12,"mode":"car"}}"#.utf8)
  }

  @Test(arguments: ["sqlite", "postgres"])
  func overlandBatchIsStoredAndAnsweredOkWithTheBearerTokenOrTheURLToken(_ engine: String) async throws {
    try await PollTests.withServer(engine) { server in
      let (anna, id) = try await Self.annaWithIdentifier(server)
      let batch = Self.overlandBatch([
        Self.overlandFeature(lon: -122.030581, lat: 37.3318, timestamp: "2015-10-01T08:00:00-0700"),
        Self.overlandFeature(lon: -122.0306, lat: 37.3319, timestamp: "2015-10-01T08:00:05-0700", speed: -1),
      ])
      let headers: HTTPFields = [.contentType: "application/json", .authorization: "Bearer \(id)"]
      let first = try await server.phoneAppRequest(.post, "/overland", headers: headers, body: batch)
      #expect(first.head.status == .ok)
      // The app deletes its queue only on exactly this answer.
      #expect(String(decoding: first.body, as: UTF8.self) == #"{"result":"ok"}"#)
      #expect(first.head.headerFields[.contentType] == "application/json")
      // The app resends a batch whose answer it missed: stored once, answered ok again.
      let again = try await server.phoneAppRequest(.post, "/overland", headers: headers, body: batch)
      #expect(String(decoding: again.body, as: UTF8.self) == #"{"result":"ok"}"#)
      // The token in the receiver URL instead of the access-token field.
      let escaped = try #require(id.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
      let viaURL = try await server.phoneAppRequest(
        .post, "/overland?token=\(escaped)", headers: [.contentType: "application/json"],
        body: Self.overlandBatch([Self.overlandFeature(lon: -122.03, lat: 37.332, timestamp: "2015-10-01T15:00:10Z")]))
      #expect(String(decoding: viaURL.body, as: UTF8.self) == #"{"result":"ok"}"#)
      // An empty queue flush is acknowledged too.
      let empty = try await server.phoneAppRequest(
        .post, "/overland", headers: headers, body: Data(#"{"locations":[]}"#.utf8))
      #expect(String(decoding: empty.body, as: UTF8.self) == #"{"result":"ok"}"#)

      let history = try await anna.send(API.history, parameters: HistoryQuery()).fixes
      #expect(history.map(\.timestamp) == [1_600_000_000_000, 1_443_711_610_000, 1_443_711_605_000, 1_443_711_600_000])
      #expect(history.allSatisfy { $0.deviceID == "iphone" })
      let documented = try #require(history.first { $0.timestamp == 1_443_711_600_000 })
      #expect(documented.latitude == 37.3318 && documented.longitude == -122.030581)
      #expect(documented.speed == 4 && documented.horizontalAccuracy == 30 && documented.verticalAccuracy == nil)
      #expect(documented.batteryLevel == 89 && documented.batteryState == .charging)
      #expect(history.first { $0.timestamp == 1_443_711_605_000 }?.speed == nil)
    }
  }

  @Test(arguments: ["sqlite", "postgres"])
  func overlandRefusesBadBatchesWholeAndWrongTokensAndLosesNothing(_ engine: String) async throws {
    try await PollTests.withServer(engine, { $0.maxBodyBytes = 8 * 1024 }) { server in
      let (anna, id) = try await Self.annaWithIdentifier(server)
      let good = Self.overlandFeature(lon: 30.52, lat: 50.45, timestamp: "2026-01-01T10:00:00Z")
      let headers: HTTPFields = [.contentType: "application/json", .authorization: "Bearer \(id)"]
      let cases: [(name: String, headers: HTTPFields, body: Data, status: HTTPResponse.Status, code: APIErrorCode)] = [
        (
          "no token", [.contentType: "application/json"], Self.overlandBatch([good]), .unauthorized, .invalidCredentials
        ),
        (
          "wrong token", [.contentType: "application/json", .authorization: "Bearer 0000000000000000000000"],
          Self.overlandBatch([good]), .unauthorized, .invalidCredentials
        ),
        // The device's own id is not its token.
        (
          "device id as token", [.contentType: "application/json", .authorization: "Bearer iphone"],
          Self.overlandBatch([good]), .unauthorized, .invalidCredentials
        ),
        ("not JSON", headers, Data(#"{"locations":[{"type":"Feat"#.utf8), .badRequest, .invalidJSON),
        (
          "latitude out of range", headers,
          Self.overlandBatch([good, Self.overlandFeature(lon: 30.52, lat: 91, timestamp: "2026-01-01T10:00:05Z")]),
          .badRequest, .invalidFix
        ),
        (
          "longitude out of range", headers,
          Self.overlandBatch([good, Self.overlandFeature(lon: -180.5, lat: 50, timestamp: "2026-01-01T10:00:05Z")]),
          .badRequest, .invalidFix
        ),
        (
          "bad timestamp", headers,
          Self.overlandBatch([good, Self.overlandFeature(lon: 30.52, lat: 50.45, timestamp: "01/01/2026 10:00")]),
          .badRequest, .invalidFix
        ),
        (
          "timestamp before 2000", headers,
          Self.overlandBatch([good, Self.overlandFeature(lon: 30.52, lat: 50.45, timestamp: "1999-12-31T23:59:59Z")]),
          .badRequest, .invalidFix
        ),
        (
          "oversized", headers, Self.overlandBatch(Array(repeating: good, count: 40)), .contentTooLarge,
          .bodyTooLarge
        ),
      ]
      for (name, headers, body, status, code) in cases {
        let response = try await server.phoneAppRequest(.post, "/overland", headers: headers, body: body)
        #expect(response.head.status == status, "\(name)")
        #expect(response.errorCode == code.rawValue, "\(name)")
        #expect(!String(decoding: response.body, as: UTF8.self).contains(#""result""#), "\(name)")
      }
      let outOfRange = try await server.phoneAppRequest(
        .post, "/overland", headers: headers,
        body: Self.overlandBatch([good, Self.overlandFeature(lon: 30.52, lat: 91, timestamp: "2026-01-01T10:00:05Z")]))
      #expect(String(decoding: outOfRange.body, as: UTF8.self).contains("locations[1].geometry.coordinates[1]"))
      // A refused batch stores none of its points (the app keeps and resends it); nothing stored before is lost.
      #expect(
        try await anna.send(API.history, parameters: HistoryQuery()).fixes.map(\.timestamp) == [1_600_000_000_000])
      // Once the app sends the batch without the bad point, it is stored.
      let fixed = try await server.phoneAppRequest(
        .post, "/overland", headers: headers, body: Self.overlandBatch([good]))
      #expect(String(decoding: fixed.body, as: UTF8.self) == #"{"result":"ok"}"#)
      #expect(try await anna.send(API.history, parameters: HistoryQuery()).fixes.count == 2)
    }
  }

  /// GPSLogger's "Log to custom URL" with the README's template, filled as the app fills it (`%TIME` ISO 8601 UTC
  /// with milliseconds, `%SPD` m/s, `%BATT` a percentage with a fraction, `%DIR` degrees).
  static func gpsLoggerParameters(id: String, lat: String, time: String) -> String {
    "id=\(id)&lat=\(lat)&lon=30.5234&timestamp=\(time)&accuracy=8.5&altitude=170.0&speed=2.5&bearing=90.0"
      + "&batt=85.0"
  }

  @Test(arguments: ["sqlite", "postgres"])
  func gpsLoggerCustomURLOnGetAndPostForm(_ engine: String) async throws {
    try await PollTests.withServer(engine) { server in
      let (anna, id) = try await Self.annaWithIdentifier(server, device: "pixel")
      let get = try await server.phoneAppRequest(
        .get, "/gpslogger?" + Self.gpsLoggerParameters(id: id, lat: "50.4501", time: "2026-01-01T10:00:00.000Z"))
      #expect(get.head.status == .ok && get.body.isEmpty)
      let post = try await server.phoneAppRequest(
        .post, "/gpslogger", headers: [.contentType: "application/x-www-form-urlencoded"],
        body: Data(Self.gpsLoggerParameters(id: id, lat: "50.4502", time: "2026-01-01T10:00:05.000Z").utf8))
      #expect(post.head.status == .ok && post.body.isEmpty)
      // Repeated: stored once.
      _ = try await server.phoneAppRequest(
        .get, "/gpslogger?" + Self.gpsLoggerParameters(id: id, lat: "50.4501", time: "2026-01-01T10:00:00.000Z"))

      let cases: [(query: String, status: HTTPResponse.Status, code: APIErrorCode)] = [
        (
          Self.gpsLoggerParameters(id: "wrong", lat: "50", time: "2026-01-01T10:01:00.000Z"), .unauthorized,
          .invalidCredentials
        ),
        (Self.gpsLoggerParameters(id: id, lat: "90.1", time: "2026-01-01T10:01:00.000Z"), .badRequest, .invalidFix),
        (Self.gpsLoggerParameters(id: id, lat: "50", time: "%TIME"), .badRequest, .invalidFix),
        (Self.gpsLoggerParameters(id: id, lat: "%LAT", time: "2026-01-01T10:01:00.000Z"), .badRequest, .invalidFix),
      ]
      for (query, status, code) in cases {
        for post in [false, true] {
          let response =
            post
            ? try await server.phoneAppRequest(.post, "/gpslogger", body: Data(query.utf8))
            : try await server.phoneAppRequest(.get, "/gpslogger?" + query.replacingOccurrences(of: "%", with: "%25"))
          #expect(response.head.status == status, "\(post ? "POST" : "GET") \(query)")
          #expect(response.errorCode == code.rawValue, "\(post ? "POST" : "GET") \(query)")
        }
      }

      let history = try await anna.send(API.history, parameters: HistoryQuery()).fixes
      #expect(history.map(\.timestamp) == [1_767_261_605_000, 1_767_261_600_000, 1_600_000_000_000])
      let first = try #require(history.first { $0.timestamp == 1_767_261_600_000 })
      // GPSLogger's speed is m/s, not the OsmAnd protocol's knots.
      #expect(first.speed == 2.5 && first.course == 90 && first.altitude == 170 && first.horizontalAccuracy == 8.5)
      #expect(first.batteryLevel == 85 && first.deviceID == "pixel")
    }
  }

  /// The JSON Traccar Client 9+ posts to the OsmAnd route (its background-geolocation location record).
  static func traccarBody(deviceID: String, latitude: Double, timestamp: String) -> Data {
    Data(
      """
      {"location":{"timestamp":"\(timestamp)","coords":{"latitude":\(latitude),"longitude":30.5234,"accuracy":4.5,
      "speed":3,"heading":180,"altitude":170,"ellipsoidal_altitude":200,"altitude_accuracy":2,"heading_accuracy":5,
      "speed_accuracy":1},"is_moving":true,"uuid":"0f6ab3a4","event":"motionchange","odometer":1200,
      "activity":{"type":"in_vehicle","confidence":80},"battery":{"level":0.42,"is_charging":true},"extras":{}},
      "device_id":"\(deviceID)"}
      """.utf8)
  }

  @Test(arguments: ["sqlite", "postgres"])
  func traccarClientJSONWithTheOptInIdentifier(_ engine: String) async throws {
    try await PollTests.withServer(engine) { server in
      let (anna, id) = try await Self.annaWithIdentifier(server, device: "android")
      let json: HTTPFields = [.contentType: "application/json; charset=utf-8"]
      let stored = try await server.phoneAppRequest(
        .post, "/osmand", headers: json,
        body: Self.traccarBody(deviceID: id, latitude: 50.4501, timestamp: "2026-01-01T10:00:00.000Z"))
      #expect(stored.head.status == .ok && stored.body.isEmpty)
      let cases: [(name: String, body: Data, status: HTTPResponse.Status, code: APIErrorCode)] = [
        (
          "device id, not its identifier",
          Self.traccarBody(deviceID: "android", latitude: 50.45, timestamp: "2026-01-01T10:01:00Z"), .unauthorized,
          .invalidCredentials
        ),
        ("malformed JSON", Data(#"{"location":{"coords":"#.utf8), .badRequest, .invalidJSON),
        (
          "latitude out of range", Self.traccarBody(deviceID: id, latitude: -90.5, timestamp: "2026-01-01T10:01:00Z"),
          .badRequest, .invalidFix
        ),
        (
          "bad timestamp", Self.traccarBody(deviceID: id, latitude: 50.45, timestamp: "1700000000"), .badRequest,
          .invalidFix
        ),
      ]
      for (name, body, status, code) in cases {
        let response = try await server.phoneAppRequest(.post, "/osmand", headers: json, body: body)
        #expect(response.head.status == status, "\(name)")
        #expect(response.errorCode == code.rawValue, "\(name)")
      }
      // Once the owner turns the identifier off, the app's reports are refused.
      _ = try await anna.send(API.disableOsmAnd, parameters: DeviceRef(id: "android"))
      let after = try await server.phoneAppRequest(
        .post, "/osmand", headers: json,
        body: Self.traccarBody(deviceID: id, latitude: 50.46, timestamp: "2026-01-01T10:02:00Z"))
      #expect(after.head.status == .unauthorized)

      let history = try await anna.send(API.history, parameters: HistoryQuery()).fixes
      #expect(history.map(\.timestamp) == [1_767_261_600_000, 1_600_000_000_000])
      let fix = try #require(history.first)
      #expect(fix.latitude == 50.4501 && fix.speed == 3 && fix.course == 180 && fix.altitude == 170)
      #expect(fix.horizontalAccuracy == 4.5 && fix.batteryLevel == 42 && fix.batteryState == .charging)
    }
  }
}
