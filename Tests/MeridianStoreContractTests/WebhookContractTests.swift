import DomainKit
import Foundation
import MeridianAPI
import MeridianStore
import MeridianStoreTesting
import Testing

/// Webhook registrations and the outbox: fan-out to the registrations that want an event, once per idempotency key;
/// leases that two nodes never share; outcomes that only the lease holder records; failed deliveries queued again.
@Suite("Store contract: webhooks")
struct WebhookContractTests {
  func makeUsers(_ store: any MeridianStore, _ names: [String]) async throws {
    for name in names {
      _ = try #require(
        try await store.createAccount(
          id: UserID(name), credential: .email("\(name)@example.com"), passwordHash: nil, now: 1))
    }
  }

  @discardableResult
  func register(
    _ store: any MeridianStore, _ id: String, owner: String?, events: [String] = [], enabled: Bool = true,
    at time: Int64 = 10
  ) async throws -> Webhook {
    try await store.createWebhook(
      Webhook(
        id: id, ownerID: owner, url: "https://hooks.example.com/\(id)", events: events, enabled: enabled,
        createdAt: time, updatedAt: time),
      secret: "secret-\(id)")
  }

  func event(
    _ key: String, kind: String = "geofence.enter", user: String? = "anna", at time: Int64 = 100,
    queuedAt: Int64? = nil
  ) -> WebhookEvent {
    WebhookEvent(
      kind: kind, userID: user.map { UserID($0) }, payload: Data(#"{"n":"\#(key)"}"#.utf8), idempotencyKey: key,
      occurredAt: time, queuedAt: queuedAt ?? time)
  }

  /// An event dated by a fix 45 s ahead of the server's clock is due when it is queued, and its abandon clock
  /// (``WebhookClaim/createdAt``) starts then; the fix's time stays in the body only.
  @Test(arguments: StoreEngine.all)
  func anEventIsDueWhenQueuedWhateverTimeItSays(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await makeUsers(store, ["anna"])
      try await register(store, "a1", owner: "anna")
      let now: Int64 = 1_000_000
      #expect(try await store.enqueueWebhookEvent(event("ahead", at: now + 45_000, queuedAt: now)) == 1)
      let claims = try await store.claimWebhookDeliveries(limit: 10, lease: "node", leaseMilliseconds: 1_000, now: now)
      let claim = try #require(claims.first)
      #expect(claims.count == 1 && claim.createdAt == now)
      let body = try #require(try JSONSerialization.jsonObject(with: claim.body) as? [String: Any])
      #expect((body["occurredAt"] as? NSNumber)?.int64Value == now + 45_000)
      let listed = try #require(try await store.webhookDeliveries(webhook: "a1", state: nil, limit: 10).first)
      #expect(listed.createdAt == now && listed.nextAttemptAt == now)
    }
  }

  /// A registration keeps its channel (an ntfy topic, its token as the secret) through listing, change and claim, and
  /// the alert quota counts only its owner's deliveries of channels other than webhooks and Home Assistant (positions,
  /// not alerts), delivered since the time asked.
  @Test(arguments: StoreEngine.all)
  func alertChannelsAreKeptAndTheirDeliveriesCounted(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await makeUsers(store, ["anna", "boris"])
      for (id, owner, channel) in [
        ("topic", "anna", AlertChannel.ntfy), ("hook", "anna", .webhook), ("other", "boris", .ntfy),
        ("ha", "anna", .homeAssistant),
      ] {
        _ = try await store.createWebhook(
          Webhook(
            id: id, ownerID: owner, url: "https://ntfy.example.com/\(id)", events: [], enabled: true, createdAt: 10,
            updatedAt: 10, channel: channel),
          secret: channel == .webhook ? "" : "tk_\(id)")
      }
      #expect(try await store.webhook("topic")?.channel == .ntfy)
      #expect(try await store.webhooks(.user("anna")).map(\.channel) == [.homeAssistant, .webhook, .ntfy])
      #expect(try await store.updateWebhook("topic", WebhookUpdate(enabled: true), now: 20)?.channel == .ntfy)
      for key in ["e1", "e2"] {
        _ = try await store.enqueueWebhookEvent(event(key, user: "anna", at: 100))
        _ = try await store.enqueueWebhookEvent(event(key, user: "boris", at: 100))
      }
      let claims = try await store.claimWebhookDeliveries(limit: 10, lease: "n", leaseMilliseconds: 1_000, now: 100)
      #expect(claims.count == 8)
      #expect(claims.first { $0.webhookID == "ha" }?.channel == .homeAssistant)
      let topic = try #require(claims.first { $0.webhookID == "topic" })
      #expect(topic.channel == .ntfy && topic.ownerID == "anna" && topic.secret == "tk_topic")
      #expect(claims.first { $0.webhookID == "hook" }?.channel == .webhook)
      // Every delivery succeeds, at 200 (the first of each registration) or 5,000.
      var seen: Set<String> = []
      for claim in claims {
        let at: Int64 = seen.insert(claim.webhookID).inserted ? 200 : 5_000
        #expect(try await store.finishWebhookDelivery(claim.id, lease: "n", outcome: .delivered(status: 200), now: at))
      }
      #expect(try await store.deliveredAlertCount(owner: "anna", since: 0) == 2)
      #expect(try await store.deliveredAlertCount(owner: "anna", since: 201) == 1)
      #expect(try await store.deliveredAlertCount(owner: "anna", since: 5_001) == 0)
      #expect(try await store.deliveredAlertCount(owner: "boris", since: 0) == 2)
    }
  }

  @Test(arguments: StoreEngine.all)
  func registrationsAreListedChangedAndDeletedWithTheirDeliveries(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await makeUsers(store, ["anna", "boris"])
      try await register(store, "a1", owner: "anna", events: ["geofence.enter"], at: 10)
      try await register(store, "b1", owner: "boris", at: 11)
      try await register(store, "op", owner: nil, at: 12)
      await #expect(throws: WebhookStoreError.duplicateID("a1")) {
        try await register(store, "a1", owner: "boris")
      }
      #expect(try await store.webhooks(.user("anna")).map(\.id) == ["a1"])
      #expect(try await store.webhooks(.operatorWide).map(\.id) == ["op"])
      #expect(try await store.webhooks(.all).map(\.id) == ["a1", "b1", "op"])
      let fetched = try #require(try await store.webhook("a1"))
      #expect(fetched.events == ["geofence.enter"] && fetched.url == "https://hooks.example.com/a1" && fetched.enabled)

      let updated = try #require(
        try await store.updateWebhook("a1", WebhookUpdate(events: [], enabled: false), now: 50))
      #expect(updated.events == [] && !updated.enabled && updated.updatedAt == 50 && updated.url == fetched.url)
      #expect(try await store.updateWebhook("missing", WebhookUpdate(enabled: true), now: 50) == nil)

      #expect(try await store.enqueueWebhookEvent(event("k1", user: "boris")) == 2)  // b1 and op
      #expect(try await store.deleteWebhook("b1"))
      #expect(!(try await store.deleteWebhook("b1")))
      #expect(try await store.webhookDeliveries(webhook: "b1", state: nil, limit: 10).isEmpty)
      #expect(try await store.webhookDeliveries(webhook: nil, state: nil, limit: 10).map(\.webhookID) == ["op"])
    }
  }

  @Test(arguments: StoreEngine.all)
  func anEventReachesTheRegistrationsThatWantItOncePerKey(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await makeUsers(store, ["anna", "boris"])
      try await register(store, "enter", owner: "anna", events: ["geofence.enter"])
      try await register(store, "every", owner: "anna")
      try await register(store, "exit", owner: "anna", events: ["geofence.exit"])
      try await register(store, "off", owner: "anna", enabled: false)
      try await register(store, "boris", owner: "boris")
      try await register(store, "op-all", owner: nil)
      try await register(store, "op-exit", owner: nil, events: ["geofence.exit"])

      #expect(try await store.enqueueWebhookEvent(event("e1")) == 3)
      #expect(try await store.enqueueWebhookEvent(event("e1")) == 0)  // the same key again: nothing new
      let queued = try await store.webhookDeliveries(webhook: nil, state: .pending, limit: 50)
      #expect(Set(queued.map(\.webhookID)) == ["enter", "every", "op-all"])
      #expect(queued.allSatisfy { $0.idempotencyKey == "e1" && $0.kind == "geofence.enter" && $0.attempts == 0 })

      // A test event goes to its target only; an event about nobody only to operator-wide registrations.
      var test = event("t1", kind: WebhookEvent.testKind)
      #expect(try await store.enqueueWebhookEvent(test) == 0)
      test.target = "exit"
      #expect(try await store.enqueueWebhookEvent(test) == 1)
      #expect(try await store.enqueueWebhookEvent(event("n1", kind: "geofence.exit", user: nil)) == 2)

      // A payload that isn't JSON is refused and stores nothing.
      var bad = event("bad")
      bad.payload = Data("not json".utf8)
      await #expect(throws: WebhookStoreError.invalidPayload) { try await store.enqueueWebhookEvent(bad) }
      #expect(try await store.webhookDeliveries(webhook: nil, state: nil, limit: 50).count == 6)
    }
  }

  @Test(arguments: StoreEngine.all)
  func leasesOutcomesAndRetries(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await makeUsers(store, ["anna"])
      try await register(store, "hook", owner: "anna")
      try await store.enqueueWebhookEvent(event("due", at: 100))
      try await store.enqueueWebhookEvent(event("later", at: 5_000))

      let claims = try await store.claimWebhookDeliveries(limit: 10, lease: "n1", leaseMilliseconds: 1_000, now: 200)
      let claim = try #require(claims.first)
      #expect(claims.count == 1)
      #expect(claim.idempotencyKey == "due" && claim.secret == "secret-hook" && claim.url.hasSuffix("/hook"))
      let expectedBody = try event("due", at: 100).body()
      #expect(claim.body == expectedBody)
      let envelope = try #require(try JSONSerialization.jsonObject(with: claim.body) as? [String: Any])
      #expect(envelope["id"] as? String == "due" && envelope["userId"] as? String == "anna")
      #expect((envelope["data"] as? [String: Any])?["n"] as? String == "due")

      // Leased: nobody else gets it until the lease expires; then the old holder can't record an outcome.
      #expect(
        try await store.claimWebhookDeliveries(limit: 10, lease: "n2", leaseMilliseconds: 1_000, now: 300).isEmpty)
      let taken = try await store.claimWebhookDeliveries(limit: 10, lease: "n2", leaseMilliseconds: 1_000, now: 1_200)
      #expect(taken.map(\.id) == [claim.id])
      #expect(
        !(try await store.finishWebhookDelivery(claim.id, lease: "n1", outcome: .delivered(status: 200), now: 1_300)))

      // A failed round is due again at its time, with its error kept.
      #expect(
        try await store.finishWebhookDelivery(
          claim.id, lease: "n2", outcome: .retry(at: 2_000, error: "503"), now: 1_300))
      #expect(
        try await store.claimWebhookDeliveries(limit: 10, lease: "n1", leaseMilliseconds: 1_000, now: 1_999).isEmpty)
      let again = try #require(
        try await store.claimWebhookDeliveries(limit: 10, lease: "n1", leaseMilliseconds: 1_000, now: 2_000).first)
      #expect(again.attempts == 1)
      #expect(try await store.finishWebhookDelivery(again.id, lease: "n1", outcome: .failed(error: "gone"), now: 2_100))
      let failed = try #require(try await store.webhookDeliveries(webhook: "hook", state: .failed, limit: 10).first)
      #expect(failed.lastError == "gone" && failed.attempts == 2 && failed.deliveredAt == nil)

      // Queued again by an operator, delivered, and never claimed after that.
      #expect(try await store.retryWebhookDeliveries(webhook: "hook", delivery: nil, now: 2_200) == 1)
      #expect(try await store.retryWebhookDeliveries(webhook: "hook", delivery: nil, now: 2_200) == 0)
      let retried = try #require(
        try await store.claimWebhookDeliveries(limit: 10, lease: "n1", leaseMilliseconds: 1_000, now: 2_300).first)
      #expect(retried.id == claim.id)
      #expect(
        try await store.finishWebhookDelivery(retried.id, lease: "n1", outcome: .delivered(status: 204), now: 2_400))
      let delivered = try #require(
        try await store.webhookDeliveries(webhook: "hook", state: .delivered, limit: 10).first)
      #expect(delivered.deliveredAt == 2_400 && delivered.lastError == nil && delivered.attempts == 3)

      // A disabled registration's deliveries wait; released leases are claimable at once.
      _ = try await store.updateWebhook("hook", WebhookUpdate(enabled: false), now: 5_000)
      #expect(
        try await store.claimWebhookDeliveries(limit: 10, lease: "n1", leaseMilliseconds: 9_000, now: 6_000).isEmpty)
      _ = try await store.updateWebhook("hook", WebhookUpdate(enabled: true), now: 5_000)
      #expect(
        try await store.claimWebhookDeliveries(limit: 10, lease: "n1", leaseMilliseconds: 9_000, now: 6_000).count == 1)
      try await store.releaseWebhookLeases("n1")
      #expect(
        try await store.claimWebhookDeliveries(limit: 10, lease: "n2", leaseMilliseconds: 9_000, now: 6_001).count == 1)
    }
  }

  @Test(arguments: StoreEngine.all)
  func twoNodesClaimingAtOnceNeverShareADelivery(_ engine: StoreEngine) async throws {
    try await engine.withTwoNodes { first, second in
      try await makeUsers(first, ["anna"])
      try await register(first, "hook", owner: "anna")
      for index in 0..<60 { try await first.enqueueWebhookEvent(event("e\(index)", at: 100 + Int64(index))) }
      func drain(_ store: any MeridianStore, _ lease: String) async throws -> [String] {
        var ids: [String] = []
        while true {
          let claims = try await store.claimWebhookDeliveries(
            limit: 4, lease: lease, leaseMilliseconds: 60_000, now: 1_000)
          if claims.isEmpty { return ids }
          ids += claims.map(\.id)
        }
      }
      async let one = drain(first, "n1")
      async let two = drain(second, "n2")
      let (a, b) = try await (one, two)
      #expect(Set(a).isDisjoint(with: Set(b)))
      #expect(a.count + b.count == 60 && Set(a + b).count == 60)
    }
  }
}
