import DomainKit
import Foundation
import MeridianAPI
import MeridianStore
import MeridianStoreTesting
import Testing

/// The engine-neutral unit of work (``StoreTransactions``): what a feature does in one `write` commits together or
/// not at all on every engine — a vote, its reward and the webhook event about it — and the rules written once
/// against the primitives keep their promises under concurrency.
@Suite("Store contract: transactions")
struct StoreTransactionContractTests {
  struct Rollback: Error {}

  func makeUsers(_ store: any MeridianStore, _ names: [String]) async throws {
    for name in names {
      _ = try #require(
        try await store.createAccount(
          id: UserID(name), credential: .email("\(name)@example.com"), passwordHash: nil, now: 1))
    }
  }

  func makePoll(_ store: any MeridianStore, _ id: String, author: String) async throws {
    let poll = try Poll(
      id: PollID(id), authorID: UserID(author), title: "Which is better? \(id)", description: "Pick one",
      first: PollOption(text: "Tea"), second: PollOption(text: "Coffee"), createdAt: 10)
    _ = try await store.createPoll(poll, closesAt: nil, reward: 0, now: 10)
  }

  func event(_ key: String) -> WebhookEvent {
    WebhookEvent(
      kind: "poll.voted", userID: "anna", payload: Data(#"{"poll":"\#(key)"}"#.utf8), idempotencyKey: key,
      occurredAt: 20, queuedAt: 20)
  }

  @Test(arguments: StoreEngine.all)
  func aWebhookEventCommitsWithItsTransactionOrNotAtAll(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await makeUsers(store, ["anna", "boris"])
      _ = try await store.createWebhook(
        Webhook(
          id: "a1", ownerID: "anna", url: "https://hooks.example.com/a1", events: [], enabled: true, createdAt: 1,
          updatedAt: 1), secret: "secret")
      try await makePoll(store, "open", author: "boris")
      try await makePoll(store, "hidden", author: "boris")
      #expect(try await store.setPollHidden("hidden", hidden: true))

      // The body throws after the vote and the event: neither is stored.
      await #expect(throws: Rollback.self) {
        try await store.write { tx in
          _ = try await tx.vote("open", user: "anna", choice: .first, reward: 5, now: 20)
          #expect(try await tx.enqueueWebhookEvent(event("e1")) == 1)
          throw Rollback()
        }
      }
      // A rule refuses after the event was queued: the event goes with the refusal.
      await #expect(throws: PollStoreError.pollHidden("hidden")) {
        try await store.write { tx in
          try await tx.enqueueWebhookEvent(event("e2"))
          return try await tx.vote("hidden", user: "anna", choice: .first, reward: 5, now: 20)
        }
      }
      #expect(try await store.webhookDeliveries(webhook: "a1", state: nil, limit: 10).isEmpty)
      #expect(try await store.poll("open", viewer: "anna")?.results.total == 0)
      #expect(try await store.points(of: "anna", limit: 10).balance == 0)

      // Committed: the vote, its reward and the event together.
      let outcome = try await store.write { tx in
        let outcome = try await tx.vote("open", user: "anna", choice: .first, reward: 5, now: 20)
        try await tx.enqueueWebhookEvent(event("e3"))
        return outcome
      }
      #expect(outcome.awarded == 5 && outcome.results.counts == [1, 0])
      #expect(try await store.webhookDeliveries(webhook: "a1", state: nil, limit: 10).map(\.idempotencyKey) == ["e3"])
      #expect(try await store.points(of: "anna", limit: 10).balance == 5)
    }
  }

  @Test(arguments: StoreEngine.all)
  func aReadTransactionWritesNothing(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await makeUsers(store, ["anna"])
      _ = try await store.grantPoints(10, to: "anna", note: "", now: 2)
      #expect(try await store.read { tx in try await tx.pointsStatement(of: "anna", limit: 10).balance } == 10)
      await #expect(throws: (any Error).self) {
        try await store.read { tx in try await tx.grantPoints(5, to: "anna", note: "", now: 3) }
      }
      #expect(try await store.points(of: "anna", limit: 10).balance == 10)
    }
  }

  /// Retries of one purchase (one `Idempotency-Key`) that arrive at once buy one coupon and spend its price once;
  /// every retry answers with that coupon.
  @Test(arguments: StoreEngine.all)
  func simultaneousRetriesOfOnePurchaseBuyOnce(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await makeUsers(store, ["anna"])
      _ = try await store.upsertCouponOffer(
        CouponOffer(id: "cake", shopName: "Bakery", title: "Cake", price: 30), description: "", stock: 10, now: 1)
      _ = try await store.grantPoints(100, to: "anna", note: "", now: 2)
      let purchases = try await withThrowingTaskGroup(of: CouponPurchase.self) { group in
        for index in 0..<8 {
          group.addTask {
            try await store.purchaseCoupon(
              "cake", user: "anna", couponID: CouponID("k\(index)"), code: "C-\(index)", requestKey: "same", now: 3)
          }
        }
        return try await group.reduce(into: [CouponPurchase]()) { $0.append($1) }
      }
      #expect(Set(purchases.map(\.coupon)).count == 1)
      #expect(purchases.allSatisfy { $0.balance == 70 })
      #expect(try await store.coupons(of: "anna").map(\.id) == purchases.first.map { [$0.coupon.id] })
      #expect(try await store.points(of: "anna", limit: 10).balance == 70)
      #expect(try await store.couponStats() == [CouponStats(offerId: "cake", stock: 10, bought: 1, redeemed: 0)])
    }
  }
}
