import ArgumentParser
import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import MeridianStore

struct PromotionsCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "promotions", abstract: "Create and list venues' promotions and see their audience.",
    subcommands: [Create.self, List.self, Stats.self])

  /// The promotions as a table: each one's state, and whether it runs now (``AdminPromotionItem/running``).
  static func table(_ items: [AdminPromotionItem]) -> String {
    var table = TextTable([
      "venue", "id", "name", "code", "audience", "price", "valid (UTC)", "window", "state", "running",
    ])
    for item in items {
      let promotion = item.promotion
      let price = [promotion.oldPrice, promotion.newPrice].map { money in
        money.map { "\(Double($0.amount) / 100) \($0.currency)" } ?? "-"
      }
      let window = promotion.window.map {
        String(format: "%02d:%02d-%02d:%02d", $0.start / 60, $0.start % 60, $0.end / 60, $0.end % 60)
      }
      table.add([
        promotion.venueID.rawValue, promotion.id.rawValue, promotion.name, promotion.promoCode,
        promotion.audience.rawValue, "\(price[0]) → \(price[1])",
        "\(AdminFormat.time(promotion.validFrom)) … \(AdminFormat.time(promotion.validUntil))",
        window ?? "all day", item.state.rawValue, item.running ? "yes" : "no",
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
      let draft = PromotionDraft(
        name: name, promoCode: code, imageURL: image, oldPrice: oldPrice.map { Money(amount: $0, currency: currency) },
        newPrice: newPrice.map { Money(amount: $0, currency: currency) }, audience: audience,
        validFrom: try from.map { try AdminFormat.parseTime($0, option: "--from") },
        validUntil: try until.map { try AdminFormat.parseTime($0, option: "--until") },
        window: try window.map(Self.parseWindow))
      try await options.withDatabase { database in
        let place = try await database.administration.place(venue: venue)
        // The advertiser API's rules (PromotionDraft), so that both ways in store the same promotions.
        let promotion: Promotion
        do {
          promotion = try draft.promotion(id: PromotionID(id ?? UUID().uuidString.lowercased()), venue: place.id)
        } catch let error as APIError {
          throw AdminError.usage(Self.optionNames(error.message))
        }
        try await database.store.insertPromotion(promotion)
        try options.emit(promotion) { "Created promotion \(promotion.id) of venue \(place.id)." }
      }
    }

    /// The API's message with the fields named as this command's options.
    static func optionNames(_ message: String) -> String {
      [
        ("'name'", "--name"), ("'promoCode'", "--code"), ("'imageUrl'", "--image"), ("'oldPrice'", "--old-price"),
        ("'newPrice'", "--new-price"), ("'validUntil'", "--until"), ("'validFrom'", "--from"),
      ].reduce(message) { $0.replacingOccurrences(of: $1.0, with: $1.1) }
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
    static let configuration = CommandConfiguration(
      abstract:
        "List promotions, running or not, a page at a time: every venue's, one venue's, or an advertiser's.")

    @OptionGroup var options: GlobalOptions

    @Option(help: "Only this venue's.")
    var venue: String?

    @Option(help: "Only those of the venues this user (id, email or phone) advertises for.")
    var advertiser: String?

    @Option(help: "Only those running, paused or ended.")
    var state: String?

    @Option(help: "At most this many (1…1000).")
    var limit = 100

    @Option(help: "Skip this many first (by venue, then id).")
    var offset = 0

    /// A page of the promotions that match the filters, from the database or the server (`--server`).
    func run() async throws {
      let wanted = try state.map { text in
        guard let state = PromotionState(rawValue: text) else {
          throw AdminError.usage("--state must be running, paused or ended.")
        }
        return state
      }
      guard (1...1000).contains(limit), offset >= 0 else {
        throw AdminError.usage("--limit must be 1…1000 and --offset 0 or more.")
      }
      let query = AdminPromotionQuery(
        venue: venue.map { PlaceID($0) }, advertiser: advertiser, state: wanted, limit: limit, offset: offset)
      let items = try await options.withBackend { try await $0.promotionPage(query) }.items
      try options.emit(items) {
        guard !items.isEmpty else { return "No promotions." }
        let more = items.count == limit ? "\nMore: --offset \(offset + limit)." : ""
        return PromotionsCommand.table(items) + more
      }
    }
  }

  struct Stats: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "A venue's promotions: how many run, who they were shown to, who redeemed them, who is eligible now.")

    @OptionGroup var options: GlobalOptions

    @Option(help: "The venue's id (for the venue's totals).")
    var venue: String?

    @Option(help: "day or week: one promotion's figures over time (with --promotion), in the venue's time zone.")
    var by: StatsBucket?

    @Option(help: "The promotion, with --by.")
    var promotion: String?

    @Option(help: "With --by: the first day, YYYY-MM-DD (default: 29 days before --to).")
    var from: String?

    @Option(help: "With --by: the last day, YYYY-MM-DD (default: today).")
    var to: String?

    func run() async throws {
      if let by {
        guard let promotion else { throw AdminError.usage("--by needs --promotion ID.") }
        return try await overTime(promotion, by: by)
      }
      guard let venue else { throw AdminError.usage("Give --venue ID, or --by day|week with --promotion ID.") }
      let output = try await options.withBackend { try await $0.promotionStatistics(venue: venue) }
      try options.emit(output) {
        var totals = TextTable(["what", "count"])
        totals.add(["promotions", "\(output.promotions) (\(output.running) running, \(output.special) special)"])
        totals.add(["eligible users (special)", "\(output.eligible)"])
        totals.add(["shown (users)", "\(output.shown)"])
        totals.add(["redeemed", "\(output.redeemed)"])
        var table = TextTable(["id", "name", "audience", "running", "shown to", "times", "redeemed"])
        for row in output.byPromotion {
          table.add([
            row.id, row.name, row.audience, row.running ? "yes" : "no", "\(row.shownUsers)", "\(row.shownTimes)",
            "\(row.redeemed)",
          ])
        }
        return totals.text + "\n" + table.text
      }
    }

    /// The promotion's rows by day or week as advertisers see them: counts below 5 people as "< 5", a week holding
    /// such a day as "withheld".
    func overTime(_ id: String, by bucket: StatsBucket) async throws {
      let days = try [("--from", from), ("--to", to)].map { option, text -> CalendarDay? in
        guard let text else { return nil }
        guard let day = CalendarDay(text) else { throw AdminError.usage("\(option) '\(text)' is not YYYY-MM-DD.") }
        return day
      }
      try await options.withDatabase { database in
        guard let promotion = try await database.store.promotion(PromotionID(id)) else {
          throw AdminError.notFound("There is no promotion '\(id)'; list them with `meridian-admin promotions list`.")
        }
        let place = try await database.administration.place(venue: promotion.venueID.rawValue)
        let (first, last) = PromotionStats.range(
          from: days[0], to: days[1], now: Timestamp.milliseconds(Date()), timeZone: place.resolvedTimeZone)
        guard first <= last else { throw AdminError.usage("--to must not come before --from.") }
        let rule = try await database.store.promotionSettings(venue: place.id)[promotion.id]?.eligibility
        let report = try await PromotionStats(store: database.store).report(
          promotion, venue: place, from: first, to: last, bucket: bucket, rule: rule ?? PromotionEligibility())
        try options.emit(report) {
          var table = TextTable(["start", "end", "offered", "people", "redeemed", "conversion", "eligible"])
          for row in report.rows {
            table.add([
              "\(row.start)", "\(row.end)", "\(row.offered)", "\(row.people)", "\(row.redeemed)",
              row.conversion.map { String(format: "%.1f %%", $0 * 100) } ?? "-", row.eligible?.description ?? "-",
            ])
          }
          return "Promotion \(promotion.id) of venue \(place.id), days in \(report.timeZone); counts below "
            + "\(AggregateCount.minimum) people show as \"< \(AggregateCount.minimum)\", a week holding such a day as "
            + "\"\(AggregateCount.withheld)\".\n" + table.text
        }
      }
    }
  }
}
