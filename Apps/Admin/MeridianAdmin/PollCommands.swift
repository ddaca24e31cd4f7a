import ArgumentParser
import DomainKit
import Foundation
import MeridianAPI
import MeridianStore
import MeridianStoreEngines

/// Where the server keeps images for `database`: `MERIDIAN_BLOB_DIR` when set, else the database's blob table
/// (PostgreSQL), else `blobs` next to the SQLite file (as the server decides).
func adminBlobStore(_ database: AdminDatabase) -> any BlobStore {
  database.location.blobStore(
    for: database.store, directory: ProcessInfo.processInfo.environment["MERIDIAN_BLOB_DIR"])
}

/// How long an unreferenced image is kept, ms, as the server keeps it: `--grace-seconds` when given, else
/// `MERIDIAN_BLOB_GRACE_SECONDS` (what the server reads), else ``BlobGracePeriod/default``.
/// - Throws: a usage error when the variable is not a whole number of seconds, 0 or more.
func adminBlobGracePeriod(seconds: Int?) throws -> Int64 {
  if let seconds { return Int64(seconds) * 1000 }
  guard let text = ProcessInfo.processInfo.environment["MERIDIAN_BLOB_GRACE_SECONDS"], !text.isEmpty else {
    return BlobGracePeriod.default
  }
  guard let configured = Int64(text), (0...Int64(Int32.max)).contains(configured) else {
    throw AdminError.usage("MERIDIAN_BLOB_GRACE_SECONDS must be a whole number of seconds, 0 or more.")
  }
  return configured * 1000
}

struct PollsCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "polls", abstract: "List, show, hide and delete polls.",
    subcommands: [List.self, Show.self, Hide.self, Delete.self])

  static func table(_ polls: [PollSummary]) -> String {
    var table = TextTable(["id", "created (UTC)", "author", "title", "votes", "%", "comments", "state"])
    for summary in polls {
      let state = summary.hidden ? "hidden" : summary.isClosed(at: Timestamp.milliseconds(Date())) ? "closed" : "open"
      table.add([
        summary.id.rawValue, AdminFormat.time(summary.poll.createdAt), summary.author.id.rawValue,
        String(summary.poll.title.prefix(40)),
        summary.results.counts.map { PollStrings.count("polls.votes", $0) }.joined(separator: " / "),
        summary.results.percentages.map(String.init).joined(separator: " / "),
        PollStrings.count("polls.comments", summary.comments), state,
      ])
    }
    return table.text
  }

  struct List: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List polls, newest (or most voted) first.")

    @OptionGroup var options: GlobalOptions

    @Option(help: "Only this author's polls (id, email address or phone number).")
    var author: String?

    @Flag(help: "Most voted first.")
    var mostVoted = false

    @Option(help: "At most this many polls (1…100).")
    var limit = 50

    func run() async throws {
      guard (1...100).contains(limit) else { throw AdminError.usage("--limit must be between 1 and 100.") }
      let page = try await options.withDatabase { database in
        var authorID: UserID?
        if let author { authorID = try await database.resolveUser(author) }
        return try await database.store.polls(
          PollFeedQuery(
            order: mostVoted ? .mostVoted : .newest, author: authorID, limit: limit, includeHidden: true))
      }
      try options.emit(page.items) { page.items.isEmpty ? "No polls." : PollsCommand.table(page.items) }
    }
  }

  struct Show: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show one poll: options, results and comments.")

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The poll's id.")
    var id: String

    func run() async throws {
      let (summary, comments) = try await options.withDatabase { database in
        guard let summary = try await database.store.poll(PollID(id), viewer: nil, includeHidden: true) else {
          throw AdminError.notFound("No poll '\(id)'.")
        }
        let comments = try await database.store.comments(
          of: summary.id, viewer: summary.author.id, cursor: nil, limit: 100)
        return (summary, comments)
      }
      try options.emit(summary) {
        var lines = [PollsCommand.table([summary]), ""]
        for (index, option) in summary.poll.options.enumerated() {
          lines.append(
            "option \(index + 1): \(option.text) — \(summary.results.counts[index]) "
              + "(\(summary.results.percentages[index]) %) \(option.imageURL ?? "")")
        }
        var table = TextTable(["comment", "created (UTC)", "author", "state", "text"])
        for view in comments.items {
          table.add([
            view.id.rawValue, AdminFormat.time(view.comment.createdAt), view.author.id.rawValue,
            view.hidden ? "hidden" : "shown", String(view.comment.text.prefix(60)),
          ])
        }
        if !comments.items.isEmpty { lines += ["", table.text] }
        return lines.joined(separator: "\n")
      }
    }
  }

  struct Hide: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Hide a poll (nobody but its author sees it; it takes no votes or comments), or show it again.")

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The poll's id.")
    var id: String

    @Flag(help: "Show the poll again.")
    var show = false

    func run() async throws {
      let changed = try await options.withDatabase { try await $0.store.setPollHidden(PollID(id), hidden: !show) }
      guard changed else { throw AdminError.notFound("No poll '\(id)'.") }
      try options.emit(["id": id, "hidden": show ? "false" : "true"]) {
        show ? "Poll \(id) is shown again." : "Poll \(id) is hidden."
      }
    }
  }

  struct Delete: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Delete a poll with its votes and comments, and its images when nothing else uses them.")

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The poll's id.")
    var id: String

    @Option(
      help:
        "Keep its images uploaded less than this many seconds ago (MERIDIAN_BLOB_GRACE_SECONDS, default 86400).")
    var graceSeconds: Int?

    func validate() throws {
      if let graceSeconds, graceSeconds < 0 { throw ValidationError("--grace-seconds must be 0 or more.") }
    }

    func run() async throws {
      let grace = try adminBlobGracePeriod(seconds: graceSeconds)
      let freed = try await options.withDatabase { database -> [String] in
        guard let hashes = try await database.store.deletePoll(PollID(id)) else {
          throw AdminError.notFound("No poll '\(id)'.")
        }
        return try await adminBlobStore(database).deleteUnreferenced(
          hashes, in: database.store, now: Timestamp.milliseconds(Date()), gracePeriod: grace)
      }
      try options.emit(["id": id, "imagesDeleted": "\(freed.count)"]) {
        "Deleted poll \(id) and \(freed.count) image(s) nothing else used."
      }
    }
  }
}

