import ArgumentParser
import DomainKit
import Foundation
import GRDB
import GeoKit
import MeridianServer

extension AdminDatabase {
  /// The users with at least one fix within `radius` metres (by bounding box) of `center` in `from...to`.
  public func usersSeen(near center: Coordinate, radius: Double, from: Int64, to: Int64) async throws -> [UserID] {
    let latitudeDelta = radius / 111_320
    let longitudeDelta = radius / max(1, 111_320 * cos(center.latitude * .pi / 180))
    return try await database.read { db in
      try String.fetchAll(
        db,
        sql: """
          SELECT DISTINCT user_id FROM fixes
          WHERE timestamp BETWEEN ? AND ? AND latitude BETWEEN ? AND ? AND longitude BETWEEN ? AND ?
          ORDER BY user_id
          """,
        arguments: [
          from, to, center.latitude - latitudeDelta, center.latitude + latitudeDelta,
          center.longitude - longitudeDelta, center.longitude + longitudeDelta,
        ]
      ).map { UserID($0) }
    }
  }

  /// How many users are eligible for the venue's special promotions now, by the rule the server applies
  /// (`PromotionEligibility` over `fixRuns` and `VisitDetector`, as `GET /v1/venues/{id}/promotions` does).
  public func eligibleAudience(venue place: Place, now: Int64) async throws -> Int {
    guard let location = place.location else { return 0 }
    let rule = PromotionEligibility()
    let detector = VisitDetector()
    let radius = rule.radius + 2 * detector.radius
    let from = rule.periodStart(now: now, timeZone: place.resolvedTimeZone)
    var eligible = 0
    for user in try await usersSeen(near: location, radius: radius, from: from, to: now) {
      let runs = try await store.fixRuns(owner: user, near: location, radius: radius, from: from, to: now)
      if rule.isEligible(fixes: runs.joined(), visits: runs.flatMap { detector.visits(in: $0) }, venue: place, now: now)
      {
        eligible += 1
      }
    }
    return eligible
  }
}

