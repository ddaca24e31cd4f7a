import ArgumentParser
import DomainKit
import Foundation
import MeridianAPI
import MeridianSecrets
import MeridianStore

struct WebhooksCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "webhooks",
    abstract: "Register operator-wide webhooks; list, disable and retry webhooks and their deliveries.",
    subcommands: [List.self, Create.self, Deliveries.self, Retry.self, Disable.self])

  /// A registration with its delivery counts, as listed.
  struct Row: Codable, Sendable {
    var webhook: Webhook
    var pending: Int
    var delivered: Int
    var failed: Int
  }

  struct List: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "List webhook registrations (a person's, or every one) with their deliveries' states.")

    @OptionGroup var options: GlobalOptions

    @Option(help: "Only this person's registrations (id, email address or phone number).")
    var user: String?

    @Flag(help: "Only the operator-wide registrations.")
    var operatorWide = false

    func run() async throws {
      let rows = try await options.withDatabase { database -> [Row] in
        let scope: WebhookScope =
          if let user { .user(try await database.resolveUser(user)) } else if operatorWide { .operatorWide } else {
            .all
          }
        var rows: [Row] = []
        for webhook in try await database.store.webhooks(scope) {
          let deliveries = try await database.store.webhookDeliveries(webhook: webhook.id, state: nil, limit: 10_000)
          rows.append(
            Row(
              webhook: webhook, pending: deliveries.count { $0.state == .pending },
              delivered: deliveries.count { $0.state == .delivered }, failed: deliveries.count { $0.state == .failed }))
        }
        return rows
      }
      try options.emit(rows) {
        guard !rows.isEmpty else { return "No webhooks." }
        var table = TextTable(["id", "owner", "url", "events", "state", "pending", "delivered", "failed"])
        for row in rows {
          table.add([
            row.webhook.id, row.webhook.ownerID ?? "(operator)", row.webhook.url,
            row.webhook.events.isEmpty ? "*" : row.webhook.events.joined(separator: ","),
            row.webhook.enabled ? "enabled" : "disabled", "\(row.pending)", "\(row.delivered)", "\(row.failed)",
          ])
        }
        return table.text
      }
    }
  }

  struct Create: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Register an operator-wide webhook: it receives every person's events of its kinds.",
      discussion: """
        Prints the signing secret once. The server refuses deliveries to loopback, private, link-local and \
        metadata addresses unless it runs with MERIDIAN_WEBHOOK_ALLOW_PRIVATE=true.
        """)

    @OptionGroup var options: GlobalOptions

    @Option(help: "The http or https URL events are POSTed to.")
    var url: String

    @Option(help: "Event kinds, comma-separated (default: every kind).")
    var events: String?

    func run() async throws {
      guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
        scheme == "http" || scheme == "https", components.host?.isEmpty == false
      else { throw AdminError.usage("--url must be an absolute http or https URL with a host, not '\(url)'.") }
      let kinds = (events ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        .filter { !$0.isEmpty }
      let now = Timestamp.milliseconds(Date())
      let secret = WebhookSignature.makeSecret()
      let webhook = Webhook(
        id: "wh_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: ""), ownerID: nil, url: url,
        events: Array(Set(kinds)).sorted(), enabled: true, createdAt: now, updatedAt: now)
      let created = try await options.withDatabase { try await $0.store.createWebhook(webhook, secret: secret) }
      try options.emit(CreatedWebhook(webhook: created, secret: secret)) {
        "Registered operator-wide webhook \(created.id) for \(url).\nSigning secret (shown only now): \(secret)"
      }
    }
  }

  struct Deliveries: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List deliveries, newest first, with their last error.")

    @OptionGroup var options: GlobalOptions

    @Option(help: "Only this registration's deliveries.")
    var webhook: String?

    @Option(help: "Only deliveries in this state: pending, delivered or failed.")
    var state: WebhookDeliveryState?

    @Option(help: "At most this many (1…1000).")
    var limit = 50

    func run() async throws {
      guard (1...1000).contains(limit) else { throw AdminError.usage("--limit must be between 1 and 1000.") }
      let deliveries = try await options.withDatabase {
        try await $0.store.webhookDeliveries(webhook: webhook, state: state, limit: limit)
      }
      try options.emit(deliveries) {
        guard !deliveries.isEmpty else { return "No deliveries." }
        var table = TextTable(["id", "webhook", "kind", "key", "state", "attempts", "queued (UTC)", "last error"])
        for delivery in deliveries {
          table.add([
            delivery.id, delivery.webhookID, delivery.kind, delivery.idempotencyKey, delivery.state.rawValue,
            "\(delivery.attempts)", AdminFormat.time(delivery.createdAt),
            String((delivery.lastError ?? "-").prefix(60)),
          ])
        }
        return table.text
      }
    }
  }

  struct Retry: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Queue a registration's failed (abandoned) deliveries again, due now.")

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The registration's id.")
    var id: String

    @Option(help: "Only this delivery.")
    var delivery: String?

    func run() async throws {
      let count = try await options.withDatabase { database -> Int in
        guard try await database.store.webhook(id) != nil else { throw AdminError.notFound("No webhook '\(id)'.") }
        return try await database.store.retryWebhookDeliveries(
          webhook: id, delivery: delivery, now: Timestamp.milliseconds(Date()))
      }
      try options.emit(["id": id, "queued": "\(count)"]) { "Queued \(count) failed delivery(ies) of \(id) again." }
    }
  }

  struct Disable: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Stop delivering to a registration (its deliveries wait); --enable resumes.")

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The registration's id.")
    var id: String

    @Flag(help: "Enable it again.")
    var enable = false

    func run() async throws {
      let updated = try await options.withDatabase {
        try await $0.store.updateWebhook(id, WebhookUpdate(enabled: enable), now: Timestamp.milliseconds(Date()))
      }
      guard let updated else { throw AdminError.notFound("No webhook '\(id)'.") }
      try options.emit(updated) { "Webhook \(id) is \(updated.enabled ? "enabled" : "disabled")." }
    }
  }
}

extension WebhookDeliveryState: ExpressibleByArgument {}
