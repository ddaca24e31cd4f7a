import Foundation
import HTTPTypes
import MeridianAPI
import MeridianServer
import NetworkingKit
import Testing

/// The quotas of `ServerLimits` on images, webhooks and webhook tests: each has a default, a setting, and a clear
/// 429 (with `Retry-After`) or 409 past it.
@Suite("Quotas on images and webhooks", .inProcess)
struct QuotaTests {
  @Test func everyQuotaHasADefaultAndASetting() throws {
    let defaults = ServerLimits()
    #expect(defaults.blobsPerAccountPerHour == 60)
    #expect(defaults.webhooksPerAccount == 20)
    #expect(defaults.webhookTestsPerAccountPerMinute == 5)
    let configuration = try ServerConfiguration.resolve(
      environment: [
        "MERIDIAN_LIMIT_BLOBS_PER_ACCOUNT_PER_HOUR": "7", "MERIDIAN_LIMIT_WEBHOOKS_PER_ACCOUNT": "3",
        "MERIDIAN_LIMIT_WEBHOOK_TESTS_PER_ACCOUNT_PER_MINUTE": "0",
      ])
    #expect(configuration.limits.blobsPerAccountPerHour == 7)
    #expect(configuration.limits.webhooksPerAccount == 3)
    #expect(configuration.limits.webhookTestsPerAccountPerMinute == 0)
  }

  @Test func imageUploadsPerHourAreLimitedBeforeTheBodyIsRead() async throws {
    try await TestServer.with({ $0.limits.blobsPerAccountPerHour = 3 }) { server in
      let (session, anna) = try await server.signUp("anna")
      let (_, boris) = try await server.signUp("boris")
      for seed in 1...3 { _ = try await anna.send(API.uploadBlob, body: PollTests.png(1_000, seed: UInt8(seed))) }
      let refused = try await server.phoneAppRequest(
        .post, "/v1/blobs", headers: [.authorization: "Bearer \(session.token)"], body: PollTests.png(1_000, seed: 9))
      #expect(refused.head.status == .tooManyRequests)
      #expect(refused.errorCode == APIErrorCode.rateLimited.rawValue)
      let retryAfter = try #require(refused.head.headerFields[.retryAfter].flatMap { Int($0) })
      #expect((3_000...3_600).contains(retryAfter))
      // Per account: another person uploads.
      _ = try await boris.send(API.uploadBlob, body: PollTests.png(1_000, seed: 9))
    }
  }

  @Test func webhooksPerAccountAreLimited() async throws {
    try await TestServer.with({
      $0.webhooks.allowPrivateAddresses = true
      $0.limits.webhooksPerAccount = 2
    }) { server in
      let (_, anna) = try await server.signUp("anna")
      var created: [CreatedWebhook] = []
      for index in 0..<2 {
        created.append(try await anna.send(API.createWebhook, body: NewWebhook(url: "http://127.0.0.1:9/\(index)")))
      }
      await expectAPIError(.quotaExceeded, status: 409) {
        try await anna.send(API.createWebhook, body: NewWebhook(url: "http://127.0.0.1:9/2"))
      }
      // Deleting one makes room again.
      _ = try await anna.send(API.deleteWebhook, parameters: WebhookRef(id: created[0].webhook.id))
      _ = try await anna.send(API.createWebhook, body: NewWebhook(url: "http://127.0.0.1:9/2"))
    }
  }

  @Test func webhookTestsPerMinuteAreLimited() async throws {
    try await TestServer.with({
      $0.webhooks.allowPrivateAddresses = true
      $0.limits.webhookTestsPerAccountPerMinute = 2
    }) { server in
      let (session, anna) = try await server.signUp("anna")
      let webhook = try await anna.send(API.createWebhook, body: NewWebhook(url: "http://127.0.0.1:9/hook")).webhook
      let ref = WebhookRef(id: webhook.id)
      for _ in 0..<2 { _ = try await anna.send(API.testWebhook, parameters: ref) }
      let refused = try await server.phoneAppRequest(
        .post, "/v1/webhooks/\(webhook.id)/test", headers: [.authorization: "Bearer \(session.token)"])
      #expect(refused.head.status == .tooManyRequests)
      #expect(refused.errorCode == APIErrorCode.rateLimited.rawValue)
      let retryAfter = try #require(refused.head.headerFields[.retryAfter].flatMap { Int($0) })
      #expect((50...60).contains(retryAfter))
    }
  }
}
