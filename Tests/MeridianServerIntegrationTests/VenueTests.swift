import DomainKit
import DomainKitTesting
import Foundation
import GRDB
import GeoKit
import MeridianAPI
import MeridianServer
import MeridianStore
import MeridianStoreSQLite
import MeridianStoreTesting
import NetworkingKit
import Testing

/// The venue list with a raw query, to send what `VenueQuery` never writes.
private let rawVenues = Endpoint<[QueryItem], NoBody, VenueList>(
  .get, PathTemplate(stringLiteral: API.venues.pathTemplate), query: { $0 })

@Suite("Venues and promotions over HTTP", .inProcess)
struct VenueTests {
  static let kyiv = Coordinate(uncheckedLatitude: 50.45, longitude: 30.52)

  @Test func nearbyVenuesCarryDistancesAndMatchABruteForceScan() async throws {
    try await TestServer.with { server in
      var random = SplitMix64(seed: 3)
      let all = try randomVenues(
        count: 400, prefix: "v", latitudes: 50.43...50.47, longitudes: 30.49...30.55, random: &random)
      try await server.app.environment.store.upsertVenues(all)
      let (_, anna) = try await server.signUp("anna")

      let expected = all.filter { Self.kyiv.haversineDistance(to: $0.location) <= 1000 }
      var seen: [Venue] = []
      var cursor: String?
      repeat {
        let result = try await anna.send(
          API.venues, parameters: VenueQuery(center: Self.kyiv, cursor: cursor, pageSize: 100))
        #expect(result.hasMore == (result.nextCursor != nil))
        #expect(result.items.count == 100 || result.nextCursor == nil)
        seen += result.items
        cursor = result.nextCursor
      } while cursor != nil && seen.count <= all.count
      #expect(seen.count == expected.count)
      #expect(Set(seen.map(\.id)) == Set(expected.map(\.place.id)))
      let distances = seen.compactMap(\.distance)
      #expect(distances.count == seen.count)
      #expect(distances == distances.sorted())
      #expect(distances.allSatisfy { $0 <= 1000 })
      for venue in seen {
        #expect(abs((venue.distance ?? -1) - Self.kyiv.haversineDistance(to: venue.location)) < 1e-6)
      }

      // Type filter, rating order and small pages, keyset-paged: the places order with the venue's rating.
      let cafes = VenueQuery(center: Self.kyiv, radius: 800, type: "cafe", sort: .rating, pageSize: 7)
      let first = try await anna.send(API.venues, parameters: cafes)
      let expectedCafes = all.enumerated().compactMap { index, record -> (key: [Int64], id: PlaceID)? in
        guard Self.kyiv.haversineDistance(to: record.location) <= 800, record.place.venueType == "cafe" else {
          return nil
        }
        let average = record.rating.count == 0 ? -1 : Int64(record.rating.sum) * 1_000_000 / Int64(record.rating.count)
        return ([-average, -Int64(record.rating.count), Int64(index)], record.place.id)
      }.sorted { $0.key.lexicographicallyPrecedes($1.key) }.map(\.id)
      #expect(first.items.map(\.id) == Array(expectedCafes.prefix(7)))
      #expect(first.items.allSatisfy { $0.type == "cafe" })
      var second = cafes
      second.cursor = first.nextCursor
      #expect(try await anna.send(API.venues, parameters: second).items.map(\.id) == Array(expectedCafes[7..<14]))
      // Offset pages are gone: page 1 is still accepted, a later page names the cursor; a cursor of another order
      // or no cursor at all is a 400.
      let one = try await anna.send(
        rawVenues, parameters: [QueryItem("lat", 50.45), QueryItem("lon", 30.52), QueryItem("page", 1)])
      #expect(one.items.count == 10 && one.hasMore)
      for items in [
        [QueryItem("page", 2)], [QueryItem("cursor", "rating:1:2:3")], [QueryItem("cursor", "distance:x:1")],
      ] {
        await expectAPIError(.invalidRequest, status: 400) {
          try await anna.send(rawVenues, parameters: [QueryItem("lat", 50.45), QueryItem("lon", 30.52)] + items)
        }
      }

      // Venues are places of kind venue: the directory lists them near the centre, in the same order, and finds
      // them by name.
      let places = try await anna.send(
        API.places,
        parameters: PlacesParameters(
          kinds: ["venue"], center: Self.kyiv, radius: 1000, sort: "distance",
          paging: PagingParameters(limit: 100)))
      #expect(places.items.map(\.place.id) == Array(seen.prefix(100).map(\.id)))
      let named = try await anna.send(API.places, parameters: PlacesParameters(q: "Venue 7", kinds: ["venue"]))
      #expect(named.items.first?.place.id == "v-00007", "\(named.items.map(\.place.id))")
    }
  }

