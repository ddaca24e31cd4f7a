import DomainKit
import Foundation
import NetworkingKit

extension API {
  /// `GET /v1/advertiser/promotions/{id}/stats?from=&to=&bucket=day|week&format=json|csv`: a promotion's figures per
  /// day or week of its venue's time zone — offers, people offered, redemptions, conversion — as counts only, each
  /// below 5 shown as "< 5".
  public static let advertisedPromotionStats = Endpoint<PromotionStatsQuery, NoBody, Data>(
    .get, "/v1/advertiser/promotions/\(\.id, "id")/stats", query: { $0.queryItems }, body: .none, response: .raw)
}

/// How a promotion's figures are grouped: by local day, or by ISO week (Monday to Sunday).
public enum StatsBucket: String, Sendable, Hashable, Codable, CaseIterable {
  /// One row per day.
  case day
  /// One row per week, from Monday.
  case week
}

/// `GET /v1/advertiser/promotions/{id}/stats`: the promotion, the days (inclusive, in the venue's time zone; the last
/// 30 days by default, at most 366), the bucket and the format.
public struct PromotionStatsQuery: RouteParameters, Hashable {
  /// The most days one report covers.
  public static let maximumDays = 366
  /// The promotion.
  public var id: PromotionID
  /// The first day; nil for 29 days before `to`.
  public var from: CalendarDay?
  /// The last day; nil for today.
  public var to: CalendarDay?
  /// Day or week.
  public var bucket: StatsBucket
  /// `json` (default) or `csv`.
  public var csv: Bool

  /// A query.
  public init(
    id: PromotionID, from: CalendarDay? = nil, to: CalendarDay? = nil, bucket: StatsBucket = .day, csv: Bool = false
  ) {
    self.id = id
    self.from = from
    self.to = to
    self.bucket = bucket
    self.csv = csv
  }

  /// Reads `{id}`, `from`, `to`, `bucket` and `format`.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    id = PromotionID(try path.required("id"))
    for (name, value) in [("from", query.string("from")), ("to", query.string("to"))] {
      guard let value else { continue }
      guard let day = CalendarDay(value) else {
        throw .invalidRequest("'\(name)' must be a day as YYYY-MM-DD, not '\(echo(value))'.")
      }
      if name == "from" { from = day } else { to = day }
    }
    if let from, let to, to < from { throw .invalidRequest("'to' must not come before 'from'.") }
    let bucketText = query.string("bucket") ?? "day"
    guard let bucket = StatsBucket(rawValue: bucketText) else {
      throw .invalidRequest("'bucket' must be day or week, not '\(echo(bucketText))'.")
    }
    self.bucket = bucket
    switch query.string("format") ?? "json" {
    case "json": csv = false
    case "csv": csv = true
    case let other: throw .invalidRequest("'format' must be json or csv, not '\(echo(other))'.")
    }
  }

  var queryItems: [QueryItem] {
    var items = [QueryItem("bucket", bucket.rawValue)]
    if let from { items.append(QueryItem("from", from.description)) }
    if let to { items.append(QueryItem("to", to.description)) }
    if csv { items.append(QueryItem("format", "csv")) }
    return items
  }
}

/// One bucket of a promotion's figures. Wire names: `start`, `end` (first and last local day), `offered` (times the
/// promotion was listed to someone), `people` (distinct people it was listed to), `redeemed`, `conversion` (redeemed
/// ÷ people, only when both are exact), `eligible` (special promotions: the audience at the bucket's end).
public struct PromotionStatsRow: Sendable, Hashable, Codable {
  /// The bucket's first day.
  public var start: CalendarDay
  /// Its last day.
  public var end: CalendarDay
  /// Offers.
  public var offered: AggregateCount
  /// Distinct people offered.
  public var people: AggregateCount
  /// Redemptions (one per person).
  public var redeemed: AggregateCount
  /// Redeemed ÷ people, 0…1, when both are exact.
  public var conversion: Double?
  /// For a special promotion: the people its audience rule selected at the bucket's end (or now, for the bucket
  /// that holds today).
  public var eligible: AggregateCount?

