import ArgumentParser
import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import MeridianStore

struct PromotionsCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "promotions", abstract: "Create and list venues' promotions and see their audience.",
    subcommands: [Create.self, List.self, Stats.self, SampleHistory.self])

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

extension PromotionsCommand {
  /// Writes a made-up history of a promotion — offers to sample people over past days, and some redemptions — so
  /// that the advertiser's statistics (charts, the "< 5" cells, the CSV) can be tried on a demo or staging database
  /// before real traffic exists. The same arguments write the same history; running it twice adds it twice.
  struct SampleHistory: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "sample-history",
      abstract: "Write a made-up history of offers and redemptions of a promotion (demo and staging databases only).",
      discussion: """
        Offers the promotion to sample people (accounts sample-N@sample.invalid, made when missing, without a \
        password, so nobody can sign in as them) on each of the --days days before today, a varying number of \
        people and times a day, and lets some of them redeem it, each at most once, as the app would. The history \
        is the same for the same arguments; running the command again adds it again.
        """)

    @OptionGroup var options: GlobalOptions

    @Option(help: "The promotion's id (`meridian-admin promotions list`).")
    var promotion: String

    @Option(help: "How many days before today to fill (1…366).")
    var days = 30

    @Option(help: "How many sample people (5…1000).")
    var people = 40

    func run() async throws {
      guard (1...366).contains(days) else { throw AdminError.usage("--days must be 1…366.") }
      guard (5...1_000).contains(people) else { throw AdminError.usage("--people must be 5…1000.") }
      let written = try await options.withDatabase { database in
        let store = database.store
        guard let stored = try await store.promotion(PromotionID(promotion)) else {
          throw AdminError.notFound(
            "There is no promotion '\(promotion)'; list them with `meridian-admin promotions list`.")
        }
        let now = Timestamp.milliseconds(Date())
        var sample: [UserID] = []
        for index in 0..<people {
          let credential = Credential.email("sample-\(index)@sample.invalid")
          if let found = try await store.account(for: credential) {
            sample.append(found.account.id)
          } else if let made = try await store.createAccount(
            id: UserID("sample-\(UUID().uuidString.lowercased())"), credential: credential, passwordHash: nil,
            now: now)
          {
            sample.append(made.id)
          }
        }
        let plan = SampleOffers(days: days, people: sample.count, now: now)
        var offers = 0
        for offer in plan.offers {
          try await store.recordOffers(
            Array(repeating: stored.id, count: offer.times), to: sample[offer.person], at: offer.at)
          offers += offer.times
        }
        var redeemed = 0
        for redemption in plan.redemptions {
          if case .redeemed = try await store.redeem(stored.id, by: sample[redemption.person], at: redemption.at) {
            redeemed += 1
          }
        }
        return SampleHistoryOutput(
          promotion: stored.id.rawValue, days: days, people: sample.count, offers: offers,
          redeemed: redeemed)
      }
      try options.emit(written) {
        "\(written.offers) offers to \(written.people) sample people over \(written.days) days, \(written.redeemed) "
          + "redeemed, written for promotion \(written.promotion)."
      }
    }
  }

  /// What `promotions sample-history` wrote.
  struct SampleHistoryOutput: Encodable {
    var promotion: String
    var days: Int
    var people: Int
    var offers: Int
    var redeemed: Int
  }
}

/// The made-up history of ``PromotionsCommand/SampleHistory``: for each of `days` days before `now`'s day, a varying
/// share of the people offered the promotion one to three times between 08:00 and 20:00 UTC, and one to three of the
/// day's people not yet redeemed redeeming it half an hour after their first offer. Deterministic.
struct SampleOffers {
  struct Offer: Equatable {
    var person: Int
    var times: Int
    var at: Int64
  }
  struct Redemption: Equatable {
    var person: Int
    var at: Int64
  }

  private(set) var offers: [Offer] = []
  private(set) var redemptions: [Redemption] = []

  init(days: Int, people: Int, now: Int64) {
    let day: Int64 = 86_400_000
    let today = now - now % day
    var redeemed = Set<Int>()
    for index in 0..<days {
      let start = today - Int64(days - index) * day + 8 * 3_600_000
      // A wave over the days: 30…90 % of the people.
      let share = 0.3 + 0.6 * (0.5 + 0.5 * sin(Double(index) / 4.5))
      let count = max(1, min(people, Int((Double(people) * share).rounded())))
      var dayPeople: [Int] = []
      for slot in 0..<count {
        let person = (index * 7 + slot * 11) % people
        guard !dayPeople.contains(person) else { continue }
        dayPeople.append(person)
        let at = start + Int64(slot) * (12 * 3_600_000 / Int64(max(1, count)))
        offers.append(Offer(person: person, times: 1 + (index + slot) % 3, at: at))
      }
      for person in dayPeople.prefix(1 + index % 3) where !redeemed.contains(person) {
        redeemed.insert(person)
        let first = offers.last { $0.person == person }?.at ?? start
        redemptions.append(Redemption(person: person, at: first + 1_800_000))
      }
    }
  }
}
