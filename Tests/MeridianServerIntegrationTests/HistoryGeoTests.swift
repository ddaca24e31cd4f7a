import DomainKit
import Foundation
import HTTPTypes
import MeridianAPI
import MeridianStore
import NetworkingKit
import Testing

/// "Where I've been" over HTTP on every engine: stays grouped by country, region, district and town from a
/// gazetteer loaded into the store, in the caller's language (`lang`, `Accept-Language`, then English).
@Suite("History places over HTTP", .inProcess)
struct HistoryGeoTests {
  /// Russia (Tomsk Oblast: Tomsk in Tomskiy Rayon, Seversk with no district) and Ukraine (Kyiv), with Russian names
  /// for some of them only.
  static func loadGazetteer(_ store: any MeridianStore) async throws {
    func area(_ line: Int, _ code: String, _ level: GazetteerLevel, _ name: String, ru: String? = nil)
      -> GazetteerStagedRow
    {
      var names = ["en": name]
      names["ru"] = ru
      return GazetteerStagedRow(
        line: line,
        content: .area(
          GazetteerArea(
            code: code, level: level, country: String(code.prefix(2)), name: name, names: names)))
    }
    func town(
      _ line: Int, _ id: Int64, _ name: String, ru: String?, _ admin1: String, _ admin2: String?, _ lat: Double,
      _ lon: Double
    ) -> GazetteerStagedRow {
      var names = ["en": name]
      names["ru"] = ru
      return GazetteerStagedRow(
        line: line,
        content: .locality(
          GazetteerLocality(
            geonameID: id, name: name, names: names, country: String(admin1.prefix(2)), admin1: admin1,
            admin2: admin2, latitude: lat, longitude: lon)))
    }
    let areas = [
      area(1, "RU", .country, "Russia", ru: "Россия"), area(2, "UA", .country, "Ukraine", ru: "Украина"),
      area(3, "RU.75", .admin1, "Tomsk Oblast", ru: "Томская область"), area(4, "UA.12", .admin1, "Kyiv City"),
      area(5, "RU.75.1", .admin2, "Tomskiy Rayon", ru: "Томский район"),
    ]
    let towns = [
      town(1, 1_489_425, "Tomsk", ru: "Томск", "RU.75", "RU.75.1", 56.50049, 84.98216),
      town(2, 1_492_517, "Seversk", ru: nil, "RU.75", nil, 56.60056, 84.88639),
      town(3, 703_448, "Kyiv", ru: "Киев", "UA.12", nil, 50.45466, 30.5238),
    ]
    for (file, rows) in [("areas.txt", areas), ("towns.txt", towns)] {
      _ = try await store.beginGazetteerFile(file, digest: "1", restart: false, now: 1)
      try await store.stageGazetteerRows(rows, file: file, through: rows.count)
      _ = try await store.commitGazetteerFile(file, now: 1)
    }
  }

  /// Ten-minute stays (a fix a minute), an hour apart, at each coordinate.
  static func stays(_ places: [(Double, Double)]) throws -> [LocationFix] {
    var fixes: [LocationFix] = []
    var time: Int64 = 1_700_000_000_000
    for (latitude, longitude) in places {
      for minute in 0...10 {
        fixes.append(
          try LocationFix(
            timestamp: time + Int64(minute) * 60_000, latitude: latitude + Double(minute % 2) * 0.00002,
            longitude: longitude, horizontalAccuracy: 10))
      }
      time += 3_600_000
    }
    return fixes
  }