struct PromotionsCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "promotions", abstract: "Create and list venues' promotions and see their audience.",
    subcommands: [Create.self, List.self, Stats.self])

  static func venue(_ database: AdminDatabase, _ id: String) async throws -> Place {
    guard let venue = try await database.store.venue(PlaceID(id), language: nil) else {
      throw AdminError.notFound("There is no venue '\(id)'; import it with `meridian-admin venues import`.")
    }
    do {
      return try venue.place()
    } catch {
      throw AdminError.failure("Venue '\(id)': \(error.description)")
    }
  }

  static func table(_ promotions: [Promotion], now: Int64, timeZone: TimeZone) -> String {
    var table = TextTable(["id", "name", "code", "audience", "price", "valid (UTC)", "window", "running"])
    for promotion in promotions {
      let price = [promotion.oldPrice, promotion.newPrice].map { money in
        money.map { "\(Double($0.amount) / 100) \($0.currency)" } ?? "-"
      }
      let window = promotion.window.map {
        String(format: "%02d:%02d-%02d:%02d", $0.start / 60, $0.start % 60, $0.end / 60, $0.end % 60)
      }
      table.add([
        promotion.id.rawValue, promotion.name, promotion.promoCode, promotion.audience.rawValue,
        "\(price[0]) → \(price[1])",
        "\(AdminFormat.time(promotion.validFrom)) … \(AdminFormat.time(promotion.validUntil))",
        window ?? "all day", promotion.isActive(at: now, timeZone: timeZone) ? "yes" : "no",
      ])
    }
    return table.text
  }

  struct Create: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Create (or replace, by --id) a promotion of a stored venue.")

    @OptionGroup var options: GlobalOptions

    @Option(help: "The venue's id.")
    var venue: String

    @Option(help: "The promotion's name.")
    var name: String

    @Option(help: "The promo code shown (as a QR code) to redeem it.")
    var code: String

    @Option(help: "general (everyone) or special (people who keep passing by without visiting).")
    var audience = "general"

    @Option(help: "The promotion's id (default: a new one).")
    var id: String?

    @Option(help: "Price before, in minor units (450 = 4.50).")
    var oldPrice: Int?

    @Option(help: "Price with the promotion, in minor units.")
    var newPrice: Int?

    @Option(help: "ISO 4217 currency of the prices.")
    var currency = "UAH"

    @Option(help: "Valid from (2026-12-01, ISO 8601 or epoch ms).")
    var from: String?

    @Option(help: "Valid until (exclusive).")
    var until: String?

    @Option(help: "Daily window in the venue's time zone, HH:MM-HH:MM (may cross midnight).")
    var window: String?

    @Option(help: "Image URL.")
    var image: String?

    func run() async throws {
      guard let audience = PromotionAudience(rawValue: audience) else {
        throw AdminError.usage("--audience must be general or special.")
      }
      guard !name.trimmingCharacters(in: .whitespaces).isEmpty, !code.trimmingCharacters(in: .whitespaces).isEmpty
      else { throw AdminError.usage("--name and --code must not be empty.") }
      if let price = oldPrice, price < 0 { throw AdminError.usage("--old-price must not be negative.") }
      if let price = newPrice, price < 0 { throw AdminError.usage("--new-price must not be negative.") }
      let validFrom = try from.map { try AdminFormat.parseTime($0, option: "--from") }
      let validUntil = try until.map { try AdminFormat.parseTime($0, option: "--until") }
      if let validFrom, let validUntil, validFrom >= validUntil {
        throw AdminError.usage("--from must be before --until.")
      }
      let dailyWindow = try window.map(Self.parseWindow)
      let database = try options.open()
      let place = try await PromotionsCommand.venue(database, venue)
      let promotion = Promotion(
        id: PromotionID(id ?? UUID().uuidString.lowercased()), venueID: place.id, name: name, promoCode: code,
        imageURL: image, oldPrice: oldPrice.map { Money(amount: $0, currency: currency) },
        newPrice: newPrice.map { Money(amount: $0, currency: currency) }, audience: audience, validFrom: validFrom,
        validUntil: validUntil, window: dailyWindow)
      try await database.store.insertPromotion(promotion)
      try options.emit(promotion) { "Created promotion \(promotion.id) of venue \(place.id)." }
    }

    static func parseWindow(_ text: String) throws -> TimeOfDayWindow {
      let parts = text.split(separator: "-").map { $0.split(separator: ":").map { Int($0) } }
      guard parts.count == 2, parts.allSatisfy({ $0.count == 2 }), let startHour = parts[0][0],
        let startMinute = parts[0][1], let endHour = parts[1][0], let endMinute = parts[1][1],
        let window = try? TimeOfDayWindow(from: (startHour, startMinute), to: (endHour, endMinute))
      else { throw AdminError.usage("--window '\(text)' is not HH:MM-HH:MM (e.g. 07:00-11:00).") }
      return window
    }
  }

  struct List: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List a venue's promotions, running or not.")

    @OptionGroup var options: GlobalOptions

    @Option(help: "The venue's id.")
    var venue: String

    func run() async throws {
      let database = try options.open()
      let place = try await PromotionsCommand.venue(database, venue)
      let promotions = try await database.store.promotions(venue: place.id)
      try options.emit(promotions) {
        promotions.isEmpty
          ? "Venue \(place.id) has no promotions."
          : PromotionsCommand.table(promotions, now: Timestamp.milliseconds(Date()), timeZone: place.resolvedTimeZone)
      }
    }
  }

  struct StatsOutput: Codable {
    var venue: String
    var promotions: Int
    var running: Int
    var special: Int
    /// Users the special promotions would be offered to now.
    var eligible: Int
    /// Offers to users, each promotion's users counted once.
    var shown: Int
    /// Redemptions.
    var redeemed: Int
    var byPromotion: [PromotionFigures]
  }

  struct PromotionFigures: Codable {
    var id: String
    var name: String
    var audience: String
    var running: Bool
    /// Users it was offered to.
    var shownUsers: Int
    /// Times it was offered.
    var shownTimes: Int
    var redeemed: Int
  }

  struct Stats: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "A venue's promotions: how many run, who they were shown to, who redeemed them, who is eligible now.")

    @OptionGroup var options: GlobalOptions

    @Option(help: "The venue's id.")
    var venue: String

    func run() async throws {
      let database = try options.open()
      let place = try await PromotionsCommand.venue(database, venue)
      let now = Timestamp.milliseconds(Date())
      let promotions = try await database.store.promotions(venue: place.id)
      let activity = Dictionary(
        try await database.store.promotionActivity(venue: place.id).map { ($0.promotionID, $0) },
        uniquingKeysWith: { first, _ in first })
      let figures = promotions.map { promotion in
        let done = activity[promotion.id]
        return PromotionFigures(
          id: promotion.id.rawValue, name: promotion.name, audience: promotion.audience.rawValue,
          running: promotion.isActive(at: now, timeZone: place.resolvedTimeZone), shownUsers: done?.offeredUsers ?? 0,
          shownTimes: done?.offers ?? 0, redeemed: done?.redeemed ?? 0)
      }
      let output = StatsOutput(
        venue: place.id.rawValue, promotions: promotions.count, running: figures.filter(\.running).count,
        special: promotions.filter { $0.audience == .special }.count,
        eligible: try await database.eligibleAudience(venue: place, now: now),
        shown: figures.reduce(0) { $0 + $1.shownUsers }, redeemed: figures.reduce(0) { $0 + $1.redeemed },
        byPromotion: figures)
      try options.emit(output) {
        var totals = TextTable(["what", "count"])
        totals.add(["promotions", "\(output.promotions) (\(output.running) running, \(output.special) special)"])
        totals.add(["eligible users (special)", "\(output.eligible)"])
        totals.add(["shown (users)", "\(output.shown)"])
        totals.add(["redeemed", "\(output.redeemed)"])
        var table = TextTable(["id", "name", "audience", "running", "shown to", "times", "redeemed"])
        for row in figures {
          table.add([
            row.id, row.name, row.audience, row.running ? "yes" : "no", "\(row.shownUsers)", "\(row.shownTimes)",
            "\(row.redeemed)",
          ])
        }
        return totals.text + "\n" + table.text
      }
    }
  }
}
