import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import MeridianServer
import MeridianStore
import NetworkingKit
import RealtimeKit
import Testing

/// A fence's alert rule (issue 36 §4): every event is recorded and listed, but alerts — live, webhooks and the alert
/// channels of the outbox (ntfy here) — go out only for the directions, people, days and hours the rule allows.
@Suite("Geofence alert rules")
struct GeofenceAlertRuleTests {
  /// Anna's fence alerts only when Bob leaves: Bob's arrival and Carol's arrival and departure are recorded (listed
  /// with `alerted: false`) but reach neither Anna's socket nor her ntfy topic; Bob's departure reaches both, once.
  @Test(.timeLimit(.minutes(4)), arguments: ["sqlite", "postgres"])
  func onlyTheDirectionsAndPeopleTheRuleAllowsAlert(_ engine: String) async throws {
    let topic = try await NtfyReceiver.start(statuses: [200])
    try await GeofenceQueueTests.withServer(engine, { WebhookTests.fastDelivery(&$0) }) { server, _, _ in
      let (annaSession, anna) = try await server.signUp("anna")
      let (bobSession, bob) = try await server.signUp("bob")
      let (carolSession, carol) = try await server.signUp("carol")
      // Bob and Carol share with Anna, and Anna's family (the fence's audience) has them both.
      for (session, client) in [(bobSession, bob), (carolSession, carol)] {
        _ = try await client.send(
          API.addMember,
          parameters: GroupMemberRef(groupID: GroupID("\(session.userId).family"), userID: annaSession.userId))
        _ = try await anna.send(
          API.addMember,
          parameters: GroupMemberRef(groupID: GroupID("\(annaSession.userId).family"), userID: session.userId))
      }
      let fence = try await anna.send(
        API.createGeofence,
        body: NewGeofence(
          name: "School", shape: .circle(center: GeofenceTests.home, radius: 100), sharing: .group,
          groupId: GroupID("\(annaSession.userId).family"),
          alerts: GeofenceAlertRule(kinds: [.exit], people: [bobSession.userId])))
      #expect(fence.alerts == GeofenceAlertRule(kinds: [.exit], people: [bobSession.userId]))
      #expect(try await anna.send(API.geofences).items.first?.alerts == fence.alerts)
      let channel = try await anna.send(API.createWebhook, body: NewWebhook(url: topic.url, channel: .ntfy))
      let live = await LiveWatcher(server: server, token: annaSession.token)
      #expect(try await live.subscribe(GeofenceTests.channel(annaSession.userId)))

      // Bob arrives; Carol arrives and leaves: three events, none of which the rule lets alert.
      let start = GeofenceTests.now() + 1_000
      _ = try await bob.send(
        API.postFixes, body: FixBatch(deviceId: "bob-phone", fixes: try GeofenceTests.arrival(from: start)))
      let carolTrack = try GeofenceTests.arrival(from: start) + [try GeofenceTests.fix(start + 30_000, 800)]
      _ = try await carol.send(API.postFixes, body: FixBatch(deviceId: "carol-phone", fixes: carolTrack))
      var listed: [GeofenceEventItem] = []
      try await GeofenceQueueTests.waitFor("the three held-back events", timeout: .seconds(60)) {
        listed = try await anna.send(API.geofenceEvents, parameters: GeofenceEventParameters()).items
        return listed.count >= 3
      }
      #expect(listed.count == 3 && listed.allSatisfy { !$0.alerted }, "\(listed)")
      let store = server.app.environment.store
      // The outbox is written in the events' transaction: nothing was queued for them.
      #expect(try await store.webhookDeliveries(webhook: channel.webhook.id, state: nil, limit: 10).isEmpty)

      // Bob leaves: the one event the rule allows. Its arrival on the socket, after the others were evaluated, is
      // the acknowledgement that none of them was published.
      _ = try await bob.send(
        API.postFixes, body: FixBatch(deviceId: "bob-phone", fixes: [try GeofenceTests.fix(start + 40_000, 800)]))
      try await live.wait("Bob's departure") { _ in try await !GeofenceTests.events(live).isEmpty }
      let received = try await GeofenceTests.events(live)
      #expect(received.map(\.kind) == [.exit] && received.first?.userId == bobSession.userId, "\(received)")
      #expect(received.first?.alerted == true)
      _ = try await AlertChannelTests.log(anna, channel.webhook.id) { $0.first?.state == .delivered }
      let queued = try await store.webhookDeliveries(webhook: channel.webhook.id, state: nil, limit: 10)
      #expect(queued.count == 1 && queued.first?.kind == "geofence.exit", "\(queued)")
      #expect(topic.accepted.count == 1 && topic.accepted.first?.text.contains("left School") == true)

      listed = try await anna.send(API.geofenceEvents, parameters: GeofenceEventParameters()).items
      #expect(listed.count == 4)
      #expect(listed.filter(\.alerted).map(\.kind) == [.exit])
      #expect(listed.filter(\.alerted).first?.userId == bobSession.userId)
      #expect(Set(listed.filter { !$0.alerted }.map(\.userId)) == [bobSession.userId, carolSession.userId])
      await live.stop()
    }
    await topic.stop()
  }

