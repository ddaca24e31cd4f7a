import DomainKit
import Foundation
import MeridianAPI
import MeridianStore
import Testing

@Suite("meridian-admin advertisers and promotion figures by day")
struct AdminAdvertiserTests {
  @Test func grantListRevokeAndDailyFigures() async throws {
    let sandbox = try AdminSandbox()
    let store = try await sandbox.twoCafes()
    let owner = try await seedUser(store, email: "owner@example.com")

    let granted = try await sandbox.admin(["advertisers", "grant", "owner@example.com", "cafe-1", "cafe-2", "--json"])
    #expect(granted.status == 0, "\(granted)")
    #expect(try await store.advertiserGrants(user: owner).map(\.venue) == ["cafe-1", "cafe-2"])
    // Unknown people and venues are "not found" (exit 3) and grant nothing.
    let nobody = try await sandbox.admin(["advertisers", "grant", "nobody@example.com", "cafe-1"])
    #expect(nobody.status == 3, "\(nobody)")
    let nowhere = try await sandbox.admin(["advertisers", "grant", "owner@example.com", "nowhere"])
    #expect(nowhere.status == 3, "\(nowhere)")
    let list = try await sandbox.admin(["advertisers", "list", "--json"])
    let rows = try #require(try list.json() as? [[String: Any]])
    #expect(rows.compactMap { $0["venue"] as? String } == ["cafe-1", "cafe-2"], "\(list)")
    #expect(try await sandbox.admin(["advertisers", "list"]).stdout.contains("cafe-2"))

    let revoked = try await sandbox.admin(["advertisers", "revoke", "owner@example.com", "cafe-2"])
    #expect(revoked.status == 0 && revoked.stdout.contains("Revoked 1"), "\(revoked)")
    #expect(try await store.advertiserGrants(user: nil).map(\.venue) == ["cafe-1"])

    // Figures by day: 6 people on 2026-03-02 (two redeem), 2 on 2026-03-03 (hidden as "< 5").
    try await store.insertPromotion(Promotion(id: "p-1", venueID: "cafe-1", name: "Coffee", promoCode: "C"))
    let noon = Timestamp.milliseconds(ISO8601DateFormatter().date(from: "2026-03-02T10:00:00Z") ?? Date())
    for index in 0..<6 {
      let person = try await seedUser(store, email: "p\(index)@example.com")
      try await store.recordOffers(["p-1"], to: person, at: noon)
      if index < 2 { _ = try await store.redeem("p-1", by: person, at: noon + 60_000) }
      if index < 2 { try await store.recordOffers(["p-1"], to: person, at: noon + 86_400_000) }
    }
    let byDay = try await sandbox.admin([
      "promotions", "stats", "--by", "day", "--promotion", "p-1", "--from", "2026-03-02", "--to", "2026-03-04",
      "--json",
    ])
    #expect(byDay.status == 0, "\(byDay)")
    let report = try JSONDecoder().decode(PromotionStatsReport.self, from: Data(byDay.stdout.utf8))
    #expect(report.rows.map(\.start.description) == ["2026-03-02", "2026-03-03", "2026-03-04"])
    #expect(report.rows[0].people == .exactly(6) && report.rows[0].offered == .exactly(6))
    #expect(report.rows[0].redeemed == .fewerThanMinimum && report.rows[0].conversion == nil)
    #expect(report.rows[1].people == .fewerThanMinimum && report.rows[1].offered == .fewerThanMinimum)
    let table = try await sandbox.admin([
      "promotions", "stats", "--by", "day", "--promotion", "p-1", "--from", "2026-03-02", "--to", "2026-03-04",
    ])
    #expect(table.stdout.contains("2026-03-03") && table.stdout.contains("< 5"), "\(table)")
    #expect(try await sandbox.admin(["promotions", "stats", "--by", "day"]).status == 2)
    #expect(try await sandbox.admin(["promotions", "stats", "--by", "day", "--promotion", "none"]).status == 3)
    #expect(try await sandbox.admin(["promotions", "stats"]).status == 2)
  }