  @Test func venueByIDInTheCallersLanguage() async throws {
    try await TestServer.with { server in
      let place = try Place(
        id: "kyiv/arsenal cafe", kind: .venue,
        name: LocalizedText(["en": "Arsenal Café", "ru": "Кафе Арсенал", "uk": "Кав'ярня Арсенал"]),
        location: Self.kyiv, venueType: "cafe")
      try await server.app.environment.store.upsertVenues([try VenueRecord(place: place)])
      let (_, anna) = try await server.signUp("anna")
      let venue = try await anna.send(API.venue, parameters: VenueRef(id: place.id, language: "uk"))
      #expect(venue.name == "Кав'ярня Арсенал")
      #expect(venue.names == place.name)
      #expect(venue.distance == nil)
      #expect(try await anna.send(API.venue, parameters: VenueRef(id: place.id)).name == "Arsenal Café")
      let list = try await anna.send(API.venues, parameters: VenueQuery(center: Self.kyiv, language: "ru"))
      #expect(list.items.map(\.name) == ["Кафе Арсенал"])
      #expect(list.items.first?.distance == 0)
      await expectAPIError(.notFound, status: 404) {
        try await anna.send(API.venue, parameters: VenueRef(id: "no-such-venue"))
      }
      await expectAPIError(.notFound, status: 404) {
        try await anna.send(API.venuePromotions, parameters: VenueRef(id: "no-such-venue"))
      }
      await expectAPIError(.tokenInvalid, status: 401) {
        try await server.client().send(API.venue, parameters: VenueRef(id: place.id))
      }
    }
  }

  @Test func badVenueQueriesAreRefusedWithTheParameterNamed() async throws {
    try await TestServer.with { server in
      let (_, anna) = try await server.signUp("anna")
      let bad: [[QueryItem]] = [
        [],
        [QueryItem("lat", 50)],
        [QueryItem("lat", "north"), QueryItem("lon", 30)],
        [QueryItem("lat", 91), QueryItem("lon", 30)],
        [QueryItem("lat", 50), QueryItem("lon", 181)],
        [QueryItem("lat", 50), QueryItem("lon", 30), QueryItem("radius", 0)],
        [QueryItem("lat", 50), QueryItem("lon", 30), QueryItem("radius", -5)],
        [QueryItem("lat", 50), QueryItem("lon", 30), QueryItem("radius", 50_001)],
        [QueryItem("lat", 50), QueryItem("lon", 30), QueryItem("radius", "nan")],
        [QueryItem("lat", 50), QueryItem("lon", 30), QueryItem("sort", "nearest")],
        [QueryItem("lat", 50), QueryItem("lon", 30), QueryItem("page", 0)],
        [QueryItem("lat", 50), QueryItem("lon", 30), QueryItem("page", 3)],
        [QueryItem("lat", 50), QueryItem("lon", 30), QueryItem("page", "two")],
        [QueryItem("lat", 50), QueryItem("lon", 30), QueryItem("pageSize", 0)],
        [QueryItem("lat", 50), QueryItem("lon", 30), QueryItem("pageSize", 101)],
        [QueryItem("lat", 50), QueryItem("lon", 30), QueryItem("lang", "'; DROP TABLE venues; --")],
      ]
      for items in bad {
        await expectAPIError(.invalidRequest, status: 400) { try await anna.send(rawVenues, parameters: items) }
      }
      // The edges are accepted.
      let edge = try await anna.send(
        rawVenues,
        parameters: [
          QueryItem("lat", -90), QueryItem("lon", 180), QueryItem("radius", 50_000), QueryItem("pageSize", 100),
          QueryItem("lang", "pt-BR"),
        ])
      #expect(edge.items.isEmpty)
    }
  }