  @Test(arguments: PollTests.engines)
  func staysAreGroupedAtEveryLevelInTheCallersLanguage(_ engine: String) async throws {
    try await PollTests.withServer(engine) { server in
      let (session, anna) = try await server.signUp("anna")
      // With no gazetteer every stay is unplaced.
      _ = try await anna.send(API.postFixes, body: FixBatch(deviceId: "phone", fixes: try Self.stays([(56.5, 84.97)])))
      let empty = try await anna.send(API.historyPlaces, parameters: HistoryPlacesQuery())
      #expect(empty.places.isEmpty && empty.visits == 1 && empty.unplaced == 1)

      try await Self.loadGazetteer(server.app.environment.store)
      // Tomsk three times (one above), Seversk once, Kyiv twice.
      let more = try Self.stays([(56.49, 84.95), (56.51, 84.99), (56.6, 84.88), (50.45, 30.52), (50.46, 30.53)])
      _ = try await anna.send(
        API.postFixes,
        body: FixBatch(
          deviceId: "phone",
          fixes: more.map {
            var fix = $0
            fix.timestamp += 86_400_000
            return fix
          }))

      let countries = try await anna.send(
        API.historyPlaces, parameters: HistoryPlacesQuery(level: "country", language: "ru"))
      #expect(countries.places.map(\.area.name) == ["Россия", "Украина"])
      #expect(countries.places.map(\.visits) == [4, 2])
      #expect(countries.places.first?.timeSpent == Int64(2_400_000))
      #expect(countries.visits == 6 && countries.unplaced == 0)

      let regions = try await anna.send(API.historyPlaces, parameters: HistoryPlacesQuery(level: "admin1"))
      #expect(regions.places.map(\.area.name) == ["Tomsk Oblast", "Kyiv City"])
      #expect(regions.places.first?.ancestors.map(\.name) == ["Russia"])

      // Districts: only Tomsk has one; the other stays are unplaced at that level.
      let districts = try await anna.send(
        API.historyPlaces, parameters: HistoryPlacesQuery(level: "admin2", language: "ru"))
      #expect(districts.places.map(\.area.name) == ["Томский район"])
      #expect(districts.places.map(\.visits) == [3])
      #expect(districts.unplaced == 3)

      // Towns by Accept-Language (uk is not in the gazetteer: Russian next, then English for Seversk).
      let towns = try await server.phoneAppRequest(
        .get, "/v1/history/places?level=locality",
        headers: [.authorization: "Bearer \(session.token)", .acceptLanguage: "uk-UA, ru;q=0.8, en;q=0.5"])
      #expect(towns.head.status.code == 200)
      let decoded = try JSONDecoder().decode(HistoryPlaces.self, from: towns.body)
      #expect(decoded.places.map(\.area.name) == ["Томск", "Киев", "Seversk"])
      #expect(decoded.places.map(\.visits) == [3, 2, 1])
      // Each town where its stays were (their midpoint by time): Kyiv between its two, Seversk at its one.
      let kyiv = try #require(decoded.places.first { $0.area.name == "Киев" })
      #expect(abs((kyiv.latitude ?? 0) - 50.455) < 0.001 && abs((kyiv.longitude ?? 0) - 30.525) < 0.001, "\(kyiv)")
      let seversk = try #require(decoded.places.last)
      #expect(abs((seversk.latitude ?? 0) - 56.6) < 0.001 && abs((seversk.longitude ?? 0) - 84.88) < 0.001)
      #expect(decoded.places.first?.ancestors.map(\.level) == ["country", "admin1", "admin2"])
      #expect(decoded.places.first?.ancestors.map(\.name) == ["Россия", "Томская область", "Томский район"])

      // A filter applies: the first day holds the one stay in Tomsk.
      let firstDay = HistoryQuery(from: 1_700_000_000_000, to: 1_700_086_400_000)
      let day = try await anna.send(
        API.historyPlaces, parameters: HistoryPlacesQuery(history: firstDay, level: "locality"))
      #expect(day.places.map(\.area.name) == ["Tomsk"])

      // Bad input, and no sign-in.
      for path in ["/v1/history/places?level=planet", "/v1/history/places?lang=r%20u", "/v1/history/places?from=x"] {
        let response = try await server.phoneAppRequest(
          .get, path, headers: [.authorization: "Bearer \(session.token)"])
        #expect(response.head.status.code == 400, "\(path)")
        #expect(response.errorCode == "invalid_request", "\(path)")
      }
      #expect(try await server.phoneAppRequest(.get, "/v1/history/places").head.status.code == 401)
    }
  }

