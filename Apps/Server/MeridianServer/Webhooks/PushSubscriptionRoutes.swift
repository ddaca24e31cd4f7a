import Foundation
import MeridianAPI
import MeridianStore
import NetworkingKit

extension WebhookFeature {
  /// The Web Push routes: the VAPID public key, and a person's subscriptions — registrations of channel
  /// ``AlertChannel/webpush`` on the webhook outbox, whose delivery log is `GET /v1/webhooks/{id}/deliveries`.
  func registerPush(on routes: RouteRegistrar, policy: WebhookAddressPolicy) {
    routes.on(API.vapidPublicKey) { call in
      _ = try call.authenticated()
      return VAPIDPublicKey(publicKey: WebPush.publicKey(of: try await WebPush.key(store)))
    }
    routes.on(API.pushSubscriptions) { call in
      WebhookList(items: try await store.webhooks(.user(try call.authenticated())).filter { $0.channel == .webpush })
    }
    routes.on(API.createPushSubscription, status: .created) { call in
      let user = try call.authenticated()
      let events = try Self.events(call.body.events ?? [])
      let keys = try WebPush.Keys(p256dh: call.body.keys.p256dh, auth: call.body.keys.auth)
      try await policy.check(call.body.endpoint)
      // The same browser subscribing again (new keys, same endpoint) replaces its registration.
      for earlier in try await store.webhooks(.user(user))
      where earlier.channel == .webpush && earlier.url == call.body.endpoint {
        _ = try await store.deleteWebhook(earlier.id)
      }
      try await checkRoom(for: user)
      let now = environment.now()
      let subscription = Webhook(
        id: "wp_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: ""), ownerID: user.rawValue,
        url: call.body.endpoint, events: events, enabled: true, createdAt: now, updatedAt: now, channel: .webpush)
      return try await store.createWebhook(subscription, secret: keys.stored)
    }
    routes.on(API.deletePushSubscription, status: .noContent) { call in
      let subscription = try await owned(call.parameters.id, by: try call.authenticated())
      guard subscription.channel == .webpush, try await store.deleteWebhook(subscription.id) else {
        throw Self.notFound
      }
      return NoContent()
    }
  }
}
