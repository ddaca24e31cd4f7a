import DomainKit
import Foundation
import MeridianAPI
import MeridianStore
import MeridianStoreSQLite
import Testing

@Suite("meridian-admin advertisers claims, approve and reject")
struct AdminVenueClaimTests {
  @Test func anOperatorAnswersClaims() async throws {
    let sandbox = try AdminSandbox()
    let store = try await sandbox.twoCafes()
    let owner = try await seedUser(store, email: "owner@example.com")
    let stranger = try await seedUser(store, email: "stranger@example.com")
    _ = try await store.claimVenue(
      VenueClaim(id: "claim-1", user: owner, venue: "cafe-1", note: "I run it", claimedAt: 1_000))
    _ = try await store.claimVenue(VenueClaim(id: "claim-2", user: stranger, venue: "cafe-2", claimedAt: 2_000))

    let pending = try await sandbox.admin(["advertisers", "claims", "--json"])
    #expect(pending.status == 0, "\(pending)")
    let rows = try #require(try pending.json() as? [[String: Any]])
    #expect(rows.compactMap { $0["id"] as? String } == ["claim-2", "claim-1"], "\(pending)")
    #expect(try await sandbox.admin(["advertisers", "claims"]).stdout.contains("I run it"))

    let approved = try await sandbox.admin(["advertisers", "approve", "claim-1"])
    #expect(approved.status == 0 && approved.stdout.contains("advertises for cafe-1"), "\(approved)")
    #expect(try await store.isAdvertiser(owner, of: "cafe-1"))
    let rejected = try await sandbox.admin(["advertisers", "reject", "claim-2", "--reason", "Not the owner"])
    #expect(rejected.status == 0, "\(rejected)")
    #expect(try await store.isAdvertiser(stranger, of: "cafe-2") == false)
    #expect(try await store.venueClaims(user: stranger, state: nil).first?.reason == "Not the owner")

    // Answered claims stay answered; unknown ones are "not found"; a bad state is a usage error.
    let twice = try await sandbox.admin(["advertisers", "approve", "claim-2"])
    #expect(twice.status == 1 && twice.stderr.contains("rejected already"), "\(twice)")
    #expect(try await store.isAdvertiser(stranger, of: "cafe-2") == false)
    #expect(try await sandbox.admin(["advertisers", "reject", "claim-9"]).status == 3)
    #expect(try await sandbox.admin(["advertisers", "claims", "--state", "maybe"]).status == 2)
    #expect(try await sandbox.admin(["advertisers", "claims"]).stdout.contains("No pending claims."))
    let all = try await sandbox.admin(["advertisers", "claims", "--state", "all", "--user", "owner@example.com"])
    #expect(all.stdout.contains("approved") && !all.stdout.contains("claim-2"), "\(all)")
  }
}

@Suite("meridian-admin promotions list without --venue")
struct AdminPromotionListTests {
  @Test func everyPromotionPagedAndFiltered() async throws {
    let sandbox = try AdminSandbox()
    let store = try await sandbox.twoCafes()
    let owner = try await seedUser(store, email: "owner@example.com")
    try await store.grantAdvertiser(owner, venues: ["cafe-2"], at: 0)
    for (venue, id) in [("cafe-1", "p1"), ("cafe-2", "p2"), ("cafe-2", "p3")] {
      try await store.insertPromotion(Promotion(id: PromotionID(id), venueID: PlaceID(venue), name: id, promoCode: id))
    }
    let p3 = try #require(try await store.promotion("p3"))
    try await store.savePromotion(p3, settings: PromotionSettings(state: .ended))

    func ids(_ arguments: [String]) async throws -> [String] {
      let run = try await sandbox.admin(["promotions", "list", "--json"] + arguments)
      #expect(run.status == 0, "\(run)")
      let rows = try #require(try run.json() as? [[String: Any]])
      return rows.compactMap { ($0["promotion"] as? [String: Any])?["id"] as? String }
    }
    #expect(try await ids([]) == ["p1", "p2", "p3"])
    #expect(try await ids(["--limit", "1", "--offset", "1"]) == ["p2"])
    #expect(try await ids(["--advertiser", "owner@example.com"]) == ["p2", "p3"])
    #expect(try await ids(["--state", "ended"]) == ["p3"])
    let table = try await sandbox.admin(["promotions", "list", "--limit", "2"])
    #expect(table.stdout.contains("cafe-2") && table.stdout.contains("More: --offset 2"), "\(table)")
    // One venue alone.
    let one = try await sandbox.admin(["promotions", "list", "--venue", "cafe-1"])
    #expect(one.status == 0 && one.stdout.contains("p1") && !one.stdout.contains("p2"), "\(one)")
    #expect(try await sandbox.admin(["promotions", "list", "--state", "sleeping"]).status == 2)
    #expect(try await sandbox.admin(["promotions", "list", "--limit", "0"]).status == 2)
    #expect(try await sandbox.admin(["promotions", "list", "--advertiser", "nobody@example.com"]).status == 3)
  }

  /// `promotions create` checks by the advertiser API's rules, naming its own options; nothing is stored.
  @Test func createChecksAsTheAdvertiserAPIDoes() async throws {
    let sandbox = try AdminSandbox()
    let store = try await sandbox.twoCafes()
    let base = ["promotions", "create", "--venue", "cafe-1", "--name", "Coffee"]
    for (arguments, option) in [
      (["--code", "TWO WORDS"], "--code"), (["--code", "C", "--currency", "uah", "--new-price", "300"], "--new-price"),
      (["--code", "C", "--from", "2026-12-02", "--until", "2026-12-01"], "--until"),
      (["--code", "C", "--name", "   "], "--name"),
    ] {
      let run = try await sandbox.admin(base + arguments)
      #expect(run.status == 2 && run.stderr.contains(option), "\(run)")
    }
    #expect(try await store.promotions(venue: "cafe-1").isEmpty)
    let created = try await sandbox.admin(base + ["--code", "C", "--old-price", "450", "--new-price", "300"])
    #expect(created.status == 0, "\(created)")
    #expect(try await store.promotions(venue: "cafe-1").map(\.newPrice) == [Money(amount: 300, currency: "UAH")])
  }
}

extension AdminSandbox {
  /// Imports cafés `cafe-1` and `cafe-2` in Kyiv; answers the sandbox's store.
  func twoCafes() async throws -> SQLiteStore {
    let store = try store()  // creates the database
    let venues = path("venues.csv")
    try """
    id,name_en,type,latitude,longitude,time_zone
    cafe-1,Blue Cup,cafe,50.4500,30.5200,Europe/Kyiv
    cafe-2,Red Cup,cafe,50.4600,30.5200,Europe/Kyiv
    """.write(toFile: venues, atomically: true, encoding: .utf8)
    let imported = try await admin(["venues", "import", venues])
    #expect(imported.status == 0, "\(imported)")
    return store
  }
}
