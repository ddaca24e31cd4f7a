import DomainKit
import Foundation
import GeoKit
import HTTPTypes
import MeridianAPI
import NetworkingKit
import Testing

@Suite("Stays over HTTP: corrections and home and work")
struct StayTests {
  /// Monday to Wednesday, 2026-11-02..04, in a town `utcOffset` hours ahead of UTC: a fix every 20 minutes at home
  /// from 19:00 the day before to 07:40 local, at work from 09:00 to 17:40 local.
  static func workingDays(home: Coordinate, work: Coordinate, utcOffset: Int64) throws -> [LocationFix] {
    let monday: Int64 = 1_793_577_600_000 - utcOffset * 3_600_000
    var fixes: [LocationFix] = []
    for day in Int64(0)..<3 {
      for (place, from, to) in [(home, -5, 8), (work, 9, 18)] {
        for minute in stride(from: Int64(from) * 60, to: Int64(to) * 60, by: 20) {
          fixes.append(
            try LocationFix(
              timestamp: monday + day * 86_400_000 + minute * 60_000, latitude: place.latitude,
              longitude: place.longitude, horizontalAccuracy: 10))
        }
      }
    }
    return fixes
  }

  @Test func correctionsApplyToTheVisitsAndHoldWhenMoreFixesArrive() async throws {
    try await TestServer.with { server in
      let (_, anna) = try await server.signUp("anna")
      let fixes = try HistoryExportTests.day()
      // The café's first ten minutes, the walk, the park: the rest of the café comes later.
      _ = try await anna.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: fixes))
      let detected = try await anna.send(API.historyVisits, parameters: HistoryQuery()).visits
      #expect(detected.count == 2)
      guard let cafe = detected.first, let park = detected.last else { return }

      let merge = try await anna.send(
        API.addStayCorrection, body: .merge(from: cafe.arrival, to: park.departure))
      #expect(try await anna.send(API.historyVisits, parameters: HistoryQuery()).visits.count == 1)
      _ = try await anna.send(API.addStayCorrection, body: .rename(location: park.location, name: " Park "))
      let middle = cafe.arrival + cafe.duration / 2
      _ = try await anna.send(API.deleteStayCorrection, parameters: StayCorrectionRef(id: merge.id))
      _ = try await anna.send(API.addStayCorrection, body: .split(at: middle))
      let corrected = try await anna.send(API.historyVisits, parameters: HistoryQuery()).visits
      #expect(corrected.count == 3)
      #expect(corrected.map(\.name) == [nil, nil, "Park"])
      #expect(corrected.first?.departure ?? 0 <= middle && corrected[1].arrival > middle)
      #expect(try await anna.send(API.stayCorrections).items.map(\.correction.kind) == ["rename", "split"])

      // Fixes in between arrive (another device's upload): the stays are detected again, the corrections still apply.
      let more = try fixes.map {
        try LocationFix(
          timestamp: $0.timestamp + 15_000, latitude: $0.latitude, longitude: $0.longitude, horizontalAccuracy: 8)
      }
      _ = try await anna.send(API.postFixes, body: FixBatch(deviceId: "anna-watch", fixes: more))
      let again = try await anna.send(API.historyVisits, parameters: HistoryQuery()).visits
      #expect(again.count == 3)
      #expect(again.map(\.name) == [nil, nil, "Park"])