  @Test func specialPromotionsOnlyForPeopleWhoKeepPassingBy() async throws {
    try await TestServer.with { server in
      let store = server.app.environment.store
      let venue = try Place(
        id: "croissants", kind: .venue, name: LocalizedText(["en": "Croissants"]), location: Self.kyiv,
        venueType: "cafe", timeZone: "Europe/Kyiv")
      try await store.upsertVenues([try VenueRecord(place: venue)])
      let now = Timestamp.milliseconds(Date())
      let day: Int64 = 86_400_000
      let hour: Int64 = 3_600_000
      // Minute of day in Kyiv now, to build windows that are (not) running.
      var calendar = Calendar(identifier: .gregorian)
      calendar.timeZone = try #require(TimeZone(identifier: "Europe/Kyiv"))
      let parts = calendar.dateComponents([.hour, .minute], from: Date())
      let minute = (parts.hour ?? 0) * 60 + (parts.minute ?? 0)
      let open = try TimeOfDayWindow(start: (minute + 1380) % 1440, end: (minute + 60) % 1440)
      let closed = try TimeOfDayWindow(start: (minute + 120) % 1440, end: (minute + 180) % 1440)
      func promotion(
        _ id: String, _ audience: PromotionAudience, from: Int64? = nil, until: Int64? = nil,
        window: TimeOfDayWindow? = nil
      ) -> Promotion {
        Promotion(
          id: PromotionID(id), venueID: venue.id, name: id, promoCode: id.uppercased(),
          oldPrice: Money(amount: 6000, currency: "UAH"), newPrice: Money(amount: 4500, currency: "UAH"),
          audience: audience, validFrom: from, validUntil: until, window: window)
      }
      let general = promotion("a-general", .general, from: now - day, until: now + day, window: open)
      let special = promotion("b-special", .special)
      for item in [
        general, special, promotion("c-expired", .general, until: now - hour),
        promotion("d-future", .general, from: now + hour), promotion("e-closed", .general, window: closed),
        promotion("f-special-expired", .special, until: now - hour),
      ] {
        try await store.insertPromotion(item)
      }

      func walkPast(_ start: Int64) -> [LocationFix] {
        // 7 fixes 20 s apart from 90 m west to 90 m east of the venue: two minutes, no stay.
        (0..<7).compactMap { step in
          let point = east(of: Self.kyiv, Double(step - 3) * 30)
          return try? LocationFix(
            timestamp: start + Int64(step) * 20_000, latitude: point.latitude, longitude: point.longitude,
            horizontalAccuracy: 10)
        }
      }
      func at(_ point: Coordinate, _ times: [Int64]) -> [LocationFix] {
        times.compactMap {
          try? LocationFix(timestamp: $0, latitude: point.latitude, longitude: point.longitude, horizontalAccuracy: 10)
        }
      }
      let office = Coordinate(uncheckedLatitude: Self.kyiv.latitude + 0.045, longitude: Self.kyiv.longitude)
      let home = Coordinate(uncheckedLatitude: Self.kyiv.latitude - 0.03, longitude: Self.kyiv.longitude)
      // A working day: home, past the venue, the office, past the venue again, home.
      // Local midnight today; walks at 08:00 and 17:00 local time keep each commute on one local day.
      let today = Timestamp.milliseconds(calendar.startOfDay(for: Timestamp.date(now)))
      func commute(_ days: Int) -> [LocationFix] {
        let morning = today - Int64(days) * day + 8 * hour
        return at(home, [morning - hour]) + walkPast(morning)
          + at(office, (1...8).map { morning + Int64($0) * hour }) + walkPast(morning + 9 * hour)
          + at(home, [morning + 10 * hour])
      }
      // Anna walks past to the office and back on three days, and never goes in. (Between the morning and the
      // evening walk her nearby fixes are consecutive: without the office fixes in between they would look like a
      // nine-hour stay.)
      let anna = (1...3).flatMap(commute)
      // Bob commutes the same way, but had a coffee there yesterday (20 minutes at the venue).
      let coffee = at(east(of: Self.kyiv, 5), (0...20).map { today - day + 17 * hour + 1_800_000 + Int64($0) * 60_000 })
      let bob = ((1...3).flatMap(commute) + coffee).sorted { $0.timestamp < $1.timestamp }
      // Carol walked past on two days only.
      let carol = (1...2).flatMap(commute)

      var clients: [String: NetworkClient] = [:]
      for (name, fixes) in [("anna", anna), ("bob", bob), ("carol", carol)] {
        let (_, client) = try await server.signUp(name)
        _ = try await client.send(API.postFixes, body: FixBatch(deviceId: DeviceID("\(name)-phone"), fixes: fixes))
        clients[name] = client
      }
      let (_, dave) = try await server.signUp("dave")
      clients["dave"] = dave

      let annas = try await #require(clients["anna"]).send(API.venuePromotions, parameters: VenueRef(id: venue.id))
      #expect(annas.eligible)
      #expect(annas.promotions == [general, special])
      #expect(annas.venueId == venue.id)
      for name in ["bob", "carol", "dave"] {
        let answer = try await #require(clients[name]).send(API.venuePromotions, parameters: VenueRef(id: venue.id))
        #expect(!answer.eligible, "\(name)")
        #expect(answer.promotions == [general], "\(name)")
      }

      // Redeeming: what was offered, with its code (case and spaces aside), once per person.
      let annaClient = try #require(clients["anna"])
      let bobClient = try #require(clients["bob"])
      func redeem(_ client: NetworkClient, _ promotion: Promotion, _ code: String) async throws -> PromotionRedemption {
        try await client.send(
          API.redeemPromotion, parameters: PromotionRef(id: promotion.id), body: PromotionCode(code: code))
      }
      let redeemed = try await redeem(annaClient, special, " b-special ")
      #expect(redeemed.promotionId == special.id && redeemed.venueId == venue.id)
      await expectAPIError(.alreadyRedeemed, status: 409) { try await redeem(annaClient, special, "B-SPECIAL") }
      await expectAPIError(.promotionCodeInvalid, status: 422) { try await redeem(annaClient, general, "WRONG") }
      _ = try await redeem(annaClient, general, "A-GENERAL")
      // Bob was never offered the special one; expired and closed ones aren't running; unknown ids are 404.
      await expectAPIError(.promotionNotAvailable, status: 403) { try await redeem(bobClient, special, "B-SPECIAL") }
      // …and can't learn whether a code is right: a wrong one is the same 403.
      await expectAPIError(.promotionNotAvailable, status: 403) { try await redeem(bobClient, special, "GUESS") }
      await expectAPIError(.promotionNotAvailable, status: 403) {
        try await redeem(bobClient, promotion("c-expired", .general), "C-EXPIRED")
      }
      await expectAPIError(.promotionNotAvailable, status: 403) {
        try await redeem(bobClient, promotion("e-closed", .general, window: closed), "E-CLOSED")
      }
      await expectAPIError(.notFound, status: 404) { try await redeem(bobClient, promotion("zz", .general), "ZZ") }
      _ = try await redeem(bobClient, general, "a-general")

      // The venue's figures: the general one was offered to four people (Anna twice, after a second listing), the
      // special one to Anna; each was redeemed as above.
      _ = try await annaClient.send(API.venuePromotions, parameters: VenueRef(id: venue.id))
      let activity = try await store.promotionActivity(venue: venue.id)
      #expect(
        activity.first { $0.promotionID == general.id }
          == PromotionActivity(
            promotionID: general.id, offeredUsers: 4, offers: 5, redeemed: 2))
      #expect(
        activity.first { $0.promotionID == special.id }
          == PromotionActivity(
            promotionID: special.id, offeredUsers: 1, offers: 2, redeemed: 1))
      #expect(
        activity.first { $0.promotionID == "c-expired" }
          == PromotionActivity(
            promotionID: "c-expired", offeredUsers: 0, offers: 0, redeemed: 0))
    }
  }
}
