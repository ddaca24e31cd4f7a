import DomainKit
import Foundation
import MeridianAPI
import MeridianStore
import MeridianStoreSQLite
import Testing

/// `webhooks create|list|deliveries|retry|disable` on a SQLite database, through the built binary.
@Suite("meridian-admin webhooks")
struct AdminWebhookCommandTests {
  @Test func createListRetryAndDisable() async throws {
    let sandbox = try AdminSandbox()
    let store = try sandbox.store()
    _ = try await store.createAccount(id: "anna", credential: .email("anna@example.com"), passwordHash: nil, now: 1)
    _ = try await store.createWebhook(
      Webhook(
        id: "wh_anna", ownerID: "anna", url: "https://hooks.example.com/anna", events: [], enabled: true,
        createdAt: 5, updatedAt: 5),
      secret: "s")

    let created = try await sandbox.admin([
      "webhooks", "create", "--url", "https://ops.example.com/in", "--events", "geofence.enter,geofence.exit", "--json",
    ])
    #expect(created.status == 0, "\(created)")
    let answer = try created.object()
    #expect((answer["secret"] as? String)?.hasPrefix("whsec_") == true)
    let operatorHook = try #require((answer["webhook"] as? [String: Any])?["id"] as? String)
    #expect(try await store.webhooks(.operatorWide).map(\.events) == [["geofence.enter", "geofence.exit"]])
    let refused = try await sandbox.admin(["webhooks", "create", "--url", "ftp://x"])
    #expect(refused.status == 2, "\(refused)")

    // One event for anna reaches her registration and the operator-wide one; one delivery fails for good.
    let event = WebhookEvent(
      kind: "geofence.enter", userID: "anna", payload: Data("{}".utf8), idempotencyKey: "e1", occurredAt: 10,
      queuedAt: 10)
    #expect(try await store.enqueueWebhookEvent(event) == 2)
    let claim = try #require(
      try await store.claimWebhookDeliveries(limit: 1, lease: "n", leaseMilliseconds: 1_000, now: 20).first)
    _ = try await store.finishWebhookDelivery(claim.id, lease: "n", outcome: .failed(error: "HTTP 410"), now: 30)

    let list = try await sandbox.admin(["webhooks", "list", "--json"])
    #expect(list.status == 0, "\(list)")
    let rows = try #require(try list.json() as? [[String: Any]])
    #expect(rows.count == 2)
    #expect(rows.map { $0["failed"] as? Int ?? -1 }.reduce(0, +) == 1)
    #expect(rows.map { $0["pending"] as? Int ?? -1 }.reduce(0, +) == 1)
    let table = try await sandbox.admin(["webhooks", "list", "--user", "anna@example.com"])
    #expect(table.status == 0 && table.stdout.contains("wh_anna") && !table.stdout.contains(operatorHook))

    let failed = try await sandbox.admin(["webhooks", "deliveries", "--state", "failed", "--json"])
    let failedRows = try #require(try failed.json() as? [[String: Any]])
    #expect(failedRows.count == 1 && failedRows.first?["lastError"] as? String == "HTTP 410")

    let retried = try await sandbox.admin(["webhooks", "retry", claim.webhookID, "--json"])
    let queued = try retried.object()["queued"] as? String
    #expect(retried.status == 0 && queued == "1", "\(retried)")
    #expect(try await store.webhookDeliveries(webhook: nil, state: .failed, limit: 10).isEmpty)
    #expect(try await sandbox.admin(["webhooks", "retry", "wh_missing"]).status == 3)

    let disabled = try await sandbox.admin(["webhooks", "disable", "wh_anna", "--json"])
    let enabled = try disabled.object()["enabled"] as? Bool
    #expect(disabled.status == 0 && enabled == false, "\(disabled)")
    #expect(try await store.webhook("wh_anna")?.enabled == false)
    #expect(try await sandbox.admin(["webhooks", "disable", "wh_anna", "--enable"]).status == 0)
    #expect(try await store.webhook("wh_anna")?.enabled == true)
    #expect(try await sandbox.admin(["webhooks", "disable", "wh_missing"]).status == 3)
  }
}
