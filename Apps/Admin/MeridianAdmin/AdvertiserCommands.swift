import ArgumentParser
import DomainKit
import Foundation
import MeridianAPI
import MeridianStore

struct AdvertisersCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "advertisers",
    abstract: "Grant, list and revoke the advertiser role: who manages which venues' promotions (/v1/advertiser/...).",
    subcommands: [Grant.self, List.self, Revoke.self])

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

extension StatsBucket: ExpressibleByArgument {}
