import DomainKit
import Foundation
import HTTPTypes
import MeridianAPI
import MeridianServer
import NetworkingKit
import Testing

/// `POST /v1/history/import`: any supported file as the body, told apart by content, gzip or not, merged without
/// duplicates; bad, oversized or undecodable bodies are refused with nothing stored.
@Suite("History import over HTTP")
struct HistoryImportTests {
  /// DomainKit's hand-written Google fixtures.
  static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Packages/DomainKit/Tests/DomainKitTests/Fixtures/google")

  static func post(
    _ server: TestServer, _ token: String, _ body: Data, gzip: Bool = false
  ) async throws -> (status: Int, json: [String: Any]) {
    var headers: HTTPFields = [.authorization: "Bearer \(token)", .contentType: "application/octet-stream"]
    if gzip { headers[.contentEncoding] = "gzip" }
    let response = try await server.phoneAppRequest(
      .post, "/v1/history/import", headers: headers, body: gzip ? try Gzip.compress(body) : body)
    let json = (try? JSONSerialization.jsonObject(with: response.body)) as? [String: Any] ?? [:]
    return (response.head.status.code, json)
  }

  static func stored(_ server: TestServer, _ client: NetworkClient) async throws -> Int {
    try await client.send(API.history, parameters: HistoryQuery(limit: 1000)).fixes.count
  }

  /// An import obeys the rules of the REST routes (issue 33): device ids are checked as `POST /v1/fixes` checks them
  /// (NUL answered 500; an escape sequence or 129 characters were stored), new devices count against the account's
  /// 20 (one file made 25), times follow ingest's rule (a fix of 2199 was stored), and the fixes count against the
  /// account's daily import quota (imports passed every quota). Records.json entries without a time are skipped and
  /// counted (they refused the file). Every refusal stores nothing.
  @Test(arguments: PollTests.engines)
  func importsObeyTheRESTRules(_ engine: String) async throws {
    try await PollTests.withServer(engine, { $0.limits.importedFixesPerAccountPerDay = 5 }) { server in
      let anna = try await server.signUp("anna")
      let token = anna.session.token
      func csv(_ rows: [(time: String, device: String?)]) -> Data {
        Data(
          ("time,lat,lon,device\n"
            + rows.map { "\($0.time),50.45,30.52,\($0.device ?? "")\n" }.joined()).utf8)
      }
      func expectRefused(_ body: Data, _ status: Int, _ code: String, _ name: String) async throws {
        let answer = try await Self.post(server, token, body)
        #expect(answer.status == status, "\(name): \(answer.json)")
        #expect((answer.json["error"] as? [String: Any])?["code"] as? String == code, "\(name): \(answer.json)")
      }
      let time = "2024-02-01T10:00:00Z"
      try await expectRefused(csv([(time, "phone\u{0}x")]), 400, "invalid_request", "NUL")
      try await expectRefused(csv([(time, "phone\u{1B}[2J")]), 400, "invalid_request", "escape")
      try await expectRefused(csv([(time, String(repeating: "p", count: 129))]), 400, "invalid_request", "129")
      let many = (0..<25).map { (time: "2024-02-01T10:00:\(String(format: "%02d", $0))Z", device: "phone-\($0)") }
      try await expectRefused(csv(many), 409, "quota_exceeded", "25 devices")
      try await expectRefused(csv([(time, nil), ("2199-01-01T00:00:00Z", nil)]), 400, "invalid_fix", "2199")
      #expect(try await Self.stored(server, anna.client) == 0)
      #expect(try await anna.client.send(API.devices).devices.isEmpty)

      let records = """
        {"locations": [
          {"latitudeE7": 504500000, "longitudeE7": 305200000, "timestamp": "2024-05-02T10:15:00Z"},
          {"latitudeE7": 504510000, "longitudeE7": 305210000},
          {"latitudeE7": 504520000, "longitudeE7": 305220000, "timestampMs": "1714645000000"}
        ]}
        """
      let google = try await Self.post(server, token, Data(records.utf8))
      #expect(google.status == 200, "\(google.json)")
      #expect(google.json["stored"] as? Int == 2 && google.json["skipped"] as? Int == 1, "\(google.json)")
      #expect(google.json["skippedLines"] as? [Int] == [3], "\(google.json)")
      // The quota (5 a day here): 2 + 3 fit, one more waits, a file of 6 never fits.
      let three = try await Self.post(server, token, csv((1...3).map { ("2024-03-01T10:00:0\($0)Z", nil) }))
      #expect(three.status == 200 && three.json["stored"] as? Int == 3, "\(three.json)")
      var headers: HTTPFields = [.authorization: "Bearer \(token)"]
      headers[.contentType] = "text/csv"
      let over = try await server.phoneAppRequest(
        .post, "/v1/history/import", headers: headers, body: csv([("2024-03-02T10:00:00Z", nil)]))
      #expect(over.head.status.code == 429 && over.errorCode == "rate_limited")
      #expect(over.head.headerFields[.retryAfter] != nil)
      try await expectRefused(
        csv((1...6).map { ("2024-03-03T10:00:0\($0)Z", nil) }), 409, "quota_exceeded", "larger than the quota")
      #expect(try await Self.stored(server, anna.client) == 5)
      #expect(try await anna.client.send(API.devices).devices.map(\.id) == [DeviceID("import-\(anna.session.userId)")])
    }
  }