struct CommentsCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "comments", abstract: "Hide poll comments.", subcommands: [Hide.self])

  struct Hide: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Hide a comment from everyone but its author.")

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The comment's id.")
    var id: String

    @Flag(help: "Show the comment again.")
    var show = false

    func run() async throws {
      let changed = try await options.withDatabase {
        try await $0.store.setCommentHidden(CommentID(id), on: nil, hidden: !show, by: nil)
      }
      guard changed else { throw AdminError.notFound("No comment '\(id)'.") }
      try options.emit(["id": id, "hidden": show ? "false" : "true"]) {
        show ? "Comment \(id) is shown again." : "Comment \(id) is hidden."
      }
    }
  }
}

struct CouponsCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "coupons", abstract: "Create and list partner shops' coupon offers and see how they sell.",
    subcommands: [Create.self, List.self, Stats.self])

  struct Create: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Create (or update, by --id) a coupon offer; its stock never drops below what was sold.")

    @OptionGroup var options: GlobalOptions

    @Option(help: "The offer's id (default: a new one).")
    var id: String?

    @Option(help: "The partner shop's name.")
    var shop: String

    // Unconditional: a title or description may well start with "-" (the example is one).
    @Option(parsing: .unconditional, help: "What the coupon gives, e.g. \"-20 % on coffee\".")
    var title: String

    @Option(parsing: .unconditional, help: "More about the offer.")
    var description = ""

    @Option(help: "Price in points (> 0).")
    var price: Int

    @Option(help: "Coupons available in all (≥ 0).")
    var stock: Int

    @Option(help: "Discount in percent, if it is one.")
    var discount: Int?

    @Option(help: "Valid until (exclusive; 2026-12-31, ISO 8601 or epoch ms).")
    var until: String?

    func run() async throws {
      guard price > 0 else { throw AdminError.usage("--price must be a positive number of points.") }
      guard stock >= 0 else { throw AdminError.usage("--stock must not be negative.") }
      if let discount, !(1...100).contains(discount) { throw AdminError.usage("--discount must be 1…100.") }
      guard !shop.trimmingCharacters(in: .whitespaces).isEmpty, !title.trimmingCharacters(in: .whitespaces).isEmpty
      else { throw AdminError.usage("--shop and --title must not be empty.") }
      let validUntil = try until.map { try AdminFormat.parseTime($0, option: "--until") }
      let offer = CouponOffer(
        id: CouponID(id ?? UUID().uuidString.lowercased()), shopName: shop, title: title, discountPercent: discount,
        price: price, validUntil: validUntil)
      let listing = try await options.withDatabase {
        try await $0.store.upsertCouponOffer(
          offer, description: description, stock: stock, now: Timestamp.milliseconds(Date()))
      }
      try options.emit(listing) { "Coupon offer \(listing.id): \(listing.remaining) of \(listing.stock) left." }
    }
  }

  struct List: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List coupon offers, ended ones too.")

    @OptionGroup var options: GlobalOptions

    func run() async throws {
      let offers = try await options.withDatabase { try await $0.store.couponOffers(validAt: nil) }
      try options.emit(offers) {
        var table = TextTable(["id", "shop", "title", "price", "stock", "sold", "left", "valid until (UTC)"])
        for listing in offers {
          table.add([
            listing.id.rawValue, listing.offer.shopName, listing.offer.title, "\(listing.offer.price)",
            "\(listing.stock)", PollStrings.count("coupons.count", listing.sold), "\(listing.remaining)",
            AdminFormat.time(listing.offer.validUntil),
          ])
        }
        return offers.isEmpty ? "No coupon offers." : table.text
      }
    }
  }

  struct Stats: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Stock, coupons bought and redeemed, per offer.")

    @OptionGroup var options: GlobalOptions

    func run() async throws {
      let stats = try await options.withDatabase { try await $0.store.couponStats() }
      try options.emit(stats) {
        var table = TextTable(["offer", "stock", "bought", "redeemed"])
        for row in stats { table.add([row.offerId.rawValue, "\(row.stock)", "\(row.bought)", "\(row.redeemed)"]) }
        return stats.isEmpty ? "No coupon offers." : table.text
      }
    }
  }
}