  /// A stay of a fix a minute for `minutes` at a coordinate from `start`, with 2 m of jitter (accuracy 10 m).
  static func stay(_ latitude: Double, _ longitude: Double, from start: Int64, minutes: Int) throws -> [LocationFix] {
    try (0...minutes).map { minute in
      try LocationFix(
        timestamp: start + Int64(minute) * 60_000, latitude: latitude + Double(minute % 2) * 0.00002,
        longitude: longitude, horizontalAccuracy: 10)
    }
  }

  /// Two days in and around Tomsk in January 2024 (home, Seversk and back), then two days in Kyiv in February.
  /// Distances are the WGS84 geodesics from GeographicLib 2.1 (Python `Geodesic.WGS84.Inverse`).
  @Test(arguments: PollTests.engines)
  func travelStatisticsOfAKnownTrack(_ engine: String) async throws {
    try await PollTests.withServer(engine) { server in
      let (session, anna) = try await server.signUp("anna")
      let january10 = Int64(1_704_873_600_000)  // 2024-01-10 08:00 UTC
      let february5 = Int64(1_707_134_400_000)  // 2024-02-05 12:00 UTC
      let hour = Int64(3_600_000)
      var fixes = try Self.stay(56.50, 84.97, from: january10, minutes: 10)
      // A poor fix 334 m off, within its 500 m accuracy: jitter, no distance.
      fixes.append(
        try LocationFix(timestamp: january10 + 330_000, latitude: 56.503, longitude: 84.97, horizontalAccuracy: 500))
      fixes.append(
        try LocationFix(timestamp: january10 + 1_200_000, latitude: 56.55, longitude: 84.93, horizontalAccuracy: 10))
      fixes += try Self.stay(56.60, 84.88, from: january10 + 1_800_000, minutes: 10)
      fixes += try Self.stay(56.50, 84.97, from: january10 + 26 * hour, minutes: 10)
      fixes += try Self.stay(50.45, 30.52, from: february5, minutes: 6)
      fixes += try Self.stay(50.46, 30.53, from: february5 + 24 * hour, minutes: 6)
      _ = try await anna.send(API.postFixes, body: FixBatch(deviceId: "phone", fixes: fixes))
      // Tomsk → (56.55, 84.93) → Seversk → Tomsk; Tomsk → Kyiv → 1.3 km across Kyiv.
      let january = 6_087.538_428 + 6_359.451_658 + 12_435.117_476
      let february = 3_578_401.924_186 + 1_319.744_050

      // No gazetteer yet: the distance and days, nothing placed, every tracked day away.
      let bare = try await anna.send(API.historyStats, parameters: HistoryStatsQuery())
      #expect(abs(bare.total.distance - (january + february)) < 0.01)
      #expect(bare.home == nil && bare.countries.isEmpty && bare.total.visits == 5)
      #expect(bare.total.daysTracked == 4 && bare.total.daysAway == 4)

      try await Self.loadGazetteer(server.app.environment.store)
      let stats = try await anna.send(API.historyStats, parameters: HistoryStatsQuery(language: "ru"))
      #expect(stats.timeZone == "UTC")
      #expect(stats.home?.name == "Томск")
      #expect(stats.countries.map(\.name) == ["Россия", "Украина"])
      #expect(stats.cities.map(\.name) == ["Томск", "Киев", "Seversk"])
      #expect(stats.years.map(\.period) == ["2024"] && stats.months.map(\.period) == ["2024-01", "2024-02"])
      let expected = [
        HistoryStatsPeriod(
          period: "2024-01", distance: january, fixes: 35, visits: 3, countries: 1, cities: 2, daysTracked: 2,
          daysAway: 0),
        HistoryStatsPeriod(
          period: "2024-02", distance: february, fixes: 14, visits: 2, countries: 1, cities: 1, daysTracked: 2,
          daysAway: 2),
      ]
      for (month, want) in zip(stats.months, expected) {
        #expect(abs(month.distance - want.distance) < 0.01, "\(month.period)")
        var rounded = month
        rounded.distance = want.distance
        #expect(rounded == want)
      }
      #expect(stats.total.fixes == 49 && stats.total.countries == 2 && stats.total.cities == 3)
      #expect(stats.total.daysTracked == 4 && stats.total.daysAway == 2)
      #expect(stats.years.first?.daysAway == 2 && stats.years.first?.visits == 5)

      // February alone: Kyiv is where the most time went, so no day is away.
      let feb = try await anna.send(
        API.historyStats, parameters: HistoryStatsQuery(history: HistoryQuery(from: february5 - 24 * hour)))
      #expect(feb.home?.name == "Kyiv" && feb.total.daysAway == 0 && feb.months.map(\.period) == ["2024-02"])
      #expect(abs(feb.total.distance - 1_319.744_050) < 0.01)

      // In Tomsk's time zone (UTC+7) the Kyiv stays fall on the same days; a bad zone is refused.
      let local = try await anna.send(
        API.historyStats, parameters: HistoryStatsQuery(history: HistoryQuery(timeZone: "Asia/Tomsk")))
      #expect(local.timeZone == "Asia/Tomsk" && local.total.daysTracked == 4)
      let bad = try await server.phoneAppRequest(
        .get, "/v1/history/stats?timeZone=Mars%2FOlympus", headers: [.authorization: "Bearer \(session.token)"])
      #expect(bad.head.status.code == 400 && bad.errorCode == "invalid_request")
      #expect(try await server.phoneAppRequest(.get, "/v1/history/stats").head.status.code == 401)
    }
  }

