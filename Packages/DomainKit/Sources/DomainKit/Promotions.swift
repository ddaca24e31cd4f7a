import Foundation
import GeoKit

/// A price in minor units (cents, kopecks) of a currency. Wire names: `amount`, `currency` (ISO 4217).
public struct Money: Sendable, Hashable, Codable {
  /// Minor units.
  public var amount: Int
  /// ISO 4217 code (`UAH`, `EUR`).
  public var currency: String

  /// A price.
  public init(amount: Int, currency: String) {
    self.amount = amount
    self.currency = currency
  }
}

/// A daily time-of-day window [start, end) in minutes after local midnight of the venue's time zone.
/// `start > end` crosses midnight (22:00–02:00); `start == end` means all day. Wire names: `start`, `end`.
public struct TimeOfDayWindow: Sendable, Hashable, Codable {
  /// Start minute, 0…1439.
  public var start: Int
  /// End minute (exclusive), 0…1439; 0 with a later start means "until midnight".
  public var end: Int

  /// A window from minutes.
  /// - Throws: ``FixValidationError`` naming `start` or `end` when outside 0…1439.
  public init(start: Int, end: Int) throws(FixValidationError) {
    guard (0..<1440).contains(start) else {
      throw FixValidationError(field: "start", value: Double(start), allowed: "0…1439")
    }
    guard (0..<1440).contains(end) else {
      throw FixValidationError(field: "end", value: Double(end), allowed: "0…1439")
    }
    self.start = start
    self.end = end
  }

  /// A window from hours and minutes (`from: (7, 0), to: (11, 0)`).
  /// - Throws: ``FixValidationError`` naming `start` or `end` when the time is not within 00:00…23:59.
  public init(from: (hour: Int, minute: Int), to: (hour: Int, minute: Int)) throws(FixValidationError) {
    func minutes(_ time: (hour: Int, minute: Int), _ field: String) throws(FixValidationError) -> Int {
      guard (0..<24).contains(time.hour), (0..<60).contains(time.minute) else {
        throw FixValidationError(field: field, value: Double(time.hour) * 60 + Double(time.minute), allowed: "0…1439")
      }
      return time.hour * 60 + time.minute
    }
    try self.init(start: minutes(from, "start"), end: minutes(to, "end"))
  }

  private enum CodingKeys: String, CodingKey { case start, end }

  /// Decodes a window with the same validation as ``init(start:end:)`` (both minutes in 0…1439).
  /// - Throws: `DecodingError.dataCorrupted` naming `start` or `end`.
  public init(from decoder: any Decoder) throws {
    let c = try decoder.container(keyedBy: CodingKeys.self)
    let start = try c.decode(Int.self, forKey: .start)
    let end = try c.decode(Int.self, forKey: .end)
    do {
      try self.init(start: start, end: end)
    } catch {
      throw DecodingError.dataCorruptedError(
        forKey: error.field == "start" ? .start : .end, in: c, debugDescription: error.description)
    }
  }

  /// Whether minute-of-day `minute` lies in the window.
  public func contains(minuteOfDay minute: Int) -> Bool {
    if start == end { return true }
    if start < end { return minute >= start && minute < end }
    return minute >= start || minute < end
  }

  /// Whether the instant `time` (UTC ms) lies in the window in `timeZone`.
  public func contains(_ time: Int64, in timeZone: TimeZone) -> Bool {
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = timeZone
    let parts = calendar.dateComponents([.hour, .minute], from: Timestamp.date(time))
    return contains(minuteOfDay: (parts.hour ?? 0) * 60 + (parts.minute ?? 0))
  }
}

/// Whether a promotion is shown to everyone or only to eligible people.
public enum PromotionAudience: String, Sendable, Hashable, Codable, CaseIterable {
  /// Shown to everyone.
  case general
  /// Personalized: shown only to people eligible by ``PromotionEligibility``.
  case special
}

/// A venue's promotion. Wire names: `id`, `venueId`, `name`, `promoCode`, `imageUrl`, `oldPrice`, `newPrice`,
/// `audience`, `validFrom`, `validUntil` (UTC ms), `window`.
public struct Promotion: Sendable, Hashable, Codable, Identifiable {
  /// The id.
  public var id: PromotionID
  /// The venue.
  public var venueID: PlaceID
  /// Name.
  public var name: String
  /// Code shown (as a QR code) to redeem it.
  public var promoCode: String
  /// Image URL.
  public var imageURL: String?
  /// Price before.
  public var oldPrice: Money?
  /// Price with the promotion.
  public var newPrice: Money?
  /// General or special.
  public var audience: PromotionAudience
  /// Start of validity, UTC ms.
  public var validFrom: Int64?
  /// End of validity (exclusive), UTC ms.
  public var validUntil: Int64?
  /// Daily window in the venue's time zone.
  public var window: TimeOfDayWindow?

