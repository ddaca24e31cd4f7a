import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import MeridianAPI
import MeridianStore
import MeridianStoreSQLite
import Synchronization
import Testing

@testable import MeridianServer

/// A delivery resolves the webhook's host once, checks the answer, and connects to that checked address — never
/// resolving the name again — and reports the status the receiver answered.
@Suite struct WebhookPinningTests {
  static func claim(_ url: String) -> WebhookClaim {
    WebhookClaim(
      id: "d1", webhookID: "w1", url: url, secret: "secret", idempotencyKey: "k1", kind: "geofence.enter",
      body: Data(#"{"id":"k1"}"#.utf8), attempts: 0, createdAt: 0)
  }

  @Test(.timeLimit(.minutes(1)))
  func aDeliveryConnectsToTheAddressItCheckedAndReportsTheReceiversStatus() async throws {
    let received = Mutex<[String]>([])
    let router = Router()
    router.post("/hook") { request, _ -> HTTPResponse.Status in
      received.withLock { $0.append(request.head.authority ?? "") }
      return .accepted
    }
    let file = TemporaryDatabaseFile()
    defer { file.remove() }
    let store = try SQLiteStore.open(at: file.path)
    let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
    try await app.test(.live) { client in
      let port = try #require(client.port)
      var settings = WebhookSettings()
      settings.allowPrivateAddresses = true
      var service = WebhookDeliveryService(
        store: store, outbox: WebhookOutbox(store: store), settings: settings, logger: Logger(label: "test"),
        now: { 0 })
      // A name no DNS server answers (`.invalid`, RFC 2606): only the checked answer can lead the delivery anywhere.
      let lookups = Mutex<[String]>([])
      service.resolver = { host in
        lookups.withLock { $0.append(host) }
        return [[127, 0, 0, 1]]
      }
      let status = try await service.send(Self.claim("http://rebinding.invalid:\(port)/hook"))
      #expect(status == 202)
      #expect(lookups.withLock { $0 } == ["rebinding.invalid"])
      #expect(received.withLock { $0 } == ["rebinding.invalid:\(port)"])
      // A name that now resolves to the metadata address: refused before any connection is made.
      service.resolver = { _ in [[169, 254, 169, 254]] }
      await #expect(throws: APIError.self) {
        try await service.send(Self.claim("http://rebinding.invalid:\(port)/hook"))
      }
      #expect(received.withLock { $0.count } == 1)
    }
  }
}