  /// A rule is checked when it is set: `400 invalid_alert_rule` for an unknown zone, days or hours without a zone,
  /// hours that aren't `HH:mm`, and a person who doesn't share their location with the owner; `{}` removes a rule.
  @Test func badRulesAreRefusedAndAnEmptyRuleRemovesOne() async throws {
    try await TestServer.with { server in
      let (annaSession, anna) = try await server.signUp("anna")
      let (bobSession, bob) = try await server.signUp("bob")
      let (daveSession, _) = try await server.signUp("dave")
      _ = try await bob.send(
        API.addMember,
        parameters: GroupMemberRef(groupID: GroupID("\(bobSession.userId).family"), userID: annaSession.userId))
      let shape = GeofenceShape.circle(center: GeofenceTests.home, radius: 100)
      let bad: [GeofenceAlertRule] = [
        GeofenceAlertRule(days: [.mon], timeZone: "Europe/Atlantis"),
        GeofenceAlertRule(hours: DailyHours(from: "08:00", until: "09:00")),
        GeofenceAlertRule(hours: DailyHours(from: "8am", until: "09:00"), timeZone: "Europe/Kyiv"),
        GeofenceAlertRule(hours: DailyHours(from: "08:00", until: "25:00"), timeZone: "Europe/Kyiv"),
        GeofenceAlertRule(kinds: []),
        GeofenceAlertRule(people: [daveSession.userId]),
        GeofenceAlertRule(people: [UserID("nobody-at-all")]),
      ]
      for rule in bad {
        await expectAPIError(.invalidAlertRule, status: 400) {
          try await anna.send(API.createGeofence, body: NewGeofence(name: "Home", shape: shape, alerts: rule))
        }
      }
      #expect(try await anna.send(API.geofences).items.isEmpty)

      let rule = GeofenceAlertRule(
        kinds: [.enter, .dwell], days: [.sat, .mon], hours: DailyHours(from: "22:00", until: "06:30"),
        timeZone: "Europe/Kyiv", people: [bobSession.userId, annaSession.userId])
      let fence = try await anna.send(API.createGeofence, body: NewGeofence(name: "Home", shape: shape, alerts: rule))
      #expect(fence.alerts?.days == [.mon, .sat] && fence.alerts?.people?.count == 2)
      let reference = GeofenceRef(id: fence.id)
      await expectAPIError(.invalidAlertRule, status: 400) {
        try await anna.send(
          API.updateGeofence, parameters: reference,
          body: GeofenceUpdate(alerts: GeofenceAlertRule(people: [daveSession.userId])))
      }
      #expect(try await anna.send(API.geofences).items.first?.alerts == fence.alerts)
      // Bob stops sharing: a change of something else keeps the rule naming him, and is not refused.
      _ = try await bob.send(
        API.removeMember,
        parameters: GroupMemberRef(groupID: GroupID("\(bobSession.userId).family"), userID: annaSession.userId))
      let renamed = try await anna.send(API.updateGeofence, parameters: reference, body: GeofenceUpdate(name: "Flat"))
      #expect(renamed.alerts == fence.alerts && renamed.name == "Flat")
      await expectAPIError(.invalidAlertRule, status: 400) {
        try await anna.send(
          API.updateGeofence, parameters: reference,
          body: GeofenceUpdate(alerts: GeofenceAlertRule(people: [bobSession.userId])))
      }
      let cleared = try await anna.send(
        API.updateGeofence, parameters: reference, body: GeofenceUpdate(alerts: GeofenceAlertRule()))
      #expect(cleared.alerts == nil)
      #expect(try await anna.send(API.geofences).items.first?.alerts == nil)
    }
  }
}