struct PointsCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "points", abstract: "Show a user's points and grant (or take back) points.",
    subcommands: [Show.self, Grant.self])

  static func text(_ statement: PointsStatement) -> String {
    var table = TextTable(["entry", "time (UTC)", "points", "reason", "reference"])
    for entry in statement.entries {
      table.add([
        entry.id.rawValue, AdminFormat.time(entry.createdAt), entry.amount > 0 ? "+\(entry.amount)" : "\(entry.amount)",
        entry.reason.rawValue, entry.reference ?? "-",
      ])
    }
    return "Balance: \(PollStrings.count("points.count", statement.balance))"
      + (statement.entries.isEmpty ? "" : "\n\n" + table.text)
  }

  struct Show: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "A user's balance and newest ledger entries.")

    @OptionGroup var options: GlobalOptions

    @Argument(help: "User id, email address or phone number.")
    var user: String

    @Option(help: "At most this many entries.")
    var limit = 50

    func run() async throws {
      let statement = try await options.withDatabase { database in
        try await database.store.points(of: try await database.resolveUser(user), limit: max(0, limit))
      }
      try options.emit(statement) { PointsCommand.text(statement) }
    }
  }

  struct Grant: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Append an operator's entry to a user's ledger: N > 0 grants, N < 0 takes back (never below 0).")

    @OptionGroup var options: GlobalOptions

    @Argument(help: "User id, email address or phone number.")
    var user: String

    @Argument(
      help: "Points; a negative amount takes back and goes after `--` (`points grant anna --reason fix -- -3`).")
    var amount: Int

    @Option(help: "Why (kept with the entry).")
    var reason: String

    func run() async throws {
      guard amount != 0 else { throw AdminError.usage("The amount must not be 0.") }
      guard !reason.trimmingCharacters(in: .whitespaces).isEmpty else {
        throw AdminError.usage("--reason must not be empty.")
      }
      let statement = try await options.withDatabase { database in
        do {
          return try await database.store.grantPoints(
            amount, to: try await database.resolveUser(user), note: reason, now: Timestamp.milliseconds(Date()))
        } catch let error as PointsError {
          throw AdminError.failure(error.description)
        }
      }
      try options.emit(statement) { PointsCommand.text(statement) }
    }
  }
}