  /// A promotion.
  public init(
    id: PromotionID, venueID: PlaceID, name: String, promoCode: String, imageURL: String? = nil,
    oldPrice: Money? = nil, newPrice: Money? = nil, audience: PromotionAudience = .general, validFrom: Int64? = nil,
    validUntil: Int64? = nil, window: TimeOfDayWindow? = nil
  ) {
    self.id = id
    self.venueID = venueID
    self.name = name
    self.promoCode = promoCode
    self.imageURL = imageURL
    self.oldPrice = oldPrice
    self.newPrice = newPrice
    self.audience = audience
    self.validFrom = validFrom
    self.validUntil = validUntil
    self.window = window
  }

  /// Whether the promotion runs at `time` (validity and daily window in `timeZone`, the venue's).
  public func isActive(at time: Int64, timeZone: TimeZone) -> Bool {
    if let validFrom, time < validFrom { return false }
    if let validUntil, time >= validUntil { return false }
    return window?.contains(time, in: timeZone) ?? true
  }

  private enum CodingKeys: String, CodingKey {
    case id
    case venueID = "venueId"
    case name, promoCode
    case imageURL = "imageUrl"
    case oldPrice, newPrice, audience, validFrom, validUntil, window
  }
}

/// Statistics a venue owner sees for a promotion. Wire names: `shown`, `redeemed`, `eligible`.
public struct PromotionStatistics: Sendable, Hashable, Codable {
  /// Times shown.
  public var shown: Int
  /// Times redeemed.
  public var redeemed: Int
  /// People currently eligible (special promotions).
  public var eligible: Int

  /// Statistics.
  public init(shown: Int = 0, redeemed: Int = 0, eligible: Int = 0) {
    self.shown = shown
    self.redeemed = redeemed
    self.eligible = eligible
  }
}

/// "Keeps passing by without visiting": who is eligible for a venue's special promotions.
///
/// A person is eligible when their fixes came within `radius` metres of the venue on at least `minimumDays`
/// distinct calendar days (in the venue's time zone) among the last `lookbackDays` days (today included), and none
/// of their visits in that period was at the venue (same `placeId`, or within `radius` of it).
public struct PromotionEligibility: Sendable, Hashable, Codable {
  /// Passing distance, metres (default 150).
  public var radius: Double
  /// Required distinct days k (default 3).
  public var minimumDays: Int
  /// Period N in days (default 14).
  public var lookbackDays: Int

  /// A rule.
  public init(radius: Double = 150, minimumDays: Int = 3, lookbackDays: Int = 14) {
    self.radius = radius
    self.minimumDays = minimumDays
    self.lookbackDays = lookbackDays
  }

  /// The first instant of the lookback period at `now` in `timeZone` (local midnight N − 1 days ago).
  public func periodStart(now: Int64, timeZone: TimeZone) -> Int64 {
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = timeZone
    let today = calendar.startOfDay(for: Timestamp.date(now))
    let start = calendar.date(byAdding: .day, value: -(lookbackDays - 1), to: today) ?? today
    return Timestamp.milliseconds(start)
  }

  /// The distinct local days on which `fixes` passed the venue within the period.
  public func passDays(fixes: some Sequence<LocationFix>, venue: Coordinate, timeZone: TimeZone, now: Int64) -> Set<
    CalendarDay
  > {
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = timeZone
    let start = periodStart(now: now, timeZone: timeZone)
    var days: Set<CalendarDay> = []
    for fix in fixes where fix.timestamp >= start && fix.timestamp <= now {
      guard fix.coordinate.haversineDistance(to: venue) <= radius else { continue }
      let parts = calendar.dateComponents([.year, .month, .day], from: fix.date)
      if let day = CalendarDay(year: parts.year ?? 0, month: parts.month ?? 0, day: parts.day ?? 0) {
        days.insert(day)
      }
    }
    return days
  }

  /// Whether the person with these fixes and visits is eligible for `venue`'s special promotions at `now`.
  public func isEligible(fixes: some Sequence<LocationFix>, visits: [Visit], venue: Place, now: Int64) -> Bool {
    guard let location = venue.location else { return false }
    let timeZone = venue.resolvedTimeZone
    let start = periodStart(now: now, timeZone: timeZone)
    let visited = visits.contains { visit in
      visit.departure >= start && visit.arrival <= now
        && (visit.placeID == venue.id || visit.location.haversineDistance(to: location) <= radius)
    }
    if visited { return false }
    return passDays(fixes: fixes, venue: location, timeZone: timeZone, now: now).count >= minimumDays
  }
}

/// When a map client reloads nearby venues: after its centre moved at least `threshold` metres (default 100).
public func shouldReloadVenues(from previous: Coordinate?, to current: Coordinate, threshold: Double = 100) -> Bool {
  guard let previous else { return true }
  return previous.haversineDistance(to: current) >= threshold
}