  /// A row from exact counts, shown as ``FigureDisclosure/of(people:dailyPeople:)`` says: a bucket of fewer than
  /// ``AggregateCount/minimum`` people shows "< 5" for all three counts (its offers would tell how few); a larger
  /// one holding a day of 1 to 4 people shows "withheld" (it, less the other days, would tell that day's figures);
  /// either has no conversion. `dailyPeople` are the people of each of the bucket's days.
  public init(
    start: CalendarDay, end: CalendarDay, offers: Int, people: Int, redeemed: Int, dailyPeople: [Int],
    eligible: Int? = nil
  ) {
    self.start = start
    self.end = end
    self.eligible = eligible.map(AggregateCount.init)
    switch FigureDisclosure.of(people: people, dailyPeople: dailyPeople) {
    case .shown:
      (offered, self.people) = (AggregateCount(offers), AggregateCount(people))
      self.redeemed = AggregateCount(redeemed)
    case .fewerThanMinimum:
      (offered, self.people, self.redeemed) = (.fewerThanMinimum, .fewerThanMinimum, .fewerThanMinimum)
    case .withheld: (offered, self.people, self.redeemed) = (.withheld, .withheld, .withheld)
    }
    if case .exactly(let shown) = self.people, case .exactly(let used) = self.redeemed {
      conversion = Double(used) / Double(shown)
    }
  }
}

/// The k-anonymity rule of promotion figures, once: how a bucket's counts (offers, people, redemptions) are shown.
///
/// A day of 1 to 4 people is hidden ("< 5"). Offers and redemptions add up over days, so a bucket of several days
/// (a week, or the part of one a range covers) shown exactly while one of its days is hidden would give that day
/// away: the bucket less its other days. So a bucket is exact only when each of its days is exact or empty; every
/// exact figure is then a sum of exact days, and no combination of answers — days, weeks, any ranges — recovers a
/// group of fewer than ``AggregateCount/minimum`` people.
public enum FigureDisclosure: Sendable, Hashable {
  /// Exact.
  case shown
  /// Fewer than ``AggregateCount/minimum`` people: "< 5".
  case fewerThanMinimum
  /// Enough people, but a day of the bucket is hidden: "withheld".
  case withheld

  /// How a bucket of `people` in all, and `dailyPeople` on each of its days, is shown.
  public static func of(people: Int, dailyPeople: [Int]) -> FigureDisclosure {
    if people < AggregateCount.minimum { return .fewerThanMinimum }
    let hiddenDay = dailyPeople.contains { (1..<AggregateCount.minimum).contains($0) }
    return hiddenDay ? .withheld : .shown
  }
}

/// `GET /v1/advertiser/promotions/{id}/stats` as JSON.
public struct PromotionStatsReport: Sendable, Hashable, Codable {
  /// The promotion.
  public var promotionId: PromotionID
  /// Its venue.
  public var venueId: PlaceID
  /// The venue's time zone, in which days begin.
  public var timeZone: String
  /// Day or week.
  public var bucket: StatsBucket
  /// The rows, oldest first.
  public var rows: [PromotionStatsRow]

  /// A report.
  public init(
    promotionId: PromotionID, venueId: PlaceID, timeZone: String, bucket: StatsBucket, rows: [PromotionStatsRow]
  ) {
    self.promotionId = promotionId
    self.venueId = venueId
    self.timeZone = timeZone
    self.bucket = bucket
    self.rows = rows
  }

  /// CSV (RFC 4180): `start,end,offered,people,redeemed,conversion,eligible`, one line per row (empty conversion
  /// when hidden, empty eligible for a general promotion).
  public var csv: String {
    var text = "start,end,offered,people,redeemed,conversion,eligible\r\n"
    for row in rows {
      let conversion = row.conversion.map { String(format: "%.4f", $0) } ?? ""
      let eligible = row.eligible.map(\.description) ?? ""
      text += "\(row.start),\(row.end),\(row.offered),\(row.people),\(row.redeemed),\(conversion),\(eligible)\r\n"
    }
    return text
  }
}
