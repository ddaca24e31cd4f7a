import DomainKit
import MeridianStoreSQLite
import RealtimeKit
import Testing

@testable import MeridianServer

/// Live channels are registered by the features that publish on them; ``LiveChannels`` only dispatches.
@Suite struct LiveChannelsTests {
  @Test func eachNamespaceIsDecidedByItsOwnRuleAndAnUnknownOneIsRefused() async throws {
    let channels = LiveChannels([
      .perViewer("inbox"), LiveChannelRule(namespace: "room") { _, id in id == "open" },
    ])
    let anna = UserID("anna")
    #expect(channels.namespaces == ["inbox", "room"])
    #expect(try await channels.maySubscribe(anna, to: try #require(ChannelName("inbox:anna"))))
    #expect(try await !channels.maySubscribe(anna, to: try #require(ChannelName("inbox:ben"))))
    #expect(try await channels.maySubscribe(anna, to: try #require(ChannelName("room:open"))))
    #expect(try await !channels.maySubscribe(anna, to: try #require(ChannelName("room:closed"))))
    #expect(try await !channels.maySubscribe(anna, to: try #require(ChannelName("user:anna"))))
  }

  @Test func theServersHubServesTheFeaturesNamespacesThroughTheirRules() async throws {
    let file = TemporaryDatabaseFile()
    defer { file.remove() }
    let store = try SQLiteStore.open(at: file.path)
    let rules =
      LiveUpdates.ownChannels(store: store, now: { 1 }) + [
        PollLive.channelRule(store: store), GeofenceMonitor.channelRule,
      ]
    let channels = LiveChannels(rules)
    #expect(
      channels.namespaces == [
        "user", "group", "seen_exact", "seen_approximate", "seen_town", "sharing", "share", "poll", "geofence",
      ])
    let anna = UserID("anna")
    // A share link's channel is its own sockets' (principal `share:<link id>`), never a user's.
    #expect(try await !channels.maySubscribe(anna, to: try #require(ChannelName("share:anna"))))
    #expect(try await channels.maySubscribe(anna, to: try #require(ChannelName("geofence:anna"))))
    #expect(try await !channels.maySubscribe(anna, to: try #require(ChannelName("geofence:ben"))))
    #expect(try await !channels.maySubscribe(anna, to: try #require(ChannelName("poll:none"))))
  }
}
