import DomainKit
import Foundation
import MeridianAPI

/// A promotion's figures per day or week of its venue's time zone, counted from the stored offers and redemptions:
/// one rule for the advertiser API (`GET /v1/advertiser/promotions/{id}/stats`) and `meridian-admin promotions stats
/// --by day`. Counts below ``AggregateCount/minimum`` people are hidden, and a week holding such a day is withheld
/// (``FigureDisclosure``).
public struct PromotionStats: Sendable {
  let store: any MeridianStore

  /// The figures of promotions in `store`.
  public init(store: any MeridianStore) { self.store = store }

  /// The report of `promotion` (of `venue`) from `from` to `to` inclusive, days in the venue's time zone; week
  /// buckets run Monday to Sunday, the first and last cut to the range.
  /// - Throws: ``APIError`` `invalid_request` when the range is longer than ``PromotionStatsQuery/maximumDays``.
  ///
  /// A special promotion's rows also count its eligible audience by `rule` at each bucket's end (up to `now`).
  public func report(
    _ promotion: Promotion, venue: Place, from: CalendarDay, to: CalendarDay, bucket: StatsBucket,
    rule: PromotionEligibility = PromotionEligibility(), now: Int64 = Timestamp.milliseconds(Date())
  ) async throws -> PromotionStatsReport {
    let calendar = Self.calendar(venue.resolvedTimeZone)
    let days = try Self.days(from: from, to: to, calendar: calendar)
    guard days.count <= PromotionStatsQuery.maximumDays else {
      throw APIError.invalidRequest("A report covers at most \(PromotionStatsQuery.maximumDays) days.")
    }
    // Each bucket's days, then its first instant; the last boundary is the day after `to`.
    var groups: [[Date]] = []
    for day in days {
      let weekday = calendar.component(.weekday, from: day)  // 1 = Sunday … 7 = Saturday
      if groups.isEmpty || bucket == .day || weekday == 2 { groups.append([]) }
      groups[groups.count - 1].append(day)
    }
    guard let last = days.last, let after = calendar.date(byAdding: .day, value: 1, to: last) else {
      return PromotionStatsReport(
        promotionId: promotion.id, venueId: venue.id, timeZone: venue.resolvedTimeZone.identifier, bucket: bucket,
        rows: [])
    }
    let boundaries = groups.compactMap(\.first).map(Timestamp.milliseconds) + [Timestamp.milliseconds(after)]
    let counts = try await store.promotionCounts(promotion.id, boundaries: boundaries)
    // The people of each day, for the rule that a bucket holding a hidden day is withheld.
    var dailyPeople = counts.map { [$0.people] }
    if bucket == .week {
      let dayBoundaries = days.map(Timestamp.milliseconds) + [Timestamp.milliseconds(after)]
      var daily = try await store.promotionCounts(promotion.id, boundaries: dayBoundaries).map(\.people)[...]
      dailyPeople = groups.map { group in
        defer { daily = daily.dropFirst(group.count) }
        return Array(daily.prefix(group.count))
      }
    }
    // A special promotion's audience at each bucket's end (or now) that has begun, read once for the request.
    var eligible: [Int?] = groups.map { _ in nil }
    if promotion.audience == .special {
      let begun = boundaries.dropLast().indices.filter { boundaries[$0] <= now }
      let audience = try await EligibleAudience(store: store, rule: rule)
        .counts(for: venue, at: begun.map { min(boundaries[$0 + 1] - 1, now) })
      for (index, count) in zip(begun, audience) { eligible[index] = count }
    }
    var rows: [PromotionStatsRow] = []
    for (index, (group, count)) in zip(groups, counts).enumerated() {
      guard let first = group.first, let last = group.last else { continue }
      rows.append(
        PromotionStatsRow(
          start: Self.day(first, calendar), end: Self.day(last, calendar), offers: count.offers,
          people: count.people, redeemed: count.redeemed, dailyPeople: dailyPeople[index], eligible: eligible[index]))
    }
    return PromotionStatsReport(
      promotionId: promotion.id, venueId: venue.id, timeZone: venue.resolvedTimeZone.identifier, bucket: bucket,
      rows: rows)
  }

  /// The range a query names: `to` defaults to today at `now` in `timeZone`, `from` to 29 days before `to`.
  public static func range(from: CalendarDay?, to: CalendarDay?, now: Int64, timeZone: TimeZone) -> (
    CalendarDay, CalendarDay
  ) {
    let calendar = calendar(timeZone)
    let last = to ?? day(Timestamp.date(now), calendar)
    if let from { return (from, last) }
    let start = start(of: last, calendar).flatMap { calendar.date(byAdding: .day, value: -29, to: $0) }
    return (start.map { day($0, calendar) } ?? last, last)
  }

  static func calendar(_ timeZone: TimeZone) -> Calendar {
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = timeZone
    return calendar
  }

  static func day(_ date: Date, _ calendar: Calendar) -> CalendarDay {
    let parts = calendar.dateComponents([.year, .month, .day], from: date)
    return CalendarDay(year: parts.year ?? 1970, month: parts.month ?? 1, day: parts.day ?? 1)
      ?? CalendarDay(year: 1970, month: 1, day: 1)!
  }

  /// The first instant of `day` (local midnight, or the first hour after a midnight that a clock change skipped).
  static func start(of day: CalendarDay, _ calendar: Calendar) -> Date? {
    calendar.date(from: DateComponents(year: day.year, month: day.month, day: day.day, hour: 12))
      .map { calendar.startOfDay(for: $0) }
  }

  /// The first instants of the days from `from` to `to`; more than the maximum stops early.
  static func days(from: CalendarDay, to: CalendarDay, calendar: Calendar) throws -> [Date] {
    guard var date = start(of: from, calendar), let end = start(of: to, calendar) else { return [] }
    var days: [Date] = []
    while date <= end, days.count <= PromotionStatsQuery.maximumDays {
      days.append(date)
      guard let noon = calendar.date(byAdding: .hour, value: 36, to: date) else { break }
      date = calendar.startOfDay(for: noon)
    }
    return days
  }
}
