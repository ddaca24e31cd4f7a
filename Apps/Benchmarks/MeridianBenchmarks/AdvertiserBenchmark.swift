import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import MeridianStore
import NetworkingKit
import NetworkingKitAsyncHTTPClient

/// The advertisers phase of `meridian-server-bench`: `BENCH_OFFERS` offers (1,000,000 by default) of one promotion
/// over the 365 days before today, by 2,000 people (about 100 a day), stored through `store`; then
/// `advertiser.stats.p99_ms` (and `p50_ms`): its advertiser reading a year of daily buckets
/// (`GET /v1/advertiser/promotions/{id}/stats?from=&to=&bucket=day`) 200 times.
func advertiserFigures(
  port: Int, transport: AsyncHTTPClientTransport, configuration: NetworkClient.Configuration,
  store: any MeridianStore
) async throws {
  let offers = Int(ProcessInfo.processInfo.environment["BENCH_OFFERS"] ?? "") ?? 1_000_000
  let anonymous = try makeClient(port: port, token: nil, transport: transport, configuration: configuration)
  let session = try await anonymous.send(
    API.register, body: EmailCredentials(email: "advertiser@example.com", password: "benchmark password"))
  let owner = try makeClient(port: port, token: session.token, transport: transport, configuration: configuration)
  let venue = try Place(
    id: "bench-advertised", kind: .venue, name: LocalizedText(["en": "Bench café"]),
    location: Coordinate(uncheckedLatitude: 50.45, longitude: 30.52), timeZone: "Europe/Kyiv")
  try await store.upsertVenues([try VenueRecord(place: venue)])
  try await store.grantAdvertiser(session.userId, venues: [venue.id], at: 0)
  let promotion = try await owner.send(
    API.createAdvertisedPromotion, parameters: VenueRef(id: venue.id),
    body: PromotionDraft(name: "Morning coffee", promoCode: "BENCH"))
  let id = promotion.promotion.id

  let people = 2_000
  let perDay = 100
  let day: Int64 = 86_400_000
  let now = Timestamp.milliseconds(Date())
  var users: [UserID] = []
  for index in 0..<people {
    let user = UserID("bench-offered-\(index)")
    _ = try await store.createAccount(
      id: user, credential: .email("offered\(index)@example.com"), passwordHash: nil, now: now)
    users.append(user)
  }
  // One call per person and day: each of the day's people listed it `offers / (365 × perDay)` times at once.
  let repeats = max(1, offers / (365 * perDay))
  let seedStart = ContinuousClock.now
  for dayIndex in 0..<365 {
    let start = now - Int64(365 - dayIndex) * day
    for slot in 0..<perDay {
      let user = users[(dayIndex * 37 + slot * 13) % people]
      try await store.recordOffers(
        Array(repeating: id, count: repeats), to: user, at: start + Int64(slot) * (day / Int64(perDay)))
    }
  }
  emit(
    "advertiser.seed_offers_per_s", Double(365 * perDay * repeats) / seconds(ContinuousClock.now - seedStart),
    "offers/s")

  var calendar = Calendar(identifier: .gregorian)
  calendar.timeZone = TimeZone(identifier: "Europe/Kyiv") ?? .gmt
  func calendarDay(_ time: Int64) -> CalendarDay? {
    let parts = calendar.dateComponents([.year, .month, .day], from: Timestamp.date(time))
    return CalendarDay(year: parts.year ?? 0, month: parts.month ?? 0, day: parts.day ?? 0)
  }
  let query = PromotionStatsQuery(id: id, from: calendarDay(now - 365 * day), to: calendarDay(now - day))
  var latencies: [Duration] = []
  for _ in 0..<200 {
    let begin = ContinuousClock.now
    let body = try await owner.send(API.advertisedPromotionStats, parameters: query)
    latencies.append(ContinuousClock.now - begin)
    let report = try JSONDecoder().decode(PromotionStatsReport.self, from: body)
    guard report.rows.count == 365 else { fatalError("a year of daily buckets has \(report.rows.count) rows") }
  }
  latencies.sort()
  emit("advertiser.stats.p50_ms", quantile(latencies, 0.5), "ms")
  emit("advertiser.stats.p99_ms", quantile(latencies, 0.99), "ms")
}