  /// `promotions sample-history` writes a month of offers and redemptions by sample people that nobody can sign in
  /// as: the advertiser's daily figures show it (some days above the "< 5" threshold, redemptions one per person);
  /// bad arguments are usage errors and an unknown promotion is "not found".
  @Test func sampleHistoryFillsAMonthOfFigures() async throws {
    let sandbox = try AdminSandbox()
    let store = try await sandbox.twoCafes()
    try await store.insertPromotion(Promotion(id: "p-1", venueID: "cafe-1", name: "Coffee", promoCode: "C"))
    let written = try await sandbox.admin([
      "promotions", "sample-history", "--promotion", "p-1", "--days", "30", "--people", "20", "--json",
    ])
    #expect(written.status == 0, "\(written)")
    let summary = try #require(try written.json() as? [String: Any])
    #expect(summary["people"] as? Int == 20 && summary["days"] as? Int == 30, "\(written)")
    let redeemed = try #require(summary["redeemed"] as? Int)
    #expect((1...20).contains(redeemed), "\(written)")
    let sample = try #require(try await store.account(for: .email("sample-0@sample.invalid")))
    #expect(sample.passwordHash == nil)
    let byDay = try await sandbox.admin(["promotions", "stats", "--by", "day", "--promotion", "p-1", "--json"])
    #expect(byDay.status == 0, "\(byDay)")
    let report = try JSONDecoder().decode(PromotionStatsReport.self, from: Data(byDay.stdout.utf8))
    #expect(report.rows.count == 30)
    let shown = report.rows.filter { if case .exactly(let people) = $0.people { people >= 5 } else { false } }
    #expect(shown.count >= 25, "\(report.rows.map(\.people))")
    // The same arguments write the same history; the sample people are reused, not made again.
    #expect(
      try await sandbox.admin(["promotions", "sample-history", "--promotion", "p-1", "--people", "20"]).status == 0)
    #expect(try await store.account(for: .email("sample-20@sample.invalid")) == nil)
    #expect(try await sandbox.admin(["promotions", "sample-history", "--promotion", "p-1", "--days", "0"]).status == 2)
    #expect(
      try await sandbox.admin(["promotions", "sample-history", "--promotion", "p-1", "--people", "2"]).status == 2)
    #expect(try await sandbox.admin(["promotions", "sample-history", "--promotion", "none"]).status == 3)
  }

  /// `promotions list` and `promotions stats` count as running only what the server shows (a paused or ended
  /// promotion is not, whatever its dates); `--limit` holds with `--venue`; `--server` lists without `--venue`.
  @Test func listAndStatsCountOnlyWhatRuns() async throws {
    let sandbox = try AdminSandbox()
    let store = try await sandbox.twoCafes()
    for id in ["over", "paused", "run"] {
      try await store.insertPromotion(Promotion(id: PromotionID(id), venueID: "cafe-1", name: id, promoCode: id))
    }
    for (id, state) in [("over", PromotionState.ended), ("paused", .paused)] {
      let promotion = try #require(try await store.promotion(PromotionID(id)))
      try await store.savePromotion(promotion, settings: PromotionSettings(state: state))
    }
    let listed = try await sandbox.admin(["promotions", "list", "--venue", "cafe-1", "--json"])
    #expect(listed.status == 0, "\(listed)")
    let rows = try #require(try listed.json() as? [[String: Any]])
    let running = rows.compactMap { row in
      ((row["promotion"] as? [String: Any])?["id"] as? String).map { ($0, row["running"] as? Bool) }
    }
    #expect(running.map(\.0) == ["over", "paused", "run"] && running.map(\.1) == [false, false, true], "\(rows)")
    let table = try await sandbox.admin(["promotions", "list", "--venue", "cafe-1"]).stdout
    #expect(table.split(separator: "\n").filter { $0.split(separator: " ").last == "yes" }.count == 1, "\(table)")

    let stats = try await sandbox.admin(["promotions", "stats", "--venue", "cafe-1", "--json"])
    #expect(try stats.object()["running"] as? Int == 1, "\(stats)")
    let figures = try #require(try stats.object()["byPromotion"] as? [[String: Any]])
    #expect(figures.map { $0["running"] as? Bool } == [false, false, true], "\(figures)")

    let one = try await sandbox.admin(["promotions", "list", "--venue", "cafe-1", "--limit", "1", "--json"])
    #expect(try #require(try one.json() as? [[String: Any]]).count == 1, "\(one)")
    let page = try await sandbox.admin(["promotions", "list", "--venue", "cafe-1", "--limit", "1", "--offset", "2"])
    #expect(page.stdout.contains("run") && !page.stdout.contains("paused"), "\(page)")
    #expect(try await sandbox.admin(["promotions", "list", "--venue", "nowhere"]).status == 3)

    // Through a running server, with or without --venue: what the database says.
    let server = try await InProcessServer.start(database: sandbox.database, adminToken: "list-token")
    do {
      let remote = ["--server", server.url, "--token", "list-token"]
      for command in [["promotions", "list"], ["promotions", "list", "--venue", "cafe-1", "--limit", "2"]] {
        let through = try await sandbox.admin(command + ["--json"] + remote, database: nil)
        #expect(through.status == 0, "\(command): \(through)")
        #expect(through.stdout == (try await sandbox.admin(command + ["--json"])).stdout, "\(command)")
      }
      let nowhere = try await sandbox.admin(["promotions", "list", "--venue", "nowhere"] + remote, database: nil)
      #expect(nowhere.status == 3, "\(nowhere)")
    } catch {
      try await server.stop()
      throw error
    }
    try await server.stop()
  }
}
