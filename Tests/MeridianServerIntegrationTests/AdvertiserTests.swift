import DomainKit
import Foundation
import GeoKit
import HTTPTypes
import MeridianAPI
import MeridianStore
import MeridianStoreTesting
import NetworkingKit
import Testing

@Suite("Advertisers manage their venues' promotions over HTTP", .inProcess)
struct AdvertiserTests {
  static let kyiv = Coordinate(uncheckedLatitude: 50.45, longitude: 30.52)

  /// A café in Kyiv stored as `id`, and Anna signed up as its advertiser.
  static func cafeWithOwner(_ id: PlaceID, on server: TestServer) async throws -> (
    cafe: Place, owner: AuthSession, client: NetworkClient
  ) {
    let cafe = try Place(
      id: id, kind: .venue, name: LocalizedText(["en": id.rawValue]), location: kyiv, venueType: "cafe",
      timeZone: "Europe/Kyiv")
    try await server.app.environment.store.upsertVenues([try VenueRecord(place: cafe)])
    let (owner, client) = try await server.signUp("anna")
    try await server.app.environment.store.grantAdvertiser(owner.userId, venues: [cafe.id], at: 0)
    return (cafe, owner, client)
  }

  /// Dana, signed up, who walked past the café ten minutes ago, once: 7 fixes 20 s apart from 90 m west to 90 m east.
  static func danaWalkedPast(on server: TestServer) async throws -> NetworkClient {
    let start = Timestamp.milliseconds(Date()) - 600_000
    let walk = try (0..<7).map { step in
      let point = east(of: kyiv, Double(step - 3) * 30)
      return try LocationFix(
        timestamp: start + Int64(step) * 20_000, latitude: point.latitude, longitude: point.longitude,
        horizontalAccuracy: 10)
    }
    let (_, dana) = try await server.signUp("dana")
    _ = try await dana.send(API.postFixes, body: FixBatch(deviceId: "dana-phone", fixes: walk))
    return dana
  }