  /// OwnTracks `/pub` replies name a friend's place as the Recorder does (`cc`, `locality`, `addr`) once a gazetteer
  /// is loaded, in the caller's `Accept-Language`.
  @Test(arguments: PollTests.engines)
  func ownTracksRepliesNameTheFriendsPlace(_ engine: String) async throws {
    try await PollTests.withServer(engine) { server in
      let (_, anna) = try await server.signUp("anna")
      let (bobSession, _) = try await server.signUp("bob")
      let friends = try #require(try await anna.send(API.groups).groups.first { $0.kind == .friends })
      _ = try await anna.send(API.addMember, parameters: GroupMemberRef(groupID: friends.id, userID: bobSession.userId))
      _ = try await anna.send(
        API.postFixes,
        body: FixBatch(
          deviceId: "anna-phone",
          fixes: [
            try LocationFix(timestamp: 1_700_000_000_000, latitude: 56.49, longitude: 84.95, horizontalAccuracy: 10)
          ]
        ))
      func annasLocation() async throws -> OwnTracks.Location? {
        var headers: HTTPFields = [.contentType: "application/json", .acceptLanguage: "ru, en;q=0.5"]
        headers[.authorization] = OwnTracksAuth.basic(username: "bob@example.com", password: "correct horse")
        headers[try #require(HTTPField.Name(OwnTracksAuth.deviceHeader))] = "bob-phone"
        let response = try await server.phoneAppRequest(
          .post, "/pub", headers: headers,
          body: Data(#"{"_type":"location","lat":50.45,"lon":30.52,"tst":1700000000}"#.utf8))
        #expect(response.head.status == .ok)
        for case .location(let location) in try response.ownTracksMessages() { return location }
        return nil
      }
      let bare = try #require(try await annasLocation())
      #expect(bare.locality == nil && bare.cc == nil && bare.addr == nil)
      try await Self.loadGazetteer(server.app.environment.store)
      let named = try #require(try await annasLocation())
      #expect(named.cc == "RU" && named.locality == "Томск", "\(named)")
      #expect(named.addr == "Томск, Томская область, Россия", "\(named)")
      #expect(named.lat == 56.49 && named.lon == 84.95)
    }
  }
}