      // Bob sees none of it.
      let (_, bob) = try await server.signUp("bob")
      #expect(try await bob.send(API.stayCorrections).items.isEmpty)
      await expectAPIError(.notFound, status: 404) {
        try await bob.send(API.deleteStayCorrection, parameters: StayCorrectionRef(id: merge.id))
      }
    }
  }

  @Test func badCorrectionsAreRefused() async throws {
    try await TestServer.with { server in
      let (session, anna) = try await server.signUp("anna")
      await expectAPIError(.invalidStayCorrection, status: 422) {
        try await anna.send(API.addStayCorrection, body: .merge(from: 2, to: 1))
      }
      await expectAPIError(.invalidStayCorrection, status: 422) {
        try await anna.send(
          API.addStayCorrection,
          body: .rename(
            location: Coordinate(uncheckedLatitude: 1, longitude: 2), name: String(repeating: "x", count: 101)))
      }
      for body in [
        #"{"kind":"delete","at":1}"#, #"{"kind":"split"}"#,
        #"{"kind":"rename","location":{"lat":91,"lon":0},"name":"x"}"#,
      ] {
        let response = try await server.phoneAppRequest(
          .post, "/v1/history/visits/corrections",
          headers: [.authorization: "Bearer \(session.token)", .contentType: "application/json"], body: Data(body.utf8))
        #expect(response.head.status.code == 400, "\(body)")
      }
      let badHome = try await server.phoneAppRequest(
        .put, "/v1/me/home-work",
        headers: [.authorization: "Bearer \(session.token)", .contentType: "application/json"],
        body: Data(#"{"home":{"lat":0,"lon":200}}"#.utf8))
      #expect(badHome.head.status.code == 400)
      let anonymous = try await server.phoneAppRequest(.get, "/v1/me/home-work")
      #expect(anonymous.head.status.code == 401)
    }
  }

  @Test func homeIsProposedFromTheNightsAndWorkFromTheWeekdaysUnlessSet() async throws {
    try await TestServer.with { server in
      let (_, anna) = try await server.signUp("anna")
      let home = Coordinate(uncheckedLatitude: 50.45, longitude: 30.52)
      let work = Coordinate(uncheckedLatitude: 50.47, longitude: 30.45)
      // Kyiv is UTC+2.
      let fixes = try Self.workingDays(home: home, work: work, utcOffset: 2)
      _ = try await anna.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: fixes))
      let kyiv = HistoryQuery(timeZone: "Europe/Kyiv")
      let proposed = try await anna.send(API.historyVisits, parameters: kyiv)
      #expect(proposed.home?.source == "proposed" && proposed.home?.days == 3)
      #expect((proposed.home?.location.haversineDistance(to: home)).map { $0 < 10 } == true)
      #expect(proposed.work?.source == "proposed" && proposed.work?.days == 3)
      #expect((proposed.work?.location.haversineDistance(to: work)).map { $0 < 10 } == true)
      #expect(try await anna.send(API.homeWork) == HomeWorkChoice())

      let elsewhere = Coordinate(uncheckedLatitude: 50.4, longitude: 30.6)
      #expect(
        try await anna.send(API.setHomeWork, body: HomeWorkChoice(home: elsewhere)) == HomeWorkChoice(home: elsewhere))
      #expect(try await anna.send(API.homeWork) == HomeWorkChoice(home: elsewhere))
      let set = try await anna.send(API.historyVisits, parameters: kyiv)
      #expect(set.home == HomeWorkPlace(location: elsewhere, source: "set"))
      #expect(set.work?.source == "proposed")
    }
  }

  @Test func homeAndWorkAreProposedInTheLocalTimeOfTheirTown() async throws {
    try await TestServer.with { server in
      let (_, anna) = try await server.signUp("anna")
      let home = Coordinate(uncheckedLatitude: 35.6895, longitude: 139.6917)
      let work = Coordinate(uncheckedLatitude: 35.6895, longitude: 139.75)
      // Tokyo is UTC+9: at home 10:00–22:40 UTC, at work 00:00–08:40 UTC.
      let fixes = try Self.workingDays(home: home, work: work, utcOffset: 9)
      _ = try await anna.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: fixes))
      // In UTC (no gazetteer, no timeZone) the nights are at work.
      let utc = try await anna.send(API.historyVisits, parameters: HistoryQuery())
      #expect((utc.home?.location.haversineDistance(to: work)).map { $0 < 10 } == true)
      // With the gazetteer, Tokyo's time zone: home is home.
      try await LocalTimeStatsTests.loadGazetteer(server.app.environment.store)
      let local = try await anna.send(API.historyVisits, parameters: HistoryQuery())
      #expect((local.home?.location.haversineDistance(to: home)).map { $0 < 10 } == true)
      #expect((local.work?.location.haversineDistance(to: work)).map { $0 < 10 } == true)
      #expect(local.home?.days == 3 && local.work?.days == 3)
    }
  }
}