  @Test func theLimitIsConfigurable() throws {
    #expect(try ServerConfiguration.resolve(environment: [:]).maxHistoryImportBytes == 512 * 1024 * 1024)
    let set = try ServerConfiguration.resolve(environment: ["MERIDIAN_MAX_HISTORY_IMPORT_BYTES": "1000"])
    #expect(set.maxHistoryImportBytes == 1000)
    #expect(throws: ConfigurationError.self) {
      try ServerConfiguration.resolve(environment: ["MERIDIAN_MAX_HISTORY_IMPORT_BYTES": "0"])
    }
  }

  @Test(arguments: PollTests.engines)
  func filesOfEveryFormatImportOnceAndBadOnesStoreNothing(_ engine: String) async throws {
    try await PollTests.withServer(engine, { $0.maxHistoryImportBytes = 64 * 1024 }) { server in
      let anna = try await server.signUp("anna")
      let token = anna.session.token
      // A Google Timeline export, gzip-compressed: read by content, stored, and the second time only duplicates.
      let timeline = try Data(contentsOf: Self.fixtures.appendingPathComponent("Timeline.json"))
      let first = try await Self.post(server, token, timeline, gzip: true)
      #expect(first.status == 200, "\(first.json)")
      #expect(first.json["format"] as? String == "google")
      #expect((first.json["google"] as? [String: Any])?["shape"] as? String == "androidTimeline")
      let stored = try #require(first.json["stored"] as? Int)
      #expect(stored > 0 && first.json["read"] as? Int == stored + (first.json["duplicates"] as? Int ?? -1))
      let again = try await Self.post(server, token, timeline)
      #expect(again.status == 200 && again.json["stored"] as? Int == 0, "\(again.json)")
      #expect(again.json["duplicates"] as? Int == first.json["read"] as? Int)
      #expect(try await Self.stored(server, anna.client) == stored)

      // A CSV without a name: told by its header line.
      let csv = "time,lat,lon\n2024-02-01T10:00:00Z,50.45,30.52\n2024-02-01T10:05:00Z,50.46,30.53\n"
      let table = try await Self.post(server, token, Data(csv.utf8))
      #expect(table.status == 200 && table.json["format"] as? String == "csv" && table.json["stored"] as? Int == 2)
      // A GPX track of 400 points (about 30 KB, under this server's 64 KiB limit) read chunk by chunk, and one
      // waypoint without a time, skipped.
      let points = (0..<400).map { index in
        "<trkpt lat=\"50.4\(String(format: "%04d", index))\" lon=\"30.5\"><time>"
          + Timestamp.formatISO8601(1_709_000_000_000 + Int64(index) * 1000) + "</time></trkpt>"
      }
      let gpx = """
        <?xml version="1.0" encoding="UTF-8"?>
        <gpx version="1.1" creator="HistoryImportTests" xmlns="http://www.topografix.com/GPX/1/1">
          <wpt lat="50.4" lon="30.5"><name>untimed</name></wpt>
          <trk><trkseg>\(points.joined())</trkseg></trk>
        </gpx>
        """
      let track = try await Self.post(server, token, Data(gpx.utf8))
      #expect(track.status == 200 && track.json["format"] as? String == "gpx", "\(track.json)")
      #expect(track.json["stored"] as? Int == 400 && track.json["skipped"] as? Int == 1, "\(track.json)")
      let total = stored + 2 + 400
      #expect(try await Self.stored(server, anna.client) == total)

      // Refused, each with its code, and nothing stored: a truncated export, plain text, a corrupt gzip body, an
      // unknown encoding, a body over the limit (64 KiB here) and a gzip body inflating past it.
      var corrupt = try Gzip.compress(timeline)
      corrupt[corrupt.count / 2] ^= 0xFF
      let large = Data(("time,lat,lon\n" + String(repeating: "2024-02-01T10:00:00Z,50.45,30.52\n", count: 3_000)).utf8)
      let cases: [(Data, HTTPFields, Int, String)] = [
        (timeline.prefix(timeline.count * 2 / 3), [:], 400, "invalid_request"),
        (Data("hello".utf8), [:], 415, "unsupported_media_type"),
        (corrupt, [.contentEncoding: "gzip"], 400, "unsupported_encoding"),
        (timeline, [.contentEncoding: "br"], 415, "unsupported_encoding"),
        (large, [:], 413, "body_too_large"),
        (try Gzip.compress(large), [.contentEncoding: "gzip"], 413, "body_too_large"),
      ]
      for (body, extra, status, code) in cases {
        var headers: HTTPFields = [.authorization: "Bearer \(token)"]
        for field in extra { headers.append(field) }
        let response = try await server.phoneAppRequest(.post, "/v1/history/import", headers: headers, body: body)
        let json = (try? JSONSerialization.jsonObject(with: response.body)) as? [String: Any]
        #expect(response.head.status.code == status, "\(code): \(String(decoding: response.body, as: UTF8.self))")
        #expect(
          (json?["error"] as? [String: Any])?["code"] as? String == code,
          "\(String(decoding: response.body, as: UTF8.self))")
      }
      #expect(try await Self.stored(server, anna.client) == total)
      let anonymous = try await server.phoneAppRequest(.post, "/v1/history/import", body: Data(csv.utf8))
      #expect(anonymous.head.status == .unauthorized)
    }
  }
}
