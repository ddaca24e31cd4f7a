import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import MeridianStore
import NetworkingKit
import Testing

/// A traveller's days and months in the local time of where they were (each fix's zone from the gazetteer), and a
/// country only flown over not counted as visited (issue 38 §3).
@Suite("History statistics in local time")
struct LocalTimeStatsTests {
  /// Japan, the United States and Canada, one town each with its GeoNames time zone.
  static func loadGazetteer(_ store: any MeridianStore) async throws {
    let areas = [("JP", "Japan"), ("US", "United States"), ("CA", "Canada")].enumerated().map { line, area in
      GazetteerStagedRow(
        line: line + 1,
        content: .area(
          GazetteerArea(code: area.0, level: .country, country: area.0, name: area.1, names: ["en": area.1])))
    }
    let towns = [
      (1_850_147, "Tokyo", "JP", 35.6895, 139.69171, "Asia/Tokyo"),
      (5_128_581, "New York City", "US", 40.71427, -74.00597, "America/New_York"),
      (6_180_550, "Whitehorse", "CA", 60.71611, -135.05375, "America/Whitehorse"),
    ].enumerated().map { line, town in
      GazetteerStagedRow(
        line: line + 1,
        content: .locality(
          GazetteerLocality(
            geonameID: Int64(town.0), name: town.1, names: ["en": town.1], country: town.2, latitude: town.3,
            longitude: town.4, timeZone: town.5)))
    }
    for (file, rows) in [("areas.txt", areas), ("towns.txt", towns)] {
      _ = try await store.beginGazetteerFile(file, digest: "1", restart: false, now: 1)
      try await store.stageGazetteerRows(rows, file: file, through: rows.count)
      _ = try await store.commitGazetteerFile(file, now: 1)
    }
  }

  /// Ten minutes in Tokyo from 2024-01-31 15:30 UTC (00:30 on 1 February there), a flight over Whitehorse at 250 m/s
  /// from 22:30 UTC (15:30 on 31 January there), a fix every ten minutes, then fifteen minutes in New York from
  /// 2024-02-01 04:30 UTC (23:30 on 31 January there).
  static func trip() throws -> [LocationFix] {
    let tokyo: Int64 = 1_706_715_000_000
    let overYukon = tokyo + 7 * 3_600_000
    let newYork = tokyo + 13 * 3_600_000
    var fixes = try (0...10).map { minute in
      try LocationFix(
        timestamp: tokyo + Int64(minute) * 60_000, latitude: 35.6895 + Double(minute % 2) * 0.00002,
        longitude: 139.6917, horizontalAccuracy: 10)
    }
    fixes += try (-2...3).map { step in
      try LocationFix(
        timestamp: overYukon + Int64(step + 2) * 600_000, latitude: 60.72, longitude: -135.06 + Double(step) * 2.757,
        horizontalAccuracy: 10, speed: 250)
    }
    fixes += try (0...15).map { minute in
      try LocationFix(
        timestamp: newYork + Int64(minute) * 60_000, latitude: 40.7128 + Double(minute % 2) * 0.00002,
        longitude: -74.006, horizontalAccuracy: 10)
    }
    return fixes
  }

  @Test(arguments: PollTests.engines)
  func aTripAcrossZonesIsCountedInLocalTimeAndAFlownOverCountryIsNotVisited(_ engine: String) async throws {
    try await PollTests.withServer(engine) { server in
      let (_, anna) = try await server.signUp("anna")
      _ = try await anna.send(API.postFixes, body: FixBatch(deviceId: "phone", fixes: try Self.trip()))
      // Without a gazetteer, UTC: Tokyo and the flight on 31 January, New York in February.
      let utc = try await anna.send(API.historyStats, parameters: HistoryStatsQuery())
      #expect(utc.months.map(\.period) == ["2024-01", "2024-02"])
      #expect(utc.months.map(\.fixes) == [11 + 6, 16])

      try await Self.loadGazetteer(server.app.environment.store)
      let local = try await anna.send(API.historyStats, parameters: HistoryStatsQuery())
      // Local time: New York's evening and the flight on 31 January, Tokyo's small hours on 1 February.
      #expect(local.months.map(\.period) == ["2024-01", "2024-02"])
      #expect(local.months.map(\.fixes) == [16 + 6, 11])
      #expect(local.months.map(\.visits) == [1, 1])
      #expect(local.total.daysTracked == 2)
      // Canada was only flown over: visited are the United States (15 minutes) and Japan (10).
      #expect(local.countries.map(\.code) == ["US", "JP"])
      let places = try await anna.send(API.historyPlaces, parameters: HistoryPlacesQuery())
      #expect(places.places.map(\.area.code) == ["JP", "US"] && places.unplaced == 0)
    }
  }
}
