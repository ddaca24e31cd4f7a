import DomainKit
import Foundation
import HTTPTypes
import MeridianAPI
import NetworkingKit
import Testing

@Suite("History visits and export over HTTP", .inProcess)
struct HistoryExportTests {
  /// Ten minutes at a café (a fix every 30 s, jittering by a few metres), a 15-minute walk, ten minutes at a park.
  static func day() throws -> [LocationFix] {
    var fixes: [LocationFix] = []
    var time: Int64 = 1_700_000_000_000
    func add(_ latitude: Double, _ longitude: Double) throws {
      fixes.append(
        try LocationFix(
          timestamp: time, latitude: latitude, longitude: longitude, horizontalAccuracy: 8, altitude: 170,
          kind: .movement))
      time += 30_000
    }
    for index in 0..<21 { try add(50.4501 + Double(index % 3) * 0.00002, 30.5234) }
    for index in 1...30 { try add(50.4501 - Double(index) * 0.0003, 30.5234 - Double(index) * 0.0002) }
    for index in 0..<21 { try add(50.4411 + Double(index % 2) * 0.00003, 30.5174) }
    return fixes
  }

  @Test func visitsAndEveryExportFormatHoldTheHistory() async throws {
    try await TestServer.with { server in
      let (_, anna) = try await server.signUp("anna")
      let fixes = try Self.day()
      _ = try await anna.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: fixes))

      let visits = try await anna.send(API.historyVisits, parameters: HistoryQuery()).visits
      #expect(visits.count == 2)
      #expect(visits.first?.arrival == fixes[0].timestamp)
      #expect(visits.first.map { $0.duration >= 600_000 } == true)
      #expect(visits.last.map { abs($0.location.latitude - 50.4411) < 0.0005 } == true)

      let gpx = try await anna.send(API.historyExport, parameters: HistoryExportQuery(format: .gpx))
      let fromGPX = try GPX.read(data: gpx).map(\.fix)
      #expect(fromGPX.map(\.timestamp) == fixes.map(\.timestamp))
      #expect(fromGPX.first?.latitude == fixes.first?.latitude)

      let csv = try await anna.send(API.historyExport, parameters: HistoryExportQuery(format: .csv))
      let fromCSV = try CSVReader.read(String(decoding: csv, as: UTF8.self))
      #expect(fromCSV.map(\.timestamp) == fixes.map(\.timestamp))
      #expect(fromCSV.map(\.horizontalAccuracy) == fixes.map(\.horizontalAccuracy))

      let geojson = try await anna.send(API.historyExport, parameters: HistoryExportQuery(format: .geojson))
      #expect(try GeoJSON.read(data: geojson).map(\.timestamp) == fixes.map(\.timestamp))

      // Filters apply: the first ten minutes only.
      let morning = HistoryQuery(from: fixes[0].timestamp, to: fixes[20].timestamp + 1)
      let partial = try await anna.send(
        API.historyExport, parameters: HistoryExportQuery(history: morning, format: .csv))
      #expect(try CSVReader.read(String(decoding: partial, as: UTF8.self)).count == 21)
    }
  }

  @Test func badExportRequestsAreRefused() async throws {
    try await TestServer.with { server in
      let (session, _) = try await server.signUp("anna")
      for path in ["/v1/history/export?format=kml", "/v1/history/export", "/v1/history/visits?from=abc"] {
        let response = try await server.phoneAppRequest(
          .get, path, headers: [.authorization: "Bearer \(session.token)"])
        #expect(response.head.status.code == 400, "\(path)")
        #expect(response.errorCode == "invalid_request", "\(path)")
      }
      let anonymous = try await server.phoneAppRequest(.get, "/v1/history/export?format=gpx")
      #expect(anonymous.head.status.code == 401)
      #expect(anonymous.errorCode == "token_invalid")
    }
  }
}
