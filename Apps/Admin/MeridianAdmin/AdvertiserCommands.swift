import ArgumentParser
import DomainKit
import Foundation
import MeridianAPI
import MeridianStore

struct AdvertisersCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "advertisers",
    abstract: "Grant, list and revoke the advertiser role: who manages which venues' promotions (/v1/advertiser/...).",
    subcommands: [Grant.self, List.self, Revoke.self, Claims.self, Approve.self, Reject.self])

  static func table(_ grants: [AdvertiserGrant]) -> String {
    var table = TextTable(["user", "venue", "granted (UTC)"])
    for grant in grants { table.add([grant.user.rawValue, grant.venue.rawValue, AdminFormat.time(grant.grantedAt)]) }
    return table.text
  }

  struct Grant: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Make a user (id, email or phone) an advertiser of one or more venues.")

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The user: id, email address or phone number.")
    var user: String

    @Argument(help: "The venues' ids.")
    var venues: [String]

    func run() async throws {
      guard !venues.isEmpty else { throw AdminError.usage("Name at least one venue.") }
      try await options.withDatabase { database in
        let id = try await database.administration.user(named: user)
        var places: [PlaceID] = []
        for venue in venues { places.append(try await database.administration.place(venue: venue).id) }
        try await database.store.grantAdvertiser(id, venues: places, at: Timestamp.milliseconds(Date()))
        let grants = try await database.store.advertiserGrants(user: id)
        try options.emit(grants) {
          "User \(id) advertises for \(grants.map(\.venue.rawValue).joined(separator: ", "))."
        }
      }
    }
  }

  struct List: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List advertisers and their venues.")

    @OptionGroup var options: GlobalOptions

    @Option(help: "Only this user's venues (id, email or phone).")
    var user: String?

    func run() async throws {
      try await options.withDatabase { database in
        var id: UserID?
        if let user { id = try await database.administration.user(named: user) }
        let grants = try await database.store.advertiserGrants(user: id)
        try options.emit(grants) { grants.isEmpty ? "No advertisers." : AdvertisersCommand.table(grants) }
      }
    }
  }

  struct Revoke: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Take venues (every one when none is named) from an advertiser.")

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The user: id, email address or phone number.")
    var user: String

    @Argument(help: "The venues' ids (default: all of the user's).")
    var venues: [String] = []

    func run() async throws {
      try await options.withDatabase { database in
        let id = try await database.administration.user(named: user)
        let ended = try await database.store.revokeAdvertiser(
          id, venues: venues.isEmpty ? nil : venues.map { PlaceID($0) })
        try options.emit(["revoked": ended]) { "Revoked \(ended) venue grant(s) of user \(id)." }
      }
    }
  }
}

extension AdvertisersCommand {
  struct Claims: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "List claims: people asking to advertise for a venue (POST /v1/advertiser/claims), newest first.")

    @OptionGroup var options: GlobalOptions

    @Option(help: "pending (the default), approved, rejected or all.")
    var state = "pending"

    @Option(help: "Only this user's claims (id, email or phone).")
    var user: String?

    func run() async throws {
      let wanted = VenueClaimState(rawValue: state)
      guard wanted != nil || state == "all" else {
        throw AdminError.usage("--state must be pending, approved, rejected or all.")
      }
      try await options.withDatabase { database in
        var id: UserID?
        if let user { id = try await database.administration.user(named: user) }
        let claims = try await database.store.venueClaims(user: id, state: wanted)
        try options.emit(claims) {
          guard !claims.isEmpty else { return state == "all" ? "No claims." : "No \(state) claims." }
          var table = TextTable(["claim", "user", "venue", "state", "claimed (UTC)", "note", "reason"])
          for claim in claims {
            table.add([
              claim.id, claim.user.rawValue, claim.venue.rawValue, claim.state.rawValue,
              AdminFormat.time(claim.claimedAt), claim.note ?? "-", claim.reason ?? "-",
            ])
          }
          return table.text
        }
      }
    }
  }

  struct Approve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Approve a pending claim: its user becomes an advertiser of its venue.")

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The claim's id (from `advertisers claims`).")
    var claim: String

    func run() async throws {
      let decided = try await AdvertisersCommand.decide(claim, approve: true, reason: nil, options: options)
      try options.emit(decided) { "User \(decided.user) advertises for \(decided.venue) now." }
    }
  }

  struct Reject: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Reject a pending claim.")

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The claim's id (from `advertisers claims`).")
    var claim: String

    @Option(help: "Why, shown to the person in GET /v1/advertiser/claims.")
    var reason: String?

    func run() async throws {
      let decided = try await AdvertisersCommand.decide(claim, approve: false, reason: reason, options: options)
      try options.emit(decided) { "Rejected claim \(decided.id) of user \(decided.user) for \(decided.venue)." }
    }
  }

  /// Approves or rejects `claim`; an unknown claim or venue is "not found", a decided claim a failure.
  static func decide(_ claim: String, approve: Bool, reason: String?, options: GlobalOptions) async throws
    -> VenueClaim
  {
    try await options.withDatabase { database in
      do {
        return try await database.store.decideVenueClaim(
          claim, approve: approve, reason: reason, at: Timestamp.milliseconds(Date()))
      } catch let error as AdvertiserStoreError {
        if case .claimDecided = error { throw AdminError.failure(error.description) }
        throw AdminError.notFound(error.description)
      } catch let error as VenueRecordError {
        throw AdminError.notFound("\(error.description) The claim stays pending; reject it.")
      }
    }
  }
}

extension StatsBucket: ExpressibleByArgument {}