  @Test func advertisersManageOnlyTheirOwnVenues() async throws {
    try await TestServer.with { server in
      let store = server.app.environment.store
      let cafe = try Place(
        id: "cafe", kind: .venue, name: LocalizedText(["en": "Café"]), location: Self.kyiv, venueType: "cafe",
        timeZone: "Europe/Kyiv")
      let bakery = try Place(
        id: "bakery", kind: .venue, name: LocalizedText(["en": "Bakery"]), location: east(of: Self.kyiv, 2_000))
      try await store.upsertVenues([try VenueRecord(place: cafe), try VenueRecord(place: bakery)])
      let (annaSession, anna) = try await server.signUp("anna")  // the café's owner
      let (bobSession, bob) = try await server.signUp("bob")  // the bakery's owner
      let (_, carl) = try await server.signUp("carl")  // no venue
      let (_, dana) = try await server.signUp("dana")  // a customer
      let now = Timestamp.milliseconds(Date())
      try await store.grantAdvertiser(annaSession.userId, venues: [cafe.id], at: now)
      try await store.grantAdvertiser(bobSession.userId, venues: [bakery.id], at: now)

      #expect(try await anna.send(API.advertiserVenues).venues.map(\.id) == [cafe.id])
      #expect(try await bob.send(API.advertiserVenues).venues.map(\.id) == [bakery.id])
      #expect(try await carl.send(API.advertiserVenues).venues.isEmpty)

      let draft = PromotionDraft(
        name: "Morning coffee", promoCode: "AM-COFFEE", oldPrice: Money(amount: 6000, currency: "UAH"),
        newPrice: Money(amount: 4500, currency: "UAH"))
      let coffee = try await anna.send(API.createAdvertisedPromotion, parameters: VenueRef(id: cafe.id), body: draft)
      #expect(coffee.state == .running)
      #expect(coffee.promotion.venueID == cafe.id && coffee.promotion.promoCode == "AM-COFFEE")
      #expect(coffee.eligibility == PromotionEligibility())
      let coffeeRef = PromotionRef(id: coffee.promotion.id)

      // Another advertiser, or someone with no venue, touches nothing of the café.
      for client in [bob, carl] {
        await expectAPIError(.notAdvertiser, status: 403) {
          try await client.send(API.createAdvertisedPromotion, parameters: VenueRef(id: cafe.id), body: draft)
        }
        await expectAPIError(.notAdvertiser, status: 403) {
          try await client.send(API.advertiserPromotions, parameters: VenueRef(id: cafe.id))
        }
        await expectAPIError(.notAdvertiser, status: 403) {
          try await client.send(API.updateAdvertisedPromotion, parameters: coffeeRef, body: draft)
        }
        await expectAPIError(.notAdvertiser, status: 403) {
          try await client.send(
            API.setAdvertisedPromotionState, parameters: coffeeRef, body: PromotionStateChange(state: .ended))
        }
        await expectAPIError(.notAdvertiser, status: 403) {
          try await client.send(API.advertisedPromotionAudience, parameters: coffeeRef)
        }
        await expectAPIError(.promotionNotAvailable, status: 403) {
          try await client.send(API.promotionQR, parameters: PromotionQRQuery(id: coffee.promotion.id))
        }
      }
      await expectAPIError(.notAdvertiser, status: 403) {
        try await anna.send(API.createAdvertisedPromotion, parameters: VenueRef(id: bakery.id), body: draft)
      }
      await expectAPIError(.notFound, status: 404) {
        try await anna.send(API.updateAdvertisedPromotion, parameters: PromotionRef(id: "no-such"), body: draft)
      }
      // The owner may print the code as a QR code without being offered it.
      #expect(!(try await anna.send(API.promotionQR, parameters: PromotionQRQuery(id: coffee.promotion.id))).isEmpty)

      // Bad drafts name the field and store nothing.
      var bad = draft
      bad.name = " "
      var badRule = draft
      badRule.eligibility = PromotionEligibility(radius: 100, minimumDays: 5, lookbackDays: 3)
      var badPrices = draft
      badPrices.newPrice = Money(amount: 100, currency: "EUR")
      for body in [bad, badRule, badPrices] {
        await expectAPIError(.invalidRequest, status: 400) {
          try await anna.send(API.createAdvertisedPromotion, parameters: VenueRef(id: cafe.id), body: body)
        }
      }
      var edit = draft
      edit.promoCode = "has space"
      await expectAPIError(.invalidRequest, status: 400) {
        try await anna.send(API.updateAdvertisedPromotion, parameters: coffeeRef, body: edit)
      }
      #expect(
        try await anna.send(API.advertiserPromotions, parameters: VenueRef(id: cafe.id)).promotions == [coffee])

      // Pause, resume, end: a customer sees and redeems only a running promotion.
      func shown() async throws -> [PromotionID] {
        try await dana.send(API.venuePromotions, parameters: VenueRef(id: cafe.id)).promotions.map(\.id)
      }
      #expect(try await shown() == [coffee.promotion.id])
      let paused = try await anna.send(
        API.setAdvertisedPromotionState, parameters: coffeeRef, body: PromotionStateChange(state: .paused))
      #expect(paused.state == .paused)
      #expect(try await shown().isEmpty)
      await expectAPIError(.promotionNotAvailable, status: 403) {
        try await dana.send(API.redeemPromotion, parameters: coffeeRef, body: PromotionCode(code: "AM-COFFEE"))
      }
      edit = draft
      edit.name = "Morning coffee, large"
      let renamed = try await anna.send(API.updateAdvertisedPromotion, parameters: coffeeRef, body: edit)
      #expect(renamed.state == .paused && renamed.promotion.name == "Morning coffee, large")
      _ = try await anna.send(
        API.setAdvertisedPromotionState, parameters: coffeeRef, body: PromotionStateChange(state: .running))
      #expect(try await shown() == [coffee.promotion.id])
      _ = try await dana.send(API.redeemPromotion, parameters: coffeeRef, body: PromotionCode(code: "am-coffee"))
      _ = try await anna.send(
        API.setAdvertisedPromotionState, parameters: coffeeRef, body: PromotionStateChange(state: .ended))
      #expect(try await shown().isEmpty)
      await expectAPIError(.promotionNotAvailable, status: 409) {
        try await anna.send(
          API.setAdvertisedPromotionState, parameters: coffeeRef, body: PromotionStateChange(state: .running))
      }
      await expectAPIError(.promotionNotAvailable, status: 409) {
        try await anna.send(API.updateAdvertisedPromotion, parameters: coffeeRef, body: draft)
      }
    }
  }

  @Test func eachSpecialPromotionHasItsOwnAudienceRule() async throws {
    try await TestServer.with { server in
      let (cafe, owner, anna) = try await Self.cafeWithOwner("corner", on: server)
      let dana = try await Self.danaWalkedPast(on: server)

      // Once within two days is enough for the first; the second keeps DomainKit's 3 of 14 days.
      let eager = try await anna.send(
        API.createAdvertisedPromotion, parameters: VenueRef(id: cafe.id),
        body: PromotionDraft(
          name: "Come in", promoCode: "HELLO", audience: .special,
          eligibility: PromotionEligibility(radius: 100, minimumDays: 1, lookbackDays: 2)))
      let strict = try await anna.send(
        API.createAdvertisedPromotion, parameters: VenueRef(id: cafe.id),
        body: PromotionDraft(name: "Regulars", promoCode: "AGAIN", audience: .special))
      #expect(strict.eligibility == PromotionEligibility())

      let offered = try await dana.send(API.venuePromotions, parameters: VenueRef(id: cafe.id))
      #expect(offered.eligible)
      #expect(offered.promotions.map(\.id) == [eager.promotion.id])

      // The audience is a count, and one person is "< 5" on the wire.
      let response = try await server.phoneAppRequest(
        .get, "/v1/advertiser/promotions/\(eager.promotion.id)/audience",
        headers: [.authorization: "Bearer \(owner.token)"])
      #expect(response.head.status.code == 200)
      let json = try #require(try JSONSerialization.jsonObject(with: response.body) as? [String: Any])
      #expect(json["eligible"] as? String == "< 5")
      let audience = try await anna.send(
        API.advertisedPromotionAudience, parameters: PromotionRef(id: strict.promotion.id))
      #expect(audience.eligible == .fewerThanMinimum)
      // Today's row of the eager one counts Dana in its audience, as "< 5"; the day before the walk, nobody.
      let report = try JSONDecoder().decode(
        PromotionStatsReport.self,
        from: try await anna.send(API.advertisedPromotionStats, parameters: PromotionStatsQuery(id: eager.promotion.id))
      )
      #expect(report.rows.count == 30)
      #expect(report.rows.last?.eligible == .fewerThanMinimum)
      #expect(report.rows.allSatisfy { $0.eligible != nil })
    }
  }

  /// The operator's figures (`GET /v1/admin/venues/{id}/promotions/stats`, `GET /v1/admin/promotions`) apply the
  /// venue listing's rules: paused and ended promotions don't run, and the eligible audience is whom the running
  /// special promotions' own rules select — Dana, whom the listing offers the eager one.
  @Test func operatorFiguresApplyTheListingsRules() async throws {
    try await TestServer.with({ $0.adminToken = "figures-admin" }) { server in
      let (cafe, _, anna) = try await Self.cafeWithOwner("figures", on: server)
      let dana = try await Self.danaWalkedPast(on: server)
      var ids: [String: PromotionID] = [:]
      for (name, audience, rule) in [
        ("eager", PromotionAudience.special, PromotionEligibility(radius: 100, minimumDays: 1, lookbackDays: 2)),
        ("strict", .special, nil), ("paused", .general, nil), ("ended", .general, nil), ("plain", .general, nil),
        ("paused-eager", .special, PromotionEligibility(radius: 100, minimumDays: 1, lookbackDays: 2)),
      ] {
        ids[name] =
          try await anna.send(
            API.createAdvertisedPromotion, parameters: VenueRef(id: cafe.id),
            body: PromotionDraft(name: name, promoCode: name.uppercased(), audience: audience, eligibility: rule)
          ).promotion.id
      }
      for (name, state) in [("paused", PromotionState.paused), ("ended", .ended), ("paused-eager", .paused)] {
        _ = try await anna.send(
          API.setAdvertisedPromotionState, parameters: PromotionRef(id: try #require(ids[name])),
          body: PromotionStateChange(state: state))
      }
      let offered = try await dana.send(API.venuePromotions, parameters: VenueRef(id: cafe.id))
      #expect(Set(offered.promotions.map(\.id)) == Set([ids["eager"], ids["plain"]].compactMap { $0 }))

      let admin = try server.client(token: "figures-admin")
      let stats = try await admin.send(API.adminPromotionStatistics, parameters: VenueRef(id: cafe.id))
      #expect(stats.promotions == 6 && stats.running == 3 && stats.special == 3, "\(stats)")
      #expect(stats.eligible == 1, "\(stats)")
      let runningNames = Set(stats.byPromotion.filter(\.running).map(\.name))
      #expect(runningNames == ["eager", "strict", "plain"])
      let page = try await admin.send(API.adminPromotions, parameters: AdminPromotionQuery(venue: cafe.id))
      #expect(Set(page.items.filter(\.running).map(\.promotion.name)) == runningNames)
      #expect(page.items.first { $0.promotion.name == "ended" }?.state == .ended)
      let limited = try await admin.send(API.adminPromotions, parameters: AdminPromotionQuery(venue: cafe.id, limit: 2))
      #expect(limited.items.count == 2)
      await expectAPIError(.notFound, status: 404) {
        try await admin.send(API.adminPromotions, parameters: AdminPromotionQuery(venue: "nowhere"))
      }
      let badState = try await server.phoneAppRequest(
        .get, "/v1/admin/promotions?state=sleeping", headers: [.authorization: "Bearer figures-admin"])
      #expect(badState.head.status.code == 400 && badState.errorCode == "invalid_request")
    }
  }

  @Test func dailyAndWeeklyFiguresEqualARecountAndHideSmallCounts() async throws {
    try await TestServer.with { server in
      let store = server.app.environment.store
      let timeZone = try #require(TimeZone(identifier: "Europe/Kyiv"))
      let (cafe, owner, anna) = try await Self.cafeWithOwner("stats-cafe", on: server)
      let (_, bob) = try await server.signUp("bob")
      let coffee = try await anna.send(
        API.createAdvertisedPromotion, parameters: VenueRef(id: cafe.id),
        body: PromotionDraft(name: "Coffee", promoCode: "AM"))
      let id = coffee.promotion.id

      // Two weeks from Monday 2026-03-23 (the clocks go forward on Sunday the 29th): on day d, (3 d mod 11) people
      // list the promotion twice at 23:40 local time, and the even-numbered ones redeem it (once each, ever) at
      // 23:50; a listing at 00:10 the next day belongs to that next day.
      var calendar = Calendar(identifier: .gregorian)
      calendar.timeZone = timeZone
      let people = (0..<12).map { UserID("person-\($0)") }
      for person in people {
        _ = try await store.createAccount(
          id: person, credential: .email("\(person)@example.com"), passwordHash: nil, now: 0)
      }
      let first = try #require(calendar.date(from: DateComponents(year: 2026, month: 3, day: 23)))
      var offers: [(user: UserID, at: Int64)] = []
      var redemptions: [Int64] = []
      for offset in 0..<14 {
        let midnight = try #require(calendar.date(byAdding: .day, value: offset, to: first))
        let evening = Timestamp.milliseconds(midnight) + (23 * 60 + 40) * 60_000
        for (index, person) in people.prefix(offset * 3 % 11).enumerated() {
          try await store.recordOffers([id, id], to: person, at: evening)
          offers += [(person, evening), (person, evening)]
          if index % 2 == 0, case .redeemed = try await store.redeem(id, by: person, at: evening + 600_000) {
            redemptions.append(evening + 600_000)
          }
        }
      }
      let lateListing = Timestamp.milliseconds(first) + 86_400_000 + 10 * 60_000  // 00:10 on the 24th
      try await store.recordOffers([id], to: people[11], at: lateListing)
      offers.append((people[11], lateListing))

      func day(_ time: Int64) -> CalendarDay? {
        let parts = calendar.dateComponents([.year, .month, .day], from: Timestamp.date(time))
        return CalendarDay(year: parts.year ?? 0, month: parts.month ?? 0, day: parts.day ?? 0)
      }
      /// The row the rule makes of a recount of the raw offers and redemptions on `days`.
      func recount(_ days: Set<CalendarDay>) -> (people: Int, row: (AggregateCount, AggregateCount, AggregateCount)) {
        let inside = offers.filter { day($0.at).map(days.contains) == true }
        let people = Set(inside.map(\.user)).count
        let redeemed = redemptions.filter { day($0).map(days.contains) == true }.count
        let hidden = people < 5
        return (
          people,
          (
            hidden ? .fewerThanMinimum : AggregateCount(inside.count), AggregateCount(people),
            hidden ? .fewerThanMinimum : AggregateCount(redeemed)
          )
        )
      }
      let from = try #require(CalendarDay(year: 2026, month: 3, day: 23))
      let to = try #require(CalendarDay(year: 2026, month: 4, day: 5))
      let allDays = (0..<14).compactMap {
        calendar.date(byAdding: .day, value: $0, to: first).flatMap { day(Timestamp.milliseconds($0)) }
      }
      #expect(allDays.count == 14 && allDays.first == from && allDays.last == to)

      let daily = try JSONDecoder().decode(
        PromotionStatsReport.self,
        from: try await anna.send(
          API.advertisedPromotionStats, parameters: PromotionStatsQuery(id: id, from: from, to: to)))
      #expect(daily.timeZone == "Europe/Kyiv" && daily.bucket == .day)
      #expect(daily.rows.map(\.start) == allDays)
      #expect(daily.rows.map(\.end) == allDays)
      var hiddenRows = 0
      var exactRows = 0
      for row in daily.rows {
        let (count, want) = recount([row.start])
        #expect(row.offered == want.0 && row.people == want.1 && row.redeemed == want.2, "\(row.start)")
        if count < 5 { hiddenRows += 1 } else { exactRows += 1 }
        if case .exactly(let shown) = row.people, case .exactly(let used) = row.redeemed {
          #expect(row.conversion == Double(used) / Double(shown))
        } else {
          #expect(row.conversion == nil)
        }
      }
      #expect(hiddenRows > 0 && exactRows > 0)

      // Weeks run Monday to Sunday across the clock change. Each holds a day of 1 to 4 people, so each is withheld:
      // the week less its exact days would give away that day's offers and redemptions.
      let weekly = try JSONDecoder().decode(
        PromotionStatsReport.self,
        from: try await anna.send(
          API.advertisedPromotionStats, parameters: PromotionStatsQuery(id: id, from: from, to: to, bucket: .week)))
      #expect(weekly.rows.map(\.start) == [allDays[0], allDays[7]])
      #expect(weekly.rows.map(\.end) == [allDays[6], allDays[13]])
      for (index, row) in weekly.rows.enumerated() {
        let days = allDays[(index * 7)..<(index * 7 + 7)]
        #expect(days.contains { (1..<5).contains(recount([$0]).people) })
        #expect(row.offered == .withheld && row.people == .withheld && row.redeemed == .withheld, "week \(index)")
        #expect(row.conversion == nil)
      }
      // A part of a week whose days are all exact (6 and 9 people) is exact: the sum of those days.
      let exactDays = try #require(allDays[2...3].allSatisfy { recount([$0]).people >= 5 } ? allDays[2...3] : nil)
      let part = try JSONDecoder().decode(
        PromotionStatsReport.self,
        from: try await anna.send(
          API.advertisedPromotionStats,
          parameters: PromotionStatsQuery(id: id, from: exactDays.first, to: exactDays.last, bucket: .week)))
      let want = recount(Set(exactDays)).row
      #expect(part.rows.count == 1 && part.rows[0].offered == want.0 && part.rows[0].redeemed == want.2)
      if case .exactly = part.rows[0].offered {} else { Issue.record("an exact part of a week was hidden") }

      // CSV: a header and one line per day, "< 5" as such.
      let csv = String(
        decoding: try await anna.send(
          API.advertisedPromotionStats, parameters: PromotionStatsQuery(id: id, from: from, to: to, csv: true)),
        as: UTF8.self)
      let lines = csv.split(separator: "\r\n").map(String.init)
      #expect(lines.first == "start,end,offered,people,redeemed,conversion,eligible")
      #expect(lines.count == 15)
      #expect(lines[1] == "2026-03-23,2026-03-23,< 5,< 5,< 5,,")
      #expect(daily.rows.allSatisfy { $0.eligible == nil })  // a general promotion has no special audience

      // Bad ranges and buckets name the parameter; another person sees nothing.
      let path = "/v1/advertiser/promotions/\(id)/stats"
      for query in [
        "bucket=month", "from=2026-13-01", "from=2026-04-05&to=2026-03-23", "format=xml",
        "from=2024-01-01&to=2026-01-01",
      ] {
        let response = try await server.phoneAppRequest(
          .get, "\(path)?\(query)", headers: [.authorization: "Bearer \(owner.token)"])
        #expect(response.head.status.code == 400, "\(query)")
        #expect(response.errorCode == APIErrorCode.invalidRequest.rawValue, "\(query)")
      }
      await expectAPIError(.notAdvertiser, status: 403) {
        try await bob.send(API.advertisedPromotionStats, parameters: PromotionStatsQuery(id: id))
      }
    }
  }
}
