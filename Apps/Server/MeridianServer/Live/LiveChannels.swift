import DomainKit
import RealtimeKit

/// A live channel namespace that a feature publishes on, and its rule of who may subscribe to one of its channels.
struct LiveChannelRule: Sendable {
  /// The namespace: `poll` serves `poll:<id>`.
  let namespace: String
  /// Whether `viewer` may receive the events of the channel `<namespace>:<id>` now.
  let maySubscribe: @Sendable (_ viewer: UserID, _ id: String) async throws -> Bool

  /// A rule for `namespace`.
  init(namespace: String, maySubscribe: @escaping @Sendable (_ viewer: UserID, _ id: String) async throws -> Bool) {
    self.namespace = namespace
    self.maySubscribe = maySubscribe
  }

  /// A namespace of one channel per viewer, `<namespace>:<viewer id>`, that only its viewer may subscribe to.
  static func perViewer(_ namespace: String) -> LiveChannelRule {
    LiveChannelRule(namespace: namespace) { viewer, id in id == viewer.rawValue }
  }
}

/// The live channels' namespaces with their subscribe rules, each registered by the feature that publishes there
/// (``LiveUpdates`` its own location and sharing channels, polls and geofences theirs). The hub accepts only these
/// namespaces; a subscribe is allowed by its namespace's rule, and a channel of no namespace here is refused.
struct LiveChannels: Sendable {
  private let rules: [String: LiveChannelRule]

  /// The channels of `rules`, one per namespace (a namespace registered twice is a programming error).
  init(_ rules: [LiveChannelRule]) {
    var byNamespace: [String: LiveChannelRule] = [:]
    for rule in rules {
      precondition(byNamespace[rule.namespace] == nil, "live namespace '\(rule.namespace)' is registered twice")
      byNamespace[rule.namespace] = rule
    }
    self.rules = byNamespace
  }

  /// The namespaces registered.
  var namespaces: Set<String> { Set(rules.keys) }

  /// Whether `viewer` may receive `channel`'s events now, by its namespace's rule; false for an unknown namespace.
  func maySubscribe(_ viewer: UserID, to channel: ChannelName) async throws -> Bool {
    guard let rule = rules[channel.namespace] else { return false }
    return try await rule.maySubscribe(viewer, channel.id)
  }
}
